"""Label counts per client of an experiment's partitions, drawn as Flower Datasets'
``plot_label_distributions`` draws them: one horizontal bar per client, its samples stacked by label,
a legend of the labels. Read from ``results/<paper>/partitions.parquet``
(:mod:`fedrepro.experiments.partitions`); the report shows one figure per experiment."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from fedrepro.experiments.partitions import COLUMNS, count_matrix

MAX_CLIENTS = 50        # clients drawn per partition (the first ones; the panel says how many there are)
MAX_PANELS = 4          # partitions drawn per experiment (the first seed of each setting first)


def shown_partitions(table: pd.DataFrame, max_panels: int = MAX_PANELS) -> tuple[list[str], int]:
    """``(partition ids to draw, number of partitions)``: the first seed of each problem block (a setting),
    in the table's order, at most ``max_panels``."""
    firsts = table.drop_duplicates("partition")[["partition", "problem", "seed"]]
    per_setting = firsts.sort_values("seed", kind="stable").drop_duplicates("problem")
    order = [p for p in firsts["partition"] if p in set(per_setting["partition"])]
    return order[:max_panels], len(firsts)


def _colours(labels: list):
    import matplotlib.pyplot as plt

    n = len(labels)
    if n <= 10:
        cols = plt.get_cmap("tab10").colors[:n]
    elif n <= 20:
        cols = plt.get_cmap("tab20").colors[:n]
    else:
        import seaborn as sns

        cols = sns.color_palette("husl", n)
    return dict(zip(labels, cols))


def _setting(rows: pd.DataFrame) -> str:
    """The panel's title: its swept settings and seed."""
    extra = [c for c in rows.columns if c not in COLUMNS]
    first = rows.iloc[0]
    parts = [f"{c}={first[c]:g}" if isinstance(first[c], float) else f"{c}={first[c]}" for c in extra
             if not pd.isna(first[c]) if np.ndim(first[c]) == 0]
    block = json.loads(first["problem"]).get("partition") if isinstance(first["problem"], str) else None
    if isinstance(block, dict) and "method" in block:             # the rule, when the problem block names one
        params = ", ".join(f"{k}={v}" for k, v in block.items() if k != "method")
        parts.append(f"{block['method']}{f' ({params})' if params else ''}")
    elif isinstance(block, str):
        parts.append(block)
    return ", ".join(parts + [f"seed {int(first['seed'])}"])


def label_distribution_figure(table: pd.DataFrame, title: str | None = None, max_clients: int = MAX_CLIENTS,
                              max_panels: int = MAX_PANELS):
    """The figure of one experiment's rows of the partition table: a panel per shown partition
    (:func:`shown_partitions`), a bar per client (the first ``max_clients``), stacked by label."""
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection
    from matplotlib.ticker import MaxNLocator

    if table.empty:
        raise ValueError("no partition rows to draw")
    shown, total = shown_partitions(table, max_panels)
    mats = {p: count_matrix(table[table["partition"] == p]) for p in shown}
    labels = sorted({c for m in mats.values() for c in m.columns}, key=lambda c: (isinstance(c, str), c))
    colours = _colours(labels)
    height = max(3.0, 0.14 * min(max_clients, max(len(m) for m in mats.values())) + 1.4)
    fig, axes = plt.subplots(1, len(shown), figsize=(4.6 * len(shown) + 1.2, height), squeeze=False)
    for ax, part in zip(axes[0], shown):
        mat = mats[part]
        n_clients = len(mat)
        mat = mat.iloc[:max_clients]
        # one collection of rectangles per label (a bar per client): as barh draws them, without a patch
        # per bar (50 clients x 10 labels x 4 panels of patches cost a second per figure)
        y = mat.index.to_numpy(dtype=float)
        left = np.zeros(len(mat))
        for label in mat.columns:
            values = mat[label].to_numpy(dtype=float)
            right = left + values
            verts = np.stack([np.column_stack([left, y - 0.425]), np.column_stack([right, y - 0.425]),
                              np.column_stack([right, y + 0.425]), np.column_stack([left, y + 0.425])], axis=1)
            ax.add_collection(PolyCollection(verts, facecolors=[colours[label]], linewidths=0, label=str(label)))
            left = right
        ax.set_xlim(0, max(float(left.max()), 1.0) * 1.02)
        ax.set_ylim(mat.index.max() + 0.6, mat.index.min() - 0.6)      # client 0 on top
        ax.set_xlabel("samples")
        ax.set_ylabel("client")
        shown_note = f"clients 0-{len(mat) - 1} of {n_clients} shown" if n_clients > len(mat) else f"{n_clients} clients"
        ax.set_title(f"{_setting(table[table['partition'] == part])}\n{shown_note}", fontsize=9)
        ax.tick_params(labelsize=7)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[c]) for c in labels]
    fig.legend(handles, [str(c) for c in labels], title="label" if labels != ["samples"] else None,
               loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, ncol=1 if len(labels) <= 25 else 2)
    note = "" if len(shown) == total else \
        f" ({len(shown)} of {total} partitions shown: the first seed of each setting)"
    if labels == ["samples"]:
        note = " (no class labels: samples per client)" + note
    fig.suptitle(f"{title or 'label counts per client'}{note}", fontsize=10)
    fig.tight_layout()
    return fig


def plot_label_distributions(table: pd.DataFrame, path, title: str | None = None, max_clients: int = MAX_CLIENTS,
                             max_panels: int = MAX_PANELS, dpi: int = 100) -> None:
    """Write :func:`label_distribution_figure` as a PNG at ``path``."""
    from pathlib import Path

    import matplotlib.pyplot as plt

    fig = label_distribution_figure(table, title, max_clients, max_panels)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)


def plot_experiments(table: pd.DataFrame, folder, **kwargs) -> list:
    """One PNG per experiment of a paper's partition table: ``<folder>/<experiment>.png``."""
    from pathlib import Path

    out = []
    for experiment, rows in table.groupby("experiment", sort=False):
        path = Path(folder, f"{experiment}.png")
        paper = rows["paper"].iloc[0]
        plot_label_distributions(rows, path, title=f"{paper}/{experiment}: label counts per client", **kwargs)
        out.append(path)
    return out


__all__ = ["label_distribution_figure", "plot_experiments", "plot_label_distributions", "shown_partitions"]
