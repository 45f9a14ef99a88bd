"""The parameter reference (docs/parameters.md, `fedrepro list --params`) matches the code (issue #44 item 5)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fedrepro.experiments import reference as ref

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def entries():
    return ref.reference()


def _params(entries, kind, name):
    (e,) = [e for e in entries if e["kind"] == kind and e["name"] == name]
    return {p["name"]: p for p in e["params"]}


def test_page_is_up_to_date():
    assert ref.main([str(ROOT / "docs" / "parameters.md"), "--check"]) == 0, \
        "docs/parameters.md is stale: run python -m fedrepro.experiments.reference docs/parameters.md"


def test_check_mode_fails_on_stale_page(tmp_path):
    stale = tmp_path / "parameters.md"
    stale.write_text(ref.page().replace("mu_rel", "mu_old"))
    assert ref.main([str(stale), "--check"]) == 1
    assert ref.main([str(tmp_path / "missing.md"), "--check"]) == 1


def test_readme_and_command_line_link_the_page():
    assert "(docs/parameters.md)" in (ROOT / "README.md").read_text()
    assert "(parameters.md)" in (ROOT / "docs" / "command-line.md").read_text()


def test_every_registered_name_appears(entries):
    from fedrepro.algorithms import algorithm_names
    from fedrepro.data import partition
    from fedrepro.problems import problem_names
    from fedrepro.sim.aggregation import AGGREGATORS
    from fedrepro.sim.attacks import ATTACKS
    from fedrepro.sim.privacy import MECHANISMS
    from fedrepro.sim.stopping import STOP_RULES

    registered = {"algorithm": algorithm_names(), "problem": problem_names(), "partition": partition.PARTITIONERS,
                  "attack": ATTACKS, "mechanism": MECHANISMS, "aggregator": AGGREGATORS, "stop rule": STOP_RULES}
    text = (ROOT / "docs" / "parameters.md").read_text()
    for kind, names in registered.items():
        listed = {e["name"] for e in entries if e["kind"] == kind}
        assert set(names) == listed, kind
        for n in names:
            assert f"### {kind} `{n}`" in text


def test_metrics_are_every_problem_catalogue(entries):
    from fedrepro.problems import problem_class, problem_names
    want = {m for p in problem_names() if problem_class(p) for m in problem_class(p).METRIC_CATALOGUE}
    assert want and {e["name"] for e in entries if e["kind"] == "metric"} == want


@pytest.mark.parametrize("name", ["fedprox", "fedavg_sgd", "fedprox_sgd", "fedadmm", "aspire"])
def test_algorithm_defaults_are_the_constructed_ones(entries, name):
    from fedrepro.algorithms import algorithm_class, make_algorithm
    alg = make_algorithm(name)
    listed = _params(entries, "algorithm", name)
    assert set(listed) == set(algorithm_class(name).parameter_constraints())
    for key, value in alg.params().items():
        assert listed[key]["default"] == value, key


def test_aggregator_attack_and_mechanism_defaults_are_the_code_ones(entries):
    from fedrepro.sim.aggregation import AGGREGATORS
    from fedrepro.sim.attacks import ATTACKS
    from fedrepro.sim.privacy import MECHANISMS

    agg = AGGREGATORS["centered_clipping"]({})
    assert {k: p["default"] for k, p in _params(entries, "aggregator", "centered_clipping").items()} == agg.params
    assert _params(entries, "attack", "gaussian")["B"]["default"] == ATTACKS["gaussian"].default_B
    gauss = MECHANISMS["gaussian"]({"noise_multiplier": 1.0})
    listed = _params(entries, "mechanism", "gaussian")
    for f in dataclasses.fields(gauss):
        if f.name != "noise_multiplier":
            assert listed[f.name]["default"] == getattr(gauss, f.name), f.name
    clip = MECHANISMS["clip"]({})
    assert set(_params(entries, "mechanism", "clip")) == {"clip"}
    assert _params(entries, "mechanism", "clip")["clip"]["default"] == clip.clip


def test_partition_defaults_are_the_signature_ones(entries):
    import inspect

    from fedrepro.data.partition import PARTITIONERS
    listed = _params(entries, "partition", "dirichlet")
    sig = inspect.signature(PARTITIONERS["dirichlet"])
    assert listed["min_size"]["default"] == sig.parameters["min_size"].default
    assert listed["alpha"]["default"] is ref._MISSING           # required
    assert "labels" not in listed and "seed" not in listed


def test_problem_defaults_come_from_the_builder(entries):
    softmax = _params(entries, "problem", "softmax")
    assert softmax["Q"]["default"] == 20 and softmax["Q"]["type"] == "int"
    neural = _params(entries, "problem", "neural")
    from fedrepro.problems.neural import neural_spec_defaults
    filled = neural_spec_defaults({"name": "neural"})
    for key in ("model", "dataset", "m", "weights"):
        assert neural[key]["default"] == filled[key], key


def test_allowed_values_are_the_declared_ones(entries):
    from fedrepro.core.params import describe
    from fedrepro.sim.stopping import STOP_KEYS
    for rule, keys in STOP_KEYS.items():
        listed = _params(entries, "stop rule", rule)
        assert {k: p["allowed"] for k, p in listed.items()} == {k: describe(v) for k, v in keys.items()}


def test_cli_list_params_fedprox(capsys):
    from fedrepro.cli import main
    assert main(["list", "--params", "fedprox"]) == 0
    out = capsys.readouterr().out
    for key in ("step_c", "averaging", "mu_rel", "inner_steps"):
        assert key in out
    assert "0.1" in out and "[0, inf)" in out


def test_cli_list_params_all(capsys):
    from fedrepro.cli import main
    assert main(["list", "--params"]) == 0
    out = capsys.readouterr().out
    assert "algorithm fedprox" in out and "stop rule reached" in out and "aggregator krum" in out


def test_unknown_name_lists_close_names(capsys):
    from fedrepro.cli import main
    assert main(["list", "--params", "fedprx"]) == 2
    err = capsys.readouterr().err
    assert "'fedprx'" in err and "fedprox" in err
    with pytest.raises(ValueError, match="did you mean.*dirichlet"):
        ref.lookup("dirichlt")
