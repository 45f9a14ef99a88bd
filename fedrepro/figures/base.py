"""What a paper's figure/table module exports: ``FIGURES`` and ``TABLES`` dicts of FigureSpec."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Callable


@dataclass
class FigureSpec:
    """A figure or table of a paper.

    experiments : ids of the experiments whose results it needs.
    render : ``render(frames, summaries, out)``; ``frames``/``summaries`` map experiment id
        to the tidy trace / per-run summary DataFrames; ``out`` is the output path without
        suffix (figures write ``.pdf`` and ``.png``, tables ``.md``, ``.csv`` and ``.tex``).
    kind : ``"figure"`` or ``"table"``.
    optional : experiments used when their data are available (e.g. one per dataset): the output is
        built without those skipped for a missing dataset (``frames`` then lacks them; the renderer
        says so), while a missing required experiment skips the output.
    """

    experiments: list
    render: Callable
    kind: str = "figure"
    optional: list = field(default_factory=list)


def save_figure(fig, out, dpi: int = 130) -> None:
    """Write ``fig`` as ``out.pdf`` and ``out.png`` (``out`` has no suffix) and close it."""
    from pathlib import Path

    import matplotlib.pyplot as plt

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        # matplotlib's note that placing a legend at loc="best" took more than a second: a
        # statement about a loaded machine, not about the figure (it made a clean build print
        # warnings, and a plot test fail, only when the cores were busy)
        warnings.filterwarnings("ignore", message=r'Creating legend with loc="best" can be slow', category=UserWarning)
        fig.savefig(out.with_suffix(".pdf"), bbox_inches="tight")
        fig.savefig(out.with_suffix(".png"), dpi=dpi, bbox_inches="tight")
    plt.close(fig)


def _tex_escape(text: str) -> str:
    return str(text).replace("\\", "\\textbackslash{}").replace("_", "\\_").replace("%", "\\%").replace("&", "\\&")


def write_table(table, out, caption: str, columns=None, formats: dict | None = None, align: str | None = None) -> None:
    """Write a table as ``out.csv`` (raw values), ``out.md`` and ``out.tex`` (formatted).

    table : DataFrame; columns : display names (default: the frame's); formats : column ->
    format string such as ``"{:.4f}"`` (default: floats with 4 significant digits);
    missing values show as ``n/a``; align : LaTeX column spec (default right-aligned).
    """
    from pathlib import Path

    import pandas as pd

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out.with_suffix(".csv"), index=False)
    formats = formats or {}

    def fmt(col, v):
        if v is None or (not isinstance(v, str) and pd.isna(v)):
            return "n/a"
        if col in formats:
            return formats[col].format(v)
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    names = list(columns or table.columns)
    rows = [[fmt(c, v) for c, v in zip(table.columns, r)] for r in table.itertuples(index=False)]
    md = [caption, "", "| " + " | ".join(names) + " |", "|" + "---|" * len(names)]
    md += ["| " + " | ".join(v.replace("|", "\\|") for v in r) + " |" for r in rows]   # | inside a cell
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    tex = ["% " + caption.replace("\n", " "), "\\begin{tabular}{" + (align or "r" * len(names)) + "}", "\\hline",
           " & ".join(_tex_escape(n) for n in names) + " \\\\", "\\hline"]
    tex += [" & ".join(_tex_escape(v) for v in r) + " \\\\" for r in rows]
    tex += ["\\hline", "\\end{tabular}"]
    out.with_suffix(".tex").write_text("\n".join(tex) + "\n")
