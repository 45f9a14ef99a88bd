"""Generic plots of any experiment (a user's sweep, ``figures/custom/``): each metric vs round, and
each final metric vs each swept parameter.

What a reader of a paper expects of them (issue #44, 7), and how it is met:

* one series per algorithm x setting, each with its own colour *and* line style (a palette of up
  to 20 distinct colours, then evenly spaced hues, and seaborn's distinct dash patterns), named in
  one legend shared by every panel;
* seeds aggregated: seaborn's ``lineplot`` draws the mean over seeds and, as band, its 95%
  percentile-bootstrap confidence interval (:func:`ci95`; seeded: the same figure every build);
* a log y axis chosen per metric (:func:`use_log`): never on a bounded metric (accuracy, fractions,
  rounds), by default only where the values are positive and span two decades; a log x axis where a
  swept value is positive and spans two decades (e.g. a privacy budget 1e3 .. 1e6);
* every swept parameter not on the x axis is a facet (a column of panels), never pooled;
* panel titles and axis labels from :data:`LABELS` (not internal column keys);
* a diverged run (:func:`diverged_runs`) is drawn on its own, thin, ending in an x, and kept out of
  the mean and band; the legend says so;
* the panel of rounds is drawn only when the experiment has a stop rule (otherwise every run stops
  at ``max_rounds`` and the panel says nothing).
"""
from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from fedrepro.figures.base import save_figure  # noqa: E402
from fedrepro.figures.divergence import DIVERGE_FACTOR, has_diverged  # noqa: E402,F401
PLOT_CEILING = 1e100    # values beyond it (or not finite) are not drawn: they cannot be placed
N_BOOT = 1000


def ci95(values) -> tuple[float, float]:
    """95% percentile-bootstrap confidence interval of the mean over seeds (what seaborn's
    ``errorbar=("ci", 95)`` computes, with the resamples drawn in one array: seaborn's own loop
    over 1,000 resamples took 11 ms per point, 40 s for a 12-series figure of 150 rounds). Seeded:
    the same band every build; one value: a band of no width."""
    v = np.asarray(values, dtype=float)
    if v.size < 2:
        return (float(v[0]), float(v[0])) if v.size else (np.nan, np.nan)
    means = v[np.random.default_rng(0).integers(0, v.size, (N_BOOT, v.size))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)


CI = ci95               # seaborn's errorbar: a callable of the values at one x

#: display names of metric and parameter columns; a column not listed shows its own name
LABELS = {
    "objective": "objective f(w)", "grad_norm2": "squared gradient norm ‖∇f(w)‖²",
    "accuracy": "accuracy", "test_accuracy": "test accuracy", "train_accuracy": "training accuracy",
    "test_loss": "test loss", "err": "‖mean ∇f_i(w)‖²", "objective_per_client": "f(w) / m",
    "loss_F": "F (loss + penalty)", "snr": "SNR (log10)", "dp_epsilon": "privacy spent ε",
    "clip_fraction": "clipped fraction", "attack_success": "attack success (%)",
    "acc_w": "worst-case accuracy (%)", "rounds": "communication rounds to stop",
    "client_drift": "client drift ‖w_i − θ‖²", "round": "communication round",
    "epsilon": "privacy budget ε", "k0": "local steps k0", "rho": "participation rate ρ",
    "m": "clients m", "attack": "attack", "aggregator": "aggregator", "mechanism": "mechanism",
    "step_c": "step constant c", "algorithm": "algorithm", "setting": "setting", "r0": "r0",
}

#: metrics with a bounded range: never drawn on a log axis
BOUNDED = ("accuracy", "acc_", "fraction", "attack_success", "rounds", "snr")


def label(name: str) -> str:
    """Display name of a column (:data:`LABELS`; otherwise the name with ``_`` as spaces)."""
    return LABELS.get(name, str(name).replace("_", " "))


def _fmt(v) -> str:
    """A swept value as text: integers as such below 1e4, other numbers with 4 significant digits
    and a plain exponent (1e3, 2.5e-4)."""
    if isinstance(v, (float, np.floating, int, np.integer)) and not isinstance(v, bool):
        v = float(v)
        if v.is_integer() and abs(v) < 1e4:
            return str(int(v))
        text = f"{v:.4g}"
        if "e" in text:
            mant, exp = text.split("e")
            text = f"{mant}e{int(exp)}"
        return text
    return v if isinstance(v, str) else json.dumps(v) if isinstance(v, (list, dict)) else str(v)


