"""Verdicts from replicates: an interval for the compared quantity, then holds / fails / undecided.

A check returns the quantity a claim compares as :class:`Replicates`: one value per replicate
(a seed's paired difference of two methods, an instance's CPU-time ratio, ...). The engine puts a
two-sided ``1 - alpha`` interval on it and compares the whole interval with the values the claim
accepts:

- ``holds``: every value of the interval is accepted;
- ``fails``: no value of the interval is accepted;
- ``undecided``: the interval straddles an edge of the accepted range; the verdict names the
  interval and about how many replicates the measured spread says would decide it.

**The interval** (docs/verdicts.md) is the hull of two intervals, so a verdict needs both:

1. the Student-t interval on the mean (on the mean of the logs for ``scale="log"``: the geometric
   mean of a ratio) — the papers' statistic, an average over runs;
2. the distribution-free interval on the median from order statistics ``[x_(k), x_(n+1-k)]``, the
   inversion of the exact sign test (``scipy.stats.binom``): its coverage is at least
   ``1 - alpha`` for any distribution, discrete or tied values included, so it never collapses on
   ties; with ``n`` replicates its widest level is ``1 - 2 * 0.5**n``, hence a claim with fewer than
   :func:`min_replicates` (6 at 95%) replicates is undecided whatever their values.

A replicate from a run that hit its round cap is censored: ``lower_bound`` (the true value is at
least the one given) or ``upper_bound``. The mean of censored values is not an estimate of the
mean, so with any censored replicate only the order-statistic interval is used, computed with the
censored values on their open side (``+inf`` for a lower bound when the upper end is taken,
``-inf`` for an upper bound when the lower end is taken): both ends stay valid.

``deterministic`` quantities (closed-form counts of the configuration) have no replicate noise: the
interval is ``[min, max]`` of the values.

**Several components** ("at every k0 and m": a list of :class:`Replicates`): the claim holds when
every component holds at ``1 - alpha`` (an intersection-union test, Berger 1982: no correction
needed, the claim as a whole is decided at ``1 - alpha``), and fails when one component fails at
``1 - alpha / k`` (Bonferroni over the k components): one decided counterexample fails a universal
claim. ``alpha`` is 0.05 throughout (:data:`ALPHA`).

Every decided verdict has a p-value (:attr:`Decision.p_value`: the smallest level at which the same
verdict is reached), which the paper-level error control uses (:func:`fdr_control`,
Benjamini-Hochberg over a paper's statements).

Strict comparisons (``lt``, ``gt``) are not met by a tie: a value on the edge counts on the wrong
side of it.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np


def _t_quantile(q: float, df: int) -> float:
    """Student-t quantile; scipy.stats is imported here, not at module import (~1 CPU-s that every
    figure, table and claims job would pay, benchmarks/README.md per-rule profile)."""
    from scipy import stats

    return float(stats.t.ppf(q, df))


def _t_sf(x: float, df: int) -> float:
    from scipy import stats

    return float(stats.t.sf(x, df))


@functools.lru_cache(maxsize=4096)
def _binom_cdf(k: int, n: int) -> float:
    """P(Binomial(n, 1/2) <= k), exact."""
    from scipy import stats

    return float(stats.binom.cdf(k, n, 0.5))


@functools.lru_cache(maxsize=4096)
def order_rank(n: int, alpha: float) -> int:
    """The rank k of the distribution-free ``1 - alpha`` interval ``[x_(k), x_(n+1-k)]`` for the median
    (the largest k with ``P(Binomial(n, 1/2) <= k - 1) <= alpha / 2``); 0 when n replicates are too
    few for that level (the interval is then the whole line)."""
    from scipy import stats

    # P(Binomial(n, 1/2) <= j) increases with j, so k counts the j < (n + 1) // 2 at or below alpha / 2:
    # one vectorised call (a scalar call per j made replicates_needed's search over n the claims rule's cost)
    js = np.arange((n + 1) // 2)
    return int(np.count_nonzero(stats.binom.cdf(js, n, 0.5) <= alpha / 2))


def min_replicates(alpha: float = 0.05) -> int:
    """The fewest replicates with which the distribution-free interval is finite at level ``1 - alpha``
    (``2 * 0.5**n <= alpha``): 6 at 95%."""
    return max(1, math.ceil(math.log2(2 / alpha) - 1e-12))


ALPHA = 0.05
HOLDS, FAILS, UNDECIDED, UNAVAILABLE = "holds", "fails", "undecided", "unavailable"
# depends: decided at every value of a sweep of a parameter the paper does not state, holding at some
# and failing at others (fedrepro.claims.sweep); incomplete: a cell the claim's reading needs is absent
# from the results (the claim is never decided on a subset, fedrepro.claims.evaluate).
DEPENDS, INCOMPLETE = "depends", "incomplete"
VERDICTS = (HOLDS, FAILS, DEPENDS, UNDECIDED, INCOMPLETE, UNAVAILABLE)

# The level of the evaluation in progress: a check that decides inside itself (a sweep's values,
# fedrepro.claims.sweep) decides at the level the engine was given (a verify look's 0.025), not at ALPHA.
_LEVEL: contextvars.ContextVar = contextvars.ContextVar("fedrepro_claims_alpha", default=ALPHA)


@contextlib.contextmanager
def at_level(alpha: float):
    """Within the block, :func:`level` is ``alpha`` (the engine sets it around each check)."""
    token = _LEVEL.set(alpha)
    try:
        yield
    finally:
        _LEVEL.reset(token)


def level() -> float:
    """The level of the evaluation in progress (:data:`ALPHA` outside one)."""
    return _LEVEL.get()
COMPARES = ("lt", "gt", "le", "ge", "approx", "rel", "band", "true")
MAX_REPLICATES = 100_000


@dataclass(frozen=True)
class Replicates:
    """Replicate values of one compared quantity.

    values: one per replicate (seeds, paired by seed where two methods share it; instances of a
        timed configuration).
    label: what the quantity is, shown in the verdict ("FedEPM - SFedAvg CR, m=50 k0=4").
    scale: ``linear`` (t-interval on the mean) or ``log`` (on the mean of the logs: ratios, CPU
        times; values must be > 0). The order-statistic interval is the same on either scale.
    lower_bound / upper_bound: per replicate, whether the value is only a bound of the true value
        (a run that hit its round cap: its rounds are a lower bound): censored, see the module doc.
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
    def censored(self) -> bool:
        return bool(self._mask("lower_bound").any() or self._mask("upper_bound").any())

    @property
    def estimate(self) -> float:
        """Mean (geometric mean for ``scale='log'``); with censored replicates, the median of the
        values as given (censored ones included at their bound)."""
        if self.censored:
            return float(np.median(self.values))
        return self._back(self._mean_sd()[0])

    def _work(self) -> np.ndarray:
        return np.log(self.values) if self.scale == "log" else self.values

    def _mean_sd(self) -> tuple[float, float]:
        """Mean and sample standard deviation on the working scale; exactly (value, 0) for equal values
        (a float mean of equal values can miss the value by an ulp and invent a spread)."""
        x = self._work()
        if np.ptp(x) == 0:
            return float(x[0]), 0.0
        return float(x.mean()), float(x.std(ddof=1))

    def _back(self, x: float) -> float:
        if self.scale != "log":
            return float(x)
        return math.exp(x) if math.isfinite(x) else (0.0 if x < 0 else math.inf)

    def _uses_t(self) -> bool:
        return not self.deterministic and not self.censored and self.n >= 2

    def t_interval(self, alpha: float = ALPHA) -> tuple[float, float]:
        """Two-sided Student-t interval on the mean (geometric mean); the whole line when it does not
        apply (one replicate, censored replicates)."""
        if not self._uses_t():
            return -math.inf, math.inf
        m, sd = self._mean_sd()
        h = _t_quantile(1 - alpha / 2, self.n - 1) * sd / math.sqrt(self.n)
        return self._back(m - h), self._back(m + h)

    def order_interval(self, alpha: float = ALPHA) -> tuple[float, float]:
        """Distribution-free interval on the median, ``[x_(k), x_(n+1-k)]`` with k = :func:`order_rank`,
        censored values on their open side (module doc)."""
        k = order_rank(self.n, alpha)
        if k == 0:
            return -math.inf, math.inf
        lo_vals = np.where(self._mask("upper_bound"), -math.inf, self.values)
        hi_vals = np.where(self._mask("lower_bound"), math.inf, self.values)
        return float(np.sort(lo_vals)[k - 1]), float(np.sort(hi_vals)[self.n - k])

    def interval(self, alpha: float = ALPHA) -> tuple[float, float]:
        """The ``1 - alpha`` interval a verdict is read from: [min, max] for a deterministic quantity,
        else the hull of :meth:`t_interval` and :meth:`order_interval` (module doc)."""
        if self.deterministic:
            return float(self.values.min()), float(self.values.max())
        olo, ohi = self.order_interval(alpha)
        tlo, thi = self.t_interval(alpha) if self._uses_t() else (olo, ohi)
        return min(olo, tlo), max(ohi, thi)

    def p_inside(self, lo, hi, lo_open, hi_open) -> float:
        """The smallest level ``alpha`` at which :meth:`interval` lies inside the accepted range (1 when
        it never does): the largest of the p-values of the range's finite edges, each the larger of
        the t-test's and the sign test's."""
        ps = [0.0]
        if math.isfinite(lo):
            ps.append(self._p_beyond(lo, lo_open, above=True))
        if math.isfinite(hi):
            ps.append(self._p_beyond(hi, hi_open, above=False))
        return max(ps)

    def p_outside(self, lo, hi, lo_open, hi_open) -> float:
        """The smallest level at which :meth:`interval` lies wholly outside the accepted range."""
        ps = [1.0]
        if math.isfinite(lo):   # the interval below lo (below or on it when lo is open)
            ps.append(self._p_beyond(lo, not lo_open, above=False))
        if math.isfinite(hi):
            ps.append(self._p_beyond(hi, not hi_open, above=True))
        return min(ps)

    def _p_beyond(self, edge: float, strict: bool, above: bool) -> float:
        """Smallest alpha at which the interval's lower end (above=True) is above ``edge`` (strictly when
        ``strict``), or its upper end below it. Exact for the sign test (a value on a strict edge is on
        the wrong side); for the t part, 2 P(T > |d| / se) on the right side of the edge."""
        v = self.values
        if self.deterministic:
            ok = np.all(v > edge) if above and strict else np.all(v >= edge) if above else \
                np.all(v < edge) if strict else np.all(v <= edge)
            return 0.0 if ok else 1.0
        if above:
            vals = np.where(self._mask("upper_bound"), -math.inf, v)
            wrong = int(np.sum(vals <= edge) if strict else np.sum(vals < edge))
        else:
            vals = np.where(self._mask("lower_bound"), math.inf, v)
            wrong = int(np.sum(vals >= edge) if strict else np.sum(vals > edge))
        # the order-statistic end is inside at level a iff order_rank(n, a) > wrong
        p_sign = min(1.0, 2 * _binom_cdf(wrong, self.n)) if wrong < (self.n + 1) // 2 else 1.0
        if not self._uses_t():
            return p_sign
        if self.scale == "log" and edge <= 0:
            return p_sign if above else 1.0
        m, s = self._mean_sd()
        e = math.log(edge) if self.scale == "log" else edge
        d = (m - e) * (1 if above else -1)
        if s == 0:   # the t-interval is the point mean: inside at every level or at none
            p_t = 0.0 if d > 0 or (d == 0 and not strict) else 1.0
        else:
            p_t = 1.0 if d <= 0 else min(1.0, 2 * _t_sf(d / (s / math.sqrt(self.n)), self.n - 1))
        return max(p_sign, p_t)

    def replicates_needed(self, edge: float, alpha: float, above: bool | None = None) -> int | None:
        """About how many replicates would put the interval on the estimate's side of ``edge``: the
        larger of the t-interval's need at the measured spread and the sign test's at the measured
        share of replicates on that side (at least :func:`min_replicates`). None when more replicates
        cannot decide (the estimate on the edge, no more than half the replicates on its side, a
        censored side left open)."""
        if self.deterministic or self.n < 2:
            return None
        if self.scale == "log" and edge <= 0:
            return None
        x = self._work()
        e = math.log(edge) if self.scale == "log" else edge
        m, s = self._mean_sd()
        centre = float(np.median(x)) if self.censored else m
        if above is None:
            above = centre > e
        d = (centre - e) * (1 if above else -1)
        if d <= 1e-12 * max(1.0, abs(e), s):
            return None
        right = np.sum(x > e) if above else np.sum(x < e)
        if above and self._mask("upper_bound").any() or not above and self._mask("lower_bound").any():
            right = right - np.sum(self._mask("upper_bound" if above else "lower_bound") & ((x > e) if above else (x < e)))
        q = float(right) / self.n
        if q <= 0.5:
            return None
        need = None
        for n in range(max(self.n, min_replicates(alpha)), MAX_REPLICATES + 1):
            if order_rank(n, alpha) > round((1 - q) * n) and (
                    not self._uses_t() or s == 0 or _t_quantile(1 - alpha / 2, n - 1) * s / math.sqrt(n) < d):
                need = n
                break
        return need


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
    p_value: float = 1.0    # smallest level at which this component reaches its verdict (1: undecided)

    def text(self, note: bool = True) -> str:
        lo, hi = self.interval
        s = f"{self.label + ': ' if self.label else ''}{_num(self.estimate)} [{_num(lo)}, {_num(hi)}] (n={self.n})"
        return s + (f" ({self.note})" if note and self.note else "")


