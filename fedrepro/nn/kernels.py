"""Compiled element-wise passes of the dense layers and the SGD step (numba, sequential, cached on disk).

A dense layer's activations at B = 50 are a few thousand numbers: a numpy call on them costs
more in dispatch than in arithmetic (bias add + ReLU 8.0 us in numpy, 0.9 us compiled; ReLU's
backward 4.3 us vs 1.1 us; benchmarks/README.md). Each kernel does exactly the operations of the
numpy expression it replaces, in the same order, so results are bit-identical to it:

* :func:`add_rows`   y += b[:, None]
* :func:`relu`       np.maximum(x, 0)          (NaN passes through, as in numpy)
* :func:`relu_grad`  g * (y > 0)               (0 * g: signed zeros and NaN as in numpy)
* :func:`row_sums`   g.sum(axis=1) of g (n, B) (numpy's summation order for B <= 128)
* :func:`maxpool2`, :func:`maxpool2_grad`  MaxPool2d(2)'s numpy passes on channel-last maps (one
                     read of the input instead of two stages of masks: CNN 1's two pools 2.3 -> 0.4 ms
                     forward, 2.8 -> 1.8 ms backward at B = 50)
* :func:`col2im_add` a convolution's col2im, the kh*kw strided adds of :meth:`Conv2d._scatter` in one
                     pass in the same order (CNN 1's second convolution: 5.1 -> 1.0 ms per 50 images)
* :func:`sgd_step`   the local SGD step with the local objective's terms (FedProx, FedADMM-Gong,
                     SCAFFOLD), momentum and update: the numpy passes of :class:`fedrepro.nn.optim.SGD`
                     and of those algorithms' gradient hooks (up to 7 over the parameters) in one;
                     its update rounds once where the BLAS axpy it replaces did (on FMA hardware)

Every kernel is compiled eagerly for float32 and float64 when this module is imported (the
compiled code is cached next to the module, so after the first import this is a load), never
inside a timed run.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

_OPTS = dict(cache=True, nogil=True, boundscheck=False)
_FLOATS = (types.float32, types.float64)


def _a(t, ndim: int, layout: str = "C", readonly: bool = False):
    """An array type; inputs are declared read-only (a writable array converts to one, so read-only
    parameters, e.g. broadcast views, are accepted too)."""
    return types.Array(t, ndim, layout, readonly=readonly)


def _sigs(make) -> list:
    return [make(t) for t in _FLOATS]


@njit(_sigs(lambda t: types.void(_a(t, 2), _a(t, 1, readonly=True))), **_OPTS)
def add_rows(y, b):
    """y (n, B) C-contiguous, in place: y[i, :] += b[i]."""
    for i in range(y.shape[0]):
        bi = b[i]
        for j in range(y.shape[1]):
            y[i, j] += bi


@njit(_sigs(lambda t: types.void(_a(t, 1, readonly=True), _a(t, 1))), **_OPTS)
def relu(x, out):
    """out = np.maximum(x, 0) on flat contiguous vectors (NaN passes, -0.0 becomes 0.0)."""
    for k in range(x.shape[0]):
        v = x[k]
        out[k] = v if v > 0 or v != v else 0.0


@njit(_sigs(lambda t: types.void(_a(t, 1, readonly=True), _a(t, 1, readonly=True), _a(t, 1))), **_OPTS)
def relu_grad(g, y, out):
    """out = g * (y > 0) on flat contiguous vectors."""
    for k in range(g.shape[0]):
        out[k] = g[k] if y[k] > 0 else 0.0 * g[k]


@njit(_sigs(lambda t: types.void(_a(t, 2), _a(t, 1)))            # C rows (exact match), else any strides
      + _sigs(lambda t: types.void(_a(t, 2, "A", readonly=True), _a(t, 1))), **_OPTS)
def row_sums(g, out):
    """out[i] = sum_j g[i, j] for g (n, B) of any strides, in eight interleaved partial sums
    ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)), then the remainder in order: numpy's
    order for a contiguous row of at most 128 (one vector add per 8 columns)."""
    n, B = g.shape
    stop = B - B % 8
    for i in range(n):
        if B < 8:
            acc = g[i, 0]
            for j in range(1, B):
                acc += g[i, j]
            out[i] = acc
            continue
        a0, a1, a2, a3 = g[i, 0], g[i, 1], g[i, 2], g[i, 3]
        a4, a5, a6, a7 = g[i, 4], g[i, 5], g[i, 6], g[i, 7]
        for j in range(8, stop, 8):
            a0 += g[i, j]
            a1 += g[i, j + 1]
            a2 += g[i, j + 2]
            a3 += g[i, j + 3]
            a4 += g[i, j + 4]
            a5 += g[i, j + 5]
            a6 += g[i, j + 6]
            a7 += g[i, j + 7]
        acc = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))
        for j in range(stop, B):
            acc += g[i, j]
        out[i] = acc


# ---- heads: per-example losses and the gradient of their mean, one pass per example ------------
# z (B, K) of any strides; y (B,) int64; losses (B,); g (B, K) written when want_grad. Returns the
# position of the first label outside [0, K) (nothing is computed from there on), or -1.
_HEAD_SIG = _sigs(lambda t: types.int64(_a(t, 2, "A", readonly=True), _a(types.int64, 1, readonly=True), _a(t, 1),
                                         _a(t, 2, "A"), types.boolean))


@njit(inline="always")
def _shifted_exp(z, b, e):
    """e_k = exp(z[b, k] - m), m = max_k z[b, k]; returns (m, sum_k e_k) summed in order."""
    m = z[b, 0]
    for k in range(1, z.shape[1]):
        if z[b, k] > m:
            m = z[b, k]
    e[0] = np.exp(z[b, 0] - m)
    s = e[0]
    for k in range(1, z.shape[1]):
        e[k] = np.exp(z[b, k] - m)
        s += e[k]
    return m, s


@njit(_HEAD_SIG, **_OPTS)
def logits_ce(z, y, losses, g, want_grad):
    """loss = log sum_k e_k - (z_y - max z), e = exp(z - max z); g = (e / sum e - onehot(y)) / B."""
    B, K = z.shape
    e = np.empty(K, dtype=z.dtype)
    for b in range(B):
        c = y[b]
        if c < 0 or c >= K:
            return b
        m, s = _shifted_exp(z, b, e)
        losses[b] = np.log(s) - (z[b, c] - m)
        if want_grad:
            for k in range(K):
                g[b, k] = e[k] / s
            g[b, c] -= 1
            for k in range(K):
                g[b, k] /= B
    return -1


@njit(_HEAD_SIG, **_OPTS)
def softmax_ce(z, y, losses, g, want_grad):
    """p = softmax(z), q = softmax(p): loss = log sum_k exp(p_k) - p_y; g_p = (q - onehot(y)) / B,
    g = p * (g_p - <g_p, p>) (spec 003 §5)."""
    B, K = z.shape
    p = np.empty(K, dtype=z.dtype)
    q = np.empty(K, dtype=z.dtype)
    for b in range(B):
        c = y[b]
        if c < 0 or c >= K:
            return b
        sp = _shifted_exp(z, b, p)[1]
        for k in range(K):
            p[k] /= sp
            q[k] = np.exp(p[k])              # p in [0, 1]: no shift needed
        s = q[0]
        for k in range(1, K):
            s += q[k]
        losses[b] = np.log(s) - p[c]
        if want_grad:
            for k in range(K):
                q[k] /= s
            q[c] -= 1
            for k in range(K):
                q[k] /= B
            dot = q[0] * p[0]
            for k in range(1, K):
                dot += q[k] * p[k]
            for k in range(K):
                g[b, k] = (q[k] - dot) * p[k]
    return -1


# ---- 2x2 max-pool on channel-last maps ---------------------------------------------------------
# The numpy passes of MaxPool2d (k = 2): columns then rows, value = np.maximum (NaN wins), choice =
# np.greater (ties go to the first element); the backward pass routes with the same products and
# differences (g * a, g - g * a), so zeros, signs and non-finite gradients match numpy's.
_POOL_FWD = _sigs(lambda t: types.void(_a(t, 4, readonly=True), _a(t, 4), _a(types.uint8, 4)))
_POOL_BWD = _sigs(lambda t: types.void(_a(t, 4, "A", readonly=True), _a(types.uint8, 4, readonly=True), _a(t, 4)))


@njit(inline="always")
def _max(a, b):
    return a if a > b or a != a else b          # np.maximum: NaN propagates, a tie (+-0) gives b


@njit(_POOL_FWD, **_OPTS)
def maxpool2(x, y, code):
    """y (B, H//2, W//2, C) and code = 4 h + 2 w1 + w0 (h: the lower row won, w_r: the right
    column of row r won) from x (B, H, W, C)."""
    B, ho, wo, C = y.shape
    for b in range(B):
        for i in range(ho):
            for j in range(wo):
                for c in range(C):
                    a0 = x[b, 2 * i, 2 * j, c]
                    b0 = x[b, 2 * i, 2 * j + 1, c]
                    a1 = x[b, 2 * i + 1, 2 * j, c]
                    b1 = x[b, 2 * i + 1, 2 * j + 1, c]
                    m0 = _max(a0, b0)
                    m1 = _max(a1, b1)
                    y[b, i, j, c] = _max(m0, m1)
                    code[b, i, j, c] = 4 * (m1 > m0) + 2 * (b1 > a1) + (b0 > a0)


@njit(_POOL_BWD, **_OPTS)
def maxpool2_grad(gy, code, dx):
    """dx (B, H, W, C) from gy (B, H//2, W//2, C): rows then columns, g1 = g * chosen, g0 = g - g1
    (remainder rows/columns of dx are left as they are)."""
    B, ho, wo, C = gy.shape
    for b in range(B):
        for i in range(ho):
            for j in range(wo):
                for c in range(C):
                    g = gy[b, i, j, c]
                    k = code[b, i, j, c]
                    h1 = g * ((k >> 2) & 1)
                    h0 = g - h1
                    w1 = h0 * (k & 1)
                    dx[b, 2 * i, 2 * j + 1, c] = w1
                    dx[b, 2 * i, 2 * j, c] = h0 - w1
                    w1 = h1 * ((k >> 1) & 1)
                    dx[b, 2 * i + 1, 2 * j + 1, c] = w1
                    dx[b, 2 * i + 1, 2 * j, c] = h1 - w1


# ---- col2im: a convolution's input gradient from its per-offset blocks -----------------------------
_COL2IM = _sigs(lambda t: types.void(_a(t, 3, "A", readonly=True), _a(t, 4), types.int64, types.int64,
                                     types.int64, types.int64))


@njit(_COL2IM, **_OPTS)
def col2im_add(blocks, d, ho, wo, k, s):
    """d[:, i + s u, j + s v, :] += blocks[i k + j] (rows (b, u, v)) for the offsets (i, j) in row-major
    order, so every element receives its adds in the order of the numpy loop of strided adds it
    replaces (bit-identical); blocks (k k, B ho wo, C), d (B, Hp, Wp, C)."""
    B, C = d.shape[0], d.shape[3]
    for i in range(k):
        for j in range(k):
            blk = blocks[i * k + j]
            r = 0
            for b in range(B):
                for u in range(ho):
                    row = d[b, i + s * u]
                    for v in range(wo):
                        col = j + s * v
                        for c in range(C):
                            row[col, c] += blk[r, c]
                        r += 1


# ---- the SGD step -------------------------------------------------------------------------------
@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c rounded once (llvm.fma: exact on every target; one instruction where the CPU has FMA)."""
    if not (isinstance(a, types.Float) and a == b == c):
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return a(a, b, c), codegen


_STEP_SIG = [types.void(_a(t, 1, L), _a(t, 1, L, readonly=True), _a(t, 1, L, readonly=True),
                        _a(t, 1, L, readonly=True), _a(t, 1, L), t, types.boolean, t, t, t, types.int64,
                        types.boolean, t, types.boolean)
             for t in _FLOATS for L in ("C", "A")]     # contiguous (exact match), else any strides


@njit(_STEP_SIG, **_OPTS)
def sgd_step(w, grad, anchor, shift, buf, rho, shifted, weight_decay, momentum, keep, buf_mode, nesterov, lr,
             fused):
    """One SGD step on w, in place, element by element in the order of the numpy passes it replaces
    (every operation rounded to the dtype; no contraction to FMA other than the update's own):

        d = grad + (w - anchor) * rho     (rho != 0)          proximal term: FedProx, FedADMM-Gong (3)
        d = d + shift                     (shifted)           + y_i (FedADMM-Gong (3)); + c - c_i (SCAFFOLD)
        d = d + weight_decay * w          (weight_decay != 0)
        buf = d                           (buf_mode 1: the first step)
        buf = buf * momentum + keep * d   (buf_mode 2; keep = 1 - dampening, the product skipped at 1)
        d = d + momentum * buf if nesterov else buf            (buf_mode 1, 2)
        w = fma(-lr, d, w) if fused else w - d * lr           (lr != 0)

    ``fused``: the update rounds once, as BLAS axpy does on FMA hardware; otherwise the product is
    rounded first. anchor and shift are read unconditionally and a skipped term is a select (an
    unused one is any vector of w's length, e.g. grad), so that LLVM vectorises the one loop for
    every choice of terms; buf (not w) is touched only with momentum (buf_mode 0: may be empty).
    grad, anchor, shift are not modified."""
    prox = rho != 0
    decay = weight_decay != 0
    damp = keep != 1
    first = buf_mode == 1
    moving = buf_mode != 0
    stepping = lr != 0
    for i in range(w.shape[0]):
        wi = w[i]
        a = anchor[i]
        s = shift[i]
        d = grad[i]
        d = d + (wi - a) * rho if prox else d
        d = d + s if shifted else d
        d = d + weight_decay * wi if decay else d
        if moving:
            k = keep * d if damp else d
            b = d if first else buf[i] * momentum + k
            buf[i] = b
            d = d + momentum * b if nesterov else b
        u = _fma(-lr, d, wi) if fused else wi - d * lr
        w[i] = u if stepping else wi
