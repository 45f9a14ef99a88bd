"""Robust aggregators (fedrepro.algorithms.ops.aggregators) against brute force."""
import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from fedrepro.algorithms.ops import aggregators as agg


def _brute_krum(V, f):
    n = V.shape[0]
    scores = []
    for i in range(n):
        d = sorted(float(np.sum((V[i] - V[j]) ** 2)) for j in range(n) if j != i)
        scores.append(sum(d[: n - f - 2]))
    return int(np.argmin(scores)), np.array(scores)


@pytest.mark.parametrize("seed", range(5))
def test_krum_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    V = rng.normal(size=(9, 4))
    V[-2:] += 50 * rng.normal(size=(2, 4))
    i_ref, s_ref = _brute_krum(V, 2)
    z, i = agg.krum(V, 2)
    assert i == i_ref
    np.testing.assert_allclose(agg.krum_scores(V, 2), s_ref, rtol=1e-10, atol=1e-9)
    np.testing.assert_array_equal(z, V[i])


def test_krum_ties_lowest_index_and_needs_neighbours():
    V = np.zeros((6, 3))
    assert agg.krum(V, 1)[1] == 0
    with pytest.raises(ValueError, match="neighbours"):
        agg.krum(V, 4)


def test_pairwise_sq_dists():
    rng = np.random.default_rng(1)
    V = rng.normal(size=(5, 7))
    D = agg.pairwise_sq_dists(V)
    for i, j in itertools.product(range(5), range(5)):
        assert D[i, j] == pytest.approx(np.sum((V[i] - V[j]) ** 2), abs=1e-10)


@pytest.mark.parametrize("seed", range(4))
def test_geometric_median_matches_numerical_minimum(seed):
    rng = np.random.default_rng(seed)
    V = rng.normal(size=(7, 3))
    z, _ = agg.geometric_median(V, tol=1e-12, max_iter=10000)
    cost = lambda x: np.linalg.norm(V - x, axis=1).sum()
    best = minimize(cost, V.mean(axis=0), method="Nelder-Mead",
                    options={"xatol": 1e-12, "fatol": 1e-14, "maxiter": 20000}).x
    assert cost(z) <= cost(best) + 1e-9
    np.testing.assert_allclose(z, best, atol=1e-5)


def test_geometric_median_known_cases():
    # collinear: median of points on a line = the 1-D median
    V = np.array([[0.0, 0.0], [1.0, 0.0], [5.0, 0.0]])
    np.testing.assert_allclose(agg.geometric_median(V, tol=1e-12)[0], [1.0, 0.0], atol=1e-6)
    # symmetric square -> centre
    V = np.array([[1.0, 1.0], [-1.0, 1.0], [1.0, -1.0], [-1.0, -1.0]])
    np.testing.assert_allclose(agg.geometric_median(V, tol=1e-12)[0], [0.0, 0.0], atol=1e-9)


def test_geometric_median_ignores_outlier():
    rng = np.random.default_rng(3)
    V = rng.normal(size=(20, 50)) * 0.01 + 1.0
    V[-1] = 1e4 * rng.normal(size=50)
    z, it = agg.geometric_median(V)
    assert np.linalg.norm(z - 1.0) < 0.05
    assert np.linalg.norm(agg.mean(V) - 1.0) > 100


def test_mean_and_coordinate_median():
    V = np.array([[1.0, 10.0], [2.0, -5.0], [100.0, 0.0]])
    np.testing.assert_allclose(agg.mean(V), [103 / 3, 5 / 3])
    np.testing.assert_allclose(agg.coordinate_median(V), [2.0, 0.0])


@pytest.mark.parametrize("n", [1, 2, 5, 20])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_coordinate_median_is_numpys_median_bitwise(n, dtype):
    rng = np.random.default_rng(n)
    V = rng.standard_normal((n, 301)).astype(dtype)
    V[:, 7] = 3.0                                      # ties
    V[0, 11] = np.nan                                  # a NaN column is NaN, as in np.median
    V[:, 13] = rng.integers(-2, 3, n)                  # few distinct values
    ours, ref = agg.coordinate_median(V), np.median(V, axis=0)
    assert ours.dtype == ref.dtype and np.isnan(ours[11])
    np.testing.assert_array_equal(ours, ref)
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref))
    keep = ~np.isnan(ref)
    np.testing.assert_array_equal(ours[keep].view(np.uint8), ref[keep].view(np.uint8))   # signed zeros too


