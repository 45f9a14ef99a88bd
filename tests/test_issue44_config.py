"""Issue #44, config side: a researcher's own sweep is either run as written or refused when the config
is checked (before any job), naming the key and the fix. Each test is one trial of the issue."""
from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from fedrepro.core.params import ConfigError
from fedrepro.experiments.expansion import all_cells, load_experiments
from fedrepro.experiments.yamlio import deep_merge
from fedrepro.experiments.config import validate_config, validate_experiment

ROOT = Path(__file__).resolve().parents[1]
LOGREG = {"problem": {"name": "logreg", "dataset": "adult", "m": 10},
          "algorithms": {"fedavg": {"step_c": 0.5}}, "max_rounds": 3}


def parse(config: dict) -> dict:
    """The Snakefile's parse-time checks (workflow/rules/common.smk); returns the cells."""
    validate_config(config)
    for paper, exps in load_experiments(config, ROOT).items():
        for exp_id, block in exps.items():
            validate_experiment(block, f"experiment {paper}/{exp_id}")
    return all_cells(config, ROOT)


def mine(**block) -> dict:
    return {"scale": "quick", "papers": [], "experiments": {"mine": block}}


def with_partition(part, **more) -> dict:
    return {**LOGREG, "problem": {**LOGREG["problem"], "partition": part}, **more}


def refused(config: dict, *names: str) -> str:
    with pytest.raises(ConfigError) as err:
        parse(copy.deepcopy(config))
    for name in names:
        assert name in str(err.value), (name, str(err.value))
    return str(err.value)


# ------------------------------------------------------------------ 1. datasets and partitions
def test_logreg_without_datasets_reads_the_dataset_its_problem_names():
    cells = parse(mine(**LOGREG))[("custom", "mine")]
    assert [c["datasets"] for c in cells] == [["adult"]]


def test_a_datasets_list_without_the_problems_dataset_is_refused():
    refused(mine(**LOGREG, datasets=["mnist"]), "adult", "datasets")


def test_logreg_without_a_dataset_is_refused_naming_the_key():
    block = {**LOGREG, "problem": {"name": "logreg", "m": 10}}
    refused(mine(**block), "problem.dataset")


def test_inferred_datasets_follow_a_swept_dataset():
    block = {**LOGREG, "grid": {"problem.dataset": ["adult", "real_sim"]}}
    cells = parse(mine(**block))[("custom", "mine")]
    assert sorted(d for c in cells for d in c["datasets"]) == ["adult", "real_sim"]


def test_label_partitions_run_on_the_logistic_problem():
    """The issue's job crash ("partitioner 'dirichlet' needs labels="): the convex problem now passes
    its labels, and the clients are exactly the rule's partition of them."""
    from fedrepro.data.partition import partition
    from fedrepro.problems.glm import logreg_from_arrays

    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((400, 5)), (rng.random(400) < 0.3).astype(float)
    for part in ({"method": "dirichlet", "alpha": 0.3}, {"method": "label_shards", "k": 1}):
        prob = logreg_from_arrays(X, y, {"m": 10, "partition": part}, seed=3, name="t")
        params = {k: v for k, v in part.items() if k != "method"}
        want = partition(part["method"], labels=y.astype(np.int64), seed=3, m=10, **params)
        assert prob.client_sizes.tolist() == [len(p) for p in want]
    same = logreg_from_arrays(X, y, {"m": 10, "partition": "random_cuts"}, seed=3, name="t")
    want = partition("random_cuts", n_samples=400, seed=3, m=10)
    assert same.client_sizes.tolist() == [len(p) for p in want]


def test_the_dirichlet_trial_passes_the_check():
    parse(mine(**with_partition({"method": "dirichlet", "alpha": 0.3})))


def test_unknown_partition_parameters_are_refused_at_config_time():
    refused(mine(**with_partition({"method": "dirichlet", "alpah": 0.3})), "problem.partition", "alpah", "alpha")
    refused(mine(**with_partition({"method": "dirichelt"})), "problem.partition.method", "dirichlet")
    refused(mine(**with_partition({"method": "dirichlet"})), "missing", "alpha")
    refused(mine(**with_partition({"method": "iid", "m": 3})), "problem.partition", "'m'")
    refused(mine(**with_partition({"method": "natural"})), "groups")


