"""ASPIRE's compiled vector passes (fedrepro.algorithms.ops.aspire_step) against the numpy expressions
they replace, bit for bit, for float32 and float64 models (clipped entries, signed zeros, NaN)."""
import numpy as np
import pytest

from fedrepro.algorithms.ops import aspire_step

D = 1003                                                    # not a multiple of any vector width


def _vectors(dtype, seed):
    rng = np.random.default_rng(seed)
    def v(scale):
        x = (rng.standard_normal(D) * scale).astype(dtype)
        x[:3] = [np.nan, -0.0, 0.0]
        return x
    return v


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_master_passes_equal_numpy_bitwise(dtype):
    v = _vectors(dtype, 1)
    m, kappa1, eta_z, alpha1, rho2, c2, alpha4 = 15, 0.37, 0.013, 2.5, 0.1, 0.7, 4.0
    z, w, W_j, phi_j = v(3.0), v(3.0), v(3.0), v(5.0)
    sum_W = v(20.0).astype(np.float64)
    sum_phi = v(20.0).astype(np.float64)

    # numpy: Aspire.master_update's expressions before the compiled passes (M0, M1 (12), M4 (15))
    sW, sP, Wn, Pn = sum_W.copy(), sum_phi.copy(), W_j.copy(), phi_j.copy()
    sW += w - Wn
    Wn[:] = w
    z_ref = np.clip(z - eta_z * (sP + kappa1 * (m * z - sW)), -alpha1, alpha1).astype(dtype)
    new = np.clip(Pn + rho2 * (z_ref - Wn - c2 * Pn), -alpha4, alpha4)
    sP += new - Pn
    Pn[:] = new

    T = np.dtype(dtype).type
    aspire_step.absorb_report(sum_W, W_j, w)
    out = np.empty_like(z)
    aspire_step.consensus_step(z, sum_phi, sum_W, T(m), kappa1, eta_z, alpha1, out)
    aspire_step.dual_step(phi_j, sum_phi, out, W_j, T(rho2), T(c2), T(alpha4))
    for ours, ref in [(sum_W, sW), (W_j, Wn), (out, z_ref), (phi_j, Pn), (sum_phi, sP)]:
        assert ours.dtype == ref.dtype
        np.testing.assert_array_equal(ours.view(np.uint8), ref.view(np.uint8))   # bits, signed zeros and NaN
    assert np.abs(out[3:]).max() == alpha1 and np.abs(phi_j[3:]).max() == T(alpha4)   # the clips bite


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_worker_passes_equal_numpy_bitwise(dtype):
    v = _vectors(dtype, 2)
    g, phi_j, z, w = v(1.0), v(0.5), v(2.0), v(2.0)
    pi_j, kappa1, alpha1 = 0.3141, 0.77, 1.5

    ref = g.copy()                                          # numpy: Aspire.worker_compute's gradient of (11)
    ref *= pi_j
    ref -= phi_j
    ref -= kappa1 * (z - w)
    T = np.dtype(dtype).type
    aspire_step.lagrangian_gradient(g, phi_j, z, w, T(pi_j), T(kappa1))
    np.testing.assert_array_equal(g.view(np.uint8), ref.view(np.uint8))

    clipped = np.clip(w, -alpha1, alpha1)
    aspire_step.clip_inplace(w, T(alpha1))
    np.testing.assert_array_equal(w.view(np.uint8), clipped.view(np.uint8))
    assert np.abs(w[3:]).max() == T(alpha1)
