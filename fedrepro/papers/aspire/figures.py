"""Figures and tables of the aspire paper (spec 002 §6). Results-based: Table 3, Table 4, Figs. 2-5 and
the time-to-target table of Fig. 4; static: Tables 1, 2, 5 and Fig. 1 (:mod:`.static`). One experiment
per dataset: an output lists the datasets whose data were missing offline instead of their columns."""
from __future__ import annotations

import numpy as np
import pandas as pd

from fedrepro.figures.base import FigureSpec, save_figure, write_table
from fedrepro.papers.aspire import static
from fedrepro.papers.aspire.analysis import (DATASETS, FIG4_METHODS, METHODS, fig3_frame, frames_of,
                                             missing_datasets, table3_frame, table4_frame, time_curves,
                                             time_to_target)

PANELS = ("person", "scma", "shl", "fmnist3")          # the paper's panel order (a)-(d) of Figs. 3-5
STYLE = {"aspire": ("C3", "-"), "aspire_cp": ("C1", "--"), "aspire_sync": ("C4", "-."), "afl": ("C0", ":"),
         "drfa_prox": ("C2", "-"), "fedavg_steps": ("C5", "--"), "mix_even": ("C7", ":"), "aspire_per": ("C6", "-")}


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _scale(frames: dict) -> str:
    """The title's scale note, from the model the runs used (quick: the 2x128 MLP)."""
    models = set()
    for df in frames.values():
        if df is not None and not df.empty and "problem" in df:
            models |= {str(p) for p in df["problem"].unique()}
    quick = any('"model": "quick"' in m or "aspire_quick" in m for m in models)
    return " [quick scale: 2x128 MLP, G_w = 300, <= 2,000 / 500 samples per worker]" if quick else ""


def _missing_note(frames: dict, prefix: str) -> str:
    miss = missing_datasets(frames, prefix)
    return f" Not built (dataset not available offline): {', '.join(miss)}." if miss else ""


def _title(fig, text: str) -> None:
    """A suptitle wrapped to the figure's width."""
    import textwrap

    fig.suptitle(textwrap.fill(text, max(60, int(fig.get_figwidth() * 14))), fontsize=10)


def _pm(mean, sd, fmt):
    return "—" if mean is None or pd.isna(mean) else f"{fmt.format(mean)} ± {fmt.format(sd)}"


def _empty(ax, why):
    ax.text(0.5, 0.5, why, ha="center", va="center", transform=ax.transAxes, fontsize=8, wrap=True)
    ax.set_xticks([])
    ax.set_yticks([])


# ---- Table 3 ------------------------------------------------------------------------------------
def table3(frames, summaries, out):
    t = table3_frame(frames)
    rows = []
    for _, r in t.iterrows():
        rows.append({"dataset": r["dataset"], "method": r["method"],
                     "Acc_w (%)": _pm(r["acc_w"], r["acc_w_std"], "{:.2f}"),
                     "Loss_w": _pm(r["loss_w"], r["loss_w_std"], "{:.3f}"), "Std": f"{r['std']:.2f}",
                     "seeds": r["seeds"],
                     "paper Acc_w": "—" if r["paper_acc_w"] is None else f"{r['paper_acc_w']:.2f}",
                     "paper Loss_w": "—" if r["paper_loss_w"] is None or pd.isna(r["paper_loss_w"]) else f"{r['paper_loss_w']:.3f}",
                     "paper Std": "—" if r["paper_std"] is None else f"{r['paper_std']:.2f}"})
    write_table(pd.DataFrame(rows), out,
                "Table 3 — robustness against data heterogeneity: worst-case test accuracy Acc_w, worst-case training "
                "loss Loss_w (mean ± std over seeds), Std of the per-worker accuracies; max{Ind_j} has no Loss_w and is "
                "not defined for Fashion-MNIST." + _missing_note(frames, "table3") + _scale(frames))


# ---- Table 4 ------------------------------------------------------------------------------------
def table4(frames, summaries, out):
    t = table4_frame(frames)
    rows = [{"dataset": r["dataset"], "method": r["method"],
             "success attack rate (%)": _pm(r["success_rate"], r["success_rate_std"], "{:.2f}"),
             "clean Acc_w (%)": f"{r['acc_w']:.2f}",
             "malicious worker's weight": "n/a" if pd.isna(r["malicious_weight"]) else f"{r['malicious_weight']:.3f}",
             "seeds": r["seeds"], "paper (%)": f"{r['paper_success_rate']:.2f}"} for _, r in t.iterrows()]
    write_table(pd.DataFrame(rows), out,
                "Table 4 — robustness against a backdoor worker: success attack rate (lower is better); the weight "
                "is ASPIRE's pi or AFL / DRFA-Prox's lambda of the malicious worker at the end (FedAvg, Mix_Even: "
                "even)." + _missing_note(frames, "table4") + _scale(frames))


