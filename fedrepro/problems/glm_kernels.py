"""Row-fused per-client kernels of the generalized linear models (:mod:`fedrepro.problems.glm`).

The gradient of f_i(w) = (1/d_i) sum_t l(<a_t, w>, b_t) is a sum over rows,
``grad f_i(w) = (1/d_i) sum_t l'(<a_t, w>, b_t) a_t``: computing it as A_i w, then s^T A_i reads
the client's data twice. These kernels read every row once per evaluation: a block of
``_BLOCK`` rows is dotted with w (the rows come from memory), then the same rows, still in the
core's cache, are added to the gradient (four rows per sweep of the gradient vector).

CSR data (rows sorted by client) are handled the same way row by row: a row's entries are
dotted with w, then scattered into the gradient while they are in cache.

Compiled with numba: the sequential kernels once per installation (``cache=True``), the parallel
ones in the process that uses them.
The dense kernel's ``fastmath`` is limited to re-association and contraction (so the dot products
vectorise and use FMA); the CSR kernel keeps the order of operations (four partial sums per row).
NaN and infinity propagate as in numpy, so a diverging run is still seen as one. Results differ
from the two-pass BLAS computation only by rounding (summation order).

Threads: each kernel exists twice, sequential and parallel over clients (``numba.prange``);
:mod:`fedrepro.core.threads` picks the parallel one only when numba may use more than one thread.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from fedrepro.core.threads import pick as _pick

SQUARED, LOGISTIC = 0, 1
_FASTMATH = {"reassoc", "contract"}
_BLOCK = 32                    # rows per block: 32 x n doubles stay in L1/L2 for the second use


@njit(inline="always")
def _loss_deriv(z, y, kind, want_loss):
    """(loss, d loss / d z) of one sample (loss 0 unless ``want_loss``); numpy's logaddexp and
    scipy's expit formulas."""
    if kind == SQUARED:
        r = z - y
        return 0.5 * r * r, r
    if not want_loss:
        return 0.0, 1.0 / (1.0 + np.exp(-z)) - y
    if z == 0.0:
        soft = np.log(2.0)
    elif z < 0.0:
        soft = np.log1p(np.exp(z))
    elif z > 0.0:
        soft = z + np.log1p(np.exp(-z))
    else:                                  # NaN
        soft = z
    return soft - y * z, 1.0 / (1.0 + np.exp(-z)) - y


@njit(inline="always")
def _add_rows(g, X, p, t0, t1, s):
    """g += sum_{t0 <= t < t1} s[t - t0] X[p, t] (four rows per sweep of g)."""
    n = g.shape[0]
    t = t0
    while t + 4 <= t1:
        s0, s1, s2, s3 = s[t - t0], s[t - t0 + 1], s[t - t0 + 2], s[t - t0 + 3]
        for j in range(n):
            g[j] += s0 * X[p, t, j] + s1 * X[p, t + 1, j] + s2 * X[p, t + 2, j] + s3 * X[p, t + 3, j]
        t += 4
    while t < t1:
        s0 = s[t - t0]
        for j in range(n):
            g[j] += s0 * X[p, t, j]
        t += 1


def _dense_clients_py(X, Y, sizes, pos, out, W, shared, scale, G, L, C, kind, want_grad, want_loss):
    """Per-client loss sums, gradients and correct counts of the clients stored at positions
    ``pos`` of one padded bucket.

    X (g, D, n), Y (g, D): the bucket's zero-padded data; sizes (g,) real rows per position;
    out (k,): the output row of pos[k]; W (K, n) one point per output row, or (1, n) with
    ``shared``; scale (K,) multiplies a client's sums (1/d_i for means). Outputs at row o = out[k]:
    G[o] = scale[o] * sum_t l'_t a_t (when ``want_grad``), L[o] = scale[o] * sum_t l_t,
    C[o] = number of samples with (z > 0) == (y > 0.5). Losses are 0 unless ``want_loss`` (the
    logistic loss costs two transcendental functions per sample).
    """
    n = X.shape[2]
    wstep = 0 if shared else 1          # (not `0 if shared else o` in the loop: numba's parfor mistypes it)
    for k in prange(pos.shape[0]):
        p = pos[k]
        o = out[k]
        d = sizes[p]
        wr = o * wstep
        sk = scale[o]
        g = G[o]
        if want_grad:
            for j in range(n):
                g[j] = 0.0
        s = np.empty(_BLOCK)
        lsum = 0.0
        corr = 0
        for t0 in range(0, d, _BLOCK):
            t1 = min(d, t0 + _BLOCK)
            for t in range(t0, t1):
                z = 0.0
                for j in range(n):
                    z += X[p, t, j] * W[wr, j]
                val, der = _loss_deriv(z, Y[p, t], kind, want_loss)
                lsum += val
                s[t - t0] = der * sk
                if (z > 0.0) == (Y[p, t] > 0.5):
                    corr += 1
            if want_grad:
                _add_rows(g, X, p, t0, t1, s)
        L[o] = lsum * sk
        C[o] = corr


