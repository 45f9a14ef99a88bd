import copy

import pytest

from fedrepro.experiments.config import validate_config, validate_experiment
from fedrepro.core.params import ConfigError
from fedrepro.experiments.expansion import all_cells, cell_id, column_name, expand, reference_cell

BLOCK = {
    "problem": {"name": "linreg_synthetic", "m": 10, "n": 5},
    "algorithms": {"fedadmm": {"r0": 0.2}, "fedavg": {"step_c": [1.0, 0.5]}},
    "grid": {"k0": [1, 5], "problem.m": [10, 20], "mechanism.epsilon": [0.1]},
    "mechanism": {"name": "laplace_epm", "epsilon": 1.0},
    "seeds": 2, "max_rounds": 7,
    "stop": {"rule": "fedadmm30", "eps": 1e-3},
    "stop_by_algorithm": {"fedavg": {"rule": "target", "reference": "fedadmm"}},
    "scales": {"paper": {"seeds": 5, "grid": {"k0": [1, 5, 10]}}},
}


def test_expand_routes_grid_keys_and_counts_cells():
    cells = expand("p", "e", BLOCK, "quick", base_seed=100)
    adm = [c for c in cells if c["algorithm"] == "fedadmm"]
    avg = [c for c in cells if c["algorithm"] == "fedavg"]
    assert len(adm) == 2 * 2 * 1 * 2 and len(avg) == 2 * 2 * 1 * 2 * 2
    c = avg[0]
    assert c["problem"]["m"] in (10, 20) and c["problem"]["n"] == 5
    assert c["mechanism"] == {"name": "laplace_epm", "epsilon": 0.1}
    assert set(c["columns"]) == {"k0", "m", "epsilon", "step_c"}
    assert c["params"]["step_c"] in (1.0, 0.5) and c["stop"]["rule"] == "target"
    assert {c["seed"] for c in cells} == {100, 101}
    assert len({c["cell"] for c in cells}) == len(cells)


def test_scale_override_and_stable_ids():
    quick = expand("p", "e", BLOCK, "quick")
    paper = expand("p", "e", BLOCK, "paper")
    assert len(paper) == len(quick) * 3 // 2 * 5 // 2
    again = expand("p", "e", copy.deepcopy(BLOCK), "quick")
    assert [c["cell"] for c in quick] == [c["cell"] for c in again]
    # ids depend on content only: a changed setting changes the id
    other = copy.deepcopy(BLOCK)
    other["max_rounds"] = 8
    assert not {c["cell"] for c in expand("p", "e", other, "quick")} & {c["cell"] for c in quick}
    assert cell_id(quick[0]) == quick[0]["cell"]


def test_reference_cell_matches_setting_and_seed():
    cells = expand("p", "e", BLOCK, "quick")
    for c in cells:
        ref = reference_cell(c, cells)
        if c["algorithm"] == "fedadmm":
            assert ref is None
        else:
            assert ref["algorithm"] == "fedadmm" and ref["seed"] == c["seed"]
            assert ref["k0"] == c["k0"] and ref["problem"] == c["problem"]
    bad = copy.deepcopy(BLOCK)
    del bad["algorithms"]["fedadmm"]
    with pytest.raises(ConfigError, match="fedadmm"):
        cs = expand("p", "e", bad, "quick")
        reference_cell(cs[0], cs)


