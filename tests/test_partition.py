"""Tests of fedrepro.data.partition: partition properties (hypothesis) and the specs' concrete numbers."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedrepro.data import partition as P
from fedrepro.data.partition.size_rules import _cut_sizes

FAST = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------ shared checks
def check_partition(parts, n, m, complete=True):
    """Disjoint, sorted int64, in range, non-empty; every sample once if complete."""
    assert isinstance(parts, list) and len(parts) == m
    for p in parts:
        assert isinstance(p, np.ndarray) and p.dtype == np.int64 and p.ndim == 1
        assert p.size > 0
        assert np.all(np.diff(p) > 0)                      # sorted, no duplicates
        assert p.min() >= 0 and p.max() < n
    ids = P.client_ids(parts, n)                           # raises on overlap
    assert np.array_equal(np.bincount(ids[ids >= 0], minlength=m), P.sizes(parts))
    if complete:
        assert (ids >= 0).all()
    return ids


def same(a, b):
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def frozen(a):
    a = np.array(a)
    a.setflags(write=False)                                # any in-place write raises
    return a


@st.composite
def labelled(draw, max_n=240, max_classes=6):
    n = draw(st.integers(1, max_n))
    c = draw(st.integers(1, max_classes))
    seed = draw(st.integers(0, 2**31))
    y = np.random.default_rng(seed).integers(0, c, size=n)
    return y


seeds = st.integers(0, 2**32)


# ------------------------------------------------------------------ iid
@FAST
@given(n=st.integers(1, 500), data=st.data(), seed=seeds)
def test_iid_properties(n, data, seed):
    m = data.draw(st.integers(1, min(n, 40)))
    parts = P.partition("iid", n_samples=n, m=m, seed=seed)
    check_partition(parts, n, m)
    s = P.sizes(parts)
    assert s.max() - s.min() <= 1
    assert same(parts, P.iid(n, m, seed=seed))


def test_iid_seed_dependence_and_tuple_seed():
    a = P.iid(1000, 10, seed=0)
    assert same(a, P.iid(1000, 10, seed=0))
    assert not same(a, P.iid(1000, 10, seed=1))
    b = P.iid(1000, 10, seed=(0, 1))
    assert not same(a, b) and same(b, P.iid(1000, 10, seed=[0, 1]))


def test_iid_gong_sizes():
    # spec 003 sec. 4, partition 1: n_i = N/m
    for m, n_i in [(100, 600), (200, 300), (500, 120), (1000, 60)]:
        assert set(P.sizes(P.iid(60_000, m, seed=1)).tolist()) == {n_i}


# ------------------------------------------------------------------ Zhou & Li sizes
@FAST
@given(n=st.integers(2, 3000), data=st.data(), seed=seeds,
       frac=st.sampled_from([0.0, 0.01, 0.025, 0.1, 0.5, 0.9, "fedepm", "fedadmm_zhou"]),
       cut_points=st.sampled_from(["code", "all"]))
def test_random_cuts_properties(n, data, seed, frac, cut_points):
    m = data.draw(st.integers(1, min(n - 1, 60)))
    f = P.MIN_FRAC_PRESETS.get(frac, frac)
    thr = f * n / m
    s_min = math.floor(thr) + 1
    lo1 = max(s_min, 2 if (cut_points == "code" and m >= 2) else 1)
    feasible = lo1 + (m - 1) * s_min <= n
    if not feasible:
        with pytest.raises(ValueError, match="min_frac"):
            P.partition("random_cuts", n_samples=n, m=m, seed=seed, min_frac=frac,
                        cut_points=cut_points)
        return
    parts = P.partition("random_cuts", n_samples=n, m=m, seed=seed, min_frac=frac,
                        cut_points=cut_points)
    check_partition(parts, n, m)
    s = P.sizes(parts)
    assert s.sum() == n and s.min() > thr
    if cut_points == "code" and m >= 2:
        assert s[0] >= 2                                    # client 1 gets rows 1..cut_1, cut_1 >= 2
    assert np.array_equal(s, P.random_cut_sizes(n, m, seed=seed, min_frac=frac,
                                                cut_points=cut_points))
    assert same(parts, P.random_sizes(n, m, seed=seed, rule="cuts", min_frac=frac,
                                      cut_points=cut_points))


def _law(sampler, n, m, frac, cut_points, draws):
    rng = np.random.default_rng(12345)
    counts = {}
    for _ in range(draws):
        s = tuple(_cut_sizes(rng, n, m, frac, sampler, cut_points, 10_000, "t").tolist())
        counts[s] = counts.get(s, 0) + 1
    return counts


@pytest.mark.parametrize("cut_points", ["code", "all"])
def test_random_cuts_direct_sampler_has_the_law_of_the_code_loop(cut_points):
    # d = 14, m = 3, min_frac = 0.5: accept iff every d_i > 14*0.5/3 = 2.33, i.e. d_i >= 3.
    # The accepted draws of the code loop are uniform over those compositions.
    n, m, frac, draws = 14, 3, 0.5, 3000
    support = {(a, b, n - a - b) for a in range(3, n) for b in range(3, n) if n - a - b >= 3}
    direct = _law("direct", n, m, frac, cut_points, draws)
    reject = _law("reject", n, m, frac, cut_points, draws)
    assert set(direct) == set(reject) == support          # 15 compositions
    p = 1 / len(support)
    tol = 4 * math.sqrt(p * (1 - p) / draws)
    for comp in support:
        assert abs(direct[comp] / draws - p) < tol
        assert abs(reject[comp] / draws - p) < tol


def test_random_cuts_code_first_client_at_least_two():
    # no threshold: the code draws cut points from {2..d-1}, so d_1 >= 2 always
    rng = np.random.default_rng(0)
    d1 = [_cut_sizes(rng, 6, 5, 0.0, "direct", "code", 1, "t")[0] for _ in range(200)]
    assert min(d1) == 2
    with pytest.raises(ValueError, match="m <= 5"):
        P.random_cut_sizes(6, 6, seed=0, min_frac=0)


def test_random_cuts_spec_settings():
    # FedADMM qot (d = 8992, m = 100, min_frac 0.025): d_i > 2.248; FedEPM adult m = 50/100 (0.01)
    s = P.random_cut_sizes(8992, 100, seed=7, min_frac="fedadmm_zhou")
    assert s.sum() == 8992 and s.min() >= 3 and s.max() > 2 * 8992 / 100   # very unequal
    for m, thr in [(50, 9.04), (100, 4.52)]:
        for sampler in ("direct", "reject"):
            s = P.random_cut_sizes(45222, m, seed=3, min_frac="fedepm", sampler=sampler)
            assert s.sum() == 45222 and s.min() > thr
    # rls, m = 1000: the literal loop accepts ~1e-6 of draws; the direct sampler does not loop
    s = P.random_cut_sizes(72309, 1000, seed=0, min_frac=0.025)
    assert s.min() >= 2 and s.sum() == 72309
    with pytest.raises(ValueError, match="sampler='direct'"):
        P.random_cut_sizes(72309, 1000, seed=0, min_frac=0.025, sampler="reject", max_tries=20)


@FAST
@given(m=st.integers(1, 60), low=st.integers(1, 30), width=st.integers(0, 30), seed=seeds)
def test_uniform_sizes(m, low, width, seed):
    high = low + width
    d = P.uniform_client_sizes(m, low, high, seed=seed)
    assert d.shape == (m,) and d.dtype == np.int64 and d.min() >= low and d.max() <= high
    n = int(d.sum())
    parts = P.partition("sizes_uniform", n_samples=n, m=m, low=low, high=high, seed=seed)
    check_partition(parts, n, m)
    assert np.array_equal(P.sizes(parts), d)
    blocks = P.random_sizes(n, m, seed=seed, rule="uniform", low=low, high=high, shuffle=False)
    starts = np.concatenate(([0], np.cumsum(d)[:-1]))
    assert all(np.array_equal(b, np.arange(s, s + k)) for b, s, k in zip(blocks, starts, d))


def test_uniform_sizes_paper_range_and_mismatch():
    d = P.uniform_client_sizes(5000, seed=1)                 # randi([50 150])
    assert d.min() == 50 and d.max() == 150 and abs(d.mean() - 100) < 1.5
    with pytest.raises(ValueError, match="uniform_client_sizes"):
        P.partition("sizes_uniform", n_samples=int(d[:100].sum()) + 1, m=100, seed=1)


def test_random_sizes_given():
    parts = P.partition("random_sizes", n_samples=10, m=3, rule="given", sizes=[2, 3, 5], seed=0)
    check_partition(parts, 10, 3)
    assert P.sizes(parts).tolist() == [2, 3, 5]
    with pytest.raises(ValueError, match="sizes"):
        P.partition("random_sizes", n_samples=10, m=3, rule="given", sizes=[2, 3, 4], seed=0)
    with pytest.raises(ValueError, match="sizes"):
        P.partition("random_sizes", n_samples=10, m=3, sizes=[2, 3, 5], seed=0)


# ------------------------------------------------------------------ label shards
@FAST
@given(m=st.integers(1, 12), k=st.integers(1, 4), shard=st.integers(1, 8),
       c=st.integers(1, 6), seed=seeds, label_sort=st.sampled_from(["stable", "random"]))
def test_label_shards_properties(m, k, shard, c, seed, label_sort):
    n = m * k * shard
    y = frozen(np.random.default_rng(seed % 1000).integers(0, c, size=n))
    parts = P.partition("label_shards", labels=y, m=m, k=k, seed=seed, label_sort=label_sort)
    check_partition(parts, n, m)
    assert set(P.sizes(parts).tolist()) == {k * shard}
    order = np.argsort(y, kind="stable")
    ys = y[order]
    shard_classes = [np.unique(ys[j * shard:(j + 1) * shard]).size for j in range(m * k)]
    ncls = (P.class_counts(parts, y) > 0).sum(axis=1)
    assert ncls.max() <= k * max(shard_classes)
    if all(cnt % shard == 0 for cnt in np.bincount(y)):       # single-class shards
        assert ncls.max() <= k


def test_label_shards_gong_fmnist_and_mnist():
    y = np.repeat(np.arange(10), 6000)                        # FMNIST: shards single-class
    for m, size in [(100, 600), (1000, 60)]:
        parts = P.label_shards(y, m, k=2, seed=0)
        check_partition(parts, y.size, m)
        assert set(P.sizes(parts).tolist()) == {size}
        assert (P.class_counts(parts, y) > 0).sum(axis=1).max() <= 2
    mnist = np.repeat(np.arange(10), [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949])
    parts = P.label_shards(mnist, 100, k=2, seed=0)
    ncls = (P.class_counts(parts, mnist) > 0).sum(axis=1)
    assert ncls.min() >= 1 and ncls.max() <= 4


def test_label_shards_errors_and_spread():
    y = np.arange(100) % 10
    with pytest.raises(ValueError, match="not divisible by m\\*k"):
        P.partition("label_shards", labels=y, m=7, k=2, seed=0)
    with pytest.raises(ValueError, match="more clients than samples"):
        P.partition("label_shards", labels=y, m=101, k=1, seed=0)
    parts = P.partition("label_shards", labels=y, m=7, k=2, seed=0, remainder="spread")
    check_partition(parts, 100, 7)
    assert np.ptp(P.sizes(parts)) <= 2
    alias = P.partition("label_shards", labels=y, m=5, shards_per_client=2, seed=0)
    assert same(alias, P.partition("label_shards", labels=y, m=5, k=2, seed=0))


# ------------------------------------------------------------------ Dirichlet
@FAST
@given(y=labelled(), data=st.data(), seed=seeds,
       alpha=st.sampled_from([0.05, 0.5, 1.0, 100.0]))
def test_dirichlet_properties(y, data, seed, alpha):
    n = y.size
    m = data.draw(st.integers(1, min(n, 10)))
    min_size = data.draw(st.integers(0, min(2, n // m)))
    y = frozen(y)
    try:
        parts = P.partition("dirichlet", labels=y, m=m, alpha=alpha, min_size=min_size,
                            seed=seed, max_tries=200)
    except ValueError as e:
        assert "min_size" in str(e)
        return
    ids = check_partition([p for p in parts if p.size] if min_size == 0 else parts, n,
                          sum(p.size > 0 for p in parts) if min_size == 0 else m)
    assert (ids >= 0).all()
    assert P.sizes(parts).min() >= min_size and len(parts) == m
    assert same(parts, P.dirichlet(y, m, alpha=alpha, min_size=min_size, seed=seed, max_tries=200))


def test_dirichlet_alpha_effect():
    y = np.repeat(np.arange(10), 600)
    iidish = P.class_counts(P.dirichlet(y, 20, alpha=1000.0, seed=0), y)
    skewed = P.class_counts(P.dirichlet(y, 20, alpha=0.05, seed=0), y)
    assert (iidish > 0).all()                                  # every client sees every class
    assert (skewed > 0).sum(axis=1).mean() < 5                 # few classes per client
    with pytest.raises(ValueError, match="alpha"):
        P.partition("dirichlet", labels=y, m=5, alpha=0.0, seed=0)
    with pytest.raises(ValueError, match="min_size"):
        P.partition("dirichlet", labels=y[:20], m=10, alpha=0.01, min_size=2, seed=0, max_tries=3)


# ------------------------------------------------------------------ natural
@FAST
@given(n=st.integers(1, 200), g1=st.integers(1, 5), g2=st.integers(1, 3), seed=seeds)
def test_natural_properties(n, g1, g2, seed):
    r = np.random.default_rng(seed % 1000)
    groups = {"participant": frozen(r.integers(1, g1 + 1, size=n)),
              "location": frozen(np.array(["bag", "hand", "hips"])[r.integers(0, g2, size=n)])}
    for key in ("participant", "location", ["participant", "location"]):
        parts = P.partition("natural", groups=groups, key=key, seed=seed)
        keys = P.group_keys(groups, key)
        check_partition(parts, n, len(keys))
        cols = [key] if isinstance(key, str) else key
        for p, kv in zip(parts, keys):
            vals = [groups[c][p] for c in cols]
            kv = (kv,) if isinstance(key, str) else kv
            assert all((v == x).all() for v, x in zip(vals, kv))
        assert keys == sorted(keys)


def test_natural_order_and_errors():
    g = np.array([3, 1, 2, 1, 3, 3])
    parts = P.natural(g)
    assert [p.tolist() for p in parts] == [[1, 3], [2], [0, 4, 5]]
    parts = P.partition("natural", groups=g, order=[3, 1], seed=0)
    assert [p.tolist() for p in parts] == [[0, 4, 5], [1, 3]]
    assert same(P.natural(np.stack([g, g % 2], axis=1)), P.natural({"a": g, "b": g % 2}, key=["a", "b"]))
    with pytest.raises(ValueError, match="key"):
        P.partition("natural", groups={"a": g, "b": g}, seed=0)
    with pytest.raises(ValueError, match="order"):
        P.partition("natural", groups=g, order=[4], seed=0)
    with pytest.raises(ValueError, match="m=4"):
        P.partition("natural", groups=g, m=4, seed=0)


# ------------------------------------------------------------------ one class
@FAST
@given(c=st.integers(1, 6), extra=st.integers(0, 8), per=st.integers(9, 30), seed=seeds)
def test_one_class_properties(c, extra, per, seed):
    y = frozen(np.repeat(np.arange(c), per + np.arange(c)))
    m = c + extra
    parts = P.partition("one_class", labels=y, m=m, seed=seed)
    check_partition(parts, y.size, m)
    cc = P.class_counts(parts, y)
    assert ((cc > 0).sum(axis=1) == 1).all()
    for j in range(c):
        holders = np.flatnonzero(cc[:, j])
        assert holders.tolist() == list(range(j, m, c))
        assert np.ptp(cc[holders, j]) <= 1


def test_one_class_aspire_fmnist_subset():
    y = np.repeat(np.arange(10), 60)
    parts = P.partition("one_class", labels=y, classes=[0, 2, 6], seed=0)   # T-shirt, Pullover, Shirt
    ids = check_partition(parts, y.size, 3, complete=False)
    assert [np.unique(y[p]).tolist() for p in parts] == [[0], [2], [6]]
    assert (ids >= 0).sum() == 180
    with pytest.raises(ValueError, match="m=3"):
        P.partition("one_class", labels=y, m=3, seed=0)


# ------------------------------------------------------------------ FRPG pair rules
USPS = np.repeat(np.arange(10), 800)
MNIST_COUNTS = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]


def test_pair_digit_frpg_usps_workers():
    parts = P.partition("pair_digit", labels=frozen(USPS), m=20, seed=0)
    check_partition(parts, USPS.size, 20)
    held = [np.unique(USPS[p]).tolist() for p in parts]
    assert held == [[w // 2] for w in range(20)]           # worker 2c, 2c+1 hold digit c
    assert set(P.sizes(parts).tolist()) == {400}
    faulty = sorted({d for w in (16, 17, 18, 19) for d in held[w]})
    assert faulty == [8, 9]


def test_pair_digit_frpg_mnist_sizes():
    y = np.repeat(np.arange(10), MNIST_COUNTS)
    s = P.sizes(P.pair_digit(y, 20, seed=1))
    assert s.tolist() == [v for n_c in MNIST_COUNTS for v in (math.ceil(n_c / 2), n_c // 2)]
    assert s.min() == 2710 and s.max() == 3371


@FAST
@given(k=st.integers(1, 10), pairs_extra=st.integers(0, 5), per=st.integers(12, 40), seed=seeds)
def test_pair_digit_properties(k, pairs_extra, per, seed):
    y = frozen(np.repeat(np.arange(k), per))
    m = 2 * (k + pairs_extra)
    parts = P.pair_digit(y, m, seed=seed)
    check_partition(parts, y.size, m)
    cc = P.class_counts(parts, y)
    for w in range(0, m, 2):
        assert np.flatnonzero(cc[w]).tolist() == np.flatnonzero(cc[w + 1]).tolist() == [(w // 2) % k]


def test_pair_half_digits():
    parts = P.partition("pair_half_digits", labels=USPS, m=20, seed=0)
    check_partition(parts, USPS.size, 20)
    cc = P.class_counts(parts, USPS)
    for c in range(10):
        assert set(np.flatnonzero(cc[2 * c]).tolist()) == {(c + j) % 10 for j in range(5)}
        assert (cc[2 * c] == cc[2 * c + 1]).all() or np.abs(cc[2 * c] - cc[2 * c + 1]).max() <= 1
    assert ((cc > 0).sum(axis=0) == 10).all()                # every label on half of the workers
    assert set(P.sizes(parts).tolist()) == {400}             # 5 classes x 800/10


def test_pair_digit_drop_classes():
    parts = P.partition("pair_digit", labels=USPS, m=20, drop_classes=[6, 7, 8, 9], seed=0)
    ids = check_partition(parts, USPS.size, 20, complete=False)
    assert (ids[USPS >= 6] == -1).all() and (ids[USPS < 6] >= 0).all()
    held = [np.unique(USPS[p]).item() for p in parts]
    assert held == [(w // 2) % 6 for w in range(20)]
    cc = P.class_counts(parts, USPS)
    assert set(cc[:, 0][cc[:, 0] > 0].tolist()) == {200}     # class 0 on 4 workers
    assert set(cc[:, 5][cc[:, 5] > 0].tolist()) == {400}     # class 5 on 2 workers


def test_pair_digit_errors():
    with pytest.raises(ValueError, match="even"):
        P.partition("pair_digit", labels=USPS, m=19, seed=0)
    with pytest.raises(ValueError, match="held by nobody"):
        P.partition("pair_digit", labels=USPS, m=10, seed=0)
    with pytest.raises(ValueError, match="drop_classes"):
        P.partition("pair_digit", labels=USPS, drop_classes=[11], seed=0)
    with pytest.raises(ValueError, match="variant"):
        P.partition("pair_digit", labels=USPS, variant="triple", seed=0)


# ------------------------------------------------------------------ Table VI
@pytest.mark.parametrize("per_class,std", [(6000, 171.03), (5000, 142.53)])
def test_imbalanced_shards_table6(per_class, std):
    y = frozen(np.repeat(np.arange(10), per_class))
    parts = P.partition("imbalanced_shards", labels=y, m=200, n_shards=10000, n_groups=100,
                        clients_per_group=2, seed=0)
    check_partition(parts, y.size, 200)
    s = P.sizes(parts)
    shard = per_class // 1000
    assert s.tolist() == [shard * g for g in range(1, 100) for _ in range(2)] + [50 * shard] * 2
    assert s.mean() == y.size / 200 and round(s.std(ddof=1), 2) == std
    assert same(parts, P.imbalanced_shards(y, seed=0))       # paper defaults


@FAST
@given(groups=st.integers(1, 8), cpg=st.integers(1, 3), shard=st.integers(1, 4),
       spare=st.integers(0, 20), seed=seeds, assignment=st.sampled_from(["random", "sequential"]))
def test_imbalanced_shards_properties(groups, cpg, shard, spare, seed, assignment):
    m = groups * cpg
    n_shards = cpg * groups * (groups - 1) // 2 + cpg + spare
    y = frozen(np.random.default_rng(seed % 997).integers(0, 4, size=n_shards * shard))
    parts = P.imbalanced_shards(y, m, n_shards=n_shards, clients_per_group=cpg, seed=seed,
                                assignment=assignment)
    check_partition(parts, y.size, m)
    s = P.sizes(parts) // shard
    assert (s[:-cpg] == np.repeat(np.arange(1, groups), cpg)).all()
    assert s[-cpg:].sum() == n_shards - cpg * groups * (groups - 1) // 2 and np.ptp(s[-cpg:]) <= 1


def test_imbalanced_shards_smoke_tier_and_errors():
    y = np.repeat(np.arange(10), 600)                         # 10 % FMNIST, 1,000 shards of 6
    s = P.sizes(P.imbalanced_shards(y, 20, n_shards=1000, seed=0))
    assert s[:-2].tolist() == [6 * g for g in range(1, 10) for _ in range(2)] and s[-2:].tolist() == [2730] * 2
    with pytest.raises(ValueError, match="clients_per_group"):
        P.imbalanced_shards(y, 21, n_shards=1000, seed=0)
    with pytest.raises(ValueError, match="n_shards"):
        P.imbalanced_shards(y, 200, n_shards=1000, seed=0)
    with pytest.raises(ValueError, match="not divisible by n_shards"):
        P.imbalanced_shards(y, 20, n_shards=999, seed=0)


# ------------------------------------------------------------------ ASPIRE SHL location mix
def test_location_mix():
    F, locs = 3000, ["Bag", "Hips", "Torso", "Hand"]
    frames = np.repeat(np.arange(F), 4)
    loc = np.tile(np.array(locs)[[2, 0, 3, 1]], F)            # any row order
    mix = [[.7, .1, .1, .1], [.1, .7, .1, .1], [.1, .1, .7, .1],
           [.1, .1, .1, .7], [.4, .4, .1, .1], [.1, .1, .4, .4]]
    g = {"frame": frozen(frames), "location": frozen(loc)}
    parts = P.partition("location_mix", groups=g, mix=mix, locations=locs, seed=0)
    ids = check_partition(parts, frames.size, 6, complete=False)
    assert (ids >= 0).sum() == F                               # one copy per frame
    assert np.bincount(frames[ids >= 0]).max() == 1
    assert np.ptp(P.sizes(parts)) <= 1
    share = P.class_counts(parts, loc, classes=locs) / P.sizes(parts)[:, None]
    assert np.abs(share - np.array(mix)).max() < 0.06
    with pytest.raises(ValueError, match="one sample per location"):
        P.partition("location_mix", groups={"frame": frames[1:], "location": loc[1:]},
                    mix=mix, locations=locs, seed=0)


# ------------------------------------------------------------------ purity, determinism, dispatch
PURE_CASES = [
    ("iid", dict(m=7)), ("random_cuts", dict(m=7, min_frac=0.1)), ("label_shards", dict(m=6, k=2)),
    ("dirichlet", dict(m=7, alpha=0.5)), ("one_class", dict(m=8)), ("pair_digit", dict(m=8)),
    ("pair_half_digits", dict(m=8)), ("imbalanced_shards", dict(m=6, n_shards=20)),
]


@pytest.mark.parametrize("name,params", PURE_CASES)
def test_pure_deterministic_seed_dependent(name, params):
    y = np.repeat(np.arange(4), 30)
    y_copy = y.copy()
    a = P.partition(name, labels=y, seed=11, **params)
    assert np.array_equal(y, y_copy)
    assert same(a, P.partition(name, labels=frozen(y), seed=11, **params))
    others = [P.partition(name, labels=y, seed=s, **params) for s in range(12, 16)]
    assert not all(same(a, o) for o in others)


def test_client_ids_and_sizes():
    parts = [np.array([0, 3]), np.array([1])]
    assert P.client_ids(parts, 5).tolist() == [0, 1, -1, 0, -1]
    assert P.sizes(parts).tolist() == [2, 1]
    with pytest.raises(ValueError, match="overlap"):
        P.client_ids([np.array([0, 1]), np.array([1])], 3)
    with pytest.raises(ValueError, match="indices"):
        P.client_ids([np.array([0, 5])], 3)


def test_dispatch_errors():
    with pytest.raises(ValueError, match="unknown partitioner name='shards'.*allowed: iid"):
        P.partition("shards", n_samples=10, m=2, seed=0)
    with pytest.raises(ValueError, match="unknown parameter.*'kk'.*allowed: m, k"):
        P.partition("label_shards", labels=np.zeros(10), m=2, kk=2, seed=0)
    with pytest.raises(ValueError, match="missing parameter.*alpha"):
        P.partition("dirichlet", labels=np.zeros(10), m=2, seed=0)
    with pytest.raises(ValueError, match="needs labels"):
        P.partition("one_class", n_samples=10, seed=0)
    with pytest.raises(ValueError, match="needs groups"):
        P.partition("natural", labels=np.zeros(3), seed=0)
    with pytest.raises(ValueError, match="invalid m=11; more clients than samples"):
        P.partition("iid", n_samples=10, m=11, seed=0)
    with pytest.raises(ValueError, match="invalid m=2.5"):
        P.partition("iid", n_samples=10, m=2.5, seed=0)
    with pytest.raises(ValueError, match="invalid min_frac=1.5; allowed"):
        P.partition("random_cuts", n_samples=100, m=2, min_frac=1.5, seed=0)
    with pytest.raises(ValueError, match="invalid rule='x'; allowed: 'cuts'"):
        P.partition("random_sizes", n_samples=100, m=2, rule="x", seed=0)
    with pytest.raises(ValueError, match="seed"):
        P.partition("iid", n_samples=10, m=2, seed=-1)
    with pytest.raises(ValueError, match="n_samples=9"):
        P.partition("iid", n_samples=9, labels=np.zeros(10), m=2, seed=0)
    # n_samples taken from labels; spec alias min_size_frac (FedEPM config)
    assert same(P.partition("iid", labels=np.zeros(10), m=3, seed=0), P.iid(10, 3, seed=0))
    assert same(P.partition("random_cuts", n_samples=500, m=5, min_size_frac=0.01, seed=0),
                P.random_cuts(500, 5, min_frac=0.01, seed=0))


def test_registry_complete():
    assert {"iid", "random_sizes", "label_shards", "dirichlet", "natural", "one_class",
            "pair_digit", "imbalanced_shards"} <= set(P.PARTITIONERS)
    for fn in P.PARTITIONERS.values():
        assert fn.__doc__ and "seed" in fn.__code__.co_varnames
