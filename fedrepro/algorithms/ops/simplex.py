"""Euclidean projection onto the probability simplex and the DRFA-Prox mixture step (aspire spec
002 §3.6, §3.7).

:func:`project_simplex`: argmin_{u in Delta} ||u - v||^2, Delta = {u >= 0, 1^T u = 1}, by the
sort-based rule of Duchi, Shalev-Shwartz, Singer & Chandra (ICML 2008): sort v descending (s),
rho = max{k : s_k - (sum_{i<=k} s_i - 1) / k > 0}, theta = (sum_{i<=rho} s_i - 1) / rho,
u = max(v - theta, 0). O(N log N).

:func:`prox_simplex_quadratic`: argmax_{u in Delta} { -(c/2) ||u - q||^2 - (1/2) ||y - u||^2 } =
Proj_Delta((y + c q) / (1 + c)) (complete the square), DRFA-Prox's step with c = gamma tau mu.
"""
from __future__ import annotations

import numpy as np

__all__ = ["project_simplex", "prox_simplex_quadratic"]


def project_simplex(v) -> np.ndarray:
    """The Euclidean projection of the vector ``v`` onto the probability simplex (float64)."""
    v = np.asarray(v, dtype=np.float64)
    if v.ndim != 1 or v.size == 0 or not np.all(np.isfinite(v)):
        raise ValueError(f"project_simplex: need a non-empty finite vector, got shape {v.shape}")
    s = np.sort(v)[::-1]
    css = np.cumsum(s) - 1.0
    k = np.arange(1, v.size + 1)
    rho = int(np.flatnonzero(s - css / k > 0)[-1]) + 1     # s_1 - (s_1 - 1) = 1 > 0: never empty
    theta = css[rho - 1] / rho
    return np.maximum(v - theta, 0.0)


def prox_simplex_quadratic(y, q, c: float) -> np.ndarray:
    """argmax over the simplex of -(c/2)||u - q||^2 - (1/2)||y - u||^2, i.e.
    Proj_Delta((y + c q) / (1 + c)); c = 0 is the plain projection of y."""
    if not c >= 0:
        raise ValueError(f"prox_simplex_quadratic: c={c!r} must be >= 0")
    y = np.asarray(y, dtype=np.float64)
    return project_simplex((y + c * np.asarray(q, dtype=np.float64)) / (1.0 + c))
