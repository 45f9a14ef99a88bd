"""Client partitioners: which training samples each federated client holds.

Every partitioner is a pure function of (sample count, labels or group arrays,
parameters, seed).  It returns a list of ``m`` int64 index arrays ``parts``,
``parts[i]`` holding the sample indices of client ``i``, **each sorted
ascending** (no rule of the five papers depends on the order of samples inside a
client: full-batch methods ignore it and minibatches are drawn by the sampling
stream).  Parts are pairwise disjoint.  Every sample is assigned except by the
rules that select data (``one_class`` with a ``classes`` subset, ``pair_digit``
with ``drop_classes``, ``natural`` with ``order``, ``location_mix``); the shard
rules never drop a remainder, they refuse sizes that do not divide (or spread
it with ``remainder="spread"``).  No client is empty (impossible requests raise
``ValueError``), except ``dirichlet`` with ``min_size=0``.

Random numbers come only from ``fedrepro.rng.stream(seed, "partition", *keys,
tag)`` where ``tag`` is fixed per rule; ``seed`` may be an int or a sequence of
non-negative ints ``(seed, *keys)`` (e.g. ``(base, instance)``).  Inputs are
never modified.

Registered rules (``PARTITIONERS``; ``partition(name, ...)`` dispatches):

* ``iid`` -- random permutation split into ``m`` near-equal chunks (Gong et al.
  ``mnist_iid``; FRPG ``iid`` alternative).
* ``random_sizes`` -- Zhou & Li size rules: ``rule="cuts"`` (random cut points,
  FedADMM Ex. 5.2 / FedEPM), ``rule="uniform"`` (d_i ~ U{low..high}, FedADMM
  Ex. 5.1), ``rule="given"``; ``random_cuts`` and ``sizes_uniform`` fix ``rule``.
* ``label_shards`` -- McMahan shards: sort by label, ``m*k`` shards, ``k`` each.
* ``dirichlet`` -- per-class Dirichlet(alpha) proportions (Hsu et al. 2019).
* ``natural`` -- one client per distinct group value (or key combination).
* ``one_class`` -- one class per client (ASPIRE Fashion-MNIST).
* ``pair_digit`` -- FRPG / RSA: workers 2c, 2c+1 share class c;
  ``pair_half_digits``: pair c holds classes c..c+4 (mod 10).
* ``imbalanced_shards`` -- FedADMM (Gong et al.) Table VI shard-group rule.
* ``location_mix`` -- ASPIRE SHL: frames split equally, body location ~ mix row.

Helpers: :func:`client_ids` (sample -> client, -1 unassigned), :func:`sizes`,
:func:`class_counts`, :func:`group_keys`, :func:`uniform_client_sizes`,
:func:`random_cut_sizes`.
"""
from __future__ import annotations

import inspect
import math
import numbers
from typing import Callable, Sequence

import numpy as np

from fedrepro.rng import stream

__all__ = [
    "PARTITIONERS", "partition", "client_ids", "sizes", "class_counts", "group_keys",
    "uniform_client_sizes", "random_cut_sizes", "MIN_FRAC_PRESETS",
    "iid", "random_sizes", "random_cuts", "sizes_uniform", "label_shards", "dirichlet",
    "natural", "one_class", "pair_digit", "pair_half_digits", "imbalanced_shards",
    "location_mix",
]

# Fixed stream tags, one per rule (appended to the caller's keys), so two rules run
# with the same seed do not share random numbers.  Never renumber: it would change
# every partition already produced.
_TAG = {
    "iid": 1, "random_sizes": 2, "uniform_client_sizes": 3, "label_shards": 4,
    "dirichlet": 5, "one_class": 6, "pair_digit": 7, "imbalanced_shards": 8,
    "location_mix": 9,
}