def test_settings_are_a_list_of_configurations_not_a_product():
    block = {**copy.deepcopy(BLOCK), "stop_by_algorithm": {}, "grid": {"k0": [1, 5]}, "settings": [
        {"label": "small", "problem": {"m": 10}, "algorithms": {"fedadmm": {"r0": 0.3}}},
        {"label": "big", "problem": {"m": 20}, "max_rounds": 9},
    ]}
    cells = expand("p", "e", block, "quick")
    assert len(cells) == 2 * (2 * 2 + 2 * 2 * 2)             # settings x (k0 x seeds x algorithm's own sweep)
    small = [c for c in cells if c["columns"]["setting"] == "small"]
    big = [c for c in cells if c["columns"]["setting"] == "big"]
    assert {c["problem"]["m"] for c in small} == {10} and {c["problem"]["m"] for c in big} == {20}
    assert all(c["problem"]["n"] == 5 for c in cells)        # deep merge keeps the block's other keys
    assert {c["params"].get("r0") for c in small if c["algorithm"] == "fedadmm"} == {0.3}
    assert {c["params"].get("r0") for c in big if c["algorithm"] == "fedadmm"} == {0.2}
    assert {c["max_rounds"] for c in big} == {9} and {c["max_rounds"] for c in small} == {7}
    assert all(c["shared"]["setting"] == c["columns"]["setting"] for c in cells)
    validate_experiment(block, "experiment p/e")             # the schema knows the key
    with pytest.raises(ConfigError, match="distinct non-empty 'label'"):
        expand("p", "e", {**block, "settings": [{"label": "a"}, {"label": "a", "max_rounds": 3}]}, "quick")
    with pytest.raises(ConfigError, match="identical settings"):
        expand("p", "e", {**block, "settings": [{"label": "a"}, {"label": "b"}]}, "quick")
    with pytest.raises(ConfigError, match="non-empty list"):
        expand("p", "e", {**block, "settings": []}, "quick")


def test_expand_errors_name_the_problem():
    with pytest.raises(ConfigError, match="algorithms"):
        expand("p", "e", {"problem": {"name": "x"}}, "quick")
    with pytest.raises(ConfigError, match="unknown prefix 'optimizer'"):
        expand("p", "e", {**BLOCK, "grid": {"optimizer.lr": [1]}}, "quick")
    with pytest.raises(ConfigError, match="scale='huge'"):
        expand("p", "e", BLOCK, "huge")
    assert column_name("attack.name") == "attack" and column_name("problem.m") == "m"


def test_config_validation_messages():
    good = {"scale": "quick", "papers": ["fedepm"]}
    assert validate_config(dict(good)) == good
    with pytest.raises(ConfigError) as err:
        validate_config({"scale": "huge", "papers": ["fedepm"]})
    assert "scale" in str(err.value) and "'huge'" in str(err.value) and "quick, verify, reduced, paper" in str(err.value)
    with pytest.raises(ConfigError, match="unknown entry \\['colour'\\]"):
        validate_config({**good, "colour": "red"})
    with pytest.raises(ConfigError, match="papers.0.*'fedxyz'.*fedadmm_zhou"):
        validate_config({"scale": "quick", "papers": ["fedxyz"]})
    with pytest.raises(ConfigError, match="experiments.e1.rho"):
        validate_config({**good, "experiments": {"e1": {**BLOCK, "rho": 2}}})
    with pytest.raises(ConfigError, match="stop.rule"):
        validate_experiment({**BLOCK, "stop": {"rule": "sometimes"}}, "experiment x")


def test_all_cells_reads_user_experiments(tmp_path):
    (tmp_path / "fedrepro" / "papers").mkdir(parents=True)      # a checkout without paper folders
    config = {"scale": "quick", "papers": [], "seed": 3, "experiments": {"mine": BLOCK}}
    cells = all_cells(config, tmp_path)
    assert list(cells) == [("custom", "mine")] and cells[("custom", "mine")][0]["seed"] == 3
    with pytest.raises(ConfigError, match="paper_overrides.fedepm.nosuch"):
        all_cells({"scale": "quick", "papers": ["fedepm"], "paper_overrides": {"fedepm": {"nosuch": {}}}}, tmp_path)


def test_batches_keep_references_apart():
    from fedrepro.experiments.build_plan import batches

    cells = expand("p", "e", BLOCK, "quick")
    assert any(reference_cell(c, cells) is not None for c in cells)        # the block has target stops
    single = batches(cells, 1)
    assert list(single) == [c["cell"] for c in cells]
    for size in (3, len(cells)):
        grouped = batches(cells, size)
        assert sorted(c["cell"] for cs in grouped.values() for c in cs) == sorted(c["cell"] for c in cells)
        for key, cs in grouped.items():
            assert len(cs) <= size
            ids = {c["cell"] for c in cs}
            assert all(reference_cell(c, cells) is None or reference_cell(c, cells)["cell"] not in ids for c in cs)
    # one job per reference depth when every cell fits: the references, then the runs stopping at them
    assert len(batches(cells, len(cells))) == 2
    with pytest.raises(ConfigError, match="cells_per_job"):
        batches(cells, 0)