@dataclass(frozen=True)
class Decision:
    verdict: str
    components: tuple[ComponentVerdict, ...] = field(default_factory=tuple)
    confidence: float = 1 - ALPHA
    p_value: float = 1.0    # holds: the largest component p (intersection-union); fails: k x the smallest

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
        k = len(self.components)
        if self.verdict == FAILS:
            level = f"{1 - (1 - self.confidence) / k:.4g}".rstrip("0") if k > 1 else f"{self.confidence:.0%}"
            level = (f"{float(level):.2%} (Bonferroni over {k} components)" if k > 1 else level)
            bad = [c for c in self.components if c.verdict == FAILS]
            return f"{level} interval outside the accepted range: " + "; ".join(c.text() for c in bad)
        if self.verdict == UNDECIDED:
            level = f"{self.confidence:.0%}" + (" per component (all must hold)" if k > 1 else "")
            open_ = [c for c in self.components if c.verdict == UNDECIDED]
            need = self.needed
            notes = sorted({c.note for c in open_ if c.note})
            tail = "; ".join(([f"about {need} replicates at the measured spread would decide it"] if need is not None
                              else []) + notes) or "more replicates cannot decide it"
            return (f"{level} interval straddles the accepted range: " + "; ".join(c.text(note=len(notes) > 1) for c in open_)
                    + f" — {tail}")
        return ""


