"""Layer specs with numpy forward/backward passes.

A layer object holds only hyper-parameters (it is a *spec*); the model binds it
to an input shape with :meth:`Layer.setup` and passes the parameter arrays
(views into the model's flat vector) to every call, so one spec can be reused
by several models and a layer never owns state.

Shapes: users see PyTorch's layouts -- images (C, H, W), conv weights
(out, in, kh, kw), dense weights (out, in). Internally image activations are
kept channel-last, (B, H, W, C): the im2col matrix of a channel-last tensor
is built through a strided view from contiguous runs of kw*C values, and one
GEMM against the (out, kh*kw*C) weight matrix yields the next channel-last
activation with no transpose. Convolutions with fewer than 8 input channels
(the first layers: 1 or 3) build the transposed im2col matrix from
channel-first planes instead, and fold the bias into their GEMMs. The others
work a few images at a time (im2col chunk + GEMM while the chunk is in cache) and
rebuild the chunks in the backward pass rather than keeping the whole matrix. The input
gradient is a batched GEMM giving one block per kernel offset, scattered back
by the kh*kw strided adds of col2im, one compiled pass (:func:`fedrepro.nn.kernels.col2im_add`).
:class:`Flatten` converts back to PyTorch's (C, H, W) feature order.

Feature vectors are kept feature-major, (F, B): a dense layer is then y = W x + b,
one GEMM with W (out, in) as stored, whose output is the next layer's input with
no transpose, and the bias add, ReLU and their backward passes are compiled
element-wise loops (:mod:`fedrepro.nn.kernels`; a numpy call on an activation of
B = 50 costs more in dispatch than in arithmetic).

Protocol of a layer:

* ``setup(in_shape) -> (param_shapes, out_shape)``: ``param_shapes`` is a list
  of ``(name, shape)`` in flat-vector order (weight, then bias);
* ``fans(in_shape) -> (fan_in, fan_out)`` for parametrised layers (init rules);
* ``forward(params, x, rng, ws) -> (y, cache)``; ``rng`` is a numpy Generator in
  training mode (dropout draws from it) or None in eval mode;
* ``backward(params, cache, gy, grads, need_dx, ws) -> dx``: writes the parameter
  gradients into ``grads`` (views into the flat gradient vector) and returns
  the input gradient, or None when ``need_dx`` is False.

``ws`` is the layer's :class:`Workspace`: the large temporaries (padded input,
im2col matrix, pooled maps, ...) live in buffers reused from one call to the next
instead of fresh allocations, which for the CNNs saved ~15 ms of page-fault
(kernel) time per step. A result in a workspace buffer is valid until the next
call of the same layer (the model copies its output before handing it out). The
default ``ws`` allocates fresh zeroed arrays.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided

from fedrepro.nn import kernels


_COMPILED = (np.dtype(np.float32), np.dtype(np.float64))   # dtypes of fedrepro.nn.kernels
_SMALL_C = 8              # below this many input channels im2col is built channel-first
_COL2IM_CHUNK = 3 << 17   # floats of d-cols blocks per col2im chunk (~1.5 MB in float32)
_IM2COL_CHUNK = 5 << 16   # floats of im2col rows per chunk (~1.3 MB in float32: 2 images of CNN 1's conv 2)


class Workspace:
    """Scratch buffers of one layer, one per key; a buffer is created zeroed and
    replaced when the requested shape or dtype changes. Not thread-safe."""

    def __init__(self):
        self._bufs: dict = {}

    def __call__(self, key: str, shape: tuple, dtype) -> np.ndarray:
        buf = self._bufs.get(key)
        if buf is None or buf.shape != shape or buf.dtype != dtype:
            buf = self._bufs[key] = np.zeros(shape, dtype=dtype)
        return buf

    def clear(self) -> None:
        self._bufs.clear()

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self._bufs.values())


def _fresh(key: str, shape: tuple, dtype) -> np.ndarray:
    """The default workspace: a new zeroed array at every call."""
    return np.zeros(shape, dtype=dtype)


def _positive_int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


class Layer:
    """Base class of the layer specs (see the module docstring for the protocol)."""

    kind = "layer"

    def setup(self, in_shape: tuple) -> tuple[list[tuple[str, tuple]], tuple]:
        return [], tuple(in_shape)

    def fans(self, in_shape: tuple) -> tuple[int, int]:
        raise TypeError(f"{self.kind} has no parameters")

    def forward(self, params, x, rng, ws=_fresh):
        raise NotImplementedError

    def backward(self, params, cache, gy, grads, need_dx, ws=_fresh):
        raise NotImplementedError


@dataclass(frozen=True)
class Dense(Layer):
    """y = x W^T + b, W of shape (out_features, in_features) (``torch.nn.Linear``)."""

    out_features: int
    bias: bool = True
    kind = "dense"

    def __post_init__(self):
        _positive_int("Dense out_features", self.out_features)

    def setup(self, in_shape):
        if len(in_shape) != 1:
            raise ValueError(f"dense layer needs a 1-D feature input, got shape {tuple(in_shape)}; "
                             "put a flatten() layer before it")
        shapes = [("weight", (self.out_features, in_shape[0]))]
        if self.bias:
            shapes.append(("bias", (self.out_features,)))
        return shapes, (self.out_features,)

    def fans(self, in_shape):
        return int(in_shape[0]), self.out_features

    def forward(self, params, x, rng, ws=_fresh):
        # feature-major: y = W x + b, x (in, B) -> y (out, B), one GEMM with W as stored
        y = np.matmul(params[0], x, out=ws("y", (self.out_features, x.shape[1]), x.dtype))
        if self.bias:
            kernels.add_rows(y, params[1])
        return y, x

    def backward(self, params, x, gy, grads, need_dx, ws=_fresh):
        np.matmul(gy, x.T, out=grads[0])                          # dW = gy x^T
        if self.bias:
            kernels.row_sums(gy, grads[1])                         # db = gy 1
        return np.matmul(params[0].T, gy, out=ws("dx", x.shape, x.dtype)) if need_dx else None


@dataclass(frozen=True)
class Conv2d(Layer):
    """2-D cross-correlation (``torch.nn.Conv2d``, groups = dilation = 1), square
    kernel, stride, zero padding. im2col + one GEMM forward; two GEMMs + col2im
    backward (see the module docstring)."""

    out_channels: int
    kernel_size: int
    stride: int = 1
    padding: int = 0
    bias: bool = True
    kind = "conv2d"

    def __post_init__(self):
        _positive_int("Conv2d out_channels", self.out_channels)
        _positive_int("Conv2d kernel_size", self.kernel_size)
        _positive_int("Conv2d stride", self.stride)
        _positive_int("Conv2d padding", self.padding, minimum=0)

    def _out_hw(self, h, w):
        k, s, p = self.kernel_size, self.stride, self.padding
        return (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1

    def setup(self, in_shape):
        if len(in_shape) != 3:
            raise ValueError(f"conv2d needs a (C, H, W) input, got shape {tuple(in_shape)}")
        c, h, w = in_shape
        ho, wo = self._out_hw(h, w)
        if ho < 1 or wo < 1:
            raise ValueError(f"conv2d kernel {self.kernel_size} (padding {self.padding}) does not fit "
                             f"an input of {h}x{w}")
        k = self.kernel_size
        shapes = [("weight", (self.out_channels, c, k, k))]
        if self.bias:
            shapes.append(("bias", (self.out_channels,)))
        return shapes, (self.out_channels, ho, wo)

    def fans(self, in_shape):
        k2 = self.kernel_size ** 2
        return int(in_shape[0]) * k2, self.out_channels * k2

    def forward(self, params, x, rng, ws=_fresh):
        W = params[0]
        bsz, h, w, c = x.shape
        k, s, p = self.kernel_size, self.stride, self.padding
        ho, wo = self._out_hw(h, w)
        o = self.out_channels
        if c < _SMALL_C:
            # few input channels (first layers): im2col transposed, (C*kh*kw [+1], N), built
            # from channel-first planes, so every copy moves runs of Wo contiguous values;
            # (C, kh, kw) is also PyTorch's weight order. A row of ones carries the bias, so
            # the GEMMs also add the bias (forward) and sum its gradient (backward).
            kk, nb = c * k * k, int(self.bias)
            xc = x.transpose(0, 3, 1, 2)
            if p:
                xpc = ws("xpad", (bsz, c, h + 2 * p, w + 2 * p), x.dtype)  # border never written: stays 0
                xpc[:, :, p:p + h, p:p + w] = xc
            else:
                xpc = xc
            colsT = ws("colsT", (kk + nb, bsz * ho * wo), x.dtype)
            planes = colsT[:kk].reshape(c, k, k, bsz, ho, wo)
            for i in range(k):
                for j in range(k):
                    planes[:, i, j] = xpc[:, :, i:i + s * ho:s, j:j + s * wo:s].transpose(1, 0, 2, 3)
            Wm = ws("wmat", (o, kk + nb), x.dtype)
            Wm[:, :kk] = W.reshape(o, kk)
            if nb:
                colsT[kk] = 1
                Wm[:, kk] = params[1]
            y = np.matmul(colsT.T, Wm.T, out=ws("y", (bsz * ho * wo, o), x.dtype))
            return y.reshape(bsz, ho, wo, o), (colsT, x.shape)
        if p:
            xp = ws("xpad", (bsz, h + 2 * p, w + 2 * p, c), x.dtype)   # border never written: stays 0
            xp[:, p:p + h, p:p + w, :] = x
        else:
            xp = x
        # im2col + GEMM a few images at a time: the im2col chunk stays in cache for its GEMM
        # (the whole matrix of CNN 1's second conv is 31 MB; chunking measured 30% faster).
        # The backward pass rebuilds the chunks from xp instead of keeping the matrix.
        Wm = W.transpose(0, 2, 3, 1).reshape(o, k * k * c)
        y = ws("y", (bsz * ho * wo, o), x.dtype)
        cols = ws("cols", (self._chunk(ho * wo * k * k * c, bsz) * ho * wo, k * k * c), x.dtype)
        for b0, b1, rows, cb in self._im2col_chunks(xp, ho, wo, cols):
            np.matmul(cb, Wm.T, out=y[rows])
        if self.bias:
            y += params[1]
        return y.reshape(bsz, ho, wo, o), (xp, x.shape)

    @staticmethod
    def _chunk(floats_per_image: int, bsz: int) -> int:
        return max(1, min(bsz, _IM2COL_CHUNK // floats_per_image))

    def _im2col_chunks(self, xp, ho, wo, cols):
        """Yield (b0, b1, rows, im2col of images b0:b1 in (kh, kw, C) column order); the
        im2col block is a view into ``cols``, overwritten at the next step."""
        k, s = self.kernel_size, self.stride
        bsz, c = xp.shape[0], xp.shape[3]
        sb, sh, sw, sc = xp.strides
        win = as_strided(xp, (bsz, ho, wo, k, k, c), (sb, sh * s, sw * s, sh, sw, sc), writeable=False)
        per_image = ho * wo
        chunk = cols.shape[0] // per_image
        for b0 in range(0, bsz, chunk):
            b1 = min(bsz, b0 + chunk)
            cb = cols[:(b1 - b0) * per_image]
            np.copyto(cb.reshape(b1 - b0, ho, wo, k, k, c), win[b0:b1])
            yield b0, b1, slice(b0 * per_image, b1 * per_image), cb

    def backward(self, params, cache, gy, grads, need_dx, ws=_fresh):
        bsz, ho, wo, o = gy.shape
        g2 = gy.reshape(bsz * ho * wo, o)
        k, s, p = self.kernel_size, self.stride, self.padding
        if cache[1][3] < _SMALL_C:
            cols, xshape = cache
            c = xshape[3]
            gwb = cols @ g2                         # (C*kh*kw [+1 bias row], O)
            kk = c * k * k
            grads[0].reshape(o, kk)[...] = gwb[:kk].T
            if self.bias:
                grads[1][...] = gwb[kk]
            if not need_dx:
                return None
            return self._col2im(params, g2, xshape, ws)
        # general path: per chunk of images, rebuild its im2col block (it stays in cache),
        # accumulate the weight gradient, and scatter the chunk's input gradient (col2im)
        xp, xshape = cache
        c = xshape[3]
        per_image = ho * wo
        cols = ws("cols", (self._chunk(per_image * k * k * c, bsz) * per_image, k * k * c), gy.dtype)
        gw = ws("gw", (o, k * k * c), gy.dtype)
        part = ws("gw_part", (o, k * k * c), gy.dtype)
        if need_dx:
            w3 = np.ascontiguousarray(params[0].transpose(2, 3, 0, 1)).reshape(k * k, o, c)
            h, w = xshape[1], xshape[2]
            dxp = ws("dxpad", (bsz, h + 2 * p, w + 2 * p, c), gy.dtype)
            dxp.fill(0)
            buf = ws("blocks", (k * k, cols.shape[0], c), gy.dtype)
        for n, (b0, b1, rows, cb) in enumerate(self._im2col_chunks(xp, ho, wo, cols)):
            np.matmul(g2[rows].T, cb, out=gw if n == 0 else part)
            if n:
                gw += part
            if need_dx:
                self._scatter(np.matmul(g2[rows], w3, out=buf[:, :(b1 - b0) * per_image]),
                              dxp[b0:b1], ho, wo)
        grads[0][...] = gw.reshape(o, k, k, c).transpose(0, 3, 1, 2)
        if self.bias:
            g2.sum(axis=0, out=grads[1])
        if not need_dx:
            return None
        return dxp[:, p:p + h, p:p + w, :] if p else dxp

    def _scatter(self, blocks, d, ho, wo):
        """col2im of one chunk: d[:, i + s*u, j + s*v] += block_ij[:, u, v]."""
        kernels.col2im_add(blocks, d, ho, wo, self.kernel_size, self.stride)

    def _col2im(self, params, g2, xshape, ws):
        """Input gradient from the output gradient g2 (rows, O): d cols as one (rows, C)
        block per kernel offset (a batched GEMM), so that col2im adds contiguous blocks;
        a few images at a time so that the blocks stay in cache for the adds."""
        k, p = self.kernel_size, self.padding
        bsz, h, w, c = xshape
        o = g2.shape[1]
        per_image = g2.shape[0] // bsz
        ho, wo = self._out_hw(h, w)
        w3 = np.ascontiguousarray(params[0].transpose(2, 3, 0, 1)).reshape(k * k, o, c)
        dxp = ws("dxpad", (bsz, h + 2 * p, w + 2 * p, c), g2.dtype)
        dxp.fill(0)
        chunk = max(1, min(bsz, _COL2IM_CHUNK // (k * k * per_image * c)))
        buf = ws("blocks", (k * k, chunk * per_image, c), g2.dtype)
        for b0 in range(0, bsz, chunk):
            b1 = min(bsz, b0 + chunk)
            blocks = np.matmul(g2[b0 * per_image:b1 * per_image], w3, out=buf[:, :(b1 - b0) * per_image])
            self._scatter(blocks, dxp[b0:b1], ho, wo)
        return dxp[:, p:p + h, p:p + w, :] if p else dxp


@dataclass(frozen=True)
class MaxPool2d(Layer):
    """Non-overlapping k x k max-pool, stride k (``torch.nn.MaxPool2d(k)``; a
    remainder row/column is dropped like PyTorch's floor mode). Ties go to the
    first element of the window in row-major order, as in PyTorch. k = 2 on a contiguous
    float map runs the compiled pass :func:`fedrepro.nn.kernels.maxpool2` (bit-identical)."""

    kernel_size: int = 2
    kind = "maxpool2d"

    def __post_init__(self):
        _positive_int("MaxPool2d kernel_size", self.kernel_size)

    def setup(self, in_shape):
        if len(in_shape) != 3:
            raise ValueError(f"maxpool2d needs a (C, H, W) input, got shape {tuple(in_shape)}")
        c, h, w = in_shape
        k = self.kernel_size
        if h < k or w < k:
            raise ValueError(f"maxpool2d window {k} does not fit an input of {h}x{w}")
        return [], (c, h // k, w // k)

    def forward(self, params, x, rng, ws=_fresh):
        bsz, h, w, c = x.shape
        k = self.kernel_size
        ho, wo = h // k, w // k
        if k == 2 and x.flags.c_contiguous and x.dtype in _COMPILED:
            # one compiled pass with the numpy passes' arithmetic below (kernels.maxpool2)
            y, code = ws("y", (bsz, ho, wo, c), x.dtype), ws("code", (bsz, ho, wo, c), np.uint8)
            kernels.maxpool2(x, y, code)
            return y, (code, None, x.shape)
        # two stages, columns then rows: both keep the first maximum, so the chosen
        # element is the first maximum of the window in row-major order
        xr = x[:, :ho * k, :wo * k, :].reshape(bsz, ho * k, wo, k, c)
        hmax, arg_w = _first_max([xr[:, :, :, j, :] for j in range(k)], ws, "w")
        hr = hmax.reshape(bsz, ho, k, wo, c)
        y, arg_h = _first_max([hr[:, :, i, :, :] for i in range(k)], ws, "h")
        return y, (arg_w, arg_h, x.shape)

    def backward(self, params, cache, gy, grads, need_dx, ws=_fresh):
        arg_w, arg_h, xshape = cache
        bsz, h, w, c = xshape
        k = self.kernel_size
        ho, wo = h // k, w // k
        if arg_h is None:                   # the compiled forward's choice codes
            dx = ws("dx", xshape, gy.dtype)     # created zeroed; remainder rows/columns stay 0
            kernels.maxpool2_grad(gy, arg_w, dx)
            return dx
        gh = ws("gh", (bsz, ho, k, wo, c), gy.dtype)
        _route(gy, arg_h, [gh[:, :, i, :, :] for i in range(k)])
        gh = gh.reshape(bsz, ho * k, wo, c)
        dxr = ws("dx", (bsz, ho * k, wo, k, c), gy.dtype)
        _route(gh, arg_w, [dxr[:, :, :, j, :] for j in range(k)])
        dxr = dxr.reshape(bsz, ho * k, wo * k, c)
        if ho * k == h and wo * k == w:
            return dxr
        dx = np.zeros(xshape, dtype=gy.dtype)
        dx[:, :ho * k, :wo * k, :] = dxr
        return dx


def _route(g, arg, outs):
    """outs[t] = g where arg == t, else 0 (arg: bool for two candidates, else uint8)."""
    if arg.dtype == np.bool_:
        np.multiply(g, arg, out=outs[1])
        np.subtract(g, outs[1], out=outs[0])     # exact: g - g = 0, g - 0 = g
        return
    for t, out in enumerate(outs):
        np.multiply(g, arg == t, out=out)


def _first_max(views, ws, tag):
    """Element-wise maximum of equally shaped arrays and the index of the first
    array attaining it (strict '>' scan, as PyTorch's max-pool kernel)."""
    m = ws("max" + tag, views[0].shape, views[0].dtype)
    if len(views) == 2:
        np.maximum(views[0], views[1], out=m)
        return m, np.greater(views[1], views[0], out=ws("arg" + tag, m.shape, np.bool_))
    np.copyto(m, views[0])
    arg = ws("arg" + tag, m.shape, np.uint8)
    arg.fill(0)
    for t, v in enumerate(views[1:], 1):
        upd = v > m
        np.copyto(m, v, where=upd)
        np.copyto(arg, t, where=upd)
    return m, arg


@dataclass(frozen=True)
class ReLU(Layer):
    kind = "relu"

    def forward(self, params, x, rng, ws=_fresh):
        y = ws("y", x.shape, x.dtype)
        if x.flags.c_contiguous:
            kernels.relu(x.reshape(-1), y.reshape(-1))
        else:
            np.maximum(x, 0, out=y)
        return y, y

    def backward(self, params, y, gy, grads, need_dx, ws=_fresh):
        dx = ws("dx", y.shape, y.dtype)
        if gy.flags.c_contiguous:
            kernels.relu_grad(gy.reshape(-1), y.reshape(-1), dx.reshape(-1))
        else:
            np.multiply(gy, y > 0, out=dx)
        return dx


@dataclass(frozen=True)
class Flatten(Layer):
    """(C, H, W) -> C*H*W features in PyTorch's C, H, W order."""

    kind = "flatten"

    def setup(self, in_shape):
        return [], (int(np.prod(in_shape)),)

    def forward(self, params, x, rng, ws=_fresh):
        if x.ndim == 2:
            return x, None
        bsz, h, w, c = x.shape             # channel-last -> feature-major in C, H, W order
        return x.transpose(3, 1, 2, 0).reshape(c * h * w, bsz), x.shape

    def backward(self, params, xshape, gy, grads, need_dx, ws=_fresh):
        if xshape is None:
            return gy
        bsz, h, w, c = xshape
        return gy.reshape(c, h, w, bsz).transpose(3, 1, 2, 0)


@dataclass(frozen=True)
class Dropout(Layer):
    """Inverted dropout: in training (an rng is given) each unit is kept with
    probability 1 - p and scaled by 1/(1 - p); identity in eval mode. The
    uniforms are drawn in float32 whatever the compute dtype, so a seed gives
    the same mask in float32 and float64."""

    p: float
    kind = "dropout"

    def __post_init__(self):
        if not (0.0 <= float(self.p) < 1.0):
            raise ValueError(f"dropout probability must be in [0, 1), got {self.p!r}")

    def forward(self, params, x, rng, ws=_fresh):
        if rng is None or self.p == 0:
            return x, None
        if x.ndim == 2:                    # feature-major (F, B): draw per example, (B, F)
            keep = (rng.random(x.shape[::-1], dtype=np.float32) >= self.p).T.astype(x.dtype, order="C")
        else:
            keep = (rng.random(x.shape, dtype=np.float32) >= self.p).astype(x.dtype)
        keep *= 1.0 / (1.0 - self.p)
        return x * keep, keep

    def backward(self, params, keep, gy, grads, need_dx, ws=_fresh):
        return gy if keep is None else gy * keep


# ---- compact constructors used in model declarations ---------------------------
def dense(out_features: int, bias: bool = True) -> Dense:
    return Dense(out_features, bias)


def conv2d(out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, bias: bool = True) -> Conv2d:
    return Conv2d(out_channels, kernel_size, stride, padding, bias)


def maxpool2d(kernel_size: int = 2) -> MaxPool2d:
    return MaxPool2d(kernel_size)


def relu() -> ReLU:
    return ReLU()


def flatten() -> Flatten:
    return Flatten()


def dropout(p: float) -> Dropout:
    return Dropout(p)
