"""The 2-norm Huber penalty of FRPG (Dong et al., eq. (30)) and its proximal map.

    p(z) = ||z||^2 / (2 mu)   if ||z|| <= mu,      ||z|| - mu/2   otherwise
    grad p(z) = z / max(||z||, mu)                 (so ||grad p|| <= 1, G = 1)

All functions act row-wise: ``z`` of shape (n, d) holds n vectors (the norm is the
Frobenius norm of each worker's whole C x p block, flattened to d).
"""
from __future__ import annotations

import numpy as np
from numba import njit, types


def _norms(z: np.ndarray) -> np.ndarray:
    return np.sqrt(np.einsum("...d,...d->...", z, z))


def huber(z: np.ndarray, mu: float) -> np.ndarray:
    """p(z) of eq. (30) per row; z (..., d) -> (...)."""
    n = _norms(z)
    return np.where(n <= mu, n * n / (2 * mu), n - mu / 2)


def huber_grad(z: np.ndarray, mu: float) -> np.ndarray:
    """grad p(z) = z / max(||z||, mu) per row; (..., d) -> (..., d)."""
    return z / np.maximum(_norms(z), mu)[..., None]


def huber_prox(r: np.ndarray, t, mu: float) -> np.ndarray:
    """prox_{t p}(r) = argmin_z t p(z) + ||z - r||^2 / 2, closed form (spec D2).

    p is the Moreau envelope of ||.|| with parameter mu, so
        z = mu/(mu+t) r          if ||r|| <= mu + t
          = (1 - t/||r||) r      otherwise.
    r : (..., d); t : scalar or (...) (> 0). Returns (..., d).
    """
    t = np.asarray(t, dtype=float)
    n = _norms(r)
    scale = np.where(n <= mu + t, mu / (mu + t), 1.0 - t / np.maximum(n, mu + t))
    return scale[..., None] * r


def worker_prox_step(w0: np.ndarray, u: np.ndarray, q: np.ndarray, alpha, lam: float, mu: float):
    """Worker proximal step (8b)/(21b) and its penalty gradient (7)/(20).

        r = w0 - u + q/alpha,  t = lam/alpha
        w = w0 - prox_{t p}(r)
        g = lam grad p(w0 - w) = lam r / max(||r||, mu + t)          (||g|| <= lam)

    which satisfies the optimality condition alpha (u - w) = q - g (eq. (33)).

    w0 : (d,) broadcast server model; u, q : (n, d) per-worker points and
    stochastic gradients; alpha : scalar step parameter of (16)/(27).
    Returns (w, g), both (n, d).

    Float64 C-contiguous rows (FRPG's) go through two compiled passes around the norms (r, then w and g),
    bit-identical to the numpy expressions of :func:`huber_prox` and of the formulas above
    (tests/test_frpg.py); anything else through numpy.
    """
    t = lam / alpha
    fast = _compiled(w0, u, q)
    if fast:
        r = np.empty_like(u)
        _residual(w0, u, q, float(alpha), r)
    else:
        r = w0 - u + q / alpha
    n = _norms(r)
    mt = mu + t
    scale = np.where(n <= mt, mu / mt, 1.0 - t / np.maximum(n, mt))      # huber_prox's scale of r
    gscale = lam / np.maximum(n, mt)
    if not fast:
        return w0 - scale[..., None] * r, gscale[..., None] * r
    w, g = np.empty_like(r), np.empty_like(r)
    _apply(w0, r, scale, gscale, w, g)
    return w, g


def float64_rows(*rows) -> bool:
    """Whether the arrays are float64 C-contiguous (n, d) rows of one shape: what FRPG's compiled passes
    take (here and in :mod:`.frpg_step`); rows of another client store go through numpy."""
    return all(x.dtype == np.float64 and x.ndim == 2 and x.flags.c_contiguous and x.shape == rows[0].shape
               for x in rows)


def _compiled(w0, *rows) -> bool:
    return (w0.dtype == np.float64 and w0.ndim == 1 and w0.flags.c_contiguous and float64_rows(*rows)
            and rows[0].shape[1] == w0.shape[0])


KERNEL_OPTS = dict(cache=True, nogil=True, boundscheck=False)
_ROW, _ROWS = types.Array(types.float64, 1, "C", readonly=True), types.Array(types.float64, 2, "C", readonly=True)
_OUT = types.Array(types.float64, 2, "C")


@njit(types.void(_ROW, _ROWS, _ROWS, types.float64, _OUT), **KERNEL_OPTS)
def _residual(w0, u, q, alpha, r):
    """r = w0 - u + q / alpha, in numpy's order: (w0 - u) + (q / alpha)."""
    for j in range(u.shape[0]):
        for i in range(u.shape[1]):
            r[j, i] = (w0[i] - u[j, i]) + q[j, i] / alpha


@njit(types.void(_ROW, _ROWS, _ROW, _ROW, _OUT, _OUT), **KERNEL_OPTS)
def _apply(w0, r, scale, gscale, w, g):
    """w = w0 - scale[:, None] r (w0 - prox_{t p}(r)), g = gscale[:, None] r."""
    for j in range(r.shape[0]):
        s, gs = scale[j], gscale[j]
        for i in range(r.shape[1]):
            x = r[j, i]
            w[j, i] = w0[i] - s * x
            g[j, i] = gs * x


def penalty_grad(w0: np.ndarray, W: np.ndarray, lam: float, mu: float) -> np.ndarray:
    """g(w0, w_n) = lam grad p(w0 - w_n) for arbitrary (e.g. faulty) models; W (..., d)."""
    return lam * huber_grad(w0 - W, mu)


def project_ball(G: np.ndarray, radius: float) -> np.ndarray:
    """Project each row of G onto the l2 ball of ``radius`` (server-side check of
    uploaded penalty gradients, spec A6; a no-op for honest workers)."""
    n = _norms(G)
    return G * np.minimum(1.0, radius / np.maximum(n, 1e-300))[..., None]
