"""Label rules: McMahan shards, Dirichlet, one class per client, FRPG digit pairs, Gong et al.'s imbalanced shards."""
from __future__ import annotations

import math
import numbers

import numpy as np

from fedrepro.data.partition._common import (_TAG, _bad, _choice, _even_sizes, _gen, _int, _labels, _m,
                                             _parts_from_assignment, _positions)


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