def _sci(v) -> str:
    mant, exp = f"{float(v):.3e}".split("e")
    mant = mant.rstrip("0").rstrip(".")
    return f"{mant}e{int(exp)}"


def value_texts(values) -> dict:
    """Text of each value of one swept parameter, alike for all of them: numbers spanning two decades
    or more all in exponent form (1e3, 1e4, 2.5e5), others as :func:`_fmt` writes them."""
    values = list(values)
    if _log_x(values) and all(isinstance(v, (int, float, np.integer, np.floating)) for v in values):
        return {v: _sci(v) for v in values}
    return {v: _fmt(v) for v in values}


def swept_columns(df: pd.DataFrame) -> list[str]:
    """The experiment's swept setting columns (recorded by the runner in ``swept``) that vary."""
    if "swept" not in df.columns:
        return []
    names = sorted({c for v in df["swept"].dropna().unique() for c in json.loads(v)})
    return [c for c in names if c in df.columns and df[c].astype(str).nunique() > 1]


def _run_keys(df: pd.DataFrame) -> list[str]:
    return [c for c in ("cell", "instance", "seed") if c in df.columns]


def diverged_runs(df: pd.DataFrame) -> set:
    """The runs (tuples of ``cell``, ``instance``, ``seed``) that diverged: the runner said so
    (``status`` ``diverged``), or an objective value is infinite, or NaN after a finite value, or
    beyond :data:`DIVERGE_FACTOR` times the run's first recorded objective (its absolute value; 1
    when that is 0), or beyond :data:`PLOT_CEILING`. ``df`` is a trace (rows per round) or a
    summary (the last row of each run: then the first objective is unknown and only the first two
    and the last test apply)."""
    keys = _run_keys(df)
    out = set()
    for key, g in df.groupby(keys, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        if "status" in g and (g["status"] == "diverged").any():
            out.add(key)
            continue
        if "objective" not in g:
            continue
        f = (g.sort_values("round") if "round" in g else g)["objective"].astype(float).to_numpy()
        if np.isinf(f).any() or np.abs(f[np.isfinite(f)]).max(initial=0.0) > PLOT_CEILING or (
                len(f) > 1 and has_diverged(f)):          # a summary row alone: only the first two tests
            out.add(key)
    return out


def use_log(name: str, values, logy: bool | None = None) -> bool:
    """Whether a metric's axis is logarithmic: never for a bounded metric (:data:`BOUNDED`) or one
    with a value <= 0; ``logy`` True: otherwise yes; False: no; None (default): where the finite
    values span at least two decades."""
    if logy is False or any(b in name for b in BOUNDED):
        return False
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (np.abs(v) <= PLOT_CEILING)]
    if not v.size or (v <= 0).any():
        return False
    return True if logy else bool(v.max() / v.min() >= 100.0)


def _log_x(values) -> bool:
    """A swept parameter goes on a log axis when its values are positive numbers spanning two decades."""
    try:
        v = np.asarray(list(values), dtype=float)
    except (TypeError, ValueError):
        return False
    return bool(v.size > 1 and (v > 0).all() and v.max() / v.min() >= 100.0)


def series_styles(names: list) -> dict:
    """Colour (hex) and dash pattern of each series name: all pairs distinct. Colours: tab10 for up
    to 10 series, tab20 (dark shades first) up to 20, evenly spaced hues beyond; dashes: seaborn's
    ``unique_dashes`` (solid first, then ever longer distinct patterns)."""
    import seaborn as sns
    from matplotlib.colors import to_hex

    n = len(names)
    if n <= 10:
        colours = sns.color_palette("tab10", 10)[:n]
    elif n <= 20:
        t20 = sns.color_palette("tab20", 20)
        colours = (t20[0::2] + t20[1::2])[:n]
    else:
        colours = sns.color_palette("husl", n)
    dashes = _unique_dashes(n)
    return {s: (to_hex(c), d) for s, c, d in zip(names, colours, dashes)}


