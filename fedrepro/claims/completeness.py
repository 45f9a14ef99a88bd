"""Completeness: the cells a claim's experiments should have at a scale, against the cells present.

A claim is decided only on all the cells its experiments expand to at the build's scale (the
expansion the workflow runs, :func:`fedrepro.experiments.expansion.expand` on the config's experiment
blocks with ``paper_overrides`` merged in): a claim whose required cells are not all present is
``incomplete`` and names what is missing; it is never decided on a subset
(:func:`fedrepro.claims.evaluate.evaluate`). A cell is present when its id (the ``cell`` column) is
in the experiment's trace *and* summary frames, and, for an experiment with a timing pass at the
scale (``timing_repeats``), in its timing frame once per repetition (``repeat`` 0..R-1).

Experiments whose datasets are unavailable (skipped) expect nothing here: their claims are
``unavailable``, decided before completeness is looked at.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from fedrepro.experiments.build_plan import timing_repeats
from fedrepro.experiments.expansion import expand, load_experiments, runs_at, verify_leave_out
from fedrepro.experiments.spec import as_spec

#: how many missing cells a ``why`` names before "..."
SHOWN = 3


@dataclass(frozen=True)
class ExpectedCells:
    """The cells of one experiment at one scale: ``cells`` (the expanded cell mappings, each with its
    ``cell`` id) and ``timing_repeats`` (the repetitions of its timing pass; None: no timing pass)."""

    experiment: str
    cells: tuple = ()
    timing_repeats: int | None = None
    runs_here: bool = True       # False: the experiment's run_at leaves this scale out (no cells expected)
    run_at: tuple = ()
    left_out: bool = False       # True: the verify build leaves it out (config verify.leave_out)

    @property
    def ids(self) -> list[str]:
        return [as_spec(c).name for c in self.cells]


@dataclass(frozen=True)
class Missing:
    """What an experiment lacks: ``cells`` (expected cells absent from the trace or the summary),
    ``timing`` (expected cells with fewer timing repetitions than ``timing_repeats``) and
    ``absent_files`` (result files not there at all)."""

    experiment: str
    expected: int
    cells: tuple = ()
    timing: tuple = ()
    timing_repeats: int | None = None
    absent_files: tuple = field(default=())

    def __bool__(self) -> bool:
        return bool(self.cells or self.timing or self.absent_files)

    def describe(self, shown: int = SHOWN) -> str:
        """e.g. ``fig3: 3 of 40 cells missing: algorithm=fedepm k0=10 instance=4 (cell 1a2b3c4d5e6f); ...``"""
        parts = []
        results = [f for f in self.absent_files if not f.endswith(".timing.parquet")]
        if results:
            parts.append(f"results missing: no {' or '.join(results)} (all {self.expected} cells missing)")
        elif self.cells:
            parts.append(f"{len(self.cells)} of {self.expected} cells missing: {_first(self.cells, shown)}")
        if len(results) < len(self.absent_files):
            parts.append(f"no {self.experiment}.timing.parquet (its timing pass of {self.timing_repeats} "
                         "repetitions)")
        elif self.timing:
            parts.append(f"timing pass: {len(self.timing)} of {self.expected} cells without all "
                         f"{self.timing_repeats} repetitions: {_first(self.timing, shown)}")
        return f"{self.experiment}: " + "; ".join(parts)


def cell_label(cell) -> str:
    """The parameters that tell a cell apart in its experiment: algorithm, setting, swept values, instance
    (``cell``: its :class:`~fedrepro.experiments.spec.RunSpec` or cell dict)."""
    spec = as_spec(cell)
    items = [("algorithm", spec.algorithm.name), *spec.columns.items(), ("instance", spec.instance)]
    return " ".join(f"{k}={v}" for k, v in items if v is not None) + f" (cell {spec.name})"


def _first(cells, shown: int) -> str:
    text = "; ".join(cell_label(c) for c in cells[:shown])
    return text + ("; ..." if len(cells) > shown else "")


def expected_cells(paper: str, experiment: str, scale: str, config: dict,
                   root: str | Path | None = ".") -> ExpectedCells:
    """The cells ``experiment`` of ``paper`` expands to at ``scale`` under the build's ``config`` (its
    ``seed`` and ``paper_overrides``), with the repetitions of its timing pass at that scale."""
    return expected_for_paper(paper, [experiment], scale, config, root)[experiment]


def expected_for_paper(paper: str, experiments, scale: str, config: dict,
                       root: str | Path | None = ".") -> dict[str, ExpectedCells]:
    """:func:`expected_cells` for several experiments of one paper (the paper's fragment read once)."""
    blocks = load_experiments({**config, "papers": [paper], "experiments": None}, root or ".").get(paper, {})
    seed = int(config.get("seed", 0))
    left = set(verify_leave_out({**config, "scale": scale}).get(paper) or ())
    out = {}
    for e in experiments:
        if e not in blocks:
            raise ValueError(f"experiment {paper}/{e} is not defined in fedrepro/papers/{paper}/experiments.yaml; "
                             f"defined: {sorted(blocks)}")
        if e in left:           # the verify build leaves it out (config verify.leave_out)
            out[e] = ExpectedCells(e, runs_here=False, left_out=True)
            continue
        if not runs_at(blocks[e], scale):
            out[e] = ExpectedCells(e, runs_here=False, run_at=tuple(blocks[e]["run_at"]))
            continue
        out[e] = ExpectedCells(e, tuple(expand(paper, e, blocks[e], scale, seed)), timing_repeats(blocks[e], scale))
    return out


def _ids(frame, what: str) -> set:
    if frame is None:
        return set()
    if "cell" not in frame.columns:
        raise ValueError(f"{what} has no 'cell' column, so its cells cannot be checked against the expected cells; "
                         "results written by the workflow have one (fedrepro.experiments.results)")
    return set(frame["cell"].astype(str))


def missing_cells(expected: ExpectedCells, trace: pd.DataFrame | None, summary: pd.DataFrame | None,
                  timing: pd.DataFrame | None = None) -> Missing:
    """Compare ``expected`` with the cells present in an experiment's trace, summary and (when the
    experiment has a timing pass) timing frames; a frame that is None is an absent file."""
    e, n = expected.experiment, len(expected.cells)
    absent = [f"{e}{s}.parquet" for s, f in (("", trace), (".summary", summary)) if f is None]
    if expected.timing_repeats and timing is None:
        absent.append(f"{e}.timing.parquet")
    if absent and (trace is None or summary is None):
        return Missing(e, n, tuple(expected.cells), (), expected.timing_repeats, tuple(absent))
    present = _ids(trace, f"{e}.parquet") & _ids(summary, f"{e}.summary.parquet")
    cells = tuple(c for c in expected.cells if as_spec(c).name not in present)
    late = ()
    if expected.timing_repeats and timing is not None:
        if "repeat" not in timing.columns:
            raise ValueError(f"{e}.timing.parquet has no 'repeat' column (workflow/scripts/timing.py writes one)")
        _ids(timing, f"{e}.timing.parquet")
        got = timing.groupby(timing["cell"].astype(str))["repeat"].nunique().to_dict()
        late = tuple(c for c in expected.cells if got.get(as_spec(c).name, 0) < expected.timing_repeats)
    return Missing(e, n, cells, late, expected.timing_repeats, tuple(absent))


def missing_for_claim(needed, expected: dict, frames: dict, summaries: dict) -> list[Missing]:
    """The :class:`Missing` of each of a claim's experiments (``needed``) that lacks something."""
    out = []
    for e in needed:
        if e not in expected:
            raise ValueError(f"no expected cells given for experiment {e!r}: pass the expected cells of every "
                             "experiment the claims name (fedrepro.claims.completeness.expected_for_paper)")
        exp = expected[e]
        if not isinstance(exp, ExpectedCells):     # a plain list of cells: no timing pass expected
            exp = ExpectedCells(e, tuple(exp))
        m = missing_cells(exp, frames.get(e), summaries.get(e), summaries.get(f"{e}.timing"))
        if m:
            out.append(m)
    return out


__all__ = ["ExpectedCells", "Missing", "cell_label", "expected_cells", "expected_for_paper", "missing_cells",
           "missing_for_claim"]
