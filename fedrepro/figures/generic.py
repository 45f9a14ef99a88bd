"""Generic plots for any experiment: metric vs round, and final metric vs each swept parameter."""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from fedrepro.figures.base import save_figure  # noqa: E402

def swept_columns(df: pd.DataFrame) -> list[str]:
    """The experiment's swept setting columns (recorded by the runner in ``swept``) that vary."""
    if "swept" not in df.columns:
        return []
    names = sorted({c for v in df["swept"].dropna().unique() for c in json.loads(v)})
    return [c for c in names if c in df.columns and df[c].astype(str).nunique() > 1]


def _label(row, cols) -> str:
    return ", ".join([row["algorithm"]] + [f"{c}={row[c]}" for c in cols if c != "algorithm"])




PLOT_CEILING = 1e100    # values beyond it (or not finite) are not drawn: the run has diverged


def _plottable(values: pd.Series, logy: bool) -> pd.Series:
    """``values`` as floats with what cannot be drawn set to NaN: non-finite, beyond
    :data:`PLOT_CEILING` in magnitude, and non-positive on a log axis."""
    v = values.astype(float)
    keep = np.isfinite(v) & (v.abs() <= PLOT_CEILING)
    if logy:
        keep &= v > 0
    return v.where(keep)


def _requested(frame: pd.DataFrame, metrics) -> list:
    """The metrics a plot was asked for; one the results lack is an error naming it (never a
    silent substitute)."""
    missing = [m for m in metrics if m not in frame.columns]
    if missing:
        raise ValueError(f"plot.metrics: {missing} are not in the results of "
                         f"{frame['paper'].iloc[0]}/{frame['experiment'].iloc[0]}; recorded columns: "
                         f"{sorted(map(str, frame.columns))}")
    return list(metrics)


def plot_rounds(df: pd.DataFrame, out: Path, metrics=None, logy: bool = False, **_):
    """Median over seeds of each metric vs communication round, one line per algorithm x setting
    (default: objective and grad_norm2 where recorded, else the first of objective / test accuracy /
    test loss). Values that cannot be drawn are dropped (:func:`_plottable`): a diverged run's line
    ends and its last drawn point is marked x."""
    if metrics is not None:
        metrics = _requested(df, metrics)
    else:
        metrics = ([m for m in ("objective", "grad_norm2") if m in df.columns]
                   or [m for m in ("objective", "test_accuracy", "test_loss") if m in df.columns][:1] or ["objective"])
    cols = swept_columns(df)
    fig, axes = plt.subplots(1, len(metrics), figsize=(5 * len(metrics), 3.8), squeeze=False)
    keys = ["algorithm"] + cols
    for ax, metric in zip(axes[0], metrics):
        for key, g in df.groupby(keys, dropna=False):
            med = _plottable(g[metric], logy).groupby(g["round"]).median().dropna()
            row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
            (line,) = ax.plot(med.index, med.values, label=_label(row, cols))
            if len(med) and "status" in g and (g["status"] == "diverged").any():
                ax.plot(med.index[-1:], med.values[-1:], "x", color=line.get_color(), markersize=9,
                        label=None)             # a diverged run: its line ends at the marked point
        ax.set_xlabel("communication round")
        ax.set_ylabel(f"{metric} (median over seeds)")
        if logy:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"{df['paper'].iloc[0]}/{df['experiment'].iloc[0]}")
    fig.tight_layout()
    save_figure(fig, out)


def plot_sweep(summary: pd.DataFrame, out: Path, metrics=None, logy: bool = False, **_):
    """Final metric (median and range over seeds) vs each swept parameter, per algorithm, and the
    rounds (default metric: the objective where recorded)."""
    metrics = (_requested(summary, metrics) if metrics is not None
               else [m for m in ("objective",) if m in summary.columns])
    metrics = [*metrics, *(["rounds"] if "rounds" in summary.columns and "rounds" not in metrics else [])]
    cols = [c for c in swept_columns(summary) if c != "algorithm"] or ["k0"]
    fig, axes = plt.subplots(len(metrics), len(cols), figsize=(4.5 * len(cols), 3.2 * len(metrics)), squeeze=False)
    for i, metric in enumerate(metrics):
        for j, col in enumerate(cols):
            ax = axes[i][j]
            for alg, g in summary.groupby("algorithm"):
                stats = (_plottable(g[metric], logy and metric != "rounds").groupby(g[col])
                         .agg(["median", "min", "max"]).dropna())
                if stats.empty:
                    continue
                x = np.arange(len(stats)) if stats.index.dtype.kind not in "iuf" else stats.index.values
                ax.errorbar(x, stats["median"], yerr=[stats["median"] - stats["min"], stats["max"] - stats["median"]],
                            marker="o", capsize=3, label=alg)
                if stats.index.dtype.kind not in "iuf":
                    ax.set_xticks(x, [json.dumps(v) if not isinstance(v, str) else v for v in stats.index])
            ax.set_xlabel(col)
            ax.set_ylabel(f"final {metric}")
            if logy and metric != "rounds":
                ax.set_yscale("log")
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"{summary['paper'].iloc[0]}/{summary['experiment'].iloc[0]}: final values")
    fig.tight_layout()
    save_figure(fig, out)