def _unique_dashes(n: int) -> list:
    try:
        from seaborn._base import unique_dashes      # seaborn's own generator of distinct patterns
    except ImportError:                              # pragma: no cover - seaborn moved it
        unique_dashes = None
    if unique_dashes is not None:
        return [tuple(d) if d else "" for d in unique_dashes(n)]
    base = [(4, 1.5), (1, 1), (3, 1.25, 1.5, 1.25), (5, 1, 1, 1)]
    return ([""] + [base[i % len(base)][:2] + (i,) for i in range(n)])[:n]


MARKERS = ("o", "X", "s", "P", "D", "^", "v", "<", ">", "p", "h", "*")


def _handle(name, colour, dash, marker=None) -> Line2D:
    """A legend entry drawn as the series is: its colour, dash pattern ('' = solid) and marker."""
    kw = {"dashes": dash} if dash else {}
    return Line2D([], [], color=colour, lw=1.6, marker=marker, label=name, **kw)


def _series_frame(df: pd.DataFrame, cols: list) -> tuple[pd.DataFrame, list]:
    """``df`` with a ``series`` column (algorithm and the swept values, as text) and the series names
    in a stable order."""
    keys = ["algorithm"] + [c for c in cols if c != "algorithm"]
    df = df.copy()
    texts = {c: value_texts(df[c].dropna().unique()) for c in keys[1:]}
    df["series"] = [", ".join([str(r[0])] + [f"{label(c)} = {texts[c].get(v, _fmt(v))}" for c, v in zip(keys[1:], r[1:])])
                    for r in df[keys].itertuples(index=False)]
    order = (df.drop_duplicates("series").sort_values(keys, key=lambda s: s.map(_sort_key))["series"].tolist())
    return df, order


def _sort_key(v):
    return (0, float(v), "") if isinstance(v, (int, float, np.integer, np.floating)) else (1, 0.0, str(v))


def _requested(frame: pd.DataFrame, metrics) -> list:
    """The metrics a plot was asked for; one the results lack is an error naming it (never a
    silent substitute)."""
    missing = [m for m in metrics if m not in frame.columns]
    if missing:
        raise ValueError(f"plot.metrics: {missing} are not in the results of "
                         f"{frame['paper'].iloc[0]}/{frame['experiment'].iloc[0]}; recorded columns: "
                         f"{sorted(map(str, frame.columns))}")
    return list(metrics)


def _title(frame, title) -> str:
    return title or f"{frame['experiment'].iloc[0].replace('_', ' ')}"


def _diverged_handle():
    return Line2D([], [], color="0.3", lw=0.8, marker="x", markersize=8, linestyle=":",
                  label="diverged run (dotted, × where it leaves the panel or ends; not in the mean or band)")