def _num(x: float) -> str:
    return "inf" if x == math.inf else "-inf" if x == -math.inf else f"{x:.4g}"


def _component(rep: Replicates, p, compare, tolerance, alpha: float, fail_alpha: float) -> ComponentVerdict:
    """One component: fails when its ``1 - fail_alpha`` interval is outside the accepted range, holds when
    its ``1 - alpha`` interval is inside, else undecided (with the replicates that would decide it)."""
    rng = accepted_range(p, compare, tolerance)
    lo, hi, lo_open, hi_open = rng
    est = rep.estimate
    p_out, p_in = rep.p_outside(*rng), rep.p_inside(*rng)
    if p_out <= fail_alpha:
        return ComponentVerdict(rep.label, est, rep.interval(fail_alpha), rep.n, FAILS, p_value=p_out)
    ilo, ihi = rep.interval(alpha)
    if p_in <= alpha:
        return ComponentVerdict(rep.label, est, (ilo, ihi), rep.n, HOLDS, p_value=p_in)
    edges = [e for e in (lo, hi) if math.isfinite(e)]
    edge = min(edges, key=lambda e: abs(est - e)) if edges else None
    needed, note = None, ""
    n_min = min_replicates(alpha)
    if rep.deterministic:
        note = "deterministic values on both sides of the edge"
    elif p_out <= alpha:
        note = (f"outside at {1 - alpha:.0%} but not at the {1 - fail_alpha:.4g} level one component needs "
                "to fail the claim")
    elif rep.n < n_min:
        note = f"{rep.n} replicate(s): the distribution-free interval needs at least {n_min} at {1 - alpha:.0%}"
    if not rep.deterministic and edge is not None and not (p_out <= alpha):
        needed = rep.replicates_needed(edge, alpha)
        if needed is None and not note:
            censored_open = (rep._mask("lower_bound").any() and ihi == math.inf) or \
                (rep._mask("upper_bound").any() and ilo == -math.inf)
            if censored_open:
                note = "capped runs give only a bound: a higher round cap would decide it"
            else:
                note = ("the estimate sits on the edge or half the replicates are on each side: no number of "
                        "replicates decides it")
    return ComponentVerdict(rep.label, est, (ilo, ihi), rep.n, UNDECIDED, needed, note)


