"""ASPIRE's vector work (spec 002 §3.1, eqs. (11), (12), (15)) as compiled passes over the parameters.

A master iteration of :class:`fedrepro.algorithms.aspire.Aspire` in numpy is ~20 passes over the
model's length with a temporary each (SC-MA's 2x128 MLP, d = 22,023: ~190 us of a ~1.3 ms
iteration); a worker's gradient of (11) three more. Each kernel here does the operations of the
numpy expression it replaces, element by element in the same order and at the same precision, so
the results are bit-identical to it (tests/test_aspire_step.py):

* :func:`absorb_report`  M0: ``sum_W += w - W_j; W_j = w``
* :func:`consensus_step` M1, (12): ``clip(z - eta_z (sum_phi + kappa_1 (m z - sum_W)), +-alpha_1)``, cast to z's dtype
* :func:`dual_step`      M4, (15): ``new = clip(phi_j + rho_2 (z - W_j - c_2 phi_j), +-alpha_4);
                         sum_phi += new - phi_j; phi_j = new``
* :func:`lagrangian_gradient` (11): ``g = pi_j g - phi_j - kappa_1 (z - w_j)``
* :func:`clip_inplace`   ``np.clip(w, -a, a, out=w)``

The model vectors (z, W_j, phi_j, g) are float32 or float64 (T); the running sums are float64. As in
numpy (NEP 50), a Python scalar meeting a T vector is first rounded to T: the callers pass those
scalars as T (``dtype.type(x)``), and the scalars of (12), whose other operand is float64, as float64.
np.clip's NaN passes through, as here (no comparison holds for NaN).
"""
from __future__ import annotations

from numba import njit, types

_OPTS = dict(cache=True, nogil=True, boundscheck=False)
_FLOATS = (types.float32, types.float64)


def _v(t, readonly: bool = False):
    return types.Array(t, 1, "C", readonly=readonly)


_F64 = types.float64


@njit(inline="always")
def _clip(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


@njit([types.void(_v(_F64), _v(t), _v(t, True)) for t in _FLOATS], **_OPTS)
def absorb_report(sum_W, W_j, w):
    for i in range(w.shape[0]):
        sum_W[i] += w[i] - W_j[i]            # the difference in T, then added in float64
        W_j[i] = w[i]


@njit([types.void(_v(t, True), _v(_F64, True), _v(_F64, True), t, _F64, _F64, _F64, _v(t)) for t in _FLOATS],
      **_OPTS)
def consensus_step(z, sum_phi, sum_W, m, kappa1, eta_z, alpha1, out):
    """m is passed as T: m z is a T product in numpy (the int is a weak scalar)."""
    for i in range(z.shape[0]):
        zi = z[i]
        v = zi - eta_z * (sum_phi[i] + kappa1 * (m * zi - sum_W[i]))
        out[i] = _clip(v, -alpha1, alpha1)


@njit([types.void(_v(t), _v(_F64), _v(t, True), _v(t, True), t, t, t) for t in _FLOATS], **_OPTS)
def dual_step(phi_j, sum_phi, z, W_j, rho2, c2, alpha4):
    for i in range(z.shape[0]):
        p = phi_j[i]
        new = _clip(p + rho2 * (z[i] - W_j[i] - c2 * p), -alpha4, alpha4)
        sum_phi[i] += new - p
        phi_j[i] = new


@njit([types.void(_v(t), _v(t, True), _v(t, True), _v(t, True), t, t) for t in _FLOATS], **_OPTS)
def lagrangian_gradient(g, phi_j, z, w, pi_j, kappa1):
    for i in range(g.shape[0]):
        g[i] = g[i] * pi_j - phi_j[i] - kappa1 * (z[i] - w[i])


@njit([types.void(_v(t), t) for t in _FLOATS], **_OPTS)
def clip_inplace(w, a):
    for i in range(w.shape[0]):
        w[i] = _clip(w[i], -a, a)