def plot_rounds(df: pd.DataFrame, out: Path, metrics=None, logy: bool | None = None, title: str | None = None,
                **_):
    """Mean over seeds (band: 95% bootstrap CI, :func:`ci95`) of each metric vs communication round, one series per
    algorithm x swept setting, one panel per metric (default: objective and grad_norm2 where
    recorded, else the first of objective / test accuracy / test loss), one legend for all panels.
    A diverged run (:func:`diverged_runs`) is drawn alone, thin and dotted, to its last finite value
    (marked x), and left out of the mean and band. Returns the figure (saved and closed)."""
    import seaborn as sns

    if metrics is not None:
        metrics = _requested(df, metrics)
    else:
        metrics = ([m for m in ("objective", "grad_norm2") if m in df.columns]
                   or [m for m in ("objective", "test_accuracy", "test_loss") if m in df.columns][:1] or ["objective"])
    cols = swept_columns(df)
    df, order = _series_frame(df, cols)
    styles = series_styles(order)
    keys = _run_keys(df)
    bad = diverged_runs(df)
    is_bad = np.array([k in bad for k in df[keys].itertuples(index=False, name=None)]) if bad else np.zeros(len(df), bool)
    good, diverged = df[~is_bad], df[is_bad]
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.2 * len(metrics), 4.0), squeeze=False, layout="constrained")
    for ax, metric in zip(axes[0], metrics):
        log = use_log(metric, good[metric] if not good.empty else df[metric], logy)
        data = good.assign(_y=_finite(good[metric], log)).dropna(subset=["_y"])
        if not data.empty:
            sns.lineplot(data=data, x="round", y="_y", hue="series", style="series", hue_order=order,
                         style_order=order, palette={s: c for s, (c, _) in styles.items()},
                         dashes={s: d for s, (_, d) in styles.items()}, estimator="mean", errorbar=CI,
                         legend=False, ax=ax, lw=1.6)
        if log:
            ax.set_yscale("log")
        view = ax.get_ylim() if not data.empty else None       # the range of the aggregated runs
        for key, g in diverged.groupby(keys, sort=False):
            g = g.sort_values("round")
            y = _finite(g[metric], log)
            x, y = g["round"][y.notna()], y.dropna()
            colour, dash = styles[g["series"].iloc[0]]
            ax.plot(x, y, color=colour, lw=0.8, linestyle=":", alpha=0.9)
            if not len(y):
                continue
            left = np.flatnonzero((y > view[1]).to_numpy()) if view else np.array([], int)
            if left.size:                                       # it leaves the panel: x on the top edge
                ax.plot([x.iloc[left[0]]], [0.97], "x", color=colour, markersize=9, mew=2,
                        transform=ax.get_xaxis_transform())
            else:
                ax.plot(x.iloc[-1:], y.iloc[-1:], "x", color=colour, markersize=9, mew=2)
        if view:
            ax.set_ylim(view)
        ax.set_xlabel(label("round"))
        ax.set_ylabel(label(metric))
        ax.set_title(label(metric))
        ax.grid(alpha=0.3)
    handles = [_handle(s, c, d) for s, (c, d) in styles.items()]
    if bad:
        handles.append(_diverged_handle())
    n_seeds = good.groupby("series")[keys[-1]].nunique().max() if keys and not good.empty else 0
    fig.suptitle(f"{_title(df, title)}\nmean over seeds (up to {int(n_seeds or 0)}), band = 95% CI")
    _place_legend(fig, handles)
    save_figure(fig, out)
    return fig


def _place_legend(fig, handles):
    """One legend for all panels, below them (constrained layout makes room for it)."""
    ncol = 1 if len(handles) <= 3 else min(3, math.ceil(len(handles) / 7))
    fig.legend(handles=handles, loc="outside lower center", ncol=ncol, fontsize=8, frameon=False)


def _finite(values: pd.Series, log: bool) -> pd.Series:
    """``values`` as floats with what cannot be drawn set to NaN: non-finite, beyond
    :data:`PLOT_CEILING` in magnitude, and non-positive on a log axis."""
    v = values.astype(float)
    keep = np.isfinite(v) & (v.abs() <= PLOT_CEILING)
    if log:
        keep &= v > 0
    return v.where(keep)


_plottable = _finite          # its former name


