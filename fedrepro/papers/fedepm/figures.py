"""Figures and tables of FedEPM (Zhou & Li, "Exact Penalty Method for Federated Learning"), spec 001 Sec. 6.

All runs use the code-faithful algorithms and the authors' code stopping rules (stop1: variance,
stop2: increase guard, stop3: gradient; tol = 1e-9 n) with the 500-round cap; runs that hit the cap
are marked. Per run: CR = rounds, TCT = run CPU time (``run_cpu_time``), LCT = client CPU time / CR
(``run_local_cpu_time``: client work of the selected clients per round, broadcast-point gradients
excluded as in the code), SNR = min over the last round's uploaders of log10(||w_i|| / ||eps_i||).
TCT and LCT are process CPU seconds, not wall seconds: the paper's timings come from an unloaded
laptop, and other jobs sharing the cores inflate CPU time far less than wall time.
"""
from __future__ import annotations


import numpy as np
import pandas as pd

from fedrepro.figures.base import FigureSpec, save_figure, write_table
from fedrepro.papers.fedepm.analysis import ALGOS, run_table

LABEL = {"sfedavg": "SFedAvg", "sfedprox": "SFedProx", "fedepm": "FedEPM"}
COLOR = {"sfedavg": "tab:blue", "sfedprox": "tab:orange", "fedepm": "tab:red"}
RULE = "code stop rules (stop1-3, tol=1e-9n), cap 500 CR"

# Table I of the paper (mean LCT in seconds, MATLAB); the header's "m = 128" read as m = 100 (spec 7-A11).
PAPER_TABLE1 = pd.DataFrame(
    [(4, 50, 0.0037, 0.0082, 0.0011), (8, 50, 0.0067, 0.0155, 0.0015), (12, 50, 0.0096, 0.0226, 0.0018),
     (16, 50, 0.0125, 0.0293, 0.0021), (20, 50, 0.0148, 0.0360, 0.0023),
     (4, 100, 0.0058, 0.0109, 0.0019), (8, 100, 0.0097, 0.0198, 0.0024), (12, 100, 0.0132, 0.0279, 0.0030),
     (16, 100, 0.0172, 0.0359, 0.0036), (20, 100, 0.0213, 0.0457, 0.0041)],
    columns=["k0", "m", "sfedavg", "sfedprox", "fedepm"])


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _algos(df):
    return [a for a in ALGOS if a in set(df["algorithm"])]


# ---- fig2: objective vs CR -----------------------------------------------------------------------
def render_fig2(frames, summaries, out):
    """f(w^(s))/m vs round index s (log2 axis) for one trial (the lowest instance), m x k0 panels."""
    plt = _plt()
    df = frames["fig3"]
    trial = df["instance"].min()
    df = df[(df["instance"] == trial) & df["k0"].isin([4, 12, 20])]
    ms, k0s = sorted(df["m"].unique()), sorted(df["k0"].unique())
    fig, axes = plt.subplots(len(ms), len(k0s), figsize=(4.2 * len(k0s), 3.4 * len(ms)), squeeze=False,
                             sharey=True)
    for a, m in enumerate(ms):
        for b, k0 in enumerate(k0s):
            ax = axes[a, b]
            for alg in _algos(df):
                run = df[(df["m"] == m) & (df["k0"] == k0) & (df["algorithm"] == alg)].sort_values("round")
                if run.empty:
                    continue
                s = run["round"].to_numpy() + 1
                y = run["objective_per_client"] if "objective_per_client" in run else run["objective"] / m
                capped = run["status"].iloc[-1] == "max_rounds"
                ax.plot(s, y, color=COLOR[alg], lw=1.4,
                        label=f"{LABEL[alg]} (CR={s[-1] - 1}{', hit cap' if capped else ''})")
                ax.plot(s[-1], np.asarray(y)[-1], "x" if capped else "o", color=COLOR[alg], ms=5)
            ax.set_xscale("log", base=2)
            ax.set_ylim(0.53, 0.71)
            ax.set_title(f"m={m}, k0={k0}")
            ax.set_xlabel("communication round s (log2)")
            if b == 0:
                ax.set_ylabel("f(w)/m")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    fig.suptitle(f"FedEPM Fig. 2: objective vs CR, (eps, rho) = (0.1, 0.5), trial {trial}; {RULE}", fontsize=10)
    fig.tight_layout()
    save_figure(fig, out)


