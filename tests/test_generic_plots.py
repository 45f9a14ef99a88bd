"""Custom experiments with a diverged run still plot (log axis included): the run's line ends at a
marked point instead of crashing the build (issue #14, 3)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import itertools  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from fedrepro.experiments.results import run_frame, summarize  # noqa: E402
from fedrepro.figures.generic import plot_rounds, plot_sweep  # noqa: E402
from fedrepro.sim.loop import simulate  # noqa: E402
from tests.toys import LocalGD, Quadratic  # noqa: E402


def _frames():
    p = Quadratic.random(m=6, dim=3)
    frames = []
    for step in (0.5, 3.0, 60.0, 400.0):                # 60: finite values up to ~1e300; 400: inf
        cell = {"paper": "custom", "experiment": "steps", "cell": f"c{step}", "algorithm": "local_gd",
                "seed": 0, "columns": {"step": step}, "k0": 5}
        res = simulate(p, LocalGD(step=step), k0=5, max_rounds=150, seed=0, diverge_factor=None)
        frames.append(run_frame(cell, res, p.describe(), {"step": step}))
    return pd.concat(frames, ignore_index=True)


def test_a_diverged_run_is_plotted_as_ended_on_linear_and_log_axes(tmp_path):
    df = _frames()
    assert set(df.groupby("cell")["status"].last()) == {"max_rounds", "diverged"}
    assert not np.isfinite(df["objective"]).all()                 # an inf/NaN objective is in the data
    assert df["objective"].abs().where(np.isfinite(df["objective"])).max() > 1e200
    for logy in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("error")              # a clean build prints no warning either
            _plot(df, tmp_path, logy)


def _plot(df, tmp_path, logy):
    out = tmp_path / f"rounds_{logy}.png"
    plot_rounds(df, out, metrics=("objective", "grad_norm2"), logy=logy)
    assert out.stat().st_size > 1000
    out = tmp_path / f"sweep_{logy}.png"
    plot_sweep(summarize(df), out, metrics=("objective",), logy=logy)
    assert out.stat().st_size > 1000


# =========================================================================== figures fit for a paper (issue #44, 7)

import json  # noqa: E402

from matplotlib.colors import to_hex  # noqa: E402

from fedrepro.figures.generic import diverged_runs, use_log  # noqa: E402

ALGS = ("fedadmm", "fedavg")
EPS = (1e3, 1e4, 1e5, 1e6)            # spans three decades: a log x axis
K0 = (5, 20)                          # the extra swept parameter: facets of the sweep figure


def sweep_frame(seeds=3, rounds=25, diverge=True):
    """A tidy trace in the results schema (docs/results-schema.md): 2 algorithms x 4 epsilons x 2 k0
    (16 series) x ``seeds``, with objective, grad_norm2 and accuracy. One run (fedadmm, k0 = 20,
    epsilon = 1e3, one seed) diverges: objective 0.69 -> 1e12, like the issue's Adult run."""
    rng = np.random.default_rng(0)
    rows = []
    for alg, eps, k0 in itertools.product(ALGS, EPS, K0):
        for seed in range(seeds):
            cell = f"{alg}-{eps:g}-{k0}-{seed}"
            bad = diverge and alg == "fedadmm" and k0 == 20 and eps == 1e3 and seed == 1
            floor = 0.3 + 50.0 / eps * (2 if alg == "fedavg" else 1)
            for r in range(rounds + 1):
                f = 0.69 * 10 ** (12 * r / rounds) if bad else floor + (0.69 - floor) * np.exp(-r / (3 + k0 / 5)) \
                    + 0.01 * rng.random()
                rows.append({"paper": "custom", "experiment": "twelve_series", "cell": cell, "algorithm": alg,
                             "instance": seed, "seed": 100 + seed, "k0": k0, "epsilon": eps,
                             "swept": json.dumps(["epsilon", "k0"]), "status": "max_rounds",
                             "stop_reason": "max_rounds", "rounds": rounds, "round": r, "objective": f,
                             "grad_norm2": (f - 0.29) ** 2 * 1e-2 + 1e-8, "accuracy": min(0.99, 0.5 + 0.02 * r)})
    return pd.DataFrame(rows)


def twelve_series_frame(**kw):
    """12 series: 2 algorithms x 3 epsilons x 2 k0."""
    df = sweep_frame(**kw)
    return df[df["epsilon"] != 1e5].reset_index(drop=True)


def _drawn(ax):
    """(colour, dash pattern) of each aggregate line of a panel (the thin diverged lines excluded)."""
    return {(to_hex(ln.get_color()), tuple(ln._unscaled_dash_pattern[1] or ()))
            for ln in ax.lines if len(ln.get_xdata()) >= 2 and ln.get_linewidth() > 1.0}


