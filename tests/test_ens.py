"""ENS (FedEPM Lemma III.2, corrected sign): hand examples, brute force, ties (timing: benchmarks/bench_fedepm.py --ens-only)."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from fedrepro.algorithms.ops.elastic_net import elastic_net_objective, ens, soft_threshold

# spec 001 Sec. 3.1 table: (z, lam, eta, minimiser)
HAND = [
    ((10, 1, 0), 1.0, 1.0, 10 / 3),        # paper's sign gives 4 and passes its own bracket test
    ((1, 0, -1), 2.0, 1.0, 0.0),           # kink: no piece brackets its candidate
    ((1, 0), 1.0, 1.0, 0.5),
    ((3, 2, -1, -5), 1.0, 2.0, -0.25),
    ((5, 5, 5), 0.7, 0.3, 5.0),
    ((5, 5, 5), 100.0, 1e-5, 5.0),
    ((2, 2, 0, 0), 0.5, 1.0, 1.0),
]


@pytest.mark.parametrize("z,lam,eta,expected", HAND)
def test_hand_examples(z, lam, eta, expected):
    Z = np.asarray(z, float)[:, None]
    assert ens(Z, lam, eta)[0] == pytest.approx(expected, abs=1e-12)


def test_paper_sign_is_wrong_on_spec_example():
    Z = np.array([10.0, 1.0, 0.0])[:, None]
    assert ens(Z, 1.0, 1.0, sign="paper")[0] == pytest.approx(4.0)


def _brute(z, lam, eta):
    """Exact 1-D minimum: best of the data values and bounded scalar minimisation."""
    h = lambda w: lam * np.abs(w - z).sum() + 0.5 * eta * ((w - z) ** 2).sum()
    pts = list(z)
    res = minimize_scalar(h, bounds=(z.min(), z.max()), method="bounded",
                          options={"xatol": 1e-13})
    pts.append(res.x)
    return min(pts, key=h), h


@pytest.mark.parametrize("seed", range(30))
def test_random_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 12))
    n = 5
    Z = rng.normal(size=(m, n)) * rng.choice([0.1, 1, 10])
    if seed % 3 == 0:                                 # ties: values from a tiny set
        Z = rng.integers(-2, 3, size=(m, n)).astype(float)
    lam, eta = float(rng.choice([0.01, 0.5, 2.0, 10.0])), float(rng.choice([0.1, 1.0, 3.0]))
    w = ens(Z, lam, eta)
    for j in range(n):
        wb, h = _brute(Z[:, j], lam, eta)
        assert h(w[j]) <= h(wb) + 1e-9 * (1 + abs(h(wb)))
        assert w[j] == pytest.approx(wb, abs=1e-6 * (1 + abs(wb)))


def test_optimality_condition_many_ties():
    """0 in the subdifferential of h at the returned point (exact check, incl. kinks)."""
    rng = np.random.default_rng(1)
    Z = rng.integers(-3, 4, size=(40, 200)).astype(float)
    lam, eta = 0.3, 0.05
    w = ens(Z, lam, eta)
    D = w[None, :] - Z
    smooth = eta * D.sum(0) + lam * (np.sign(D) * (D != 0)).sum(0)
    slack = lam * (D == 0).sum(0)                      # the subgradients at kinks span [-slack, slack]
    assert np.all(np.abs(smooth) <= slack + 1e-9)
    h_w = elastic_net_objective(w, Z, lam, eta)
    for delta in (1e-4, -1e-4):
        assert np.all(h_w <= elastic_net_objective(w + delta, Z, lam, eta) + 1e-12)


def test_single_client_and_lambda_zero():
    rng = np.random.default_rng(2)
    z = rng.normal(size=(1, 7))
    assert np.allclose(ens(z, 3.0, 0.1), z[0])
    Z = rng.normal(size=(9, 7))
    assert np.allclose(ens(Z, 0.0, 1.0), Z.mean(0))


def test_large_lambda_gives_median():
    rng = np.random.default_rng(3)
    Z = rng.normal(size=(11, 6))
    assert np.allclose(ens(Z, 1e6, 1e-6), np.median(Z, axis=0))


def test_invalid_arguments():
    with pytest.raises(ValueError, match="sign"):
        ens(np.zeros((2, 2)), 1.0, 1.0, sign="nope")
    with pytest.raises(ValueError, match="eta"):
        ens(np.zeros((2, 2)), 1.0, 0.0)


def test_soft_threshold_is_nonexpansive():
    rng = np.random.default_rng(4)
    t, u = rng.normal(size=1000) * 3, rng.normal(size=1000) * 3
    assert np.all(np.abs(soft_threshold(t, 0.7) - soft_threshold(u, 0.7)) <= np.abs(t - u) + 1e-15)
    assert soft_threshold(np.array([-2.0, 0.3, 2.0]), 1.0).tolist() == [-1.0, 0.0, 1.0]