# ---- Fig. 3 -------------------------------------------------------------------------------------
def fig3(frames, summaries, out):
    plt = _plt()
    t = fig3_frame(frames)
    fig, axes = plt.subplots(2, 4, figsize=(13, 5.6))
    for j, ds in enumerate(PANELS):
        name = DATASETS[ds][1]
        sub = t[t["dataset_key"] == ds] if not t.empty else t
        for i, (metric, label) in enumerate((("acc_w", "Acc_w (%)"), ("loss_w", "Loss_w"))):
            ax = axes[i, j]
            if sub.empty:
                _empty(ax, f"{name}: dataset not available offline")
                continue
            ax.errorbar(sub["Gamma"], sub[metric], yerr=sub[f"{metric}_std"], marker="o", ms=4, capsize=3, color="C3")
            ax.set_xlabel("Γ")
            ax.set_ylabel(label)
            ax.set_title(f"({'abcd'[j]}) {name}", fontsize=9)
            ax.grid(alpha=0.3)
    _title(fig, "Fig. 3 — Γ controls the degree of robustness (ASPIRE-EASE, mean ± std over seeds; Γ = 0 is "
                 "Mix_Even)" + _scale(frames))
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    save_figure(fig, out)


# ---- Fig. 4 and its time-to-target table -----------------------------------------------------------
def fig4(frames, summaries, out):
    plt = _plt()
    data = frames_of(frames, "fig4")
    fig, axes = plt.subplots(2, 4, figsize=(13, 5.8))
    for j, ds in enumerate(PANELS):
        name = DATASETS[ds][1]
        for i, (metric, label) in enumerate((("loss_w", "Loss_w (worst-case training loss)"), ("acc_w", "Acc_w (%)"))):
            ax = axes[i, j]
            if ds not in data:
                _empty(ax, f"{name}: dataset not available offline")
                continue
            curves = time_curves(data[ds], metric)
            for method in FIG4_METHODS:
                c = curves[curves["algorithm"] == method]
                if c.empty:
                    continue
                color, ls = STYLE[method]
                ax.plot(c["virtual_time"], c["mean"], color=color, ls=ls, lw=1.3, label=METHODS[method])
                ax.fill_between(c["virtual_time"], c["mean"] - c["std"], c["mean"] + c["std"], color=color,
                                alpha=0.12, lw=0)
            ax.set_xlabel("virtual time (s)")
            ax.set_ylabel(label, fontsize=8)
            ax.set_title(f"({'abcd'[j]}) {name}", fontsize=9)
            ax.grid(alpha=0.3)
    handles, labels = [], []
    for ax in axes.ravel():
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=8, frameon=False)
    _title(fig, "Fig. 4 — convergence in virtual time (simulated delays, spec §3.0.1: H_max = 5, c0 = 0.05 s, "
                 "m0 = 0.2 s, σ = 0.3) on the worst-case worker, same time budget for all methods" + _scale(frames))
    fig.tight_layout(rect=(0, 0.05, 1, 0.94))
    save_figure(fig, out)


def fig4_time(frames, summaries, out):
    rows = []
    for ds, df in frames_of(frames, "fig4").items():
        t = time_to_target(df, "loss_w")
        for _, r in t.iterrows():
            rows.append({"dataset": DATASETS[ds][1], "method": r["method"], "target Loss_w": r["target"],
                         "time to target (s)": r["time_to_target"], "final Loss_w": r["final"],
                         "budget (s)": r["budget"]})
    write_table(pd.DataFrame(rows), out,
                "Fig. 4 (table) — virtual time until the mean Loss_w curve reaches the final Loss_w of the worst "
                "method (n/a: not within the budget)." + _missing_note(frames, "fig4") + _scale(frames),
                formats={"target Loss_w": "{:.3f}", "final Loss_w": "{:.3f}", "time to target (s)": "{:.1f}",
                         "budget (s)": "{:.0f}"})