def test_twelve_series_have_distinct_styles_a_shared_legend_and_log_where_allowed(tmp_path):
    df = twelve_series_frame()
    fig = plot_rounds(df, tmp_path / "rounds", metrics=("objective", "grad_norm2", "accuracy"))
    assert (tmp_path / "rounds.png").stat().st_size > 1000 and (tmp_path / "rounds.pdf").exists()
    axes = fig.axes
    assert len(axes) == 3
    for ax in axes:
        assert len(_drawn(ax)) == 12, "every one of the 12 series has its own colour and dash pattern"
    colours = {c for c, _ in _drawn(axes[0])}
    assert len(colours) == 12, "no colour is reused"
    (legend,) = fig.legends                                   # one legend shared by the panels
    texts = [t.get_text() for t in legend.get_texts()]
    assert len(set(texts)) == len(texts) == 13 and any("diverged" in t for t in texts)
    styles = {(to_hex(h.get_color()), tuple(h._unscaled_dash_pattern[1] or ())) for h in legend.legend_handles[:12]}
    assert styles == _drawn(axes[0]), "the legend shows each series as it is drawn"
    assert all("_" not in ax.get_title() and ax.get_title() for ax in axes), "titles are labels, not keys"
    # the objective of the aggregated runs spans less than 2 decades: linear; the gradient norm: log
    assert [ax.get_yscale() for ax in axes] == ["linear", "log", "linear"], "never a log axis on accuracy"
    asked = plot_rounds(df, tmp_path / "rounds_logy", metrics=("objective", "grad_norm2", "accuracy"), logy=True)
    assert [ax.get_yscale() for ax in asked.axes] == ["log", "log", "linear"], "logy: true skips accuracy"
    # the diverged run: drawn on its own (thin, dotted), marked x where it leaves the panel, whose
    # range is that of the aggregated runs; not in the mean
    thin = [ln for ln in axes[0].lines if ln.get_linewidth() < 1.0 and len(ln.get_xdata()) > 2]
    assert len(thin) == 1 and np.nanmax(thin[0].get_ydata()) > 1e11 and axes[0].get_ylim()[1] < 1.0
    marks = [ln for ln in axes[0].lines if ln.get_marker() == "x"]
    assert len(marks) == 1 and marks[0].get_xdata()[0] == 1 and marks[0].get_color() == thin[0].get_color()
    means = [ln for ln in axes[0].lines if len(ln.get_xdata()) > 2 and ln.get_linewidth() > 1.0]
    assert max(np.nanmax(ln.get_ydata()) for ln in means) < 1.0, "the diverged run stays out of the mean"


def test_log_scale_per_metric():
    assert use_log("test_accuracy", [0.01, 0.9], logy=True) is False
    assert use_log("rounds", [1, 1000]) is False
    assert use_log("objective", [1e-6, 1.0]) is True
    assert use_log("objective", [0.5, 0.7]) is False and use_log("objective", [0.5, 0.7], logy=True) is True
    assert use_log("objective", [-1.0, 10.0, 1e5], logy=True) is False       # a value <= 0: linear
    assert use_log("objective", [1e-6, 1.0], logy=False) is False


def test_divergence_definition():
    df = twelve_series_frame(seeds=2)
    assert {k[0] for k in diverged_runs(df)} == {"fedadmm-1000-20-1"}
    grown = df.copy()
    run = grown["cell"] == "fedavg-1000-5-0"
    grown.loc[run & (grown["round"] == 20), "objective"] = np.inf          # non-finite
    assert {k[0] for k in diverged_runs(grown)} == {"fedadmm-1000-20-1", "fedavg-1000-5-0"}
    below = df.copy()
    run = below["cell"] == "fedadmm-1000-20-1"
    below.loc[run, "objective"] = below.loc[run, "objective"].clip(upper=0.69 * 1e5)   # grown 1e5x: not diverged
    assert diverged_runs(below) == set()


def test_sweep_facets_every_other_parameter_log_x_and_rounds_only_with_a_stop_rule(tmp_path):
    df = sweep_frame()
    summary = summarize(df)
    fig = plot_sweep(summary, tmp_path / "sweep", metrics=("objective",), stop_rule="none", trace=df)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    # x = epsilon: one panel per k0 value; x = k0: one panel per epsilon value; no "rounds" row
    by_x = {}
    for ax in axes:
        by_x.setdefault(ax.get_xlabel(), []).append(ax.get_title())
    assert sorted(by_x) == ["local steps k0", "privacy budget ε"]
    assert sorted(by_x["privacy budget ε"]) == ["local steps k0 = 20", "local steps k0 = 5"]
    assert sorted(by_x["local steps k0"]) == sorted(f"privacy budget ε = {e}" for e in ("1e3", "1e4", "1e5", "1e6"))
    assert not any("rounds" in ax.get_ylabel() for ax in axes), "no stop rule: no rounds panel"
    for ax in axes:
        assert ax.get_xscale() == ("log" if ax.get_xlabel() == "privacy budget ε" else "linear")
        assert len(_drawn(ax)) == 2, "one line per algorithm, each its own style"
    # the diverged run: an x at the top of its panel (k0 = 20, epsilon = 1e3), outside the mean
    (panel,) = [ax for ax in axes if ax.get_title() == "local steps k0 = 20"]
    marks = [ln for ln in panel.lines if ln.get_marker() == "x"]
    assert len(marks) == 1 and marks[0].get_xdata()[0] == 1e3
    assert max(np.nanmax(ln.get_ydata()) for ln in panel.lines if ln.get_marker() != "x") < 1.0
    assert any("diverged" in t.get_text() for t in fig.legends[0].get_texts())
    with_rule = plot_sweep(summary, tmp_path / "sweep2", metrics=("objective",), stop_rule=["fedadmm30"], trace=df)
    assert any("rounds" in ax.get_ylabel() for ax in with_rule.axes)