# ---- fig3: CR and TCT vs k0 ---------------------------------------------------------------------
def render_fig3(frames, summaries, out):
    """Mean CR and mean TCT over trials vs k0, for m = 50 and 100 (log y)."""
    plt = _plt()
    t = run_table(summaries["fig3"])
    ms = sorted(t["m"].unique())
    fig, axes = plt.subplots(2, len(ms), figsize=(5 * len(ms), 7), squeeze=False)
    for col, m in enumerate(ms):
        tm = t[t["m"] == m]
        for row, (key, name) in enumerate([("CR", "mean CR"), ("TCT", "mean TCT (CPU s)")]):
            ax = axes[row, col]
            for alg in _algos(tm):
                g = tm[tm["algorithm"] == alg].groupby("k0")
                mean, capped = g[key].mean(), g["capped"].sum()
                ax.plot(mean.index, mean.values, "o-", color=COLOR[alg],
                        label=LABEL[alg] + (f" ({int(capped.sum())} runs hit cap)" if capped.sum() else ""))
                for k0, c in capped.items():
                    if c:
                        ax.annotate(f"cap x{int(c)}", (k0, mean[k0]), fontsize=7, color=COLOR[alg])
            ax.set_yscale("log")
            ax.set_xticks(sorted(tm["k0"].unique()))
            ax.set_xlabel("k0")
            ax.set_ylabel(name)
            ax.set_title(f"{name} vs k0, m={m} ({tm['instance'].nunique()} trials)")
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=8)
    fig.suptitle(f"FedEPM Fig. 3: effect of k0, (eps, rho) = (0.1, 0.5); {RULE}", fontsize=10)
    fig.tight_layout()
    save_figure(fig, out)


# ---- table1: LCT vs k0 --------------------------------------------------------------------------
def table1_frame(summary: pd.DataFrame) -> pd.DataFrame:
    """Mean LCT (client CPU s per round) per (m, k0, algorithm), ours next to the paper's (MATLAB s),
    plus the paper's ratios."""
    t = run_table(summary)
    ours = t.groupby(["m", "k0", "algorithm"])["LCT"].mean().unstack("algorithm").reset_index()
    merged = ours.merge(PAPER_TABLE1, on=["m", "k0"], how="left", suffixes=("", "_paper"))
    cols = ["m", "k0"]
    for alg in ALGOS:
        if alg in merged:
            cols += [alg, f"{alg}_paper"]
    out = merged[cols].sort_values(["m", "k0"]).reset_index(drop=True)
    if {"sfedavg", "fedepm"} <= set(out):
        out["sfedavg/fedepm"] = out["sfedavg"] / out["fedepm"]
        out["sfedavg/fedepm_paper"] = out["sfedavg_paper"] / out["fedepm_paper"]
    if {"sfedavg", "sfedprox"} <= set(out):
        out["sfedprox/sfedavg"] = out["sfedprox"] / out["sfedavg"]
        out["sfedprox/sfedavg_paper"] = out["sfedprox_paper"] / out["sfedavg_paper"]
    return out


def render_table1(frames, summaries, out):
    exp = next(iter(summaries))
    loop = "one update call per client" if exp == "table1" else "clients vectorized (fig3 runs)"
    tab = table1_frame(summaries[exp])
    n_trials = summaries[exp]["instance"].nunique()
    head = (f"FedEPM Table I: mean LCT (s) per round vs k0 (ours: client CPU seconds, numpy, {loop}, "
            f"{n_trials} trials, {RULE}; paper: MATLAB, 100 trials, header 'm = 128' read as m = 100). "
            "Absolute seconds are platform-dependent: compare orderings and ratios.")
    fmt = {c: ("{:.0f}" if c in ("m", "k0") else "{:.2f}" if "/" in c else "{:.5f}") for c in tab.columns}
    names = [c.replace("sfedavg", "SFedAvg").replace("sfedprox", "SFedProx").replace("fedepm", "FedEPM")
             .replace("_paper", " (paper)") for c in tab.columns]
    write_table(tab, out, head, columns=names, formats=fmt)


