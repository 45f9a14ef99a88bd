"""Verdicts from replicates: an interval for the compared quantity, then holds / fails / undecided.

A check returns the quantity a claim compares as :class:`Replicates`: one value per replicate
(a seed's paired difference of two methods, a repeated timing's ratio, ...). The engine puts a
two-sided Student-t confidence interval on the mean of the replicates (on the mean of their logs
for ``scale="log"``, i.e. on the geometric mean of a ratio) and compares the whole interval with
the values the claim accepts:

- ``holds``: every value of the interval is accepted;
- ``fails``: no value of the interval is accepted;
- ``undecided``: the interval straddles an edge of the accepted range; the verdict names the
  interval and the number of replicates that the measured spread says would decide it (the
  smallest n whose interval half-width ``t(n-1) s / sqrt(n)`` is below the distance from the
  estimate to the edge).

A claim about several quantities at once ("at every k0 and m") returns a list of
:class:`Replicates`; it holds when all components hold, fails when one fails, and each component's
interval is at confidence ``1 - alpha / k`` (Bonferroni over the k components) so the statement
as a whole is decided at ``1 - alpha``. ``alpha`` is 0.05 throughout (:data:`ALPHA`).

Strict comparisons (``lt``, ``gt``) are not met by a tie: a difference whose interval is [0, 0]
fails ``lt 0``. A replicate from a run that hit its round cap is a bound, not a value
(``lower_bound``): the true value is at least the one given, so the interval's upper end is
+inf and such a claim can only be decided from the side the bound informs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np


def _t_quantile(q: float, df: int) -> float:
    """Student-t quantile; scipy.stats is imported here, not at module import (~1 CPU-s that every
    figure, table and claims job would pay, benchmarks/README.md per-rule profile)."""
    from scipy import stats

    return float(stats.t.ppf(q, df))


ALPHA = 0.05
HOLDS, FAILS, UNDECIDED, UNAVAILABLE = "holds", "fails", "undecided", "unavailable"
# depends: decided at every value of a sweep of a parameter the paper does not state, holding at some
# and failing at others (fedrepro.claims.sweep); incomplete: a cell the claim's reading needs is absent
# from the results (the claim is never decided on a subset, fedrepro.claims.evaluate).
DEPENDS, INCOMPLETE = "depends", "incomplete"
VERDICTS = (HOLDS, FAILS, DEPENDS, UNDECIDED, INCOMPLETE, UNAVAILABLE)
COMPARES = ("lt", "gt", "le", "ge", "approx", "rel", "band", "true")
MAX_REPLICATES = 100_000


@dataclass(frozen=True)
class Replicates:
    """Replicate values of one compared quantity.

    values: one per replicate (seeds, paired by seed where two methods share it; repetitions of a
        timed run).
    label: what the quantity is, shown in the verdict ("FedEPM - SFedAvg CR, m=50 k0=4").
    scale: ``linear`` (interval on the mean) or ``log`` (interval on the mean of the logs: ratios,
        CPU times; values must be > 0).
    lower_bound / upper_bound: per replicate, whether the value is only a bound of the true value
        (a run that hit its round cap: its rounds are a lower bound).
    deterministic: the quantity has no replicate noise (e.g. a closed-form count of the
        configuration); the interval is [min, max] of the values.
    paper_value: the paper's value for this component, when it differs from the claim's.
    """

    values: Sequence[float]
    label: str = ""
    scale: str = "linear"
    lower_bound: Sequence[bool] | None = None
    upper_bound: Sequence[bool] | None = None
    deterministic: bool = False
    paper_value: float | None = None

    def __post_init__(self):
        v = np.asarray(self.values, dtype=float).ravel()
        if v.size == 0:
            raise ValueError(f"Replicates {self.label!r}: no values")
        if not np.all(np.isfinite(v)):
            raise ValueError(f"Replicates {self.label!r}: non-finite values {v.tolist()}")
        if self.scale not in ("linear", "log"):
            raise ValueError(f"Replicates {self.label!r}: scale={self.scale!r}; use 'linear' or 'log'")
        if self.scale == "log" and not np.all(v > 0):
            raise ValueError(f"Replicates {self.label!r}: scale='log' needs positive values, got {v.tolist()}")
        for name in ("lower_bound", "upper_bound"):
            m = getattr(self, name)
            if m is not None and np.asarray(m, dtype=bool).ravel().size != v.size:
                raise ValueError(f"Replicates {self.label!r}: {name} needs one flag per value")
        object.__setattr__(self, "values", v)

    @property
    def n(self) -> int:
        return int(self.values.size)

    def _mask(self, name) -> np.ndarray:
        m = getattr(self, name)
        return np.zeros(self.n, bool) if m is None else np.asarray(m, dtype=bool).ravel()

    @property
    def estimate(self) -> float:
        """Mean (geometric mean for ``scale='log'``)."""
        x = self._work()
        return self._back(float(x.mean()))

    def _work(self) -> np.ndarray:
        return np.log(self.values) if self.scale == "log" else self.values

    def _back(self, x: float) -> float:
        return float(math.exp(x)) if self.scale == "log" else float(x)

    def interval(self, alpha: float = ALPHA) -> tuple[float, float]:
        """Two-sided (1 - alpha) interval for the true mean (geometric mean), widened to +-inf on
        the side that bound replicates leave open. One noisy replicate gives (-inf, inf)."""
        x = self._work()
        if self.deterministic:
            lo, hi = float(x.min()), float(x.max())
        elif self.n < 2:
            lo, hi = -math.inf, math.inf
        else:
            s = float(x.std(ddof=1))
            h = _t_quantile(1 - alpha / 2, self.n - 1) * s / math.sqrt(self.n)
            lo, hi = float(x.mean()) - h, float(x.mean()) + h
        if self._mask("lower_bound").any():
            hi = math.inf
        if self._mask("upper_bound").any():
            lo = -math.inf
        back = (lambda t: math.exp(t) if math.isfinite(t) else (0.0 if t < 0 else math.inf)) if self.scale == "log" \
            else float
        return back(lo), back(hi)

    def replicates_needed(self, edge: float, alpha: float) -> int | None:
        """Smallest n whose interval half-width, at this spread, is below the distance from the
        estimate to ``edge``; None when more replicates cannot decide (no spread to extrapolate,
        the estimate on the edge, or a bound replicate leaving that side open)."""
        if self.deterministic or self.n < 2:
            return None
        x = self._work()
        e = math.log(edge) if self.scale == "log" else edge
        if self.scale == "log" and edge <= 0:
            return None
        d = abs(float(x.mean()) - e)
        s = float(x.std(ddof=1))
        if d <= 1e-12 * max(1.0, abs(e), s) or s == 0:
            return None
        for n in range(max(self.n, 2), MAX_REPLICATES + 1):
            if _t_quantile(1 - alpha / 2, n - 1) * s / math.sqrt(n) < d:
                return n
        return None


def accepted_range(paper_value, compare: str, tolerance=None) -> tuple[float, float, bool, bool]:
    """The values a numeric ``compare`` accepts: (lo, hi, lo_open, hi_open).

    ``lt`` / ``gt``: strictly below / above the paper value (a tie is not a win); ``le`` / ``ge``:
    at most ``p + tol`` / at least ``p - tol``; ``approx``: |v - p| <= tol; ``rel``: |v - p| <=
    tol |p|; ``band``: p / tol <= v <= p * tol (tol > 1: a ratio band around the paper's value).
    """
    if paper_value is None or isinstance(paper_value, bool):
        raise ValueError(f"compare={compare!r} needs a numeric paper_value, got {paper_value!r}")
    p, tol = float(paper_value), float(tolerance or 0.0)
    if compare == "band":
        if not tol > 1:
            raise ValueError(f"compare='band' needs a ratio tolerance > 1, got {tolerance!r}")
        lo, hi = sorted((p / tol, p * tol))
        return lo, hi, False, False
    table = {"lt": (-math.inf, p, True, True), "gt": (p, math.inf, True, True),
             "le": (-math.inf, p + tol, True, False), "ge": (p - tol, math.inf, False, True),
             "approx": (p - tol, p + tol, False, False), "rel": (p - tol * abs(p), p + tol * abs(p), False, False)}
    if compare not in table:
        raise ValueError(f"compare={compare!r} is not numeric; choose one of {COMPARES[:-1]}")
    return table[compare]


def _inside(x: float, lo, hi, lo_open, hi_open) -> bool:
    """x is accepted; an infinite end of an interval lies inside an accepted range unbounded on that side."""
    if math.isinf(x):
        return (x > 0 and hi == math.inf) or (x < 0 and lo == -math.inf)
    return (x > lo if lo_open else x >= lo) and (x < hi if hi_open else x <= hi)


@dataclass(frozen=True)
class ComponentVerdict:
    label: str
    estimate: float
    interval: tuple[float, float]
    n: int
    verdict: str
    needed: int | None = None
    note: str = ""

    def text(self, note: bool = True) -> str:
        lo, hi = self.interval
        s = f"{self.label + ': ' if self.label else ''}{_num(self.estimate)} [{_num(lo)}, {_num(hi)}] (n={self.n})"
        return s + (f" ({self.note})" if note and self.note else "")


@dataclass(frozen=True)
class Decision:
    verdict: str
    components: tuple[ComponentVerdict, ...] = field(default_factory=tuple)
    confidence: float = 1 - ALPHA

    @property
    def needed(self) -> int | None:
        open_ = [c for c in self.components if c.verdict == UNDECIDED]
        if not open_ or any(c.needed is None for c in open_):
            return None
        return max(c.needed for c in open_)

    def summary(self) -> str:
        """Our value as shown: the estimate and interval (one component) or the count per verdict."""
        if len(self.components) == 1:
            return self.components[0].text()
        counts = {v: sum(c.verdict == v for c in self.components) for v in (HOLDS, FAILS, UNDECIDED)}
        return f"{len(self.components)} comparisons: " + ", ".join(f"{k} {n}" for k, n in counts.items() if n)

    def reason(self) -> str:
        """Why the claim does not hold: the failing or open components with their intervals, and
        what would decide the open ones."""
        level = f"{self.confidence:.0%}" + (" family-wise (Bonferroni)" if len(self.components) > 1 else "")
        bad = [c for c in self.components if c.verdict == FAILS]
        if self.verdict == FAILS:
            return f"{level} interval outside the accepted range: " + "; ".join(c.text() for c in bad)
        if self.verdict == UNDECIDED:
            open_ = [c for c in self.components if c.verdict == UNDECIDED]
            need = self.needed
            notes = sorted({c.note for c in open_ if c.note})
            tail = (f"about {need} replicates at the measured spread would decide it" if need is not None else
                    "; ".join(notes) or "more replicates cannot decide it")
            return (f"{level} interval straddles the accepted range: " + "; ".join(c.text(note=len(notes) > 1) for c in open_)
                    + f" — {tail}")
        return ""


def _num(x: float) -> str:
    return "inf" if x == math.inf else "-inf" if x == -math.inf else f"{x:.4g}"


def decide_component(rep: Replicates, paper_value, compare: str, tolerance=None, alpha: float = ALPHA) -> ComponentVerdict:
    p = rep.paper_value if rep.paper_value is not None else paper_value
    lo, hi, lo_open, hi_open = accepted_range(p, compare, tolerance)
    ilo, ihi = rep.interval(alpha)
    est = rep.estimate
    if _inside(ilo, lo, hi, lo_open, hi_open) and _inside(ihi, lo, hi, lo_open, hi_open):
        return ComponentVerdict(rep.label, est, (ilo, ihi), rep.n, HOLDS)
    below = ihi < lo or (ihi == lo and lo_open)
    above = ilo > hi or (ilo == hi and hi_open)
    if below or above:
        return ComponentVerdict(rep.label, est, (ilo, ihi), rep.n, FAILS)
    edges = [e for e in (lo, hi) if math.isfinite(e)]
    edge = min(edges, key=lambda e: abs(est - e)) if edges else None
    needed, note = None, ""
    if rep.n < 2 and not rep.deterministic:
        note = "one replicate: its spread is unknown (needs >= 2)"
    elif (rep._mask("lower_bound").any() and ihi == math.inf) or (rep._mask("upper_bound").any() and ilo == -math.inf):
        note = "capped runs give only a bound: a higher round cap would decide it"
        needed = None
    elif edge is not None:
        needed = rep.replicates_needed(edge, alpha)
        if needed is None:
            x = rep._work()
            e = math.log(edge) if rep.scale == "log" and edge > 0 else edge
            on_edge = abs(float(x.mean()) - e) <= 1e-12 * max(1.0, abs(e), float(x.std(ddof=1)))
            note = ("the estimate sits on the edge: no number of replicates decides it" if on_edge else
                    f"more than {MAX_REPLICATES} replicates at this spread")
    return ComponentVerdict(rep.label, est, (ilo, ihi), rep.n, UNDECIDED, needed, note)


def decide(value, paper_value, compare: str, tolerance=None, alpha: float = ALPHA) -> Decision:
    """The verdict of a claim from its check's value: :class:`Replicates`, a list of them (all must
    hold; Bonferroni), or, for ``compare: true`` (``kind: check`` only), a truthy value."""
    if compare == "true":
        if isinstance(value, (Replicates, list, tuple)):
            raise ValueError("compare 'true' takes a truthy value, not replicates; use a numeric compare")
        return Decision(HOLDS if bool(value) else FAILS)
    comps = list(value) if isinstance(value, (list, tuple)) else [value]
    if not comps:
        raise ValueError("the check returned no replicates")
    comps = [c if isinstance(c, Replicates) else Replicates([float(c)]) for c in comps]
    a = alpha / len(comps)
    parts = tuple(decide_component(c, paper_value, compare, tolerance, a) for c in comps)
    states = {c.verdict for c in parts}
    verdict = FAILS if FAILS in states else HOLDS if states == {HOLDS} else UNDECIDED
    return Decision(verdict, parts, 1 - alpha)
