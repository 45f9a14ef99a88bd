"""Figures 3-10 and Tables I-VI of Gong, Li & Freris, "FedADMM" (spec 003 §6).

Curves are the seed-mean test accuracy of the global model vs communication rounds (bands: min-max
over seeds when there are several); dashed lines are the targets (:data:`analysis.TARGETS`, by the
model actually run). Rounds to target come from the seed-mean curve ("T+": not reached within the
T rounds run). Titles carry "[reduced scale: ...]" when the runs are the quick scale's MLPs.
"""
from __future__ import annotations

from functools import partial

from pathlib import Path

import numpy as np
import pandas as pd

from fedrepro.figures.base import FigureSpec, save_figure, write_table
from fedrepro.papers.fedadmm_gong.analysis import (
    ALG1, BASELINES, DATASETS, EARLY, HEAD, PAPER_TABLE3, PAPER_TABLE4, PAPER_TABLE5, PARTITIONS, TABLE3_COLUMNS,
    VARIANTS, best_prox, fig4_frame, fmt_rounds, for_variant, layout, mean_curve, rank_value, reduction, rtt,
    populations_note, runs_of, scale_note, sub_target, table6_frame, target, tidy, variant_label, variants_of)

STYLE = {"FedADMM": ("tab:red", "-"), "FedAvg": ("tab:blue", "-"), "FedProx": ("tab:green", "-"),
         "SCAFFOLD": ("tab:purple", "-"), "FedSGD": ("tab:gray", "-")}
VARIANT_STYLE = {EARLY: ("tab:red", "-"), ALG1: ("darkorange", "--"), HEAD: ("tab:brown", "-.")}
ORDER = ("FedADMM", "FedAvg", "FedProx", "SCAFFOLD")


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _frame(frames, *experiments) -> pd.DataFrame:
    parts = [tidy(frames[e]) for e in experiments if e in frames and frames[e] is not None and not frames[e].empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _curve(ax, sub, label, color=None, ls="-"):
    c = mean_curve(sub)
    if c.empty:
        return
    line, = ax.plot(c["round"], c["mean"], color=color, ls=ls, lw=1.4, label=label)
    if (c["hi"] > c["lo"]).any():
        ax.fill_between(c["round"], c["lo"], c["hi"], color=line.get_color(), alpha=0.12, lw=0)


def _target_line(ax, sub):
    """The target(s): one dashed line, or one per FedADMM variant when their targets differ (GO-12)."""
    if sub.empty:
        return
    levels = {}
    for v in variants_of(sub) or [None]:
        levels.setdefault(round(sub_target(sub if v is None else for_variant(sub, v)), 6), []).append(v)
    for (level, vs), ls in zip(sorted(levels.items()), ("--", ":", "-.")):
        label = None if len(levels) == 1 else "target, " + " / ".join(VARIANTS.get(v, str(v)) for v in vs)
        ax.axhline(level, color="k", lw=0.8, ls=ls, label=label)


def _axes(ax, title):
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("communication rounds")
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)


def _empty(ax, why):
    ax.text(0.5, 0.5, why, ha="center", va="center", transform=ax.transAxes, fontsize=8, wrap=True)
    ax.set_xticks([])
    ax.set_yticks([])


def _legend(fig, axes):
    handles, labels = [], []
    for ax in np.ravel(axes):
        h, lab = ax.get_legend_handles_labels()
        for hh, ll in zip(h, lab):
            if ll not in labels:
                handles.append(hh)
                labels.append(ll)
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 6), fontsize=8, frameon=False)


def _finish(fig, axes, title, out, rows):
    import textwrap

    _legend(fig, axes)
    width = max(60, int(fig.get_figwidth() * 14))          # characters that fit the figure's width
    fig.suptitle(textwrap.fill(title, width), fontsize=10)
    fig.tight_layout(rect=(0, 0.07 if rows == 1 else 0.05, 1, 0.94))
    save_figure(fig, out)


