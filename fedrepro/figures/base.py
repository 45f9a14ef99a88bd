"""What a paper's figure/table module exports: ``FIGURES`` and ``TABLES`` dicts of FigureSpec."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass
class FigureSpec:
    """A figure or table of a paper.

    experiments : ids of the experiments whose results it needs.
    render : ``render(frames, summaries, out)``; ``frames``/``summaries`` map experiment id
        to the tidy trace / per-run summary DataFrames; ``out`` is the output path without
        suffix (figures write ``.pdf`` and ``.png``, tables ``.md``, ``.csv`` and ``.tex``).
    kind : ``"figure"`` or ``"table"``.
    """

    experiments: list
    render: Callable
    kind: str = "figure"
