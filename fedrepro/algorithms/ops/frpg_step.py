"""FRPG's worker passes (8a) and (8c) (Dong et al., Algorithm 1; LFRPG (21a), (21c)) compiled: one pass
each over the workers' (n, d) rows instead of numpy's three and six, bit-identical to the numpy
expressions they replace (same operations, same order, float64; tests/test_frpg.py)::

    U = (1 - beta) prev + beta V                                       (8a)   mix_points
    V' = V - (delta (V - U) + q - G) / (delta + alpha beta)            (8c)   update_v

The proximal step (8b) between them is :func:`fedrepro.algorithms.ops.huber_prox.worker_prox_step`.
Rows that are not float64 C-contiguous (another client store) go through numpy.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types

from fedrepro.algorithms.ops.huber_prox import KERNEL_OPTS as _OPTS, float64_rows

_IN, _OUT = types.Array(types.float64, 2, "C", readonly=True), types.Array(types.float64, 2, "C")


@njit(types.void(_IN, _IN, types.float64, types.float64, _OUT), **_OPTS)
def _mix(prev, V, keep, beta, U):
    for j in range(V.shape[0]):
        for i in range(V.shape[1]):
            U[j, i] = keep * prev[j, i] + beta * V[j, i]


@njit(types.void(_IN, _IN, _IN, _IN, types.float64, types.float64, _OUT), **_OPTS)
def _update_v(V, U, q, G, delta, den, out):
    for j in range(V.shape[0]):
        for i in range(V.shape[1]):
            v = V[j, i]
            out[j, i] = v - ((delta * (v - U[j, i]) + q[j, i]) - G[j, i]) / den


def mix_points(prev: np.ndarray, V: np.ndarray, beta: float) -> np.ndarray:
    """(8a): U = (1 - beta) prev + beta V, a new (n, d) array."""
    if not float64_rows(prev, V):
        return (1 - beta) * prev + beta * V
    U = np.empty_like(V)
    _mix(prev, V, float(1 - beta), float(beta), U)
    return U


def update_v(V: np.ndarray, U: np.ndarray, q: np.ndarray, G: np.ndarray, delta: float, alpha: float,
             beta: float) -> np.ndarray:
    """(8c): V - (delta (V - U) + q - G) / (delta + alpha beta), a new (n, d) array."""
    den = delta + alpha * beta
    if not float64_rows(V, U, q, G):
        return V - (delta * (V - U) + q - G) / den
    out = np.empty_like(V)
    _update_v(V, U, q, G, float(delta), float(den), out)
    return out