def plot_sweep(summary: pd.DataFrame, out: Path, metrics=None, logy: bool | None = None, stop_rule=None,
               trace: pd.DataFrame | None = None, title: str | None = None, **_):
    """Final value of each metric (mean over seeds, 95% CI) vs each swept parameter, one series per
    algorithm; every other swept parameter is a facet (a column of panels per value combination);
    rows: one per metric per x parameter. The rounds to stop are a row only when the experiment
    has a stop rule (``stop_rule``: True, or a rule name other than ``"none"``; None: when some run
    stopped by its rule). Diverged runs (:func:`diverged_runs` of ``trace`` when given, else of the
    summary) are marked x at the top of their panel and left out of the mean and band."""
    import seaborn as sns

    metrics = (_requested(summary, metrics) if metrics is not None
               else [m for m in ("objective",) if m in summary.columns])
    if _has_stop(summary, stop_rule) and "rounds" in summary.columns and "rounds" not in metrics:
        metrics = [*metrics, "rounds"]
    if not metrics:
        raise ValueError("plot_sweep: no metric to draw (give plot.metrics)")
    cols = [c for c in swept_columns(summary) if c != "algorithm"] or [c for c in ("k0",) if c in summary]
    keys = _run_keys(summary)
    bad = diverged_runs(trace if trace is not None else summary)
    summary = summary.copy()
    summary["_diverged"] = [k in bad for k in summary[keys].itertuples(index=False, name=None)]
    algs = sorted(summary["algorithm"].astype(str).unique())
    styles = series_styles(algs)
    markers = dict(zip(algs, itertools.cycle(MARKERS)))
    texts = {c: value_texts(summary[c].dropna().unique()) for c in cols}
    blocks = []                                          # (x column, facet columns, facet values)
    for x in cols:
        others = [c for c in cols if c != x]
        combos = (sorted(summary[others].drop_duplicates().itertuples(index=False, name=None),
                         key=lambda t: tuple(map(_sort_key, t))) if others else [()])
        blocks.append((x, others, combos))
    ncols = max(len(b[2]) for b in blocks)
    nrows = sum(len(metrics) for _ in blocks)
    fig, axes = plt.subplots(nrows, ncols, figsize=(max(4.6 * ncols, 7.0), 3.4 * nrows), squeeze=False,
                             layout="constrained")
    row = 0
    for x, others, combos in blocks:
        values = sorted(summary[x].dropna().unique(), key=_sort_key)
        numeric = all(isinstance(v, (int, float, np.integer, np.floating)) for v in values)
        pos = {v: (float(v) if numeric else float(i)) for i, v in enumerate(values)}
        for metric in metrics:
            log = use_log(metric, summary.loc[~summary["_diverged"], metric], logy)
            for j in range(ncols):
                ax = axes[row][j]
                if j >= len(combos):
                    ax.set_visible(False)
                    continue
                combo = combos[j]
                sel = np.ones(len(summary), bool)
                for c, v in zip(others, combo):
                    sel &= (summary[c] == v).to_numpy()
                part = summary[sel].assign(_x=lambda f: f[x].map(pos))
                good = part[~part["_diverged"]].assign(_y=lambda f: _finite(f[metric], log)).dropna(subset=["_y"])
                good = good[good["algorithm"].astype(str).isin(algs)].assign(algorithm=lambda f: f["algorithm"].astype(str))
                if not good.empty:
                    sns.lineplot(data=good, x="_x", y="_y", hue="algorithm", style="algorithm", hue_order=algs,
                                 style_order=algs, palette={a: c for a, (c, _) in styles.items()},
                                 dashes={a: d for a, (_, d) in styles.items()}, markers=markers, estimator="mean",
                                 errorbar=CI, legend=False, ax=ax, err_style="band",
                                 lw=1.6, markersize=6)
                for _, r in part[part["_diverged"]].iterrows():
                    ax.plot([r["_x"]], [0.95], "x", color=styles[str(r["algorithm"])][0], markersize=10, mew=2,
                            transform=ax.get_xaxis_transform())
                if log:
                    ax.set_yscale("log")
                if numeric and _log_x(values):
                    ax.set_xscale("log")
                if not numeric:
                    ax.set_xticks(list(pos.values()), [texts[x].get(v, _fmt(v)) for v in values])
                elif len(values) <= 8 and not _log_x(values):     # a log axis keeps its 10^k ticks
                    ax.set_xticks([float(v) for v in values], [texts[x].get(v, _fmt(v)) for v in values])
                ax.set_xlabel(label(x))
                ax.set_ylabel(f"final {label(metric)}")
                facet = ", ".join(f"{label(c)} = {texts[c].get(v, _fmt(v))}" for c, v in zip(others, combo))
                ax.set_title(facet or f"final {label(metric)}", fontsize=10)
                ax.grid(alpha=0.3)
            row += 1
    handles = [_handle(a, c, d, markers[a]) for a, (c, d) in styles.items()]
    if bad:
        handles.append(Line2D([], [], color="0.3", marker="x", markersize=9, mew=2, linestyle="",
                              label="diverged run (× near the top of its panel; not in the mean or band)"))
    n_seeds = summary.groupby(["algorithm", *cols])[keys[-1]].nunique().max() if keys else 0
    fig.suptitle(f"{_title(summary, title)}: final values\nmean over seeds (up to {int(n_seeds)}), band = 95% CI")
    _place_legend(fig, handles)
    save_figure(fig, out)
    return fig


def _has_stop(summary: pd.DataFrame, stop_rule) -> bool:
    if stop_rule is None:
        return bool("reached" in summary and summary["reached"].astype(bool).any())
    if isinstance(stop_rule, str):
        return stop_rule != "none"
    if isinstance(stop_rule, (list, tuple, set)):
        return any(r not in (None, "none") for r in stop_rule)
    return bool(stop_rule)
