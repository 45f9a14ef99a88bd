"""Upload-side attacks as pure functions (fedrepro.sim.attack_ops), on hand-computed cases."""
import numpy as np
import pytest
from scipy.stats import norm

from fedrepro.sim import attack_ops as ops


def test_sign_flip_and_scaling():
    U = np.array([[1.0, -2.0], [0.5, 3.0]])
    np.testing.assert_array_equal(ops.sign_flip(U), [[-1.0, 2.0], [-0.5, -3.0]])
    np.testing.assert_array_equal(ops.sign_flip(U, c=4.0), [[-4.0, 8.0], [-2.0, -12.0]])
    np.testing.assert_array_equal(ops.scaling(U, 3.0), [[3.0, -6.0], [1.5, 9.0]])
    assert ops.sign_flip(U) is not U and U[0, 0] == 1.0          # input untouched


def test_alie_supporters_by_hand():
    # s = floor(n/2 + 1) - f
    assert ops.alie_supporters(50, 12) == 26 - 12 == 14
    assert ops.alie_supporters(51, 12) == 26 - 12                # floor(26.5) = 26
    assert ops.alie_supporters(100, 20) == 51 - 20


def test_alie_z_n50_f12():
    # s = 14, (n - s)/n = 36/50 = 0.72. Normal table: Phi(0.58) = 0.7190, Phi(0.59) = 0.7224,
    # linear interpolation 0.58 + 0.01 * (0.7200 - 0.7190) / (0.7224 - 0.7190) = 0.58294
    z = ops.alie_z(50, 12)
    assert z == pytest.approx(0.58 + 0.01 * (0.7200 - 0.7190) / (0.7224 - 0.7190), abs=5e-4)
    assert norm.cdf(z) == pytest.approx(0.72, abs=1e-12)         # Phi(z_max) = (n - s)/n


def test_alie_z_n100_f20():
    # s = 31, (n - s)/n = 0.69. Table: Phi(0.49) = 0.6879, Phi(0.50) = 0.6915 -> 0.49583
    z = ops.alie_z(100, 20)
    assert z == pytest.approx(0.49 + 0.01 * (0.6900 - 0.6879) / (0.6915 - 0.6879), abs=5e-4)
    # few faulty workers: (n - s)/n < 1/2 and z_max < 0 (n = 50, f = 0: s = 26, 24/50 = 0.48)
    assert ops.alie_z(50, 0) == pytest.approx(-0.0502, abs=5e-4)    # Phi(-0.05) = 0.4801


@pytest.mark.parametrize("n,f", [(10, -1), (10, 10), (10, 11), (0, 0)])
def test_alie_z_rejects_f_outside_0_n(n, f):
    with pytest.raises(ValueError, match=f"n={n}"):
        ops.alie_z(n, f)


@pytest.mark.parametrize("n,f", [(10, 6), (10, 9), (1, 0), (2, 0)])
def test_alie_z_rejects_unbounded_z(n, f):
    # (10, 6): s = 6 - 6 = 0 (faulty majority); (1, 0), (2, 0): s = n, Phi^-1(0) = -inf
    with pytest.raises(ValueError, match="s = "):
        ops.alie_z(n, f)


def test_alie_update_by_hand():
    U = np.array([[1.0, 0.0], [3.0, 4.0]])
    # mu = (2, 2); population std = (1, 2); z = 1.5 -> (2 - 1.5, 2 - 3)
    np.testing.assert_allclose(ops.alie(U, 1.5), [0.5, -1.0])
    # sample std (ddof=1) = (sqrt 2, 2 sqrt 2)
    np.testing.assert_allclose(ops.alie(U, 1.5, ddof=1), [2 - 1.5 * np.sqrt(2), 2 - 3 * np.sqrt(2)])
    # column [1, 3, 5, 7]: mean 4, population variance (9 + 1 + 1 + 9)/4 = 5
    np.testing.assert_allclose(ops.alie(np.array([[1.0], [3.0], [5.0], [7.0]]), -1.0), [4 + np.sqrt(5)])
    with pytest.raises(ValueError, match="alie"):
        ops.alie(np.ones((1, 3)), 1.0, ddof=1)


def test_ipm_by_hand():
    U = np.array([[1.0, 2.0], [3.0, -4.0]])
    # mean (2, -1); eps = 0.5 -> (-1, 0.5)
    np.testing.assert_allclose(ops.ipm(U, 0.5), [-1.0, 0.5])
    np.testing.assert_allclose(ops.ipm(U, 10.0), [-20.0, 10.0])
    with pytest.raises(ValueError, match="ipm"):
        ops.ipm(np.zeros((0, 2)), 1.0)


def test_gaussian_models_scale_and_reproducibility():
    a = ops.gaussian_models(np.random.default_rng(7), (3, 2, 5), 2.0)
    b = ops.gaussian_models(np.random.default_rng(7), (3, 2, 5), 2.0)
    assert a.shape == (3, 2, 5)
    np.testing.assert_array_equal(a, b)
    big = ops.gaussian_models(np.random.default_rng(0), 200_000, 3.0)
    assert abs(big.mean()) < 0.03                       # 5 standard errors: 5 * 3 / sqrt(2e5) = 0.034
    assert big.std() == pytest.approx(3.0, rel=0.01)


def test_registry():
    assert set(ops.UPLOAD_ATTACKS_OPS) == {"sign_flip", "scaling", "alie", "ipm", "gaussian_models"}