def decide_component(rep: Replicates, paper_value, compare: str, tolerance=None, alpha: float = ALPHA) -> ComponentVerdict:
    """A single quantity's verdict at ``1 - alpha``."""
    p = rep.paper_value if rep.paper_value is not None else paper_value
    return _component(rep, p, compare, tolerance, alpha, alpha)


def decide(value, paper_value, compare: str, tolerance=None, alpha: float = ALPHA) -> Decision:
    """The verdict of a claim from its check's value: :class:`Replicates`, a list of them (holds when every
    component holds at ``1 - alpha``; fails when one fails at ``1 - alpha / k``), or, for
    ``compare: true`` (``kind: check`` only), a truthy value."""
    if compare == "true":
        if isinstance(value, (Replicates, list, tuple)):
            raise ValueError("compare 'true' takes a truthy value, not replicates; use a numeric compare")
        return Decision(HOLDS if bool(value) else FAILS, p_value=0.0)
    comps = list(value) if isinstance(value, (list, tuple)) else [value]
    if not comps:
        raise ValueError("the check returned no replicates")
    comps = [c if isinstance(c, Replicates) else Replicates([float(c)]) for c in comps]
    k = len(comps)
    parts = tuple(_component(c, c.paper_value if c.paper_value is not None else paper_value, compare, tolerance,
                             alpha, alpha / k) for c in comps)
    states = {c.verdict for c in parts}
    if FAILS in states:
        return Decision(FAILS, parts, 1 - alpha, min(1.0, k * min(c.p_value for c in parts if c.verdict == FAILS)))
    if states == {HOLDS}:
        return Decision(HOLDS, parts, 1 - alpha, max(c.p_value for c in parts))
    return Decision(UNDECIDED, parts, 1 - alpha, 1.0)


def fdr_control(p_values, q: float = ALPHA) -> np.ndarray:
    """Benjamini-Hochberg over a family of decided verdicts: ``True`` where the verdict stands at false
    discovery rate ``q`` (undecided statements enter with p = 1). ``scipy.stats.false_discovery_control``
    gives the adjusted p-values."""
    p = np.asarray(list(p_values), dtype=float)
    if p.size == 0:
        return np.zeros(0, bool)
    from scipy import stats

    return stats.false_discovery_control(np.clip(p, 0.0, 1.0), method="bh") <= q