# ---- weighted mean, trimmed mean, multi-Krum, centered clipping: hand-computed cases ----

def test_weighted_mean_by_hand():
    V = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, -6.0]])
    # (1*1 + 2*3 + 1*5) / 4 = 12/4 = 3;  (1*2 + 2*4 + 1*(-6)) / 4 = 4/4 = 1
    np.testing.assert_allclose(agg.weighted_mean(V, [1.0, 2.0, 1.0]), [3.0, 1.0])
    # a zero weight drops the row: (1 + 3) / 2 = 2, (2 + 4) / 2 = 3
    np.testing.assert_allclose(agg.weighted_mean(V, [0.5, 0.5, 0.0]), [2.0, 3.0])


@pytest.mark.parametrize("w", [[0.0, 0.0, 0.0], [1.0, -1.0, 1.0], [1.0, 1.0], [1.0, np.nan, 1.0]])
def test_weighted_mean_rejects_bad_weights(w):
    with pytest.raises(ValueError, match="weighted_mean"):
        agg.weighted_mean(np.ones((3, 2)), w)


def test_trimmed_mean_by_hand():
    V = np.array([[3.0, 10.0],
                  [-1.0, 20.0],
                  [100.0, -50.0],
                  [2.0, 40.0],
                  [0.0, 30.0]])
    # sorted columns: [-1, 0, 2, 3, 100] and [-50, 10, 20, 30, 40]
    np.testing.assert_allclose(agg.trimmed_mean(V, 1), [(0 + 2 + 3) / 3, (10 + 20 + 30) / 3])
    np.testing.assert_allclose(agg.trimmed_mean(V, 2), [2.0, 20.0])          # n - 2f = 1: the median
    np.testing.assert_allclose(agg.trimmed_mean(V, 0), [104 / 5, 50 / 5])    # f = 0: the mean
    # even n: [4, 1, 7, 2] sorted [1, 2, 4, 7], f = 1 -> (2 + 4) / 2 = 3
    np.testing.assert_allclose(agg.trimmed_mean(np.array([[4.0], [1.0], [7.0], [2.0]]), 1), [3.0])


@pytest.mark.parametrize("n,f", [(5, 3), (4, 2), (3, -1), (1, 1)])
def test_trimmed_mean_needs_a_row_left(n, f):
    with pytest.raises(ValueError, match=f"n={n}, f={f}"):
        agg.trimmed_mean(np.zeros((n, 2)), f)


def test_krum_and_multi_krum_scores_by_hand_1d():
    V = np.array([[0.0], [1.0], [3.0], [10.0], [11.0]])
    # n = 5, f = 1: each score sums the n - f - 2 = 2 smallest squared distances to the others
    #   0: {1, 9, 100, 121} -> 1 + 9 = 10      1: {1, 4, 81, 100} -> 1 + 4 = 5
    #   3: {9, 4, 49, 64}   -> 4 + 9 = 13      10: {100, 81, 49, 1} -> 1 + 49 = 50
    #  11: {121, 100, 64, 1} -> 1 + 64 = 65
    np.testing.assert_allclose(agg.krum_scores(V, 1), [10.0, 5.0, 13.0, 50.0, 65.0])
    assert agg.krum(V, 1)[1] == 1
    z, sel = agg.multi_krum(V, 1, 3)                 # lowest three: rows 1, 0, 2
    np.testing.assert_array_equal(sel, [0, 1, 2])
    np.testing.assert_allclose(z, [(0 + 1 + 3) / 3])
    z, sel = agg.multi_krum(V, 1, 4)                 # + row 3 (score 50)
    np.testing.assert_array_equal(sel, [0, 1, 2, 3])
    np.testing.assert_allclose(z, [(0 + 1 + 3 + 10) / 4])
    z, sel = agg.multi_krum(V, 1, 1)
    np.testing.assert_array_equal(sel, [1])
    np.testing.assert_array_equal(z, [1.0])


