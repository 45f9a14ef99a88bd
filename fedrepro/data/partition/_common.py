"""Validation, seeding and bookkeeping shared by the partition rules."""
from __future__ import annotations

import numbers
from typing import Sequence

import numpy as np

from fedrepro.core.rng import stream


# Fixed stream tags, one per rule (appended to the caller's keys), so two rules run
# with the same seed do not share random numbers.  Never renumber: it would change
# every partition already produced.
_TAG = {
    "iid": 1, "random_sizes": 2, "uniform_client_sizes": 3, "label_shards": 4,
    "dirichlet": 5, "one_class": 6, "pair_digit": 7, "imbalanced_shards": 8,
    "location_mix": 9,
}


# --------------------------------------------------------------------------- validation
def _bad(rule: str, param: str, value, allowed: str) -> ValueError:
    return ValueError(f"{rule}: invalid {param}={value!r}; allowed: {allowed}")


def _int(rule: str, param: str, value, lo: int = 0, hi: int | None = None) -> int:
    ok = isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
    if ok and value >= lo and (hi is None or value <= hi):
        return int(value)
    rng_txt = f"an integer >= {lo}" + ("" if hi is None else f" and <= {hi}")
    raise _bad(rule, param, value, rng_txt)


def _choice(rule: str, param: str, value, allowed: Sequence[str]) -> str:
    if isinstance(value, str) and value in allowed:
        return value
    raise _bad(rule, param, value, " | ".join(repr(a) for a in allowed))


def _gen(seed, tag: int) -> np.random.Generator:
    if isinstance(seed, (list, tuple, np.ndarray)):
        parts = list(np.asarray(seed).ravel())
        if not parts:
            raise ValueError("partition seed: an empty sequence is not a seed")
    else:
        parts = [seed]
    for s in parts:
        if not isinstance(s, numbers.Integral) or isinstance(s, (bool, np.bool_)) or s < 0:
            raise ValueError(f"partition seed: invalid seed={seed!r}; allowed: a non-negative integer "
                             "or a sequence of non-negative integers (seed, *keys)")
    base, *keys = (int(s) for s in parts)
    return stream(base, "partition", *keys, tag)


def _labels(rule: str, labels) -> np.ndarray:
    if labels is None:
        raise ValueError(f"{rule}: labels are required (1-D array, one label per sample)")
    y = np.asarray(labels)
    if y.ndim != 1 or y.size == 0:
        raise _bad(rule, "labels", f"array of shape {y.shape}", "a non-empty 1-D array")
    return y


def _m(rule: str, m, n: int) -> int:
    m = _int(rule, "m", m, lo=1)
    if m > n:
        raise ValueError(f"{rule}: invalid m={m}; more clients than samples (n_samples={n}); "
                         f"allowed: 1 <= m <= {n}")
    return m


def _parts_from_assignment(assign: np.ndarray, m: int) -> list[np.ndarray]:
    """(n,) client id per sample (-1 = unassigned) -> m sorted int64 index arrays."""
    order = np.argsort(assign, kind="stable")           # -1 first, then client 0, 1, ...
    counts = np.bincount(assign[assign >= 0], minlength=m)
    order = order[order.size - int(counts.sum()):]
    return [p.astype(np.int64, copy=False) for p in np.split(order, np.cumsum(counts)[:-1])]


def _even_sizes(total: int, k: int) -> np.ndarray:
    """Sizes of ``np.array_split(range(total), k)``: first ``total % k`` get one more."""
    return total // k + (np.arange(k) < total % k).astype(np.int64)


# --------------------------------------------------------------------------- helpers
def sizes(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Client sizes: ``(m,)`` int64 array of ``len(parts[i])``."""
    return np.fromiter((len(p) for p in parts), dtype=np.int64, count=len(parts))


def client_ids(parts: Sequence[np.ndarray], n_samples: int) -> np.ndarray:
    """Sample -> client map: ``(n_samples,)`` int64, ``-1`` for unassigned samples.

    Raises ``ValueError`` if an index is out of range or held by two clients.
    """
    n_samples = _int("client_ids", "n_samples", n_samples, lo=0)
    out = np.full(n_samples, -1, dtype=np.int64)
    if not len(parts):
        return out
    flat = np.concatenate([np.asarray(p, dtype=np.int64).ravel() for p in parts])
    if flat.size and (flat.min() < 0 or flat.max() >= n_samples):
        raise ValueError(f"client_ids: indices must lie in [0, {n_samples}); got range "
                         f"[{flat.min()}, {flat.max()}]")
    if flat.size and np.bincount(flat, minlength=n_samples).max() > 1:
        raise ValueError("client_ids: parts overlap (a sample is held by two clients)")
    out[flat] = np.repeat(np.arange(len(parts), dtype=np.int64), sizes(parts))
    return out


def class_counts(parts: Sequence[np.ndarray], labels, classes=None) -> np.ndarray:
    """``(m, C)`` int64 matrix of per-client label counts (columns: ``classes`` or sorted unique labels)."""
    y = _labels("class_counts", labels)
    cls = np.unique(y) if classes is None else np.asarray(classes)
    out = np.zeros((len(parts), cls.size), dtype=np.int64)
    for i, p in enumerate(parts):
        v = y[np.asarray(p, dtype=np.int64)]
        pos = np.searchsorted(cls, v) if classes is None else _positions(cls, v)
        ok = pos >= 0
        out[i] = np.bincount(pos[ok], minlength=cls.size)
    return out


def _positions(values: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Index of each ``x`` in the (unsorted, distinct) ``values``; -1 if absent."""
    order = np.argsort(values, kind="stable")
    sv = values[order]
    pos = np.searchsorted(sv, x)
    pos_c = np.minimum(pos, sv.size - 1)
    found = (pos < sv.size) & (sv[pos_c] == x)
    return np.where(found, order[pos_c], -1)
