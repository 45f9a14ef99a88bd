"""Every malformed edit of a config is rejected at parse time (#14 finding 1): the path the Snakefile
runs before any job (schema validation, experiment blocks, cell expansion with the registries and the
components' declared constraints) raises ConfigError naming the problem."""
import copy
from pathlib import Path

import pytest

from fedrepro.core.params import ConfigError
from fedrepro.experiments.expansion import all_cells, load_experiments
from fedrepro.experiments.config import validate_config, validate_experiment

ROOT = Path(__file__).resolve().parents[1]
BASE = {
    "scale": "quick", "seed": 1, "papers": ["fedepm"],
    "experiments": {
        "mine": {"problem": {"name": "linreg_synthetic", "m": 8, "n": 10},
                 "algorithms": {"fedadmm": {}, "fedavg": {"step_c": 0.5}},
                 "grid": {"k0": [2, 4]}, "mechanism": {"name": "laplace_epm", "epsilon": 1.0e4},
                 "seeds": 2, "max_rounds": 10, "stop": {"rule": "none"}},
        "dro": {"datasets": ["fashion_mnist"], "problem": {"name": "worker_neural", "dataset": "fmnist3"},
                "delays": {"H_max": 5.0}, "tau": "4N", "max_rounds": 30,
                "algorithms": {"aspire": {"lr": 0.02}, "afl": {"lr": 0.02}}},
    },
}


def parse(config: dict) -> int:
    """The Snakefile's parse-time checks; returns the number of cells."""
    validate_config(config)
    for paper, exps in load_experiments(config, ROOT).items():
        for exp_id, block in exps.items():
            validate_experiment(block, f"experiment {paper}/{exp_id}")
    return sum(len(c) for c in all_cells(config, ROOT).values())


def edit(path: str, value):
    def apply(cfg):
        keys = path.split("/")
        node = cfg
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
    return apply


MUTATIONS = {
    "unknown algorithm": edit("experiments/mine/algorithms", {"fedadmmm": {}}),
    "typo'd algorithm parameter": edit("experiments/mine/algorithms/fedavg", {"step_cc": 0.5}),
    "unknown problem": edit("experiments/mine/problem/name", "adult_logregg"),
    "unknown problem key": edit("experiments/mine/problem/mm", 3),
    "problem m = 0": edit("experiments/mine/problem/m", 0),
    "unknown mechanism": edit("experiments/mine/mechanism/name", "laplace_epmm"),
    "epsilon = 0": edit("experiments/mine/mechanism/epsilon", 0),
    "rho 1.5 in a grid": edit("experiments/mine/grid", {"rho": [0.5, 1.5]}),
    "k0 not a number in a grid": edit("experiments/mine/grid", {"k0": [4, "twelve"]}),
    "grid key of an absent algorithm": edit("experiments/mine/grid", {"fedprox.mu": [0.1, 1.0]}),
    "grid key with an unknown prefix": edit("experiments/mine/grid", {"problm.m": [4, 8]}),
    "seeds 0": edit("experiments/mine/seeds", 0),
    "negative max_rounds": edit("experiments/mine/max_rounds", -1),
    "eval_every 0": edit("experiments/mine/eval_every", 0),
    "unknown stop rule": edit("experiments/mine/stop", {"rule": "nope"}),
    "unknown block key": edit("experiments/mine/rounds", 10),
    "unknown attack": edit("experiments/mine/attack", {"name": "signflipp"}),
    "unknown paper": edit("papers", ["fedepmm"]),
    "override of an absent experiment": edit("paper_overrides", {"fedepm": {"fig99": {"seeds": 2}}}),
    "cells_per_job 0": edit("cells_per_job", {"quick": 0}),
    "unknown scale": edit("scale", "huge"),
    "delay model with H_max < 1": edit("experiments/dro/delays", {"H_max": 0.5}),
    "unknown delay key": edit("experiments/dro/delays", {"speed": 1}),
    "time budget without delays": lambda cfg: (cfg["experiments"]["dro"].pop("delays"),
                                               cfg["experiments"]["dro"].update(time_budget=10.0)),
    "bad staleness": edit("experiments/dro/tau", "fourN"),
    "asynchronous rule with a mechanism": edit("experiments/dro/mechanism", {"name": "laplace_epm", "epsilon": 1e4}),
    "asynchronous rule with rho": edit("experiments/dro/rho", 0.5),
    "ASPIRE S = 0": edit("experiments/dro/algorithms/aspire", {"S": 0}),
    "unknown per-worker dataset": edit("experiments/dro/problem/dataset", "fmnist4"),
    "prior of the wrong kind": edit("experiments/dro/algorithms/afl", {"prior": "skewed"}),
    "plot metric no run records": edit("experiments/mine/plot", {"metrics": ["objective", "bogus"]}),
    "plot metric of another problem": edit("experiments/dro/plot", {"metrics": ["grad_norm2"]}),
}


def test_the_base_config_parses():
    assert parse(copy.deepcopy(BASE)) > 0


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_every_malformed_edit_is_rejected_before_any_job(name):
    cfg = copy.deepcopy(BASE)
    MUTATIONS[name](cfg)
    with pytest.raises(ConfigError):
        parse(cfg)


def test_plot_metrics_the_runs_record_are_accepted():
    """The catalogue admits what the problem, the algorithms and every run record (worker-indexed
    names included), so the check rejects misspellings only."""
    cfg = copy.deepcopy(BASE)
    cfg["experiments"]["mine"]["plot"] = {"metrics": ["objective", "grad_norm2", "accuracy", "rounds", "run_cpu_time"]}
    cfg["experiments"]["dro"]["plot"] = {"metrics": ["acc_w", "loss_worker_2", "n_planes", "lambda_1", "lambda_last"]}
    assert parse(cfg) > 0


def test_a_plot_metric_missing_from_the_results_is_named_not_replaced(tmp_path):
    import pandas as pd

    from fedrepro.figures.generic import plot_rounds, plot_sweep

    df = pd.DataFrame({"paper": "custom", "experiment": "mine", "cell": "c", "algorithm": "fedavg",
                       "round": [0, 1], "objective": [2.0, 1.0], "rounds": [1, 1]})
    for plot in (plot_rounds, plot_sweep):
        with pytest.raises(ValueError, match=r"plot.metrics: \['accuracy'\] are not in the results of custom/mine"):
            plot(df, tmp_path / "x", metrics=["accuracy"])