def _algorithm_panel(ax, sub, title):
    if sub.empty:
        _empty(ax, "not run at this scale (FIDELITY GO-11)")
        return
    for v in variants_of(sub):                  # every FedADMM variant run, labelled (GO-15)
        _curve(ax, runs_of(for_variant(sub, v), "FedADMM"), variant_label(v), *VARIANT_STYLE.get(v, STYLE["FedADMM"]))
    for method in BASELINES:                    # the figures' FedProx is rho = 0.1 (spec §6); lr tuned if swept
        g = runs_of(sub, method, 0.1 if method == "FedProx" else None)
        color, ls = STYLE[method]
        _curve(ax, g, method if method != "FedProx" else "FedProx (ρ=0.1)", color, ls)
    _target_line(ax, sub)
    _axes(ax, title)


# ---- Table I, II (static / computed) -------------------------------------------------------------
def table1(frames, summaries, out):
    rows = [("FedAvg", "O(1/ε² · (m−S)/(mS) + G/ε^{3/2} + B²/ε)", ""),
            ("FedProx", "O(B²/ε)", "requires S > B²"),
            ("SCAFFOLD", "O(1/ε² + 1/ε · (m/S)^{2/3})", ""),
            ("FedPD", "O(1/ε)", "requires all clients to communicate"),
            ("FedADMM", "O(1/ε · (m/S))", "")]
    write_table(pd.DataFrame(rows, columns=["method", "rounds to an ε-stationary point", "condition"]), out,
                "Table I — communication complexity (static, from the paper's text; no computation)")


def table2(frames, summaries, out):
    from fedrepro.nn import build_model

    rows = []
    for model, ds, paper_n, tgt in (("cnn1", "MNIST", 1663370, 0.97), ("cnn1", "FMNIST", 1663370, 0.80),
                                    ("cnn2", "CIFAR-10", 1105098, 0.45)):
        n = build_model(model).n_params
        rows.append((model.upper().replace("CNN", "CNN "), n, paper_n, "yes" if n == paper_n else "NO", ds, f"{tgt:.0%}"))
    for model, ds in (("mlp1", "MNIST, FMNIST (quick scale)"), ("mlp2", "CIFAR-10 (quick scale)")):
        rows.append((model.upper().replace("MLP", "MLP-"), build_model(model).n_params, None, "", ds, "see Table III"))
    write_table(pd.DataFrame(rows, columns=["model", "# params (ours)", "# params (paper)", "equal", "dataset", "target"]),
                out, "Table II — experimental setup; parameter counts computed from the implemented models "
                     "(fedrepro.nn.build_model) and checked against the paper's",
                formats={"# params (ours)": "{:,}", "# params (paper)": "{:,.0f}"})


