"""Custom experiments with a diverged run still plot (log axis included): the run's line ends at a
marked point instead of crashing the build (issue #14, 3)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

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