def test_one_partition_syntax_for_every_problem_and_the_older_spellings():
    from fedrepro.problems.neural import neural_spec_defaults
    from fedrepro.problems.softmax import softmax_partition

    one = {"method": "dirichlet", "alpha": 0.5}
    assert softmax_partition({"partition": one}) == one
    assert softmax_partition({"partition": "dirichlet", "partition_params": {"alpha": 0.5}}) == one
    assert softmax_partition({}) == {"method": "pair_digit"}
    assert neural_spec_defaults({"partition": one})["partition"] == one
    assert neural_spec_defaults({"partition": "dirichlet", "partition_params": {"alpha": 0.5}})["partition"] == one
    assert neural_spec_defaults({"partition": "iid"})["partition"] == {"method": "iid"}
    with pytest.raises(ValueError, match="write them once"):
        softmax_partition({"partition": one, "partition_params": {"alpha": 0.1}})
    for problem in ({"name": "softmax", "dataset": "mnist", "Q": 20},
                    {"name": "neural", "dataset": "mnist", "model": "mlp1", "m": 20}):
        alg = {"frpg": {}} if problem["name"] == "softmax" else {"fedavg_sgd": {"E": 1, "B": 10, "lr": 0.1}}
        block = {"problem": {**problem, "partition": {"method": "dirichlet", "alpah": 1}}, "algorithms": alg,
                 "max_rounds": 2}
        refused(mine(**block), "alpah")


def test_settings_replace_a_partition_whose_method_changes():
    block = with_partition({"method": "dirichlet", "alpha": 0.3},
                           settings=[{"label": "dir"},
                                     {"label": "shards", "problem": {"partition": {"method": "label_shards", "k": 2}}}])
    cells = parse(mine(**block))[("custom", "mine")]
    parts = {c["setting"] if "setting" in c else c["columns"]["setting"]: c["problem"]["partition"] for c in cells}
    assert parts == {"dir": {"method": "dirichlet", "alpha": 0.3}, "shards": {"method": "label_shards", "k": 2}}
    # the same kind still merges
    assert deep_merge({"p": {"method": "dirichlet", "alpha": 0.3, "min_size": 2}},
                      {"p": {"method": "dirichlet", "alpha": 1.0}}) == {"p": {"method": "dirichlet", "alpha": 1.0,
                                                                            "min_size": 2}}


# ------------------------------------------------------------------ 2. nested grid keys, metrics, shadowed values
def test_a_nested_grid_key_sweeps_the_partition_parameter():
    block = with_partition({"method": "dirichlet", "alpha": 0.3}, grid={"problem.partition.alpha": [0.1, 1.0]})
    cells = parse(mine(**block))[("custom", "mine")]
    assert sorted(c["problem"]["partition"]["alpha"] for c in cells) == [0.1, 1.0]
    assert all(c["problem"]["partition"]["method"] == "dirichlet" for c in cells)
    assert sorted(c["columns"]["alpha"] for c in cells) == [0.1, 1.0]


def test_a_nested_grid_key_is_validated_with_its_path():
    block = with_partition({"method": "dirichlet", "alpha": 0.3}, grid={"problem.partition.alpah": [0.1, 1.0]})
    refused(mine(**block), "problem.partition", "alpah")
    block = {**LOGREG, "problem": {**LOGREG["problem"], "lam": 1e-3}, "grid": {"problem.lam.x": [1, 2]}}
    refused(mine(**block), "problem.lam")


def test_attack_and_algorithm_parameters_sweep():
    block = {"problem": {"name": "linreg_synthetic", "m": 8, "n": 5}, "algorithms": {"fedavg": {"step_c": 0.5}},
             "attack": {"name": "gaussian", "B": 2, "c": 1.0}, "max_rounds": 2,
             "grid": {"attack.c": [1.0, 10.0], "fedavg.step_c": [0.1, 0.5]}}
    cells = parse(mine(**block))[("custom", "mine")]
    assert sorted((c["attack"]["c"], c["params"]["step_c"]) for c in cells) == [(1.0, 0.1), (1.0, 0.5),
                                                                                 (10.0, 0.1), (10.0, 0.5)]
    block["grid"] = {"attack.cc": [1.0, 10.0]}
    refused(mine(**block), "cc")


def test_unknown_metrics_are_refused_at_config_time():
    refused(mine(**LOGREG, metrics=["bogus_metric"]), "metrics", "bogus_metric", "accuracy")
    refused(mine(**LOGREG, plot={"metrics": ["bogus_metric"]}), "plot.metrics", "bogus_metric")
    parse(mine(**LOGREG, metrics=["objective", "accuracy"]))


@pytest.mark.parametrize("eps", [-1, 0, float("nan"), float("inf")])
def test_a_malformed_base_value_is_refused_even_when_a_grid_shadows_it(eps):
    block = {"problem": {"name": "linreg_synthetic", "m": 8, "n": 5}, "algorithms": {"fedavg": {"step_c": 0.5}},
             "mechanism": {"name": "laplace_epm", "epsilon": eps}, "grid": {"mechanism.epsilon": [1.0, 10.0]},
             "max_rounds": 2}
    refused(mine(**block), "mechanism.epsilon", "epsilon")