def test_paper_keys_are_listed_once():
    """The paper keys are the folders of fedrepro/papers/ (fedrepro.experiments.yamlio.PAPERS, discovered):
    the schema has no copy, the workflow's paper registry uses them, and the README's list of keys matches."""
    import re
    from pathlib import Path

    from fedrepro.papers import registry
    from fedrepro.experiments.config import SCHEMA, load_schema
    from fedrepro.experiments.yamlio import PAPERS

    root = Path(__file__).resolve().parents[1]
    assert registry.PAPERS is PAPERS
    assert PAPERS == tuple(sorted(p.parent.name for p in (root / "fedrepro" / "papers").glob("*/experiments.yaml")))
    assert "enum" not in load_schema()["properties"]["papers"]["items"]
    assert SCHEMA.is_relative_to(Path(__import__("fedrepro").__file__).parent)     # package data
    assert (root / "workflow" / "schemas" / "config.schema.yaml").resolve() == SCHEMA.resolve()
    readme = (root / "README.md").read_text()
    keys = re.search(r"everything of one paper \(keys: `([^`]*)`", readme).group(1).split()
    assert sorted(keys) == list(PAPERS)
    for text in (root / "Snakefile").read_text(), *(p.read_text() for p in (root / "workflow" / "rules").glob("*.smk")):
        assert "fedadmm_gong" not in text


def test_data_download_flag_from_the_command_line():
    cfg = validate_config({"scale": "quick", "papers": [], "data": {"download": "true"}})
    assert cfg["data"]["download"] is True
    with pytest.raises(ConfigError, match="data.download"):
        validate_config({"scale": "quick", "papers": [], "data": {"download": 3}})


def test_inserting_a_sweep_value_reruns_only_the_new_cells_batches():
    """Batch membership is a function of the cells' content (#14, 2): inserting a value in the
    middle of a sweep list keeps every batch that does not receive a new cell."""
    from fedrepro.experiments.build_plan import batches

    def block(values):
        return {"problem": {"name": "linreg_synthetic", "m": 10, "n": 5}, "algorithms": {"fedadmm": None},
                "grid": {"k0": values}, "seeds": 2, "max_rounds": 3}

    values = list(range(1, 21))
    before = batches(expand("p", "e", block(values[:1] + values[2:]), "quick"), 3)     # 19 values, 2 missing
    after = batches(expand("p", "e", block(values), "quick"), 3)                       # 2 inserted near the top
    new_cells = {c["cell"] for cs in after.values() for c in cs} - {c["cell"] for cs in before.values() for c in cs}
    assert len(new_cells) == 2                                               # k0 = 2, two seeds
    # only the jobs of the (at most two) buckets that received a new cell change; before the fix an
    # insertion re-cut every job after it (here all 13)
    gone, kept = set(before) - set(after), set(before) & set(after)
    assert len(gone) <= 4 and len(kept) >= len(before) - 4
    assert all(len(cs) <= 3 for cs in after.values())


def test_yaml_duplicate_keys_and_syntax_errors_name_file_line_and_column(tmp_path):
    """#14, 1: a repeated key is an error (PyYAML would keep the last value silently); a syntax
    error names the file, line and column; `<<: *anchor` merges may still be overridden."""
    from fedrepro.experiments.yamlio import read_yaml

    dup = tmp_path / "dup.yaml"
    dup.write_text("scale: quick\nseed: 0\nscale: paper\n")
    with pytest.raises(ConfigError, match=r"dup.yaml, line 3, column 1: duplicate key 'scale' \(first at line 1\)"):
        read_yaml(dup)
    nested = tmp_path / "nested.yaml"
    nested.write_text("e:\n  algorithms:\n    fedavg: {}\n    fedavg: {step_c: 1}\n")
    with pytest.raises(ConfigError, match=r"line 4, column 5: duplicate key 'fedavg'"):
        read_yaml(nested)
    bad = tmp_path / "bad.yaml"
    bad.write_text("scale: quick\npapers: [fedepm\nseed: 1\n")
    with pytest.raises(ConfigError, match=r"bad.yaml, line 3, column 5: YAML syntax error"):
        read_yaml(bad)
    merged = tmp_path / "merge.yaml"
    merged.write_text("base: &b {k0: 1, rho: 0.5}\nexp:\n  <<: *b\n  k0: 4\n")
    assert read_yaml(merged)["exp"] == {"k0": 4, "rho": 0.5}