def test_multi_krum_2d_ties_go_to_lower_index():
    # an outlier first, then the unit square's corners
    V = np.array([[5.0, 5.0], [0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    # corners: two neighbours at squared distance 1, one at 2 -> 1 + 1 = 2 each (n - f - 2 = 2)
    # outlier: 50 to (0,0), 41 to (1,0) and (0,1), 32 to (1,1) -> 32 + 41 = 73
    np.testing.assert_allclose(agg.krum_scores(V, 1), [73.0, 2.0, 2.0, 2.0, 2.0])
    z, sel = agg.multi_krum(V, 1, 2)
    np.testing.assert_array_equal(sel, [1, 2])
    np.testing.assert_allclose(z, [0.5, 0.0])
    z, sel = agg.multi_krum(V, 1, 1)
    assert sel.tolist() == [agg.krum(V, 1)[1]] == [1]
    np.testing.assert_array_equal(z, [0.0, 0.0])
    z, sel = agg.multi_krum(V, 1, 5)                 # everything: the plain mean
    np.testing.assert_array_equal(sel, [0, 1, 2, 3, 4])
    np.testing.assert_allclose(z, [7 / 5, 7 / 5])


@pytest.mark.parametrize("m", [0, 6, -1])
def test_multi_krum_rejects_m_select(m):
    with pytest.raises(ValueError, match="m_select"):
        agg.multi_krum(np.zeros((5, 2)), 1, m)


def test_centered_clipping_one_step_by_hand():
    V = np.array([[3.0, 4.0], [0.0, 1.0], [0.0, 0.0]])
    # from v = 0 with tau = 1: norms 5, 1, 0 -> factors 1/5, 1, (zero difference: 0)
    # clipped rows (0.6, 0.8), (0, 1), (0, 0); mean (0.2, 0.6)
    np.testing.assert_allclose(agg.centered_clipping(V, np.zeros(2), 1.0), [0.2, 0.6])
    # second step from v = (0.2, 0.6): differences (2.8, 3.4) [norm sqrt(19.4) > 1, clipped],
    # (-0.2, 0.4) [norm sqrt(0.2) < 1] and (-0.2, -0.6) [norm sqrt(0.4) < 1]
    r = np.sqrt(19.4)
    step = np.array([2.8 / r - 0.2 - 0.2, 3.4 / r + 0.4 - 0.6]) / 3
    np.testing.assert_allclose(agg.centered_clipping(V, np.zeros(2), 1.0, iters=2),
                               np.array([0.2, 0.6]) + step, rtol=1e-12)


def test_centered_clipping_off_origin_and_large_tau():
    V = np.array([[1.0, 1.0], [4.0, 5.0]])
    # from (1, 1) with tau = 2.5: differences 0 and (3, 4) (norm 5, factor 1/2 -> (1.5, 2))
    np.testing.assert_allclose(agg.centered_clipping(V, [1.0, 1.0], 2.5), [1.0 + 0.75, 1.0 + 1.0])
    # tau >= every distance: one step lands on the mean from any centre
    np.testing.assert_allclose(agg.centered_clipping(V, [-3.0, 7.0], 100.0), [2.5, 3.0])


@pytest.mark.parametrize("kw", [dict(tau=0.0), dict(tau=-1.0), dict(tau=1.0, iters=0)])
def test_centered_clipping_rejects(kw):
    with pytest.raises(ValueError, match="centered_clipping"):
        agg.centered_clipping(np.ones((3, 2)), np.zeros(2), **kw)


def test_centered_clipping_rejects_center_shape():
    with pytest.raises(ValueError, match="center of shape"):
        agg.centered_clipping(np.ones((3, 2)), np.zeros(3), 1.0)


def test_aggregators_registry_has_the_new_rules():
    assert {"mean", "coordinate_median", "krum", "geometric_median", "weighted_mean", "trimmed_mean",
            "multi_krum", "centered_clipping"} <= set(agg.AGGREGATORS)
    assert agg.AGGREGATORS["trimmed_mean"] is agg.trimmed_mean