# ---- box plots (fig4: rho, fig5: epsilon) ------------------------------------------------------
def _boxes(t, by, metrics, title, out):
    plt = _plt()
    algs = _algos(t)
    fig, axes = plt.subplots(len(metrics), len(algs), figsize=(4.2 * len(algs), 3.0 * len(metrics)),
                             squeeze=False)
    xs = sorted(t[by].unique())
    for row, (key, name) in enumerate(metrics):
        for col, alg in enumerate(algs):
            ax = axes[row, col]
            ta = t[t["algorithm"] == alg]
            data = [ta[ta[by] == x][key].dropna().to_numpy() for x in xs]
            ax.boxplot(data, whis=1.5, flierprops={"marker": "x", "markersize": 4})
            caps = [int(ta[ta[by] == x]["capped"].sum()) for x in xs]
            ax.set_xticks(range(1, len(xs) + 1),
                          [f"{x:g}" + (f"\n({c} at cap)" if c else "") for x, c in zip(xs, caps)])
            ax.set_title(f"{LABEL[alg]}: {name}", fontsize=9)
            ax.set_xlabel({"rho": "rho", "epsilon": "epsilon"}[by])
            ax.set_ylabel(name)
            ax.grid(alpha=0.3)
    fig.suptitle(f"{title} ({t['instance'].nunique()} trials per setting; box = IQR, whiskers 1.5 IQR, "
                 f"x = outliers; {RULE})", fontsize=9)
    fig.tight_layout()
    save_figure(fig, out)


def render_fig4(frames, summaries, out):
    _boxes(run_table(summaries["fig4"]), "rho", [("CR", "CR"), ("TCT", "TCT (CPU s)")],
           "FedEPM Fig. 4: effect of rho, (eps, k0, m) = (0.1, 12, 50)", out)


def render_fig5(frames, summaries, out):
    t = run_table(summaries["fig5"])
    _boxes(t, "epsilon", [("CR", "CR"), ("TCT", "TCT (CPU s)"), ("SNR", "SNR (last round)")],
           "FedEPM Fig. 5: effect of epsilon, (rho, k0, m) = (0.5, 12, 50)", out)


# ---- variants table (paper vs code choices, spec 7-A1/A4/A9/A13) ------------------------------------
VARIANT_KEYS = ("mu_scaling", "ens_sign", "aggregate_over")


def variants_frame(summaries) -> pd.DataFrame:
    """Median CR / final f/m / SNR / TCT and status counts per (algorithm, variant setting)."""
    parts = []
    for exp, stop in (("variants", "code"), ("stop_paper", "paper")):
        if exp not in summaries or summaries[exp].empty:
            continue
        t = run_table(summaries[exp])
        keys = [k for k in VARIANT_KEYS if k in t]
        t["setting"] = [", ".join([f"{k}={getattr(r, k)}" for k in keys if isinstance(getattr(r, k), str)]
                                  + [f"stop={stop}"]) for r in t.itertuples()]
        parts.append(t)
    if not parts:
        return pd.DataFrame()
    t = pd.concat(parts, ignore_index=True, sort=False)
    g = t.groupby(["algorithm", "setting"], sort=True)
    out = pd.DataFrame({
        "runs": g.size(), "median CR": g["CR"].median(), "at cap": g["capped"].sum().astype(int),
        "diverged": g["status"].apply(lambda x: int((x == "diverged").sum())),
        "median final f/m": g["f_over_m"].median(), "median SNR": g["SNR"].median(),
        "median TCT (CPU s)": g["TCT"].median()}).reset_index()
    out["algorithm"] = out["algorithm"].map(LABEL).fillna(out["algorithm"])
    return out


def render_variants(frames, summaries, out):
    tab = variants_frame(summaries)
    head = ("FedEPM variants at (m, k0, rho, eps) = (50, 12, 0.5, 0.1): paper-literal vs authors'-code choices "
            "(defaults: mu_scaling=over_di, ens_sign=corrected, aggregate_over=previous, stop=code).")
    write_table(tab, out, head, formats={c: "{:.4f}" for c in tab.columns if tab[c].dtype.kind == "f"},
                align="ll" + "r" * (len(tab.columns) - 2))

FIGURES = {
    "fig2": FigureSpec(experiments=["fig3"], render=render_fig2),
    "fig3": FigureSpec(experiments=["fig3"], render=render_fig3),
    "fig4": FigureSpec(experiments=["fig4"], render=render_fig4),
    "fig5": FigureSpec(experiments=["fig5"], render=render_fig5),
}

TABLES = {
    "table1": FigureSpec(experiments=["table1"], render=render_table1, kind="table"),
    "table1_vectorized": FigureSpec(experiments=["fig3"], render=render_table1, kind="table"),
    "variants": FigureSpec(experiments=["variants", "stop_paper"], render=render_variants, kind="table"),
}
