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
