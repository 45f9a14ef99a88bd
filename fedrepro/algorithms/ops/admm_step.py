"""FedADMM's local iteration (Zhou & Li, steps (5)-(7) with the inner solver (15), ``inner_check="code"``)
as one pass over the selected clients' rows.

For client i with dual pi_i, cached gradient g_i = alpha_i grad f_i(w), a_i = alpha_i r_i and
sigma_i, the first inner step of (15) from v^0 = w is

    v_i = w - (pi_i + g_i) / (a_i + sigma_i),

its residual with the previous inner iterate's gradient (g_i) is
res_i = (a_i / (a_i + sigma_i))^2 ||pi_i + g_i||^2, and a client whose residual is below its
threshold is done: pi_i += sigma_i (v_i - w)  (7).

In numpy this is seven passes over (|S|, n) arrays; here each client's row is read once (the
second sweep of a row finds it in cache). V and pi are computed with the same operations in the
same order as the numpy expressions of :meth:`fedrepro.algorithms.fedadmm.FedADMM.local_step`
(no fast-math), so they are bit-identical to them; the residual's sum of squares is summed in four
partial sums (it differs from numpy's einsum by rounding only, and decides nothing but the test
against the threshold).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from fedrepro.core.threads import pick


def _first_step_py(w, pi, gw, a, sg, thr, V, done):
    """w (n,), pi (k, n) updated in place for the done rows, gw (k, n), a, sg, thr (k,);
    outputs V (k, n) and done (k,) bool."""
    n = w.shape[0]
    for i in prange(pi.shape[0]):
        c = a[i] + sg[i]
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        j = 0
        while j + 4 <= n:
            e0 = pi[i, j] + gw[i, j]
            e1 = pi[i, j + 1] + gw[i, j + 1]
            e2 = pi[i, j + 2] + gw[i, j + 2]
            e3 = pi[i, j + 3] + gw[i, j + 3]
            V[i, j] = w[j] - e0 / c
            V[i, j + 1] = w[j + 1] - e1 / c
            V[i, j + 2] = w[j + 2] - e2 / c
            V[i, j + 3] = w[j + 3] - e3 / c
            s0 += e0 * e0
            s1 += e1 * e1
            s2 += e2 * e2
            s3 += e3 * e3
            j += 4
        while j < n:
            e0 = pi[i, j] + gw[i, j]
            V[i, j] = w[j] - e0 / c
            s0 += e0 * e0
            j += 1
        q = a[i] / c
        ok = q * q * ((s0 + s1) + (s2 + s3)) < thr[i]
        done[i] = ok
        if ok:
            for j in range(n):
                pi[i, j] += (V[i, j] - w[j]) * sg[i]


_OPTS = dict(nogil=True, boundscheck=False)
# the sequential twin is cached on disk; the parallel one compiles in the process that uses it
# (numba's cache does not tell the two apart: see fedrepro.problems.glm_kernels)
_first_step_seq = njit(cache=True, **_OPTS)(_first_step_py)
_first_step_par = njit(parallel=True, **_OPTS)(_first_step_py)


def accepts(pi: np.ndarray, gw: np.ndarray, w: np.ndarray) -> bool:
    """Whether the compiled step takes these arrays (float64, C-contiguous; anything else, e.g. a
    float32 client store, goes through numpy)."""
    return all(x.dtype == np.float64 and x.flags.c_contiguous for x in (pi, gw, w)) and pi.shape == gw.shape


def first_step(w, pi, gw, a, sg, thr):
    """Run the step (see the module docstring) on float64 C-contiguous arrays; returns (V, done)."""
    k = pi.shape[0]
    V = np.empty_like(pi)
    done = np.empty(k, dtype=np.bool_)
    pick(_first_step_seq, _first_step_par, k)(w, pi, gw, np.ascontiguousarray(a, dtype=np.float64),
                                             np.ascontiguousarray(sg, dtype=np.float64),
                                             np.ascontiguousarray(thr, dtype=np.float64), V, done)
    return V, done


def load() -> None:
    """Compile or load the kernels now (a run's timed CPU seconds must not include it)."""
    for k in (1, 2):
        first_step(np.zeros(3), np.zeros((k, 3)), np.zeros((k, 3)), np.ones(k), np.ones(k), np.ones(k))
