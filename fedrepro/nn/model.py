"""A sequential model over one flat parameter vector."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fedrepro.nn.heads import get_head
from fedrepro.nn.initializers import check_rule, initialise
from fedrepro.nn.layers import Layer, Workspace

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _mean(losses: np.ndarray) -> float:
    """Mean of per-example losses, summed in float64."""
    return float(losses.sum(dtype=np.float64)) / losses.size


@dataclass(frozen=True)
class ParamSlot:
    """Where one parameter array lives in the flat vector."""

    layer: int          # index of the layer in the model
    name: str           # 'weight' or 'bias'
    start: int
    shape: tuple

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def stop(self) -> int:
        return self.start + self.size


class Model:
    """Sequential network; parameters are one flat vector.

    Parameters
    ----------
    layers : sequence of layer specs (:mod:`fedrepro.nn.layers`).
    input_shape : (C, H, W) for image models, (features,) otherwise.
    init : initialisation rule ('torch', 'glorot', 'zeros').
    head : default head ('softmax_ce' or 'logits_ce').
    name : label used in messages.
    dtype : dtype of the vectors returned by :meth:`init` (float32 or float64).

    A model keeps per-layer scratch buffers between calls (reused temporaries, no
    state that affects results); it is therefore not thread-safe: use one model
    object per thread. :meth:`clear_workspace` frees them.

    The flat vector concatenates, layer by layer, the weight then the bias, each in
    PyTorch's layout (conv (out, in, kh, kw), dense (out, in)), C order: slicing it
    with :attr:`slots` gives a PyTorch ``state_dict`` in module order.
    """

    def __init__(self, layers, input_shape, *, init: str = "torch", head: str = "softmax_ce",
                 name: str = "model", dtype=np.float32):
        self.layers = tuple(layers)
        if not self.layers or not all(isinstance(l, Layer) for l in self.layers):
            raise TypeError("layers must be a non-empty sequence of fedrepro.nn layer specs")
        self.input_shape = tuple(int(s) for s in input_shape)
        if len(self.input_shape) not in (1, 3) or min(self.input_shape) < 1:
            raise ValueError(f"input_shape must be (features,) or (C, H, W), got {input_shape!r}")
        self.init_rule = check_rule(init)
        get_head(head)
        self.head = head
        self.name = name
        self.dtype = np.dtype(dtype)
        if self.dtype not in _DTYPES:
            raise ValueError(f"dtype must be float32 or float64, got {self.dtype}")

        slots, shapes, fans = [], [self.input_shape], []
        start = 0
        for i, layer in enumerate(self.layers):
            pshapes, out = layer.setup(shapes[-1])
            fans.append(layer.fans(shapes[-1]) if pshapes else None)
            layer_slots = []
            for pname, pshape in pshapes:
                slot = ParamSlot(i, pname, start, tuple(pshape))
                layer_slots.append(slot)
                start = slot.stop
            slots.append(tuple(layer_slots))
            shapes.append(tuple(out))
        if len(shapes[-1]) != 1:
            raise ValueError(f"{name}: the last layer must output class scores (K,), got {shapes[-1]}; "
                             "end the model with a dense layer")
        self._layer_slots = tuple(slots)
        self._plan = tuple(tuple((sl.start, sl.stop, sl.shape) for sl in ls) for ls in self._layer_slots)
        self._views: dict = {}          # id of a kept vector -> (the vector, its per-layer views)
        self._fans = tuple(fans)
        self.shapes = tuple(shapes)            # activation shape before/after every layer
        self.n_params = start
        self.n_classes = shapes[-1][0]
        self._first_param_layer = next((i for i, s in enumerate(slots) if s), len(slots))
        self._ws = tuple(Workspace() for _ in self.layers)

    # ---- parameter vector ------------------------------------------------------
    @property
    def slots(self) -> tuple[ParamSlot, ...]:
        """All parameter slots in flat-vector order."""
        return tuple(s for layer_slots in self._layer_slots for s in layer_slots)

    def unflatten(self, w: np.ndarray) -> list[tuple[np.ndarray, ...]]:
        """Per-layer tuples of views into ``w`` (weight, bias). The views of the last few vectors
        are kept (a training step unflattens the same parameter and gradient vectors every call;
        the cache holds the vector itself, so its id cannot be reused by another object)."""
        views = self._views.get(id(w))
        if views is None or views[0] is not w:
            views = (w, [tuple(w[a:b].reshape(shape) for a, b, shape in ls) for ls in self._plan])
            if len(self._views) >= 4:
                self._views.pop(next(iter(self._views)))
            self._views[id(w)] = views
        return views[1]

    def init(self, rng: np.random.Generator, dtype=None) -> np.ndarray:
        """A fresh flat parameter vector drawn with the model's init rule."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"init needs a numpy Generator (e.g. fedrepro.core.rng.stream(seed, 'init')), "
                            f"got {type(rng).__name__}")
        w = np.empty(self.n_params, dtype=self.dtype if dtype is None else np.dtype(dtype))
        for ls, fans, views in zip(self._layer_slots, self._fans, self.unflatten(w)):
            for slot, view in zip(ls, views):
                initialise(self.init_rule, slot.name, view, fans[0], fans[1], rng)
        return w

    # ---- passes ----------------------------------------------------------------
    def _check_w(self, w) -> np.ndarray:
        if not isinstance(w, np.ndarray) or w.shape != (self.n_params,):
            got = getattr(w, "shape", type(w).__name__)
            raise ValueError(f"{self.name}: parameter vector must have shape ({self.n_params},), got {got}")
        if w.dtype not in _DTYPES:
            raise ValueError(f"{self.name}: parameters must be float32 or float64, got {w.dtype}")
        return w

    def _prepare(self, X, dtype) -> np.ndarray:
        """Cast X to ``dtype`` and bring it into the internal layout (images channel-last (B, H, W, C),
        feature vectors feature-major (F, B), a view)."""
        X = np.asarray(X)
        if X.ndim < 1 or X.shape[0] < 1:
            raise ValueError(f"{self.name}: X must be a non-empty batch, got shape {X.shape}")
        if X.shape[1:] != self.input_shape:
            if int(np.prod(X.shape[1:])) != int(np.prod(self.input_shape)):
                raise ValueError(f"{self.name}: X must have shape (B, {', '.join(map(str, self.input_shape))})"
                                 f", got {X.shape}")
            X = X.reshape((X.shape[0],) + self.input_shape)   # C order = PyTorch's flatten order
        X = X.astype(dtype, copy=False)
        return X.transpose(0, 2, 3, 1) if X.ndim == 4 else X.T

    def check_labels(self, y, batch: int, values: bool = True) -> np.ndarray:
        """``y`` as an integer array of ``batch`` labels in [0, n_classes), or a clear error
        (``values=False``: shape and type only; the heads check the range as they go)."""
        y = np.asarray(y)
        if y.shape != (batch,) or y.dtype.kind not in "iu":
            raise ValueError(f"{self.name}: y must be {batch} integer labels, got {y.dtype} array of shape {y.shape}")
        if values and batch and (y.min() < 0 or y.max() >= self.n_classes):
            raise ValueError(f"{self.name}: labels must be in [0, {self.n_classes}), "
                             f"got range [{y.min()}, {y.max()}]")
        return y

    def forward(self, w: np.ndarray, X, rng: np.random.Generator | None = None) -> np.ndarray:
        """Logits (B, K), a new C-ordered array. With ``rng`` dropout is active (training mode)."""
        return np.ascontiguousarray(self._logits_t(w, X, rng).T)

    def _logits_t(self, w, X, rng=None, caches: list | None = None) -> np.ndarray:
        """Logits transposed, (K, B), in the last layer's workspace (valid until the next call on
        this model); ``caches``: a list receiving the per-layer caches."""
        w = self._check_w(w)
        x = self._prepare(X, w.dtype)
        for layer, params, ws in zip(self.layers, self.unflatten(w), self._ws):
            x, cache = layer.forward(params, x, rng, ws)
            if caches is not None:
                caches.append(cache)
        return x

    def predict(self, w: np.ndarray, X) -> np.ndarray:
        """Class scores (B, K): the logits z, i.e. the head's input (eval mode). For the
        'softmax_ce' head the authors' network output is softmax(z); argmax is the same."""
        return self.forward(w, X)

    def loss(self, w: np.ndarray, X, y, head: str | None = None) -> float:
        """Mean loss over the batch in eval mode (no dropout)."""
        z = self._logits_t(w, X).T
        losses, _ = get_head(head or self.head)(z, self.check_labels(y, z.shape[0], values=False), grad=False)
        return _mean(losses)

    def loss_and_grad(self, w: np.ndarray, X, y, rng: np.random.Generator | None = None,
                      head: str | None = None, out: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """Mean loss of one batch and its gradient w.r.t. the flat vector ``w``.

        X : (B, C, H, W) or (B, features) (any shape with the right size per example);
        cast to w's dtype. y : (B,) integer labels. rng : numpy Generator for dropout
        (None: eval mode). head : override of the model's head. out : optional
        preallocated gradient vector (same shape/dtype as w), returned filled.
        """
        fn = get_head(head or self.head)
        w = self._check_w(w)
        y = self.check_labels(y, np.shape(X)[0] if np.ndim(X) else -1, values=False)
        if out is None:
            out = np.empty_like(w)
        elif out.shape != w.shape or out.dtype != w.dtype:
            raise ValueError(f"{self.name}: out must have shape {w.shape} and dtype {w.dtype}")
        caches: list = []
        zt = self._logits_t(w, X, rng, caches)     # the layers work on (K, B)
        gt = self._ws[-1]("head_grad", zt.shape, zt.dtype)
        losses, _ = fn(zt.T, y, out=gt.T)
        g = gt
        params = self.unflatten(w)
        grads = self.unflatten(out)
        for i in range(len(self.layers) - 1, -1, -1):
            need_dx = i > self._first_param_layer
            g = self.layers[i].backward(params[i], caches[i], g, grads[i], need_dx, self._ws[i])
            caches[i] = None
            if not need_dx:
                break
        return _mean(losses), out

    @property
    def has_dropout(self) -> bool:
        """Whether training mode differs from eval mode (a dropout layer with p > 0)."""
        from fedrepro.nn.layers import Dropout

        return any(isinstance(layer, Dropout) and layer.p > 0 for layer in self.layers)

    def forward_flops(self) -> int:
        """FLOPs (2 x multiply-adds) of one example's forward pass through the dense and convolution
        layers (the GEMMs; element-wise layers are ignored). A training step costs about 3x this per
        example (forward, weight gradient, input gradient)."""
        from fedrepro.nn.layers import Conv2d, Dense

        macs = 0
        for layer, (i_shape, o_shape) in zip(self.layers, zip(self.shapes, self.shapes[1:])):
            if isinstance(layer, Dense):
                macs += i_shape[0] * o_shape[0]
            elif isinstance(layer, Conv2d):
                macs += math.prod(o_shape) * i_shape[0] * layer.kernel_size ** 2
        return 2 * macs

    def clear_workspace(self) -> None:
        """Free the scratch buffers kept between calls (see :class:`~fedrepro.nn.layers.Workspace`)."""
        for ws in self._ws:
            ws.clear()

    def summary(self) -> str:
        lines = [f"{self.name}: input {self.input_shape}, init {self.init_rule}, head {self.head}"]
        for i, layer in enumerate(self.layers):
            n = sum(s.size for s in self._layer_slots[i])
            lines.append(f"  {layer!r:<50} -> {self.shapes[i + 1]!s:<16} {n:>10,d}")
        lines.append(f"  total parameters {self.n_params:,d}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Model({self.name!r}, n_params={self.n_params})"