@pytest.mark.slow
def test_the_workflow_rejects_a_duplicate_key_in_config_yaml(tmp_path):
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for name in ("Snakefile", "config.yaml"):
        shutil.copy(root / name, tmp_path / name)
    shutil.copytree(root / "workflow", tmp_path / "workflow")
    text = (tmp_path / "config.yaml").read_text()
    (tmp_path / "config.yaml").write_text(text + "\nscale: paper\n")
    snakemake = Path(sys.executable).parent / "snakemake"
    res = subprocess.run([str(snakemake), "-n", "-j", "1", "--quiet", "rules"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "config.yaml is invalid:" in out and "duplicate key 'scale'" in out and "column 1" in out


def test_schema_defaults_match_the_shipped_config():
    """A key left out of config.yaml gets the value config.yaml ships (#14 finding 10: cells_per_job)."""
    from pathlib import Path

    from fedrepro.experiments.yamlio import read_yaml
    from fedrepro.experiments.config import load_schema

    shipped = read_yaml(Path(__file__).resolve().parents[1] / "config.yaml")
    props = load_schema()["properties"]
    for key in ("cells_per_job", "kernel_threads", "scale", "strict", "progress_seconds"):
        if "default" in props[key] and key in shipped:
            assert props[key]["default"] == shipped[key], key


SAME_A = {"problem": {"name": "linreg_synthetic", "m": 8, "n": 5},
          "algorithms": {"fedadmm": {}, "fedavg": {"step_c": 0.5}}, "grid": {"k0": [1, 2]},
          "seeds": 1, "max_rounds": 4, "rho": 0.5, "stop": {"rule": "none"},
          "stop_by_algorithm": {"fedavg": {"rule": "target", "reference": "fedadmm"}}}
# k0 = 2 repeats SAME_A's runs (problem.n = 5 is the block's own value: a label only); k0 = 3 does not
SAME_B = {**SAME_A, "grid": {"k0": [2, 3], "problem.n": [5]}}


def test_same_runs_point_back_to_the_first_experiment_with_the_run():
    from fedrepro.experiments.build_plan import run_key, same_runs

    a, b = expand("custom", "a", SAME_A, "quick", 7), expand("custom", "b", SAME_B, "quick", 7)
    copies = same_runs({("custom", "a"): a, ("custom", "b"): b})
    assert {c["cell"] for c in b if c["k0"] == 2} == set(copies)          # both algorithms, fedavg by its reference
    for cell_id_, source in copies.items():
        copy_ = next(c for c in b if c["cell"] == cell_id_)
        assert source["experiment"] == "a" and run_key(source) == run_key(copy_)
        assert source["columns"] == {"k0": 2} and copy_["columns"] == {"k0": 2, "n": 5}
    # the later experiment copies the earlier one, whichever it is; none within one experiment
    assert {s["experiment"] for s in same_runs({("custom", "b"): b, ("custom", "a"): a}).values()} == {"b"}
    assert same_runs({("custom", "a"): a}) == {}
    # a target-stop run repeats another only when its reference run does
    moved = {**SAME_B, "algorithms": {"fedadmm": {"r0": 0.3}, "fedavg": {"step_c": 0.5}}}
    c = expand("custom", "c", moved, "quick", 7)
    assert same_runs({("custom", "a"): a, ("custom", "c"): c}) == {}
    # other papers never share runs
    assert same_runs({("p", "a"): expand("p", "a", SAME_A, "quick", 7), ("q", "b"): expand("q", "b", SAME_B, "quick", 7)}) == {}
    # the experiment's dataset list is its data dependencies, not the run's (fedadmm_gong's table3 reads
    # MNIST, FMNIST and CIFAR-10, table4 MNIST and CIFAR-10: their MNIST runs are one run)
    wider = [dict(cell, datasets=["mnist", "cifar10"]) for cell in b]
    assert set(same_runs({("custom", "a"): a, ("custom", "b"): wider})) == set(copies)
    # ... so the one with more datasets may be skipped (one missing) while the other runs: then the
    # other's cells run themselves, copying nothing from an experiment that is not built
    assert same_runs({("custom", "a"): a, ("custom", "b"): wider}, skipped={("custom", "a"): ["fashion_mnist"]}) == {}


def test_a_relabelled_run_is_what_running_the_cell_gives():
    """relabel_run(rows of the source run) equals run_frame of the copy's own run, column for column
    and in the same order, but for the timings (a second measurement of the same computation)."""
    import pandas as pd

    from fedrepro.experiments.build_plan import same_runs
    from fedrepro.experiments.results import relabel_run
    from fedrepro.experiments.runner import run_cell

    a, b = expand("custom", "a", SAME_A, "quick", 7), expand("custom", "b", SAME_B, "quick", 7)
    copies = same_runs({("custom", "a"): a, ("custom", "b"): b})
    timings = ["run_wall_time", "run_cpu_time", "run_local_time", "run_local_cpu_time",
               "wall_time", "cpu_time", "local_time", "local_cpu_time"]
    ran = {c["cell"]: run_cell(c) for c in a if c["algorithm"] == "fedadmm"}
    for c in b:
        if c["cell"] not in copies or c["algorithm"] != "fedadmm":
            continue
        source = copies[c["cell"]]
        got = relabel_run(pd.concat(ran.values(), ignore_index=True), source, c)
        want = run_cell(c)
        assert list(got.columns) == list(want.columns)
        pd.testing.assert_frame_equal(got.drop(columns=timings), want.drop(columns=timings))
        assert (got[timings].to_numpy() == ran[source["cell"]][timings].to_numpy()).all()
    with pytest.raises(ValueError, match="not in its file"):
        relabel_run(ran[a[0]["cell"]].iloc[0:0], a[0], b[0])


def test_relabel_replaces_the_labels_and_refuses_a_label_that_hides_a_metric():
    import pandas as pd

    from fedrepro.experiments.results import relabel_run

    frame = pd.DataFrame({"paper": "custom", "experiment": "a", "cell": "s", "algorithm": "x", "instance": 0,
                          "seed": 1, "swept": '["g"]', "g": [None, None], "round": [0, 1]})
    source = {"cell": "s", "paper": "custom", "experiment": "a", "columns": {"g": None}}
    out = relabel_run(frame, source, {"cell": "c", "experiment": "b", "columns": {"h": 2}})
    assert list(out.columns) == ["paper", "experiment", "cell", "algorithm", "instance", "seed", "swept", "h", "round"]
    assert (out["experiment"] == "b").all() and (out["h"] == 2).all() and (out["swept"] == '["h"]').all()
    metric = frame.assign(g=[0.1, 0.2])          # a recorded metric named like the swept key
    with pytest.raises(ValueError, match="recorded metric"):
        relabel_run(metric, {**source, "columns": {"g": 0.1}}, {"cell": "c", "experiment": "b", "columns": {}})


def test_the_workflow_config_is_read_once_strictly_and_the_command_line_wins(tmp_path):
    """The Snakefile's hook (fedrepro.experiments.config.workflow_config): config.yaml, then each
    --configfile in order (strict: a duplicate key names the file), then --config wins."""
    from fedrepro.experiments.config import workflow_config

    (tmp_path / "config.yaml").write_text("scale: quick\nseed: 1\ndata: {download: false, strict: false}\n")
    extra = tmp_path / "extra.yaml"
    extra.write_text("seed: 2\ndata: {download: true}\nverify: {budget_cpu_s: 1e3}\n")
    cfg = workflow_config(tmp_path, [extra], {"seed": 3, "k": "5e-1"})
    assert cfg["seed"] == 3 and cfg["scale"] == "quick" and cfg["k"] == 0.5
    assert cfg["data"] == {"download": True, "strict": False} and cfg["verify"]["budget_cpu_s"] == 1000.0
    dup = tmp_path / "dup.yaml"
    dup.write_text("seed: 1\nseed: 2\n")
    with pytest.raises(ConfigError, match=r"--configfile .*dup.yaml is invalid: .*duplicate key 'seed'"):
        workflow_config(tmp_path, [dup], {})
