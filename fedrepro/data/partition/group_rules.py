"""Rules over natural groups (participants, body locations)."""
from __future__ import annotations

import numpy as np

from fedrepro.data.partition._common import (_TAG, _bad, _even_sizes, _gen, _int, _parts_from_assignment,
                                             _positions)


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
