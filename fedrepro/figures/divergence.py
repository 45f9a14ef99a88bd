"""When a run has diverged, for the figures and the CLI's report (issue #44): its objective became
non-finite, or grew beyond :data:`DIVERGE_FACTOR` times its first recorded value (its absolute value;
1 when that is 0). The runner stops a run only far later (``diverge_factor``, default 1e12 times
max(1, |f at round 0|); its ``status`` is then ``diverged``), so a run can end as ``max_rounds`` and
still have diverged by this definition: the figures mark it and keep it out of the mean, and
``fedrepro run`` says so. Light (numpy only): the CLI imports it."""
from __future__ import annotations

import numpy as np

#: a run whose objective grows beyond this factor times its first recorded value has diverged
DIVERGE_FACTOR = 1e6
#: ``fedrepro run`` notes an objective that ended above this factor times its first value
GROWTH_NOTE = 10.0


def objective_growth(values) -> float | None:
    """max |f| over the run from its first finite value on, divided by |that value| (1 when 0);
    ``inf`` when a later value is not finite; None when no value is finite (nothing recorded)."""
    f = np.asarray(values, dtype=float)
    seen = np.flatnonzero(np.isfinite(f))
    if not seen.size:
        return float("inf") if np.isinf(f).any() else None
    after = f[seen[0]:]
    if not np.isfinite(after).all():
        return float("inf")
    return float(np.abs(after).max() / (abs(after[0]) or 1.0))


def has_diverged(values) -> bool:
    """Whether a run's objective trace (in round order) diverged by the definition above."""
    g = objective_growth(values)
    return g is not None and g > DIVERGE_FACTOR


def growth_note(values) -> str | None:
    """One line on a run whose objective grew (final value above :data:`GROWTH_NOTE` times the first)
    or diverged; None otherwise."""
    f = np.asarray(values, dtype=float)
    g = objective_growth(f)
    if g is None:
        return None
    first = f[np.flatnonzero(np.isfinite(f))[0]]
    if has_diverged(f):
        to = (f"a non-finite value (last finite {f[np.isfinite(f)][-1]:.6g})" if g == float("inf")
              else f"{f[np.argmax(np.abs(np.nan_to_num(f)))]:.6g}")
        return (f"diverged: the objective went from {first:.6g} to {to}, more than {DIVERGE_FACTOR:g} times its "
                "first value; the figures mark such a run and keep it out of the mean")
    if abs(f[-1]) > GROWTH_NOTE * (abs(first) or 1.0):
        return (f"the objective grew from {first:.6g} to {f[-1]:.6g} ({abs(f[-1]) / (abs(first) or 1.0):,.0f} times "
                f"its first value): the run did not converge (try a smaller step or fewer local steps)")
    return None