# ---- Fig. 5 -------------------------------------------------------------------------------------
def fig5(frames, summaries, out):
    plt = _plt()
    data = frames_of(frames, "fig4")
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.4))
    for j, ds in enumerate(PANELS):
        ax, name = axes[j], DATASETS[ds][1]
        if ds not in data:
            _empty(ax, f"{name}: dataset not available offline")
            continue
        df = data[ds]
        for method in ("aspire_cp", "aspire"):
            sub = df[df["algorithm"] == method]
            if sub.empty:
                continue
            color, ls = STYLE[method]
            c = sub.groupby("round")["n_planes"].agg(["mean", "min", "max"]).reset_index()
            ax.step(c["round"], c["mean"], where="post", color=color, ls=ls, label=METHODS[method])
            ax.fill_between(c["round"], c["min"], c["max"], step="post", color=color, alpha=0.12, lw=0)
            if "T1" in sub:                                   # the cutoff of each run (fixed on the clock)
                for t1 in sorted(set(sub["T1"].dropna().astype(int))):
                    ax.axvline(t1, color=color, ls=":", lw=0.8)
        ax.set_xlabel("master iteration t")
        ax.set_ylabel("|A^t| (cutting planes)")
        ax.set_title(f"({'abcd'[j]}) {name}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    _title(fig, "Fig. 5 — number of cutting planes |A^t|: ASPIRE-CP (planes only added) vs ASPIRE-EASE (planes "
                 "added and removed, Eq. 20), both S = 1 asynchronous, the runs of Fig. 4 (same virtual-time budget). "
                 "A plane may be added every k = N master iterations while t < T1; T1 = 1 + the first iteration "
                 "starting at or after half the budget (dotted lines: each run's T1; T1 is not given by the paper, "
                 "FIDELITY AS-25); after T1 the worker step is 0.5 α_w. Mean over seeds, band min-max"
           + _scale(frames))
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    save_figure(fig, out)


# ---- Fig. 2 -------------------------------------------------------------------------------------
def true_mean_delays(times, delays: dict, m: int) -> np.ndarray:
    """The delay model's mean round trip (1 step) of every worker at each of ``times`` (straggler schedule
    included), (len(times), m)."""
    from fedrepro.sim.delays import DelayModel

    model = DelayModel(**delays)
    if model.factors is not None:
        h = np.asarray(model.factors, dtype=float)
    elif model.H_max == 1:
        h = np.ones(m)
    else:                                     # the factors are a seeded permutation: not known here
        raise ValueError("fig2: the true delays are drawn only for equal (H_max = 1) or explicit factors")
    out = np.empty((len(times), m))
    for i, t in enumerate(times):
        for j in range(m):
            mean = (model.c0 + model.m0) * h[j]
            for w, t0, t1, fac in model.schedule:
                if w == j and t0 <= t < t1:
                    mean *= fac
            out[i, j] = mean
    return out


def fig2(frames, summaries, out):
    import json

    plt = _plt()
    df = frames["fig2"].sort_values("virtual_time")
    est_cols = sorted((c for c in df.columns if c.startswith("delay_est_")), key=lambda c: int(c.rsplit("_", 1)[1]))
    m = len(est_cols)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    t = df["virtual_time"].to_numpy()
    grid = np.linspace(0, t.max(), 400)
    spec = json.loads(df["delays"].iloc[0])
    true = true_mean_delays(grid, spec, m)
    for j, col in enumerate(est_cols):
        color = f"C{j}"
        axes[0].plot(grid, true[:, j], color=color, ls="--", lw=1, label=f"worker {j + 1}: true mean delay")
        axes[0].step(t, df[col], where="post", color=color, lw=1.4, label=f"worker {j + 1}: master's estimate T_j")
    axes[0].set_xlabel("virtual time (s)")
    axes[0].set_ylabel("delay (s)")
    axes[0].legend(fontsize=7)
    axes[0].grid(alpha=0.3)
    axes[1].step(t, df["active_workers"], where="post", color="C3")
    axes[1].set_xlabel("virtual time (s)")
    axes[1].set_ylabel("active workers S_t")
    axes[1].set_yticks(range(1, m + 1))
    axes[1].grid(alpha=0.3)
    _title(fig, "Fig. 2 — ASPIRE-ADP: (a) worker delays and the master's estimates, (b) the number of active "
                 "workers; worker 3 straggles (4x) in [10, 40) s")
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    save_figure(fig, out)


# ---- static outputs (no training) ---------------------------------------------------------------
def table5(frames, summaries, out):
    """Table 5 with the realised per-worker data of the Table 3 runs (rebuilt from the processed data
    with the runs' problem options; cached)."""
    import json
    import os

    from fedrepro.data.worker_data import build_worker_data

    processed = os.environ.get("FEDREPRO_PROCESSED", "data/processed")
    realised = {}
    for ds, df in frames_of(frames, "table3").items():
        spec = json.loads(df["problem"].iloc[0])
        wd = build_worker_data(spec["dataset"], processed, split_seed=spec.get("split_seed", 0),
                               train_per_worker=spec.get("train_per_worker"),
                               test_per_worker=spec.get("test_per_worker"), **(spec.get("features") or {}))
        realised[DATASETS[ds][1]] = {"workers": wd.n_workers, "classes": wd.n_classes, "n_train": int(len(wd.y_train)),
                                     "n_test": int(len(wd.y_test)), "d": int(wd.X_train.shape[1])}
    static.render_table5(out, realised)


FIGURES = {
    "fig1": FigureSpec([], lambda frames, summaries, out: static.fig1(out)),
    "fig2": FigureSpec(["fig2"], fig2),
    "fig3": FigureSpec([], fig3, optional=[f"fig3_{d}" for d in DATASETS]),
    "fig4": FigureSpec([], fig4, optional=[f"fig4_{d}" for d in DATASETS]),
    "fig5": FigureSpec([], fig5, optional=[f"fig4_{d}" for d in DATASETS]),
}
TABLES = {
    "table1": FigureSpec([], lambda frames, summaries, out: static.render_table1(out), kind="table"),
    "table2": FigureSpec([], lambda frames, summaries, out: static.render_table2(out), kind="table"),
    "table5": FigureSpec([], table5, kind="table", optional=[f"table3_{d}" for d in DATASETS]),
    "table3": FigureSpec([], table3, kind="table", optional=[f"table3_{d}" for d in DATASETS]),
    "table4": FigureSpec([], table4, kind="table", optional=[f"table4_{d}" for d in DATASETS]),
    "fig4_time": FigureSpec([], fig4_time, kind="table", optional=[f"fig4_{d}" for d in DATASETS]),
}
