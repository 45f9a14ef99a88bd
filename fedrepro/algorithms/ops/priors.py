"""Prior distributions q over the workers (aspire spec 002 §2.7, §4.5): the centre of an uncertainty
set, DRFA-Prox's starting point and regularizer, the weights of even-weight baselines."""
from __future__ import annotations

import numpy as np

from fedrepro.core.params import Anything

PRIOR_CONSTRAINT = Anything('"uniform", a probability vector with one entry per worker, '
                            'or {"last": r} (the last worker weighted r / (N - 1 + r))')


def resolve_prior(prior, m: int, owner: str) -> np.ndarray:
    """The prior as an (m,) probability vector.

    ``"uniform"`` (or None): 1/m. ``{"last": r}``: the last worker (a malicious worker added to N = m - 1
    benign ones, spec §4.5) gets r / (N + r), every other 1 / (N + r). A sequence: taken as given; it
    must have m non-negative entries summing to 1.
    """
    if prior is None or (isinstance(prior, str) and prior == "uniform"):
        return np.full(m, 1.0 / m)
    if isinstance(prior, dict):
        if set(prior) != {"last"} or not (isinstance(prior["last"], (int, float)) and prior["last"] > 0):
            raise ValueError(f"{owner}: prior {prior!r}: the mapping form is {{'last': r}} with r > 0")
        if m < 2:
            raise ValueError(f"{owner}: prior {{'last': r}} needs at least 2 workers, the problem has {m}")
        r, n = float(prior["last"]), m - 1
        q = np.full(m, 1.0 / (n + r))
        q[-1] = r / (n + r)
        return q
    if isinstance(prior, str):
        raise ValueError(f"{owner}: prior {prior!r} is not allowed; use 'uniform', {{'last': r}} or a vector")
    q = np.asarray(prior, dtype=float)
    if q.shape != (m,):
        raise ValueError(f"{owner}: prior has {q.size} entries but the problem has {m} workers; give one per worker")
    if not np.all(np.isfinite(q)) or np.any(q < 0) or abs(q.sum() - 1.0) > 1e-9:
        raise ValueError(f"{owner}: prior must be non-negative and sum to 1, got {q.tolist()}")
    return q


def check_prior(prior, owner: str) -> None:
    """Check what can be checked of ``prior`` before the number of workers is known (an algorithm's
    construction): the form, and for a vector non-negative finite entries summing to 1. Its length
    is checked against the problem by :func:`resolve_prior` when the run starts."""
    if prior is None:
        return
    if isinstance(prior, (str, dict)):
        resolve_prior(prior, 2, owner)          # the form only ({'last': r} needs >= 2 workers)
        return
    try:
        q = np.asarray(prior, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{owner}: prior {prior!r} must be 'uniform', {{'last': r}} or a vector of "
                         "non-negative numbers summing to 1") from None
    if q.ndim != 1 or q.size == 0:
        raise ValueError(f"{owner}: prior must be a flat list with one entry per worker, got shape {q.shape}")
    resolve_prior(q, q.size, owner)
