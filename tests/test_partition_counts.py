"""Per-client label counts of the partitions (results/<paper>/partitions.parquet) and their figures:
the counts are the partitioner's on the run's labels, sum to the data size, are computed once per distinct
partition, are written by the workflow, and are drawn as one stacked bar per client."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedrepro.data.dataset import Dataset
from fedrepro.data.partition import partition
from fedrepro.experiments import partitions as P
from fedrepro.problems import build_problem
from fedrepro.problems.glm import logreg_from_arrays

ROOT = Path(__file__).resolve().parents[1]


def fake_images(n_train=400, n_test=40, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, n_train + n_test)
    X = rng.random((n_train + n_test, 784))
    return Dataset("mnist", X, y, np.array(["train"] * n_train + ["test"] * n_test))


def expected_counts(labels, parts, n_classes):
    return np.array([np.bincount(labels[p], minlength=n_classes) for p in parts])


RULES = [("dirichlet", {"alpha": 0.3}), ("label_shards", {"k": 2})]


@pytest.mark.parametrize("rule,params", RULES)
def test_neural_counts_are_the_partitioners_on_the_runs_labels(rule, params):
    ds = fake_images()
    problem = build_problem({"name": "neural", "model": "mlp1", "m": 10, "partition": {"method": rule, **params}},
                            7, dataset=ds)
    labels, counts = problem.label_counts()
    parts = partition(rule, labels=problem.y, seed=7, m=10, **params)
    assert list(labels) == list(range(10)) and counts.shape == (10, 10)
    np.testing.assert_array_equal(counts, expected_counts(problem.y, parts, 10))
    assert counts.sum() == 400 and (counts.sum(axis=1) == problem.client_sizes).all()


@pytest.mark.parametrize("rule,params", RULES)
def test_logistic_counts_are_the_partitioners(rule, params):
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(200, 4)), (rng.random(200) < 0.3).astype(float)
    problem = logreg_from_arrays(X, y, {"m": 5, "partition": {"method": rule, **params}}, 3, name="t")
    labels, counts = problem.label_counts()
    parts = partition(rule, labels=y.astype(np.int64), seed=3, m=5, **params)
    assert list(labels) == [0, 1]
    np.testing.assert_array_equal(counts, expected_counts(y.astype(np.int64), parts, 2))
    assert counts.sum() == 200


def test_least_squares_has_sample_counts_only():
    problem = build_problem({"name": "linreg_synthetic", "m": 6, "n": 3}, 2)
    labels, counts = problem.label_counts()
    assert labels is None and counts.shape == (6, 1)
    np.testing.assert_array_equal(counts[:, 0], problem.client_sizes)
    frame = P.counts_frame(problem)
    assert frame["label"].isna().all() and list(frame["count"]) == list(problem.client_sizes)


def test_softmax_counts_keep_the_true_labels():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 10, 300)
    ds = Dataset("toy", np.abs(rng.normal(size=(300, 4))), y, np.array(["train"] * 250 + ["test"] * 50))
    problem = build_problem({"name": "softmax", "dataset": "toy", "Q": 5, "L": 1.0,
                             "partition": {"method": "dirichlet", "alpha": 0.5}}, 4, dataset=ds)
    labels, counts = problem.label_counts()
    parts = partition("dirichlet", labels=problem.y, seed=4, m=5, alpha=0.5)
    np.testing.assert_array_equal(counts, expected_counts(problem.y, parts, 10))
    assert counts.sum() == 250


def _cells(alphas=(0.1, 1.0), seeds=(1, 2), algorithms=("fedavg", "fedprox")):
    return [{"algorithm": a, "seed": s, "cell": f"{a}{s}{alpha}",
             "problem": {"name": "neural", "model": "mlp1", "dataset": "mnist", "m": 8,
                         "partition": {"method": "dirichlet", "alpha": alpha}},
             "columns": {"algorithm": a, "alpha": alpha}}
            for alpha in alphas for s in seeds for a in algorithms]


def test_table_has_one_block_per_distinct_partition_built_once(tmp_path, monkeypatch):
    fake_images().save(tmp_path / "mnist")
    from fedrepro.experiments import runner

    built = []
    real = runner.cell_problem
    monkeypatch.setattr(runner, "cell_problem", lambda cell, data_dir, attack=None: built.append(cell) or
                        real(cell, data_dir, attack))
    cells = _cells()
    table = P.partition_table({("custom", "a"): cells, ("custom", "b"): cells[:4]}, str(tmp_path))
    assert len(built) == 4                     # 2 alphas x 2 seeds, not per algorithm or experiment
    assert list(table.columns) == ["paper", "experiment", "partition", "problem", "seed", "alpha", "client",
                                   "label", "count"]
    assert "algorithm" not in table.columns    # differs within a partition: not a partition's setting
    a = table[table["experiment"] == "a"]
    assert a["partition"].nunique() == 4 and len(a) == 4 * 8 * 10
    assert (a.groupby("partition")["count"].sum() == 400).all()
    assert str(table["label"].dtype) == "Int64"
    # the partition rows are the partitioner's counts on the run's own problem
    one = a[(a["seed"] == 2) & (a["alpha"] == 1.0)]
    problem = real(cells[-1], str(tmp_path))
    np.testing.assert_array_equal(P.count_matrix(one).to_numpy(), problem.label_counts()[1])
    # pandas users join on the results' problem column and seed
    assert json.loads(one["problem"].iloc[0]) == cells[-1]["problem"]


def test_figure_draws_a_bar_per_client_stacked_by_label(tmp_path):
    from fedrepro.figures.partitions import label_distribution_figure, plot_label_distributions

    rows = []
    for alpha in (0.1, 1.0, 10.0):
        for seed in (1, 2):
            counts = np.random.default_rng(seed).integers(0, 20, size=(60, 3))
            key = f"{alpha}-{seed}"
            rows += [{"paper": "custom", "experiment": "e", "partition": key, "problem": json.dumps({"alpha": alpha}),
                      "seed": seed, "alpha": alpha, "client": c, "label": k, "count": int(counts[c, k])}
                     for c in range(60) for k in range(3)]
    table = pd.DataFrame(rows).astype({"label": "Int64"})
    fig = label_distribution_figure(table, title="custom/e")
    axes = [ax for ax in fig.axes if ax.collections]
    assert len(axes) == 3                                  # first seed of each alpha
    for ax in axes:
        assert len(ax.collections) == 3                    # one stacked series per label
        assert all(len(c.get_paths()) == 50 for c in ax.collections)    # a bar each of the first 50 of 60 clients
        # stacked: label k's bar of a client starts where label k-1's ends
        ends = [np.array([p.vertices[:, 0].max() for p in c.get_paths()]) for c in ax.collections]
        starts = [np.array([p.vertices[:, 0].min() for p in c.get_paths()]) for c in ax.collections]
        np.testing.assert_allclose(starts[1], ends[0])
        np.testing.assert_allclose(starts[2], ends[1])
        assert "clients 0-49 of 60 shown" in ax.get_title() and "seed 1" in ax.get_title()
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["0", "1", "2"]
    assert "3 of 6 partitions shown" in fig._suptitle.get_text()
    import matplotlib.pyplot as plt

    plt.close(fig)
    out = tmp_path / "f" / "e.png"
    plot_label_distributions(table, out)
    assert out.stat().st_size > 1000


SNAKEMAKE = shutil.which("snakemake", path=str(Path(sys.executable).parent)) or shutil.which("snakemake")


@pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed in this environment")
def test_the_workflow_writes_the_table_and_the_figures(tmp_path):
    import yaml

    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({
        "papers": [],
        "experiments": {"tiny": {"problem": {"name": "linreg_synthetic", "m": 8, "n": 5},
                                 "algorithms": {"fedadmm": {}, "fedavg": {"step_c": 0.5}}, "grid": {"problem.m": [8, 12]},
                                 "seeds": 2, "max_rounds": 3, "k0": 2, "rho": 0.5, "stop": {"rule": "none"}}}}))
    w = tmp_path / "w"
    res = subprocess.run([SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "-d", str(w), "--configfile", str(config),
                          "-j", "2", "results/custom/partitions.parquet", "results/custom/tiny.parquet"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    table = pd.read_parquet(w / "results/custom/partitions.parquet")
    tiny = table[table["experiment"] == "tiny"]
    assert tiny["partition"].nunique() == 4 and tiny["label"].isna().all()
    assert sorted(tiny.groupby("partition").size()) == [8, 8, 12, 12]
    runs = pd.read_parquet(w / "results/custom/tiny.parquet").drop_duplicates("cell")
    # each run's partition: its problem and seed; its sample count is the partition's
    merged = runs.merge(tiny.groupby(["problem", "seed"], as_index=False)["count"].sum(), on=["problem", "seed"])
    assert len(merged) == len(runs) == 8 and (merged["count"] == merged["n_samples"]).all()
    assert (w / "figures/custom/partitions/tiny.png").stat().st_size > 1000