def test_a_malformed_base_run_setting_or_parameter_shadowed_by_a_grid_is_refused():
    base = {"problem": {"name": "linreg_synthetic", "m": 8, "n": 5}, "max_rounds": 2}
    refused(mine(**base, algorithms={"fedavg": {"step_c": -3}}, grid={"fedavg.step_c": [0.1, 0.5]}), "step_c")
    refused(mine(**base, algorithms={"fedavg": {"step_c": 0.5}}, k0=0, grid={"k0": [1, 2]}), "k0")


# ------------------------------------------------------------------ 3. user data, overrides, attacks
def _npz(path, seed):
    rng = np.random.default_rng(seed)
    np.savez(path, X=rng.standard_normal((40, 3)), y=rng.standard_normal(40), client=np.repeat(np.arange(4), 10))


def test_a_regenerated_user_npz_reruns_its_jobs(tmp_path):
    """The issue's trial: regenerate the npz, `snakemake -n` said "Nothing to be done"."""
    import os
    import shutil
    import subprocess
    import sys
    import time

    import yaml

    snakemake = shutil.which("snakemake", path=str(Path(sys.executable).parent)) or shutil.which("snakemake")
    if snakemake is None:
        pytest.skip("snakemake is not installed")
    work = tmp_path / "w"
    work.mkdir()
    _npz(work / "mine.npz", 0)
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"papers": [], "experiments": {"own": {
        "problem": {"name": "linreg", "data": "mine.npz"}, "algorithms": {"fedadmm": {}},
        "max_rounds": 2, "k0": 1, "rho": 1.0, "stop": {"rule": "none"}}}}))
    base = [snakemake, "-s", str(ROOT / "Snakefile"), "-d", str(work), "--configfile", str(config), "-j", "1"]
    target = "results/custom/own.parquet"
    res = subprocess.run([*base, target], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    dry = subprocess.run([*base, "-n", target], capture_output=True, text=True, timeout=300)
    assert "Nothing to be done" in dry.stdout + dry.stderr
    time.sleep(1.1)
    _npz(work / "mine.npz", 1)                       # regenerated: new content, newer file
    os.utime(work / "mine.npz")
    dry = subprocess.run([*base, "-n", target], capture_output=True, text=True, timeout=300)
    out = dry.stdout + dry.stderr
    assert dry.returncode == 0, out[-3000:]
    assert "run_cells" in out and "Nothing to be done" not in out, out[-3000:]
    (work / "mine.npz").unlink()                     # a missing file is named before any job
    dry = subprocess.run([*base, "-n", target], capture_output=True, text=True, timeout=300)
    assert dry.returncode != 0 and "problem.data" in dry.stdout + dry.stderr and "mine.npz" in dry.stdout + dry.stderr


def _cells(config):
    return parse(copy.deepcopy(config))


def test_a_top_level_override_wins_over_the_papers_scale_block():
    """`paper_overrides: {fedepm: {fig3: {seeds: 1}}}` was silently ignored: scales.quick.seeds won."""
    for scale in ("quick", "verify"):
        cells = _cells({"scale": scale, "papers": ["fedepm"], "paper_overrides": {"fedepm": {"fig3": {"seeds": 1}}}})
        assert {c["instance"] for c in cells[("fedepm", "fig3")]} == {0}
        plain = _cells({"scale": scale, "papers": ["fedepm"]})
        assert {c["instance"] for c in plain[("fedepm", "fig3")]} != {0}
    # the override's own scales block still applies, last
    cells = _cells({"scale": "quick", "papers": ["fedepm"],
                    "paper_overrides": {"fedepm": {"fig3": {"seeds": 1, "scales": {"quick": {"seeds": 3}}}}}})
    assert {c["instance"] for c in cells[("fedepm", "fig3")]} == {0, 1, 2}


def test_an_override_of_a_swept_key_is_refused_naming_the_grid():
    from fedrepro.experiments.expansion import apply_override

    block = {"problem": {"name": "linreg_synthetic"}, "algorithms": {"fedavg": {}}, "grid": {"k0": [1, 2]},
             "scales": {"quick": {"seeds": 2}}, "settings": [{"label": "a", "seeds": 4}]}
    with pytest.raises(ConfigError, match=r"k0.*grid"):
        apply_override(block, {"k0": 5}, "paper_overrides.p.e")
    out = apply_override(block, {"seeds": 1})
    assert out["seeds"] == 1 and out["scales"]["quick"]["seeds"] == 1 and out["settings"][0]["seeds"] == 1


def test_overrides_of_a_paper_not_built_are_still_checked():
    refused({"scale": "quick", "papers": [], "paper_overrides": {"fedepm": {"fig3": {"seedz": 1}}}},
            "paper_overrides.fedepm.fig3", "seedz")
    refused({"scale": "quick", "papers": [], "paper_overrides": {"fedepm": {"fig33": {"seeds": 1}}}},
            "paper_overrides.fedepm.fig33")
    refused({"scale": "quick", "papers": [], "paper_overrides": {"fedepmm": {}}}, "fedepmm")


def test_faulty_ids_outside_the_workers_or_b_above_q_are_refused_with_the_numbers():
    msg = refused({"scale": "quick", "papers": ["frpg"],
                   "paper_overrides": {"frpg": {"label_flip": {"attack": {"faulty": [999]}}}}},
                  "999", "attack.faulty", "20 workers")
    assert len(msg) < 600
    refused({"scale": "quick", "papers": ["frpg"], "paper_overrides": {"frpg": {"label_flip": {"attack": {"B": 1000}}}}},
            "B = 1000", "at most 20", "problem.Q")
    block = {"problem": {"name": "linreg_synthetic", "m": 3, "n": 5}, "algorithms": {"fedavg": {"step_c": 0.5}},
             "attack": {"name": "gaussian"}, "max_rounds": 2}         # the default B = 4 > m = 3
    refused(mine(**block), "B = 4", "problem.m = 3")
    block = {**block, "attack": {"name": "gaussian", "B": 2}, "grid": {"problem.m": [8, 1]}}
    refused(mine(**block), "B = 2", "problem.m = 1")


def test_the_run_names_b_above_the_worker_count_too():
    from fedrepro.sim.attacks import build_attack

    with pytest.raises(ValueError, match="B = 30 faulty workers, but the problem has only 20"):
        build_attack({"name": "gaussian", "B": 30}).check_workers(20)


def test_a_plain_snakemake_call_redoes_an_interrupted_job(tmp_path):
    """After an interrupted build, `snakemake -j 2 fedepm` stopped with IncompleteFilesException (only
    reproduce.sh and the profiles passed --rerun-incomplete); the default workflow profile now does."""
    import base64
    import shutil
    import subprocess
    import sys

    import yaml

    snakemake = shutil.which("snakemake", path=str(Path(sys.executable).parent)) or shutil.which("snakemake")
    if snakemake is None:
        pytest.skip("snakemake is not installed")
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"papers": [], "experiments": {"tiny": {
        "problem": {"name": "linreg_synthetic", "m": 8, "n": 5}, "algorithms": {"fedadmm": {}},
        "max_rounds": 2, "k0": 1, "rho": 1.0, "stop": {"rule": "none"}}}}))
    work = tmp_path / "w"
    base = [snakemake, "-s", str(ROOT / "Snakefile"), "-d", str(work), "--configfile", str(config), "-j", "1"]
    target = "results/custom/tiny.parquet"
    assert subprocess.run([*base, target], capture_output=True, text=True, timeout=300).returncode == 0
    job = next((work / "results/cells/custom/tiny").glob("*.parquet")).relative_to(work)
    marker = work / ".snakemake/incomplete" / base64.urlsafe_b64encode(str(job).encode()).decode()
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text('{"external_jobid": null}')       # what Snakemake leaves when a job is killed
    res = subprocess.run([*base, "-n", target], capture_output=True, text=True, timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 0 and "IncompleteFilesException" not in out and "run_cells" in out, out[-3000:]
    bare = subprocess.run([*base, "-n", "--workflow-profile", "none", target], capture_output=True, text=True,
                          timeout=300)
    assert "IncompleteFilesException" in bare.stdout + bare.stderr      # what the profile saves the user from


def test_the_datasets_each_problem_reads():
    from fedrepro.problems import problem_datasets

    assert problem_datasets({"name": "logreg", "dataset": "real_sim"}) == ["real_sim"]
    assert problem_datasets({"name": "adult_logreg"}) == ["adult"]
    assert problem_datasets({"name": "softmax", "dataset": "usps-roweis"}) == ["usps-roweis"]
    assert problem_datasets({"name": "neural"}) == ["mnist"]                     # its default dataset
    assert problem_datasets({"name": "worker_neural", "dataset": "scma"}) == ["chest_accelerometer"]
    for spec in ({"name": "linreg_synthetic"}, {"name": "linreg", "data": "x.npz"},
                 {"name": "neural", "data": "x.npz"}, {"name": "nope"}):
        assert problem_datasets(spec) == []