@njit(inline="always")
def _sparse_dot(data, indices, q0, q1, W, wr):
    """sum_q data[q] W[wr, indices[q]] with four partial sums (the dependency chain of one sum
    made it latency-bound: 1.8x slower on QSAR's rows)."""
    a0 = a1 = a2 = a3 = 0.0
    q = q0
    while q + 4 <= q1:
        a0 += data[q] * W[wr, indices[q]]
        a1 += data[q + 1] * W[wr, indices[q + 1]]
        a2 += data[q + 2] * W[wr, indices[q + 2]]
        a3 += data[q + 3] * W[wr, indices[q + 3]]
        q += 4
    while q < q1:
        a0 += data[q] * W[wr, indices[q]]
        q += 1
    return (a0 + a1) + (a2 + a3)


def _sparse_clients_py(data, indices, indptr, y, starts, clients, W, shared, scale, G, L, C, kind, want_grad,
                       want_loss):
    """The same for CSR data whose rows are sorted by client: client c owns rows
    starts[c]..starts[c+1]-1; output row k is client clients[k]."""
    n = G.shape[1]
    wstep = 0 if shared else 1
    for k in prange(clients.shape[0]):
        c = clients[k]
        wr = k * wstep
        sk = scale[k]
        g = G[k]
        if want_grad:
            for j in range(n):
                g[j] = 0.0
        lsum = 0.0
        corr = 0
        for r in range(starts[c], starts[c + 1]):
            z = _sparse_dot(data, indices, indptr[r], indptr[r + 1], W, wr)
            val, der = _loss_deriv(z, y[r], kind, want_loss)
            lsum += val
            if (z > 0.0) == (y[r] > 0.5):
                corr += 1
            if want_grad:
                sr = der * sk
                for q in range(indptr[r], indptr[r + 1]):
                    g[indices[q]] += sr * data[q]
        L[k] = lsum * sk
        C[k] = corr


# The sequential kernels (every Snakemake job) are cached on disk. The parallel ones are compiled in
# the process that uses them (about 2 s): numba's cache keys an entry by function and signature,
# not by the `parallel` flag, so a cached parallel twin of the same function loads the sequential
# code (measured: 2 threads as slow as 1).
_OPTS = dict(nogil=True, boundscheck=False)
_dense_seq = njit(cache=True, fastmath=_FASTMATH, **_OPTS)(_dense_clients_py)
_dense_par = njit(parallel=True, fastmath=_FASTMATH, **_OPTS)(_dense_clients_py)
# CSR: no re-association (it would vectorise the gathers into slow gather instructions; measured
# 2.6x slower than in order on QSAR's rows of ~95 entries)
_sparse_seq = njit(cache=True, **_OPTS)(_sparse_clients_py)
_sparse_par = njit(parallel=True, **_OPTS)(_sparse_clients_py)


def dense_clients(buckets, groups, W, shared, scale, kind, want_grad, k, n, want_loss=True):
    """Run the dense kernel over ``groups`` = [(bucket index, positions, output rows), ...]
    (see :func:`_dense_clients_py`); returns (G (k, n) or None, L (k,), C (k,))."""
    G = np.empty((k, n if want_grad else 0))
    L, C = np.empty(k), np.empty(k, dtype=np.int64)
    for b, pos, out in groups:
        bk = buckets[b]
        _pick(_dense_seq, _dense_par, len(pos))(bk.X, bk.y, bk.sizes, pos, out, W, shared, scale,
                                                 G, L, C, kind, want_grad, want_loss)
    return (G if want_grad else None), L, C


def sparse_clients(X, cols, y, starts, clients, W, shared, scale, kind, want_grad, want_loss=True):
    """The same for a CSR matrix ``X`` whose rows are sorted by client (:func:`_sparse_clients_py`);
    ``cols`` is ``X.indices`` as uint32 (unsigned: numba then skips the negative-index check on
    every access; measured 0.96 -> 0.66 ms for a QSAR matrix-vector product)."""
    k = len(clients)
    G = np.empty((k, X.shape[1] if want_grad else 0))
    L, C = np.empty(k), np.empty(k, dtype=np.int64)
    _pick(_sparse_seq, _sparse_par, k)(X.data, cols, X.indptr, y, starts, clients, W, shared, scale,
                                       G, L, C, kind, want_grad, want_loss)
    return (G if want_grad else None), L, C
