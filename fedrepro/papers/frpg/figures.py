"""Figures 3-6 of the FRPG paper (spec 004 sec. 6): loss F(w) of (5) and top-1 test accuracy
of the server model vs communication rounds, panels USPS / MNIST / Fashion-MNIST.

fig3 / fig5 come from experiments ``label_flip`` + ``label_flip_usps`` (minibatch 15), fig4 / fig6
from ``gaussian`` + ``gaussian_usps`` (minibatch 10, c = 1e4). Series are named after the variant
that produced them: "FRPG" is L0 = L (spec A3), "FRPG (L0=δ, literal)" the paper's literal constant,
"RSA (a=3, λ=λ_R)" RSA at the stated step with the (unstated) penalty weight λ_R swept, and the
baselines at the stated a_k = 3/√k ("Krum", "GeoMed", "SGD (mean)") or at the sensitivity step
0.3/√k (", a=0.3"). With several seeds the line is the mean and the band the min-max over seeds.
"""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from fedrepro.figures.base import FigureSpec, save_figure  # noqa: E402
from fedrepro.papers.frpg.analysis import DATASETS, curve, with_series  # noqa: E402

RSA_SERIES = ["RSA (a=3, λ=1.6)", "RSA (a=3, λ=0.1)", "RSA (a=3, λ=0.03)"]
SERIES_ORDER = ["FRPG", "LFRPG", "FRPG (L0=δ, literal)", *RSA_SERIES, "Krum", "GeoMed", "GeoMed (a=0.3)",
                "SGD (mean)", "SGD (mean, a=0.3)"]
STYLE = {"FRPG": ("C3", "-"), "LFRPG": ("C0", "-"), "FRPG (L0=δ, literal)": ("C3", ":"),
         "RSA (a=3, λ=1.6)": ("C2", "-"), "RSA (a=3, λ=0.1)": ("C8", "-"), "RSA (a=3, λ=0.03)": ("C9", "-"),
         "Krum": ("C4", "-"), "GeoMed": ("C1", "-"),
         "GeoMed (a=0.3)": ("C1", "-."), "SGD (mean)": ("C7", "-"), "SGD (mean, a=0.3)": ("C7", "-.")}


def _panel(ax, df, ds, metric, series_list):
    for s in series_list:
        c = curve(df, s, ds, metric)
        if c.empty:
            continue
        color, ls = STYLE.get(s, (None, "-"))
        ax.plot(c["round"], c["mean"], color=color, ls=ls, lw=1.4, label=s)
        if (c["hi"] > c["lo"]).any():
            ax.fill_between(c["round"], c["lo"], c["hi"], color=color, alpha=0.15, lw=0)


def _render(frames, attack, metric, series_list, title, out, *, loss=False, hline=None):
    df = with_series(pd.concat([frames[e] for e in (attack, f"{attack}_usps") if e in frames], ignore_index=True))
    present = [s for s in SERIES_ORDER if s in set(df["series"]) and s in series_list]
    rows = 2 if loss else 1
    fig, axes = plt.subplots(rows, 3, figsize=(15, 3.9 * rows), squeeze=False)
    for j, (ds, name) in enumerate(DATASETS):
        for i in range(rows):
            ax = axes[i, j]
            _panel(ax, df, ds, metric, present)
            ax.set_xlabel("communication rounds (CR)")
            ax.grid(alpha=0.3)
            if loss:
                ax.set_ylabel("loss F(w) of (5)" + (" (log scale)" if i else ""))
                if i:
                    ax.set_yscale("log")
                else:
                    sub = df[(df["ds"] == ds) & df["series"].isin(["FRPG", "LFRPG"])]
                    if not sub.empty and metric in sub:
                        top = float(np.nanmax(sub[metric]))
                        ax.set_ylim(0, 1.15 * top)
            else:
                ax.set_ylabel("top-1 test accuracy")
                ax.set_ylim(0, 1)
                if hline is not None and ds == "usps":
                    ax.axhline(hline, color="k", lw=0.8, ls="--")
                    ax.text(0, hline + 0.01, f"{hline:.0%} (paper's USPS level)", fontsize=8)
            ax.set_title(f"({'abc'[j]}) {name}" + (" — log y" if loss and i else ""))
    handles, labels = axes[0, 0].get_legend_handles_labels()
    for ax in axes.ravel():
        h, lab = ax.get_legend_handles_labels()
        if len(lab) > len(labels):
            handles, labels = h, lab
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 7), fontsize=9, frameon=False)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0.1, 1, 0.95))
    save_figure(fig, out)


LOSS_SERIES = ["FRPG", "LFRPG", "FRPG (L0=δ, literal)", *RSA_SERIES]
ACC_SERIES = SERIES_ORDER
_COMMON = ("Q=20, B=4 (last), pair_digit, λ=1.6, μ=1e-3, δ=0.003, L0=L unless marked, LFRPG T=10; "
           "baselines a/√k with the stated a=3 (solid) and a=0.3 (dash-dot, sensitivity: SGD, GeoMed); "
           "RSA's λ_R unstated: swept; RSA's F uses its own λ_R")


def fig3(frames, summaries, out):
    _render(frames, "label_flip", "loss_F", LOSS_SERIES,
            "Fig. 3 — loss F(w) of (5) on the reliable workers vs CR, label-flipping attack (minibatch 15)\n"
            + _COMMON, out, loss=True)


def fig4(frames, summaries, out):
    _render(frames, "gaussian", "loss_F", LOSS_SERIES,
            "Fig. 4 — loss F(w) of (5) on the reliable workers vs CR, Gaussian attack (c=1e4, minibatch 10)\n"
            + _COMMON, out, loss=True)


def fig5(frames, summaries, out):
    _render(frames, "label_flip", "accuracy", ACC_SERIES,
            "Fig. 5 — top-1 test accuracy of the server model vs CR, label-flipping attack (minibatch 15)\n"
            + _COMMON, out, hline=0.71)


def fig6(frames, summaries, out):
    _render(frames, "gaussian", "accuracy", ACC_SERIES,
            "Fig. 6 — top-1 test accuracy of the server model vs CR, Gaussian attack (c=1e4, minibatch 10)\n"
            + _COMMON, out)


FIGURES = {
    "fig3": FigureSpec(experiments=["label_flip", "label_flip_usps"], render=fig3),
    "fig4": FigureSpec(experiments=["gaussian", "gaussian_usps"], render=fig4),
    "fig5": FigureSpec(experiments=["label_flip", "label_flip_usps"], render=fig5),
    "fig6": FigureSpec(experiments=["gaussian", "gaussian_usps"], render=fig6),
}
TABLES: dict = {}          # the paper's results are figures only