#: Named minimum-size thresholds of the random-cut rule (accept a draw when
#: ``min_i d_i > min_frac * d / m``).
MIN_FRAC_PRESETS = {
    "fedadmm_zhou": 0.025,       # FedADMM code (Feb 2023), DataGeneration.m, spec 000 sec. 4.4 / C18
    "fedadmm_zhou_2022": 0.1,    # July-2022 FedADMM code
    "fedepm": 0.01,              # FedEPM demon.m / effectk0.m, spec 001 sec. 4
    "none": 0.0,                 # no rejection
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


# --------------------------------------------------------------------------- iid
def iid(n_samples: int, m: int, *, seed) -> list[np.ndarray]:
    """Equal random split (Gong et al. code ``mnist_iid``/``cifar_iid``; FRPG ``iid``).

    A uniformly random permutation of ``0..n_samples-1`` is cut into ``m``
    consecutive chunks whose sizes differ by at most one (the first
    ``n_samples % m`` clients get one extra sample).

    Returns ``m`` sorted int64 arrays; every sample assigned once.
    """
    n = _int("iid", "n_samples", n_samples, lo=1)
    m = _m("iid", m, n)
    perm = _gen(seed, _TAG["iid"]).permutation(n)
    assign = np.empty(n, dtype=np.int64)
    assign[perm] = np.repeat(np.arange(m, dtype=np.int64), _even_sizes(n, m))
    return _parts_from_assignment(assign, m)


# --------------------------------------------------------------------------- Zhou & Li sizes
def uniform_client_sizes(m: int, low: int = 50, high: int = 150, *, seed) -> np.ndarray:
    """Client sizes ``d_i`` i.i.d. uniform on the integers ``{low, ..., high}`` (inclusive).

    FedADMM (Zhou & Li) Example 5.1, spec 000 sec. 4.1 step 1 (code
    ``randi([50 150],1,m)``).  The data generator draws ``d = sum(d_i)`` samples
    with these sizes; ``partition("sizes_uniform", n_samples=d, m=m, low=low,
    high=high, seed=seed)`` then redraws the same sizes from the same seed.

    Returns ``(m,)`` int64.
    """
    m = _int("uniform_client_sizes", "m", m, lo=1)
    low = _int("uniform_client_sizes", "low", low, lo=1)
    high = _int("uniform_client_sizes", "high", high, lo=low)
    rng = _gen(seed, _TAG["uniform_client_sizes"])
    return rng.integers(low, high, size=m, endpoint=True).astype(np.int64)


def _min_frac(rule: str, min_frac) -> float:
    if isinstance(min_frac, str):
        if min_frac not in MIN_FRAC_PRESETS:
            raise _bad(rule, "min_frac", min_frac,
                       "a number in [0, 1) or one of " + ", ".join(map(repr, MIN_FRAC_PRESETS)))
        return MIN_FRAC_PRESETS[min_frac]
    if isinstance(min_frac, numbers.Real) and not isinstance(min_frac, bool) \
            and math.isfinite(min_frac) and 0 <= min_frac < 1:
        return float(min_frac)
    raise _bad(rule, "min_frac", min_frac,
               "a number in [0, 1) or one of " + ", ".join(map(repr, MIN_FRAC_PRESETS)))


def _cut_sizes(rng: np.random.Generator, d: int, m: int, frac: float, sampler: str,
               cut_points: str, max_tries: int, rule: str) -> np.ndarray:
    first_lo = 2 if (cut_points == "code" and m >= 2) else 1
    if m == 1:
        sz = np.array([d], dtype=np.int64)
        if not d > frac * d / m:
            raise ValueError(f"{rule}: min_frac={frac} cannot be met with m=1")
        return sz
    if cut_points == "code" and m - 1 > d - 2:
        raise ValueError(f"{rule}: invalid m={m}; the code rule draws m-1 distinct cut points from "
                         f"{{2..d-1}} (d={d}); allowed: m <= {d - 1}")
    thr = frac * d / m
    s = math.floor(thr) + 1                      # smallest integer strictly above thr
    lo = np.full(m, max(s, 1), dtype=np.int64)
    lo[0] = max(s, first_lo)
    slack = d - int((lo - 1).sum())
    if slack < m:
        raise ValueError(f"{rule}: invalid min_frac={frac}; every client would need more than "
                         f"{thr:.4g} samples (sum >= {int(lo.sum())} > n_samples={d}); allowed: a "
                         "smaller min_frac or fewer clients")
    if sampler == "direct":
        # Uniform over compositions with d_i >= lo_i == the law of the code's draw
        # conditioned on acceptance (the code's cut sets are in bijection with the
        # compositions with d_1 >= 2, d_i >= 1, all equally likely).
        cuts = np.sort(rng.choice(slack - 1, size=m - 1, replace=False) + 1)
        e = np.diff(np.concatenate(([0], cuts, [slack])))
        return (e + lo - 1).astype(np.int64)
    offset = 2 if cut_points == "code" else 1
    population = d - offset                      # {offset, ..., d-1}
    for _ in range(max_tries):
        cuts = np.sort(rng.choice(population, size=m - 1, replace=False) + offset)
        sz = np.diff(np.concatenate(([0], cuts, [d])))
        if sz.min() > thr:
            return sz.astype(np.int64)
    raise ValueError(f"{rule}: sampler='reject' found no draw with min size > {thr:.4g} in "
                     f"max_tries={max_tries} tries; allowed: sampler='direct' (same law, no loop) "
                     "or a larger max_tries")


def random_cut_sizes(n_samples: int, m: int, *, seed, min_frac=0.025, sampler: str = "direct",
                     cut_points: str = "code", max_tries: int = 100_000) -> np.ndarray:
    """Client sizes of the Zhou & Li random-cut rule (FedADMM Ex. 5.2, FedEPM).

    Spec 000 sec. 4.4 / 001 sec. 4 (code ``DataGeneration.m``/``demon.m``)::

        repeat: idx = unique([randperm(d-2, m-1)+1, d]); d_i = diff([0 idx])
        until   min_i d_i > min_frac * d / m

    i.e. ``m-1`` distinct cut points uniform on ``{2, ..., d-1}``; client 1 gets
    rows ``1..cut_1`` (so ``d_1 >= 2``), client ``i`` rows ``cut_{i-1}+1..cut_i``.

    Parameters
    ----------
    min_frac : float or str
        Rejection threshold (accept when ``min d_i > min_frac*d/m``); a number in
        [0, 1) or a preset of :data:`MIN_FRAC_PRESETS` (``"fedadmm_zhou"`` 0.025,
        ``"fedadmm_zhou_2022"`` 0.1, ``"fedepm"`` 0.01, ``"none"`` 0).
    sampler : {"direct", "reject"}
        ``"reject"`` is the code's loop literally (at most ``max_tries`` draws).
        ``"direct"`` (default) draws from the same distribution in one step:
        the accepted draws are uniform over the compositions of ``d`` with
        ``d_1 >= max(2, s)``, ``d_i >= s`` (``s`` = smallest integer
        ``> min_frac*d/m``); subtract ``s-1`` (resp. the first lower bound - 1)
        and cut the rest uniformly.  The loop's acceptance rate can be tiny
        (rls, m = 1000: about 1e-6), the direct draw never loops.
    cut_points : {"code", "all"}
        ``"code"``: cut points from ``{2..d-1}`` (both authors' codes);
        ``"all"``: from ``{1..d-1}`` (textbook uniform spacings, ``d_1 >= 1``).

    Returns ``(m,)`` int64 sizes summing to ``n_samples``; the same sizes as
    ``random_sizes(rule="cuts")`` / ``random_cuts`` with the same arguments and seed.
    """
    rule = "random_cut_sizes"
    d = _int(rule, "n_samples", n_samples, lo=1)
    m = _m(rule, m, d)
    frac = _min_frac(rule, min_frac)
    sampler = _choice(rule, "sampler", sampler, ("direct", "reject"))
    cut_points = _choice(rule, "cut_points", cut_points, ("code", "all"))
    max_tries = _int(rule, "max_tries", max_tries, lo=1)
    return _cut_sizes(_gen(seed, _TAG["random_sizes"]), d, m, frac, sampler, cut_points,
                      max_tries, rule)


def random_sizes(n_samples: int, m: int, *, seed, rule: str = "cuts", min_frac=0.025,
                 sampler: str = "direct", cut_points: str = "code", max_tries: int = 100_000,
                 low: int = 50, high: int = 150, sizes=None, shuffle: bool = True) -> list[np.ndarray]:
    """Random split into blocks of random sizes (Zhou & Li: FedADMM, FedEPM).

    1. Sizes ``d_1..d_m`` by ``rule``:

       * ``"cuts"`` -- the random cut-point rule of FedADMM Ex. 5.2 (spec 000
         sec. 4.4) and FedEPM (spec 001 sec. 4), see :func:`random_cut_sizes`
         (``min_frac``, ``sampler``, ``cut_points``, ``max_tries``).  FedADMM
         default ``min_frac=0.025``, FedEPM ``min_frac=0.01`` (or the presets
         ``"fedadmm_zhou"``, ``"fedepm"``, ``"fedadmm_zhou_2022"``).
       * ``"uniform"`` -- FedADMM Ex. 5.1 (spec 000 sec. 4.1): ``d_i`` uniform on
         ``{low..high}``, redrawn by :func:`uniform_client_sizes` from ``seed``;
         their sum must equal ``n_samples`` (generate the data with the same
         seed), else ``ValueError``.
       * ``"given"`` -- ``sizes`` (length ``m``, positive, summing to ``n_samples``).

    2. ``shuffle=True`` (default; the codes shuffle the rows first): a uniform
       random permutation of the samples is cut consecutively into blocks of these
       sizes.  ``shuffle=False``: client ``i`` gets the consecutive index block
       ``[d_1+..+d_{i-1}, d_1+..+d_i)`` (Ex. 5.1 generator output is already
       shuffled, spec 000 sec. 4.1 step 3).

    Returns ``m`` sorted int64 arrays; every sample assigned once.
    """
    name = "random_sizes"
    n = _int(name, "n_samples", n_samples, lo=1)
    rule = _choice(name, "rule", rule, ("cuts", "uniform", "given"))
    if not isinstance(shuffle, (bool, np.bool_)):
        raise _bad(name, "shuffle", shuffle, "True | False")
    if sizes is not None and rule != "given":
        raise _bad(name, "sizes", "<array>", f"only with rule='given' (rule={rule!r})")
    rng = _gen(seed, _TAG["random_sizes"])
    if rule == "cuts":
        m = _m(name, m, n)
        frac = _min_frac(name, min_frac)
        sampler = _choice(name, "sampler", sampler, ("direct", "reject"))
        cut_points = _choice(name, "cut_points", cut_points, ("code", "all"))
        max_tries = _int(name, "max_tries", max_tries, lo=1)
        sz = _cut_sizes(rng, n, m, frac, sampler, cut_points, max_tries, name)
    elif rule == "uniform":
        m = _m(name, m, n)
        sz = uniform_client_sizes(m, low, high, seed=seed)
        if int(sz.sum()) != n:
            raise ValueError(f"{name}: invalid n_samples={n} for rule='uniform'; the sizes "
                             f"uniform_client_sizes(m={m}, low={low}, high={high}, seed={seed!r}) "
                             f"sum to {int(sz.sum())}; allowed: generate the data with those sizes "
                             "and the same seed, or use rule='given' with sizes=...")
    else:
        if sizes is None:
            raise _bad(name, "sizes", None, "a sequence of m positive integers (rule='given')")
        sz = np.asarray(sizes)
        if sz.ndim != 1 or sz.size == 0 or not np.issubdtype(sz.dtype, np.integer) or sz.min() < 1:
            raise _bad(name, "sizes", sizes, "a non-empty 1-D sequence of positive integers")
        if m is not None and _int(name, "m", m, lo=1) != sz.size:
            raise _bad(name, "m", m, f"len(sizes) = {sz.size}")
        m = sz.size
        if int(sz.sum()) != n:
            raise _bad(name, "sizes", f"<sum {int(sz.sum())}>", f"sizes summing to n_samples={n}")
        sz = sz.astype(np.int64)
    block = np.repeat(np.arange(m, dtype=np.int64), sz)
    perm = rng.permutation(n) if shuffle else None     # drawn after the sizes (see random_cut_sizes)
    if perm is None:
        assign = block
    else:
        assign = np.empty(n, dtype=np.int64)
        assign[perm] = block
    return _parts_from_assignment(assign, m)


def random_cuts(n_samples: int, m: int, *, seed, min_frac=0.025, sampler: str = "direct",
                cut_points: str = "code", max_tries: int = 100_000,
                shuffle: bool = True) -> list[np.ndarray]:
    """``random_sizes(rule="cuts")``: shuffle, then the Zhou & Li random cut points.

    Same stream as ``random_sizes``, so both give the identical split.
    """
    return random_sizes(n_samples, m, seed=seed, rule="cuts", min_frac=min_frac, sampler=sampler,
                        cut_points=cut_points, max_tries=max_tries, shuffle=shuffle)


def sizes_uniform(n_samples: int, m: int, *, seed, low: int = 50, high: int = 150,
                  shuffle: bool = True) -> list[np.ndarray]:
    """``random_sizes(rule="uniform")``: FedADMM Ex. 5.1 sizes ``d_i ~ U{low..high}``."""
    return random_sizes(n_samples, m, seed=seed, rule="uniform", low=low, high=high,
                        shuffle=shuffle)


# --------------------------------------------------------------------------- label shards
def _sorted_by_label(rule: str, y: np.ndarray, label_sort: str, rng: np.random.Generator):
    label_sort = _choice(rule, "label_sort", label_sort, ("stable", "random"))
    if label_sort == "stable":
        return np.argsort(y, kind="stable")
    perm = rng.permutation(y.size)
    return perm[np.argsort(y[perm], kind="stable")]


def _shard_sizes(rule: str, n: int, n_shards: int, remainder: str, what: str) -> np.ndarray:
    remainder = _choice(rule, "remainder", remainder, ("error", "spread"))
    if n_shards > n:
        raise ValueError(f"{rule}: {what} = {n_shards} shards but only n_samples={n}; "
                         "allowed: at most one shard per sample")
    if n % n_shards and remainder == "error":
        raise ValueError(f"{rule}: n_samples={n} is not divisible by {what} = {n_shards}; "
                         "allowed: a divisor, or remainder='spread' (shard sizes differ by one)")
    return _even_sizes(n, n_shards)


def label_shards(labels, m: int, *, seed, k: int = 2, label_sort: str = "stable",
                 remainder: str = "error") -> list[np.ndarray]:
    """Pathological non-IID shards (McMahan et al. 2017; Gong et al. ``mnist_noniid``).

    Spec 003 sec. 4, partition 2: sort the sample indices by label
    (``label_sort="stable"``: stable sort, index order inside a class;
    ``"random"``: random order inside a class), cut the sorted list into
    ``m*k`` contiguous shards of equal size ``n/(m*k)``, and give every client
    ``k`` shards drawn uniformly at random without replacement (client ``i`` gets
    shards ``perm[i*k:(i+1)*k]`` of a random permutation of the shards).

    ``n`` must be divisible by ``m*k`` (``remainder="error"``, the spec's
    assertion) unless ``remainder="spread"`` (shard sizes then differ by one).
    A shard may straddle two classes when class counts are not multiples of the
    shard size (MNIST), so a client holds at most ``k`` classes only when every
    class count is a multiple of the shard size.

    Returns ``m`` sorted int64 arrays; every sample assigned once.
    """
    rule = "label_shards"
    y = _labels(rule, labels)
    n = y.size
    m = _m(rule, m, n)
    k = _int(rule, "k", k, lo=1)
    shard_sz = _shard_sizes(rule, n, m * k, remainder, f"m*k = {m}*{k}")
    rng = _gen(seed, _TAG[rule])
    order = _sorted_by_label(rule, y, label_sort, rng)
    client_of_shard = np.empty(m * k, dtype=np.int64)
    client_of_shard[rng.permutation(m * k)] = np.arange(m * k, dtype=np.int64) // k
    assign = np.empty(n, dtype=np.int64)
    assign[order] = np.repeat(client_of_shard, shard_sz)
    return _parts_from_assignment(assign, m)


# --------------------------------------------------------------------------- Dirichlet
def dirichlet(labels, m: int, *, seed, alpha: float, min_size: int = 1,
              max_tries: int = 1000) -> list[np.ndarray]:
    """Label-Dirichlet non-IID split (Hsu, Qi & Brown 2019; Yurochkin et al. 2019).

    For every class ``c`` independently: draw proportions ``p_c ~
    Dirichlet(alpha * 1_m)`` over the ``m`` clients, shuffle the class's samples
    and cut them at ``floor(cumsum(p_c) * n_c)`` (as ``np.split`` in the common
    NIID-Bench code; no per-client cap).  Small ``alpha`` -> few classes per
    client; ``alpha -> inf`` -> IID.

    ``min_size`` (default 1: no empty client): if any client ends up with fewer
    samples, the *whole* draw (permutations and proportions, all classes) is
    repeated with the continuing stream, at most ``max_tries`` times, then
    ``ValueError``.  ``min_size=0`` accepts the first draw.

    Returns ``m`` sorted int64 arrays; every sample assigned once.
    """
    rule = "dirichlet"
    y = _labels(rule, labels)
    n = y.size
    m = _m(rule, m, n)
    if not (isinstance(alpha, numbers.Real) and not isinstance(alpha, bool)
            and math.isfinite(alpha) and alpha > 0):
        raise _bad(rule, "alpha", alpha, "a finite number > 0")
    min_size = _int(rule, "min_size", min_size, lo=0, hi=n // m)
    max_tries = _int(rule, "max_tries", max_tries, lo=1)
    _, yc = np.unique(y, return_inverse=True)
    yc = yc.ravel()
    counts = np.bincount(yc)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rng = _gen(seed, _TAG[rule])
    for _ in range(max_tries):
        perm = rng.permutation(n)
        order = perm[np.argsort(yc[perm], kind="stable")]      # shuffled within each class
        props = rng.dirichlet(np.full(m, float(alpha)), size=counts.size)
        client_sorted = np.empty(n, dtype=np.int64)
        for c, (n_c, s) in enumerate(zip(counts, starts)):
            cuts = (np.cumsum(props[c]) * n_c).astype(np.int64)[:-1]
            client_sorted[s:s + n_c] = np.searchsorted(cuts, np.arange(n_c), side="right")
        assign = np.empty(n, dtype=np.int64)
        assign[order] = client_sorted
        if np.bincount(assign, minlength=m).min() >= min_size:
            return _parts_from_assignment(assign, m)
    raise ValueError(f"{rule}: no draw gave every client >= min_size={min_size} samples in "
                     f"max_tries={max_tries} tries (alpha={alpha}, m={m}, n_samples={n}); allowed: "
                     "a larger alpha, a smaller min_size or a larger max_tries")


# --------------------------------------------------------------------------- natural groups
def _group_codes(rule: str, groups, key):
    """-> (codes (n,) int64 in lexicographic key order, keys list, n)."""
    if groups is None:
        raise ValueError(f"{rule}: groups are required (1-D array, (n, g) array or dict of arrays)")
    if isinstance(groups, dict):
        if key is None:
            if len(groups) != 1:
                raise _bad(rule, "key", None, "one of " + ", ".join(map(repr, groups))
                           + " or a list of them (groups has several arrays)")
            key = next(iter(groups))
        names = [key] if isinstance(key, str) else list(key)
        missing = [k for k in names if k not in groups]
        if not names or missing:
            raise _bad(rule, "key", key, "names among " + ", ".join(map(repr, groups)))
        cols = [np.asarray(groups[k]) for k in names]
    else:
        if key is not None:
            raise _bad(rule, "key", key, "None when groups is an array (key selects dict entries)")
        g = np.asarray(groups)
        if g.ndim == 1:
            cols = [g]
        elif g.ndim == 2 and g.shape[1] >= 1:
            cols = [g[:, j] for j in range(g.shape[1])]
        else:
            raise _bad(rule, "groups", f"array of shape {g.shape}", "a 1-D or 2-D array")
    n = cols[0].shape[0]
    if n == 0 or any(c.ndim != 1 or c.shape[0] != n for c in cols):
        raise _bad(rule, "groups", "<arrays>", "non-empty 1-D arrays of one common length")
    uniq, inv = [], []
    for c in cols:
        u, i = np.unique(c, return_inverse=True)
        uniq.append(u)
        inv.append(i.ravel())
    if len(cols) == 1:
        keys = [u.item() if hasattr(u, "item") else u for u in uniq[0]]
        return inv[0].astype(np.int64), keys, n
    combo, codes = np.unique(np.stack(inv, axis=1), axis=0, return_inverse=True)
    keys = [tuple(uniq[j][row[j]].item() for j in range(len(cols))) for row in combo]
    return codes.ravel().astype(np.int64), keys, n


def group_keys(groups, key=None) -> list:
    """Group value (tuple for a key combination) of each ``natural`` client, in client order."""
    return _group_codes("group_keys", groups, key)[1]


def natural(groups, m: int | None = None, *, seed=None, key=None, order=None) -> list[np.ndarray]:
    """One client per distinct group value (ASPIRE: participant -> worker, spec 002 sec. 4).

    ``groups`` is a 1-D array (one value per sample), an ``(n, g)`` array (each
    distinct row is a group: key combination), or a dict of 1-D arrays (the
    :class:`~fedrepro.data.dataset.Dataset` ``groups``) with ``key`` naming one
    entry or a list of entries (combination, e.g. ``["participant",
    "location"]``).  Clients are ordered by sorted group value (lexicographic for
    combinations; :func:`group_keys` lists them) unless ``order`` lists the
    values (tuples for combinations) explicitly: client ``i`` = ``order[i]``, and
    samples of unlisted groups are unassigned.  ``m``, if given, must equal the
    number of clients.  Deterministic: ``seed`` is accepted and ignored.

    Returns sorted int64 arrays (every sample assigned unless ``order`` omits groups).
    """
    rule = "natural"
    codes, keys, n = _group_codes(rule, groups, key)
    if order is None:
        n_clients = len(keys)
        assign = codes
    else:
        lookup = {k: i for i, k in enumerate(keys)}
        order = list(order)
        norm = [tuple(o) if isinstance(o, (list, np.ndarray)) else o for o in order]
        absent = [o for o in norm if o not in lookup]
        if absent or len(set(norm)) != len(norm) or not norm:
            raise _bad(rule, "order", order, f"distinct existing group values among {keys[:20]}")
        client_of_code = np.full(len(keys), -1, dtype=np.int64)
        client_of_code[[lookup[o] for o in norm]] = np.arange(len(norm))
        n_clients = len(norm)
        assign = client_of_code[codes]
    if m is not None and _int(rule, "m", m, lo=1) != n_clients:
        raise _bad(rule, "m", m, f"{n_clients} (the number of groups)")
    return _parts_from_assignment(assign, n_clients)


# --------------------------------------------------------------------------- class-based rules
def _class_values(rule: str, y: np.ndarray, classes, drop_classes=()) -> np.ndarray:
    present = np.unique(y)
    if classes is None:
        vals = present
    else:
        vals = np.asarray(list(classes))
        if vals.ndim != 1 or vals.size == 0 or np.unique(vals).size != vals.size:
            raise _bad(rule, "classes", classes, "a non-empty list of distinct label values")
        missing = vals[_positions(present, vals) < 0]
        if missing.size:
            raise _bad(rule, "classes", classes, f"label values present in labels {present.tolist()}")
    drop = np.asarray(list(drop_classes))
    if drop.size:
        bad = drop[_positions(present, drop) < 0]
        if bad.size:
            raise _bad(rule, "drop_classes", list(drop_classes),
                       f"label values present in labels {present.tolist()}")
        vals = vals[_positions(drop, vals) < 0]
        if vals.size == 0:
            raise _bad(rule, "drop_classes", list(drop_classes), "leaving at least one class")
    return vals


def _split_classes(rule: str, y: np.ndarray, holders: dict, rng: np.random.Generator,
                   n_clients: int) -> list[np.ndarray]:
    """Each class value -> its holder list: a random permutation of the class's
    samples is split into ``len(holders)`` near-equal consecutive chunks, first
    holder first (``np.array_split``: the first ``n_c % h`` holders get one more,
    so two holders get ``ceil(n_c/2)`` and ``floor(n_c/2)``)."""
    assign = np.full(y.size, -1, dtype=np.int64)
    for c, hs in holders.items():
        idx = np.flatnonzero(y == c)
        if idx.size < len(hs):
            raise ValueError(f"{rule}: class {c!r} has {idx.size} samples for {len(hs)} clients; "
                             "allowed: at least one sample per client holding the class")
        assign[idx[rng.permutation(idx.size)]] = np.repeat(np.asarray(hs, dtype=np.int64),
                                                           _even_sizes(idx.size, len(hs)))
    return _parts_from_assignment(assign, n_clients)


def one_class(labels, m: int | None = None, *, seed, classes=None) -> list[np.ndarray]:
    """One class per client (ASPIRE Fashion-MNIST: worker j = class j, spec 002 sec. 4.4).

    ``classes`` (default: sorted distinct labels) lists the classes used, in
    client order; client ``i`` holds ``classes[i % C]`` (``m`` defaults to
    ``C``; ``m < C`` is refused -- pass the wanted subset as ``classes``).  The
    clients holding the same class split a random permutation of it equally
    (sizes differ by at most one, lower client id first).  Samples of classes
    not listed are unassigned.

    Returns ``m`` sorted int64 arrays.
    """
    rule = "one_class"
    y = _labels(rule, labels)
    vals = _class_values(rule, y, classes)
    C = vals.size
    m = C if m is None else _int(rule, "m", m, lo=1)
    if m < C:
        raise _bad(rule, "m", m, f">= {C} (one client per listed class; pass classes=[...] to "
                   "use fewer classes)")
    holders = {v.item(): [i for i in range(m) if i % C == j] for j, v in enumerate(vals)}
    return _split_classes(rule, y, holders, _gen(seed, _TAG[rule]), m)


def pair_digit(labels, m: int = 20, *, seed, variant: str = "pair", drop_classes=(),
               classes_per_pair: int | None = None) -> list[np.ndarray]:
    """FRPG heterogeneous split (spec 004 sec. 4.1; RSA code ``RSA_hete.py``).

    Workers come in pairs: pair ``c`` = workers ``{2c, 2c+1}`` (``m`` even,
    0-based ids).  ``kept`` = sorted distinct labels minus ``drop_classes``.

    * ``variant="pair"`` (FRPG default ``pair_digit``): pair ``c`` holds the one
      class ``kept[c % len(kept)]``.  With 10 classes and ``m = 20``: workers
      2c, 2c+1 hold digit c, worker 2c gets ``ceil(n_c/2)`` of a seeded
      permutation of the class, 2c+1 the rest; the last four workers (16..19)
      hold digits 8 and 9.
    * ``variant="half"`` (``pair_half_digits``): pair ``c`` holds the
      ``classes_per_pair`` (default ``len(kept)//2``, i.e. 5 of 10) classes
      ``kept[(c + j) % len(kept)]``, ``j = 0..h-1``; every label then sits on
      half of the workers.

    A class is split evenly (random permutation, ``np.array_split`` in worker-id
    order) over all workers holding it.  ``drop_classes`` (FRPG alternative
    ``[6,7,8,9]``) leaves those samples unassigned -- the data layer removes them
    from train and test.  Every kept class must be held by some pair.

    Returns ``m`` sorted int64 arrays.
    """
    variant = _choice("pair_digit", "variant", variant, ("pair", "half"))
    rule = "pair_digit" if variant == "pair" else "pair_half_digits"
    y = _labels(rule, labels)
    m = _int(rule, "m", m, lo=2)
    if m % 2:
        raise _bad(rule, "m", m, "an even number of workers (pairs 2c, 2c+1)")
    kept = _class_values(rule, y, None, drop_classes)
    K, P = kept.size, m // 2
    if variant == "pair":
        h = 1
        if classes_per_pair not in (None, 1):
            raise _bad(rule, "classes_per_pair", classes_per_pair, "None or 1 for variant='pair'")
    else:
        h = max(K // 2, 1) if classes_per_pair is None else _int(rule, "classes_per_pair",
                                                                 classes_per_pair, lo=1, hi=K)
    held = {j: [] for j in range(K)}
    for c in range(P):
        for j in range(h):
            held[(c + j) % K] += [2 * c, 2 * c + 1]
    unheld = [kept[j].item() for j in range(K) if not held[j]]
    if unheld:
        raise _bad(rule, "m", m, f"enough pairs to hold every kept class (classes {unheld} would be "
                   "held by nobody; use drop_classes or more workers)")
    holders = {kept[j].item(): sorted(hs) for j, hs in held.items()}
    return _split_classes(rule, y, holders, _gen(seed, _TAG["pair_digit"]), m)


def pair_half_digits(labels, m: int = 20, *, seed, drop_classes=(),
                     classes_per_pair: int | None = None) -> list[np.ndarray]:
    """``pair_digit(variant="half")``: pair c holds classes c..c+4 (mod 10), FRPG alternative."""
    return pair_digit(labels, m, seed=seed, variant="half", drop_classes=drop_classes,
                      classes_per_pair=classes_per_pair)


# --------------------------------------------------------------------------- Table VI
def imbalanced_shards(labels, m: int = 200, *, seed, n_shards: int = 10000,
                      clients_per_group: int = 2, n_groups: int | None = None,
                      assignment: str = "random", label_sort: str = "stable",
                      remainder: str = "error") -> list[np.ndarray]:
    """Imbalanced data volumes of FedADMM (Gong et al.) Table VI / Fig. 10 (spec 003 sec. 4.3).

    Sort by label (stable), cut into ``n_shards`` equal shards (FMNIST: 10,000
    shards of 6; CIFAR-10: 10,000 of 5).  The ``m`` clients form ``G =
    m / clients_per_group`` groups ``g = 1..G`` (client ``i`` is in group
    ``i // clients_per_group + 1``).  Every client of group ``g < G`` gets ``g``
    shards; the clients of group ``G`` share the remaining ``n_shards -
    clients_per_group * G(G-1)/2`` shards equally (differing by one if not
    divisible).  ``assignment="random"`` (spec assumption): shards are dealt
    from a uniformly random permutation; ``"sequential"``: in label-sorted order
    (client 0 gets shard 0, ...).  Paper setting m = 200, G = 100: sizes 6g / 5g
    and 300 / 250 for the last group; mean 300 / 250, sample std 171.03 / 142.53.

    Returns ``m`` sorted int64 arrays; every sample assigned once.
    """
    rule = "imbalanced_shards"
    y = _labels(rule, labels)
    n = y.size
    m = _int(rule, "m", m, lo=1)
    cpg = _int(rule, "clients_per_group", clients_per_group, lo=1)
    if m % cpg:
        raise _bad(rule, "m", m, f"a multiple of clients_per_group={cpg}")
    G = m // cpg
    if n_groups is not None and _int(rule, "n_groups", n_groups, lo=1) != G:
        raise _bad(rule, "n_groups", n_groups, f"m / clients_per_group = {G}")
    n_shards = _int(rule, "n_shards", n_shards, lo=1)
    assignment = _choice(rule, "assignment", assignment, ("random", "sequential"))
    rest = n_shards - cpg * G * (G - 1) // 2
    if rest < cpg:
        raise _bad(rule, "n_shards", n_shards,
                   f">= {cpg * G * (G - 1) // 2 + cpg} for m={m} (groups 1..{G - 1} take "
                   f"{cpg * G * (G - 1) // 2} shards and the last group needs one per client)")
    shard_sz = _shard_sizes(rule, n, n_shards, remainder, "n_shards")
    per_client = np.repeat(np.arange(1, G, dtype=np.int64), cpg)
    per_client = np.concatenate((per_client, _even_sizes(rest, cpg)))
    rng = _gen(seed, _TAG[rule])
    order = _sorted_by_label(rule, y, label_sort, rng)
    client_in_deal = np.repeat(np.arange(m, dtype=np.int64), per_client)
    client_of_shard = np.empty(n_shards, dtype=np.int64)
    if assignment == "random":
        client_of_shard[rng.permutation(n_shards)] = client_in_deal
    else:
        client_of_shard[:] = client_in_deal
    assign = np.empty(n, dtype=np.int64)
    assign[order] = np.repeat(client_of_shard, shard_sz)
    return _parts_from_assignment(assign, m)


# --------------------------------------------------------------------------- ASPIRE SHL
def location_mix(groups, m: int | None = None, *, seed, mix, locations,
                 frame_key: str = "frame", location_key: str = "location") -> list[np.ndarray]:
    """ASPIRE SHL workers "with varied proportions based on the four body locations" (spec 002 sec. 4.1).

    ``groups`` is a dict with ``frame_key`` (time-frame id per sample) and
    ``location_key`` (body location per sample); every frame must have exactly
    one sample per location in ``locations``.  The distinct frames are shuffled
    and cut into ``m = len(mix)`` near-equal groups (worker ``i`` = ``i``-th
    group); for each frame of worker ``i`` one location is drawn from
    ``Categorical(mix[i])`` (columns ordered as ``locations``, e.g. ``["Bag",
    "Hips", "Torso", "Hand"]``) and that copy is assigned to worker ``i``; the
    other copies stay unassigned, so each time instant belongs to one worker only.

    Returns ``m`` sorted int64 arrays.
    """
    rule = "location_mix"
    if not isinstance(groups, dict) or frame_key not in groups or location_key not in groups:
        raise _bad(rule, "groups", type(groups).__name__,
                   f"a dict with arrays {frame_key!r} and {location_key!r}")
    P = np.asarray(mix, dtype=float)
    if P.ndim != 2 or P.shape[0] < 1 or not np.all(np.isfinite(P)) or P.min() < 0 \
            or not np.allclose(P.sum(axis=1), 1.0, atol=1e-9):
        raise _bad(rule, "mix", mix, "an (m, L) matrix of non-negative rows summing to 1")
    locs = np.asarray(list(locations))
    if locs.ndim != 1 or locs.size != P.shape[1] or np.unique(locs).size != locs.size:
        raise _bad(rule, "locations", locations, f"{P.shape[1]} distinct values (one per mix column)")
    n_workers = P.shape[0]
    if m is not None and _int(rule, "m", m, lo=1) != n_workers:
        raise _bad(rule, "m", m, f"len(mix) = {n_workers}")
    frames = np.asarray(groups[frame_key])
    loc = np.asarray(groups[location_key])
    if frames.ndim != 1 or loc.shape != frames.shape or frames.size == 0:
        raise _bad(rule, "groups", "<arrays>", "non-empty 1-D frame and location arrays of equal length")
    li = _positions(locs, loc)
    if (li < 0).any():
        raise _bad(rule, "locations", locations, f"all location values present ({np.unique(loc)[:10]})")
    uf, fi = np.unique(frames, return_inverse=True)
    fi = fi.ravel()
    F, L = uf.size, locs.size
    table = np.full((F, L), -1, dtype=np.int64)
    table[fi, li] = np.arange(frames.size)
    if frames.size != F * L or (table < 0).any():
        raise ValueError(f"{rule}: every frame needs exactly one sample per location "
                         f"({F} frames x {L} locations != {frames.size} samples or gaps)")
    if F < n_workers:
        raise _bad(rule, "mix", f"<{n_workers} rows>", f"at most {F} workers (the number of frames)")
    rng = _gen(seed, _TAG[rule])
    worker_of_frame = np.empty(F, dtype=np.int64)
    worker_of_frame[rng.permutation(F)] = np.repeat(np.arange(n_workers), _even_sizes(F, n_workers))
    u = rng.random(F)
    cdf = np.cumsum(P, axis=1)[worker_of_frame]
    chosen_loc = np.minimum((u[:, None] >= cdf).sum(axis=1), L - 1)
    chosen_loc = np.where(P[worker_of_frame, chosen_loc] > 0, chosen_loc,
                          np.argmax(P[worker_of_frame] > 0, axis=1))   # rounding guard
    assign = np.full(frames.size, -1, dtype=np.int64)
    assign[table[np.arange(F), chosen_loc]] = worker_of_frame
    return _parts_from_assignment(assign, n_workers)


# --------------------------------------------------------------------------- registry
PARTITIONERS: dict[str, Callable[..., list[np.ndarray]]] = {
    "iid": iid,
    "random_sizes": random_sizes,
    "random_cuts": random_cuts,
    "sizes_uniform": sizes_uniform,
    "label_shards": label_shards,
    "dirichlet": dirichlet,
    "natural": natural,
    "one_class": one_class,
    "pair_digit": pair_digit,
    "pair_half_digits": pair_half_digits,
    "imbalanced_shards": imbalanced_shards,
    "location_mix": location_mix,
}

# Parameter spellings of the spec config sketches, accepted by ``partition``.
_ALIASES = {
    "random_sizes": {"min_size_frac": "min_frac"},
    "random_cuts": {"min_size_frac": "min_frac"},
    "label_shards": {"shards_per_client": "k"},
}


def partition(name: str, *, n_samples: int | None = None, labels=None, groups=None, seed,
              **params) -> list[np.ndarray]:
    """Run the partitioner registered as ``name`` (see :data:`PARTITIONERS`).

    Rules of the sample count (``iid``, ``random_sizes``, ``random_cuts``,
    ``sizes_uniform``) take ``n_samples`` (or ``len(labels)``/``len(groups)``);
    label rules need ``labels``; ``natural``/``location_mix`` need ``groups``.
    ``params`` are the rule's keyword parameters (``m``, ``k``, ``alpha`` ...).
    Unknown names, unknown parameters and bad values raise ``ValueError`` naming
    the parameter, the value and what is allowed.

    Returns a list of ``m`` sorted int64 index arrays.
    """
    if name not in PARTITIONERS:
        raise ValueError(f"unknown partitioner name={name!r}; allowed: {', '.join(PARTITIONERS)}")
    fn = PARTITIONERS[name]
    sig = inspect.signature(fn)
    data_arg = next(iter(sig.parameters))
    for alias, canon in _ALIASES.get(name, {}).items():
        if alias in params:
            if canon in params:
                raise ValueError(f"{name}: both {alias!r} and {canon!r} given; use {canon!r}")
            params[canon] = params.pop(alias)
    allowed = [p for p in sig.parameters if p not in (data_arg, "seed")]
    unknown = [p for p in params if p not in allowed]
    if unknown:
        raise ValueError(f"{name}: unknown parameter(s) {unknown}; allowed: {', '.join(allowed)}")
    required = [p for p in allowed if sig.parameters[p].default is inspect.Parameter.empty
                and p not in params]
    if required:
        raise ValueError(f"{name}: missing parameter(s) {required}; allowed: {', '.join(allowed)}")
    if data_arg == "n_samples":
        lengths = {len(np.asarray(a)) for a in (labels,) if a is not None}
        if groups is not None and not isinstance(groups, dict):
            lengths.add(len(np.asarray(groups)))
        if n_samples is None:
            if len(lengths) != 1:
                raise ValueError(f"{name}: n_samples is required (or labels= of length n_samples)")
            n_samples = lengths.pop()
        elif lengths and lengths != {n_samples}:
            raise ValueError(f"{name}: n_samples={n_samples} but labels/groups have length "
                             f"{sorted(lengths)}")
        data = n_samples
    elif data_arg == "labels":
        if labels is None:
            raise ValueError(f"partitioner {name!r} needs labels= (one label per sample)")
        if n_samples is not None and len(np.asarray(labels)) != n_samples:
            raise ValueError(f"{name}: n_samples={n_samples} but len(labels)={len(labels)}")
        data = labels
    else:
        if groups is None:
            raise ValueError(f"partitioner {name!r} needs groups= (array or dict of arrays)")
        data = groups
    return fn(data, seed=seed, **params)