# ---- Table III ------------------------------------------------------------------------------------
def table3_frame(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (FedADMM variant, method, setting): rounds (seed-mean curve), per-seed rounds, horizon,
    target (the variant's, GO-12), final accuracy, FedProx's chosen rho (column ``variant``: the
    variant whose targets the row is judged by)."""
    frames = [_table3_frame(for_variant(df, v)).assign(variant=v) for v in (variants_of(df) or [EARLY])]
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["setting", "method", "variant"])


def _table3_frame(df: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for setting in [s for s in TABLE3_COLUMNS if s in set(df["setting"])]:
        sub = df[df["setting"] == setting]
        res = {}
        for method in ("FedSGD", "FedADMM", "FedAvg", "SCAFFOLD"):
            g = runs_of(sub, method)
            if not g.empty:
                res[method] = ({**rtt(g), "lr": float(g["lr"].iloc[0])}, "")
        best, r = best_prox(sub)
        if best is not None:
            res["FedProx"] = (r, best)
        for method, (r, note) in res.items():
            rows.append({"setting": setting, "method": method, "rounds": r["rounds"], "horizon": r["horizon"],
                         "per_seed": ",".join(fmt_rounds(x, r["horizon"]) for x in r["per_seed"]),
                         "target": r["target"], "final_accuracy": r["final"], "chosen": note, "lr": r["lr"]})
    return pd.DataFrame(rows)


def table3(frames, summaries, out):
    df = _frame(frames, "table3", "table3_alg1", "table3_fedsgd")
    t_all = table3_frame(df)
    cols = [s for s in TABLE3_COLUMNS if s in set(t_all["setting"])]
    tuned = (df.groupby(["setting", "method"])["lr"].nunique() > 1).to_dict()     # lr swept: show the chosen one
    variants = [v for v in (variants_of(df) or [EARLY]) if v in set(t_all["variant"])]
    shared = len({tuple(t_all[t_all["variant"] == v]["target"].round(6)) for v in variants}) <= 1
    display = {}
    for k, v in enumerate(variants):
        t = t_all[t_all["variant"] == v]
        _table3_rows(t, cols, tuned, display, v, baselines=k == 0 or not shared,
                     suffix="" if shared else f" (at {VARIANTS.get(v, v)}'s targets)")
    _write_table3(df, t_all, cols, display, variants, out)


def _table3_rows(t, cols, tuned, display, variant, baselines, suffix):
    for method in ("FedSGD", "FedADMM", "FedAvg", "FedProx", "SCAFFOLD"):
        if method != "FedADMM" and not baselines:
            continue
        row = []
        for s in cols:
            r = t[(t["setting"] == s) & (t["method"] == method)]
            sgd = t[(t["setting"] == s) & (t["method"] == "FedSGD")]
            if r.empty:
                row.append("n/a")
                continue
            rr, T = r["rounds"].iloc[0], int(r["horizon"].iloc[0])
            rr = None if pd.isna(rr) else int(rr)
            txt = fmt_rounds(rr, T)
            if method != "FedSGD" and rr is not None and not sgd.empty and not pd.isna(sgd["rounds"].iloc[0]):
                txt += f" ({float(sgd['rounds'].iloc[0]) / rr:.1f}×)"
            tags = [r["chosen"].iloc[0].split("(")[1].rstrip(")")] if method == "FedProx" else []
            if tuned.get((s, method), False):
                tags.append(f"lr={r['lr'].iloc[0]:g}")
            if tags:
                txt += f" [{', '.join(tags)}]"
            row.append(txt)
        display[variant_label(variant) if method == "FedADMM" else method + suffix] = row
    red = []
    for s in cols:
        sub = t[t["setting"] == s]
        get = {m: sub[sub["method"] == m] for m in ("FedADMM", *BASELINES)}
        if any(v.empty for v in get.values()):
            red.append("n/a")
            continue
        T = int(get["FedADMM"]["horizon"].iloc[0])
        vals = {m: (None if pd.isna(v["rounds"].iloc[0]) else int(v["rounds"].iloc[0])) for m, v in get.items()}
        best_m = min(BASELINES, key=lambda m: rank_value(vals[m], T))
        rd = reduction(vals["FedADMM"], vals[best_m], T)
        red.append("n/a (not reached)" if rd is None else f"{rd:.1f}% vs {best_m}")
    display[f"Reduction, {variant_label(variant)}"] = red


def _targets_text(df) -> str:
    parts = []
    for v in variants_of(df) or [EARLY]:
        d = for_variant(df, v)
        tg = sorted({f"{DATASETS[x]} {target(x, f, v):.0%}" for x, f in zip(d["ds"], d["family"])})
        parts.append((VARIANTS.get(v, v), ", ".join(tg)))
    if len({p[1] for p in parts}) == 1:
        return parts[0][1]
    return "; ".join(f"{name}: {tg}" for name, tg in parts)


def _write_table3(df, t, cols, display, variants, out):
    paper = {m: [("100+" if v is None else str(v)) for v in vals] for m, vals in PAPER_TABLE3.items()}
    rows = [[m, *display[m]] for m in display]
    rows += [[f"paper: {m}", *[paper[m][TABLE3_COLUMNS.index(c)] for c in cols]] for m in paper]
    write_table(pd.DataFrame(rows, columns=["method", *cols]), out,
                "Table III — communication rounds to reach the target test accuracy (seed-mean curve; speedup vs "
                f"FedSGD; FedProx: best ρ in [..], tuned lr in [..] when swept; T+ = not reached in T rounds). "
                f"Targets: {_targets_text(df)}."
                + scale_note(df) + populations_note(df) + " Paper (CNNs, 100 rounds, 5 seeds) below.")
    t.to_csv(Path(out).with_name(Path(out).name + "_runs.csv"), index=False)


# ---- Figs. 3-5: populations -----------------------------------------------------------------------
def fig3(frames, summaries, out):
    plt = _plt()
    df = _frame(frames, "scaling", "scaling_alg1")
    parts = layout()["fig3_partition"]
    ms = sorted(df["m"].unique()) if not df.empty else []
    dss = [d for d in ("fashion_mnist", "cifar10") if not df.empty and d in set(df["ds"])]
    fig, axes = plt.subplots(max(len(dss), 1), max(len(ms), 1), figsize=(3.4 * max(len(ms), 1), 3.0 * max(len(dss), 1)),
                             squeeze=False)
    for i, ds in enumerate(dss):
        for j, m in enumerate(ms):
            sub = df[(df["ds"] == ds) & (df["m"] == m) & (df["partition"] == parts[ds])]
            _algorithm_panel(axes[i, j], sub, f"{DATASETS[ds]} {PARTITIONS[parts[ds]]}, m = {m}")
    _finish(fig, axes, "Fig. 3 — test accuracy vs rounds for growing client populations (C = 0.1, E = 10, B = 50)"
            + scale_note(df) + populations_note(df), out, len(dss))


def fig4(frames, summaries, out):
    plt = _plt()
    df = _frame(frames, "scaling", "scaling_alg1")
    parts = {d: p for d, p in layout()["fig4_partition"].items() if not df.empty and d in set(df["ds"])}
    t = fig4_frame(df, parts) if parts else pd.DataFrame()
    variants = variants_of(df) or [EARLY]
    fig, axes = plt.subplots(max(len(parts), 1), 2, figsize=(10, 3.2 * max(len(parts), 1)), squeeze=False)
    for i, (ds, part) in enumerate(parts.items()):
        d_all = t[t["dataset"] == ds] if not t.empty else t
        ax = axes[i, 0]
        if d_all.empty:
            _empty(ax, "no FedADMM runs")
            _empty(axes[i, 1], "no FedADMM runs")
            continue
        series = [(variant_label(v), VARIANTS.get(v, v), "FedADMM", VARIANT_STYLE.get(v, STYLE["FedADMM"])[0])
                  for v in variants] + [(m if m != "FedProx" else "FedProx (ρ=0.1)", VARIANTS.get(variants[0]), m,
                                         STYLE[m][0]) for m in BASELINES]
        width = 0.8 / len(series)
        first = max((d_all[d_all["variant"] == VARIANTS.get(v, v)] for v in variants), key=len)   # widest m range
        x = np.arange(len(first))
        ms = [int(m) for m in first["m"]]
        for k, (label, vname, method, color) in enumerate(series):
            d = d_all[(d_all["variant"] == vname) & d_all["m"].isin(ms)]
            T = d["horizon"].to_numpy()
            r = d[f"rounds_{method}"].to_numpy(dtype=float)
            h = np.where(np.isnan(r), T + 1, r)
            at = np.array([ms.index(int(m)) for m in d["m"]], dtype=float)      # a variant may miss some m
            bars = ax.bar(at + (k - (len(series) - 1) / 2) * width, h, width, color=color, label=label,
                          hatch=None if method != "FedADMM" or k == 0 else "..")
            for b, miss in zip(bars, np.isnan(r)):
                if miss:
                    b.set_hatch("//")
                    b.set_alpha(0.5)
        ax.set_xticks(x, [f"m={m}" for m in first["m"]])
        ax.set_ylabel("rounds to target (hatched: T+)")
        ax.set_title(f"{DATASETS[ds]} {PARTITIONS[part]}: rounds to " + " / ".join(
            f"{target(ds, df['family'].iloc[0], v):.0%}" for v in variants), fontsize=9)
        ax.grid(alpha=0.3, axis="y")
        ax2 = axes[i, 1]
        shown = False
        for v in variants:
            d = d_all[d_all["variant"] == VARIANTS.get(v, v)]
            red = d["reduction"].astype(float)
            if red.notna().any():
                color, ls = VARIANT_STYLE.get(v, STYLE["FedADMM"])
                ax2.plot(d["m"], red, "o", ls=ls, color=color, label=f"reduction, {variant_label(v)}")
                shown = True
        if shown:
            ax2.axhline(0, color="k", lw=0.8)
            ax2.set_xscale("log")
            ax2.set_xticks(first["m"], [str(m) for m in first["m"]])
            ax2.set_xlabel("clients m")
            ax2.set_ylabel("reduction vs best baseline (%)")
            ax2.grid(alpha=0.3)
        else:
            _empty(ax2, "no reduction to show: FedADMM or the best baseline\ndid not reach the target at any m")
        ax2.set_title(f"{DATASETS[ds]} {PARTITIONS[part]}: FedADMM's reduction (no point: a method did not reach "
                      "the target)", fontsize=8)
    _finish(fig, axes, "Fig. 4 — rounds to target vs client population and FedADMM's reduction" + scale_note(df)
            + populations_note(df),
            out, len(parts))
    t.to_csv(Path(out).with_suffix(".csv"), index=False)


def fig5(frames, summaries, out):
    plt = _plt()
    df = _frame(frames, "scaling", "scaling_alg1")
    df = df[df["m"] == 200] if not df.empty else df
    fig, axes = plt.subplots(2, 2, figsize=(9, 6.5), squeeze=False)
    for i, ds in enumerate(("fashion_mnist", "cifar10")):
        for j, part in enumerate(("iid", "label_shards")):
            sub = df[(df["ds"] == ds) & (df["partition"] == part)] if not df.empty else df
            _algorithm_panel(axes[i, j], sub, f"{DATASETS[ds]} {PARTITIONS[part]}, m = 200")
    base = df[df["method"] != "FedADMM"] if not df.empty else df
    tuning = ("baselines' lr tuned per panel" if not base.empty and base["lr"].nunique() > 1
              else "baselines not tuned here: lr 0.1")
    _finish(fig, axes, f"Fig. 5 — heterogeneous data, m = 200, E = 10, B = 50 (FedADMM lr 0.1, ρ 0.01; {tuning})"
            + scale_note(df), out, 2)


# ---- Fig. 6: server step ---------------------------------------------------------------------------
ALG1_NOTE = " — Algorithm 1 as printed (Option I, batches once per ClientUpdate, plain SGD; FIDELITY GO-7, GO-15)"
EARLY_NOTE = " — FedADMM as the authors' early code ran it (GO-15)"


def fig6(frames, summaries, out, twin: str = ""):
    """Fig. 6 for the early code (``twin=""``) or for Algorithm 1 as printed (``twin="_alg1"``)."""
    plt = _plt()
    const, sched = _frame(frames, "fig6_constant" + twin), _frame(frames, "fig6_schedule" + twin)
    panels = [s for s in ("MNIST IID", "MNIST non-IID", "CIFAR-10 non-IID")
              if not const.empty and s in set(const["setting"])]
    fig, axes = plt.subplots(2, max(len(panels), 1), figsize=(4.2 * max(len(panels), 1), 6.4), squeeze=False)
    colors = {0.5: "tab:blue", 1.0: "tab:red", 1.5: "tab:green"}
    switch = None
    if not sched.empty:
        import json
        switch = json.loads(sched["params"].iloc[0]).get("eta_switch")
    for j, panel in enumerate(panels):
        c = const[const["setting"] == panel]
        for eta in sorted(c["eta"].unique()):
            _curve(axes[0, j], c[c["eta"] == eta], f"η = {eta:g}", colors.get(eta))
        _target_line(axes[0, j], c)
        _axes(axes[0, j], f"{panel}: constant η")
        ax = axes[1, j]
        _curve(ax, c[np.isclose(c["eta"], 1.0)], "η = 1 (constant)", colors[1.0])
        s = sched[sched["setting"] == panel] if not sched.empty else sched
        for eta in (sorted(s["eta"].unique()) if not s.empty else []):
            _curve(ax, s[s["eta"] == eta], f"η = {eta:g} → 0.5", colors.get(eta), "--")
        if switch is not None:
            ax.axvline(switch, color="k", lw=0.8, ls=":")
        _target_line(ax, c)
        _axes(ax, f"{panel}: η switched at round {switch}")
    _finish(fig, axes, "Fig. 6 — FedADMM with server step size η (m = 100, E = 10, B = 50)"
            + (ALG1_NOTE if twin else EARLY_NOTE) + scale_note(const), out, 2)


# ---- Table IV / Fig. 7: local epochs ---------------------------------------------------------------
def table4_frame(df: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (ds, part), sub in df.groupby(["ds", "partition"]):
        row = {"dataset": ds, "partition": part}
        for E in sorted(sub["E"].unique()):
            r = rtt(sub[sub["E"] == E])
            row[f"E={E}"] = r["rounds"]
            row[f"final E={E}"] = r["final"]
            row["horizon"] = r["horizon"]
        rows.append(row)
    return pd.DataFrame(rows)


def table4(frames, summaries, out, twin: str = ""):
    df = _frame(frames, "table4" + twin)
    t = table4_frame(df)
    Es = sorted(df["E"].unique())
    rows = []
    for _, r in t.iterrows():
        paper = PAPER_TABLE4.get((r["dataset"], r["partition"]), [None] * 3)
        rows.append([f"{DATASETS[r['dataset']]} {PARTITIONS[r['partition']]}",
                     *[fmt_rounds(None if pd.isna(r[f"E={E}"]) else int(r[f"E={E}"]), int(r["horizon"])) for E in Es],
                     *[f"{r[f'final E={E}']:.3f}" for E in Es], " / ".join(str(p) for p in paper)])
    tgts = sorted({f"{DATASETS[d]} {target(d, f):.0%}" for d, f in zip(df["ds"], df["family"])})
    write_table(pd.DataFrame(rows, columns=["setting", *[f"rounds E={E}" for E in Es],
                                            *[f"final acc E={E}" for E in Es], "paper (E = 1 / 5 / 10)"]),
                out, f"Table IV — FedADMM rounds to target vs the local epochs E ({_epochs_text(df)}); targets "
                     f"{', '.join(tgts)}" + (ALG1_NOTE if twin else EARLY_NOTE) + scale_note(df))


def _epochs_text(df) -> str:
    import json
    if df.empty or all(json.loads(p).get("random_epochs", True) for p in df["params"].unique()):
        return "the maximum: E_i ~ U{1..E}"
    return "fixed: every client runs E epochs, the early code's --fixed 1"


def fig7(frames, summaries, out, twin: str = ""):
    plt = _plt()
    df = _frame(frames, "table4" + twin)
    panels = [tuple(p) for p in layout()["fig7_panels"]]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.6), squeeze=False)
    for j, (ds, part) in enumerate(panels):
        sub = df[(df["ds"] == ds) & (df["partition"] == part)] if not df.empty else df
        if sub.empty:
            _empty(axes[0, j], "no runs")
            continue
        for E, color in zip(sorted(sub["E"].unique()), ("tab:blue", "tab:orange", "tab:red")):
            _curve(axes[0, j], sub[sub["E"] == E], f"E = {E}", color)
        _target_line(axes[0, j], sub)
        _axes(axes[0, j], f"{DATASETS[ds]} {PARTITIONS[part]}")
    _finish(fig, axes, "Fig. 7 — FedADMM test accuracy vs rounds for local epochs E"
            + (ALG1_NOTE if twin else EARLY_NOTE) + scale_note(df), out, 1)


# ---- Fig. 8: Option I vs II ------------------------------------------------------------------------
def fig8(frames, summaries, out):
    plt = _plt()
    df, diag = _frame(frames, "fig8"), _frame(frames, "fig8_sequential")
    fig, axes = plt.subplots(2, 2, figsize=(9, 6.5), squeeze=False)
    style = {("local", 1.0): ("tab:red", "-"), ("local", 0.5): ("tab:red", "--"),
             ("global", 1.0): ("tab:blue", "-"), ("global", 0.5): ("tab:blue", "--")}
    for i, ds in enumerate(("mnist", "cifar10")):
        for j, part in enumerate(("iid", "label_shards")):
            sub = df[(df["ds"] == ds) & (df["partition"] == part)] if not df.empty else df
            if sub.empty:
                _empty(axes[i, j], "no runs")
                continue
            for (init, eta), (color, ls) in style.items():
                g = sub[(sub["local_init"] == init) & np.isclose(sub["eta"], eta)]
                _curve(axes[i, j], g, f"Option {'I' if init == 'local' else 'II'}, η = {eta:g}", color, ls)
            seq = diag[(diag["ds"] == ds) & (diag["partition"] == part)] if not diag.empty else diag
            for eta, ls in ((1.0, ":"), (0.5, (0, (1, 3)))):
                g = seq[np.isclose(seq["eta"], eta)] if not seq.empty else seq
                _curve(axes[i, j], g, f"early code (the paper's FedADMM), η = {eta:g}", "tab:gray", ls)
            _target_line(axes[i, j], sub)
            _axes(axes[i, j], f"{DATASETS[ds]} {PARTITIONS[part]}")
    _finish(fig, axes, "Fig. 8 — FedADMM local initialisation, Algorithm 1 as printed (batches once, plain SGD): "
            "Option I (warm start from w_i) vs II (from θ, the authors' HEAD code's start); dotted: the authors' early code (clients trained in "
            "sequence, random order, fixed E; spec §7 A3, the algorithm the paper's numbers match, GO-15)"
            + scale_note(df), out, 2)


# ---- Table V: FedProx rho ---------------------------------------------------------------------------
def table5_frame(df: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (ds, series), sub in df.groupby(["ds", "series"]):
        row = {"dataset": ds, "series": series}
        for m in (200, 500):
            for part in ("iid", "label_shards"):
                r = rtt(sub[(sub["m"] == m) & (sub["partition"] == part)])
                row[f"{m} {PARTITIONS[part]}"] = r["rounds"]
                row["horizon"] = r["horizon"] or row.get("horizon", 0)
        rows.append(row)
    return pd.DataFrame(rows)


def table5(frames, summaries, out, twin: str = ""):
    df = _frame(frames, "table5")
    if twin:        # Algorithm 1 as printed in FedADMM's row; FedProx's rows are table5's runs (same seeds)
        df = pd.concat([df[df["method"] != "FedADMM"], _frame(frames, "table5" + twin)], ignore_index=True)
    t = table5_frame(df)
    cols = ["200 IID", "200 non-IID", "500 IID", "500 non-IID"]
    rows = []
    for ds in ("mnist", "fashion_mnist"):
        for series in ("FedADMM", "FedProx (ρ=0.01)", "FedProx (ρ=0.1)", "FedProx (ρ=1)"):
            r = t[(t["dataset"] == ds) & (t["series"] == series)]
            if r.empty:
                continue
            T = int(r["horizon"].iloc[0])
            ours = [fmt_rounds(None if pd.isna(r[c].iloc[0]) else int(r[c].iloc[0]), T) for c in cols]
            paper = ["100+" if v is None else str(v) for v in PAPER_TABLE5.get((ds, series), [None] * 4)]
            rows.append([DATASETS[ds], series + (" (0.01)" if series == "FedADMM" else ""), *ours, " / ".join(paper)])
    tgts = sorted({f"{DATASETS[d]} {target(d, f):.0%}" for d, f in zip(df["ds"], df["family"])})
    write_table(pd.DataFrame(rows, columns=["dataset", "method (ρ)", *cols, "paper"]), out,
                "Table V — rounds to target, FedProx's ρ vs FedADMM (ρ = 0.01), E = 10, B = 50; targets "
                f"{', '.join(tgts)}" + (ALG1_NOTE if twin else EARLY_NOTE) + scale_note(df))


# ---- Fig. 9: rho schedule ----------------------------------------------------------------------------
def fig9(frames, summaries, out, twin: str = ""):
    plt = _plt()
    df = _frame(frames, "fig9" + twin)
    dss = [d for d in ("mnist", "cifar10") if not df.empty and d in set(df["ds"])]
    fig, axes = plt.subplots(1, max(len(dss), 1), figsize=(4.6 * max(len(dss), 1), 3.6), squeeze=False)
    switch = None
    if not df.empty:
        import json
        switch = json.loads(df["params"].iloc[0]).get("rho_switch")
    for j, ds in enumerate(dss):
        sub = df[df["ds"] == ds]
        for rho2, color in zip(sorted(sub["rho_2"].astype(float).unique()), ("tab:blue", "tab:orange", "tab:red")):
            label = "ρ = 0.01 (constant)" if np.isclose(rho2, 0.01) else f"ρ: 0.01 → {rho2:g}"
            _curve(axes[0, j], sub[np.isclose(sub["rho_2"].astype(float), rho2)], label, color)
        if switch is not None:
            axes[0, j].axvline(switch, color="k", lw=0.8, ls=":")
        _target_line(axes[0, j], sub)
        _axes(axes[0, j], f"{DATASETS[ds]} non-IID, ρ raised at round {switch}")
    _finish(fig, axes, "Fig. 9 — FedADMM with a dynamic penalty ρ (m = 100, E = 10, B = 50)"
            + (ALG1_NOTE if twin else EARLY_NOTE) + scale_note(df), out, 1)


# ---- Table VI / Fig. 10: imbalanced volumes -------------------------------------------------------
def table6(frames, summaries, out):
    write_table(table6_frame(frames), out,
                "Table VI — imbalanced data volumes: client sizes of the partition of the full training set "
                "(10,000 label-sorted shards, 100 groups of 2 clients, group g gets g shards; sample stdev, ddof = 1). "
                "Paper: clients / samples / mean / stdev",
                formats={"mean": "{:.2f}", "stdev": "{:.2f}"})


def fig10(frames, summaries, out):
    plt = _plt()
    df = _frame(frames, "fig10", "fig10_alg1")
    fig, axes = plt.subplots(1, 2, figsize=(9.2, 3.6), squeeze=False)
    for j, ds in enumerate(("fashion_mnist", "cifar10")):
        sub = df[df["ds"] == ds] if not df.empty else df
        _algorithm_panel(axes[0, j], sub, f"{DATASETS[ds]} imbalanced, m = 200, |S| = 20")
    _finish(fig, axes, "Fig. 10 — imbalanced data volumes (unweighted aggregation)" + scale_note(df), out, 1)


FIGURES = {
    "fig3": FigureSpec(["scaling", "scaling_alg1"], fig3),
    "fig4": FigureSpec(["scaling", "scaling_alg1"], fig4),
    "fig5": FigureSpec(["scaling", "scaling_alg1"], fig5),
    "fig6": FigureSpec(["fig6_constant", "fig6_schedule"], fig6),
    "fig6_alg1": FigureSpec(["fig6_constant_alg1", "fig6_schedule_alg1"], partial(fig6, twin="_alg1")),
    "fig7": FigureSpec(["table4"], fig7),
    "fig7_alg1": FigureSpec(["table4_alg1"], partial(fig7, twin="_alg1")),
    "fig8": FigureSpec(["fig8", "fig8_sequential"], fig8),
    "fig9": FigureSpec(["fig9"], fig9),
    "fig9_alg1": FigureSpec(["fig9_alg1"], partial(fig9, twin="_alg1")),
    "fig10": FigureSpec(["fig10", "fig10_alg1"], fig10),
}
TABLES = {
    "table1": FigureSpec([], table1, kind="table"),
    "table2": FigureSpec([], table2, kind="table"),
    "table3": FigureSpec(["table3", "table3_alg1", "table3_fedsgd"], table3, kind="table"),
    "table4": FigureSpec(["table4"], table4, kind="table"),
    "table4_alg1": FigureSpec(["table4_alg1"], partial(table4, twin="_alg1"), kind="table"),
    "table5": FigureSpec(["table5"], table5, kind="table"),
    "table5_alg1": FigureSpec(["table5", "table5_alg1"], partial(table5, twin="_alg1"), kind="table"),
    "table6": FigureSpec(["fig10"], table6, kind="table"),
}
