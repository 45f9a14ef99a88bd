"""Rules of the sample count: the IID split and the Zhou & Li client-size rules."""
from __future__ import annotations

import math
import numbers

import numpy as np

from fedrepro.data.partition._common import (_TAG, _bad, _choice, _even_sizes, _gen, _int, _m,
                                             _parts_from_assignment, sizes)


#: Named minimum-size thresholds of the random-cut rule (accept a draw when
#: ``min_i d_i > min_frac * d / m``).
MIN_FRAC_PRESETS = {
    "fedadmm_zhou": 0.025,       # FedADMM code (Feb 2023), DataGeneration.m, spec 000 sec. 4.4 / C18
    "fedadmm_zhou_2022": 0.1,    # July-2022 FedADMM code
    "fedepm": 0.01,              # FedEPM demon.m / effectk0.m, spec 001 sec. 4
    "none": 0.0,                 # no rejection
}


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
