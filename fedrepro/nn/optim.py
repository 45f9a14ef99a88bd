"""Local optimiser: SGD with momentum, PyTorch semantics (``torch.optim.SGD``), on the gradient of a
local objective: the minibatch gradient plus, optionally, rho (w - anchor) + shift::

    d = grad + rho * (w - anchor) + shift     (FedProx, FedADMM-Gong, SCAFFOLD; nothing by default)
    d = d + weight_decay * w
    buf = d                                   (first step)
    buf = momentum * buf + (1 - dampening) * d  (later steps)
    d = d + momentum * buf if nesterov else buf
    w -= lr * d

All updates are in place and in the dtype of ``w`` (float32 or float64, no float64 upcast), in one
compiled pass over the parameters (:func:`fedrepro.nn.kernels.sgd_step`; each element rounds exactly
as the numpy passes it replaced did). The last line rounds once (``a * b + c`` fused, as the BLAS
axpy the step used before does on FMA hardware); ``fused=False`` rounds the product ``lr * d`` first,
then subtracts (ASPIRE's worker step, kept bit for bit).
"""
from __future__ import annotations

import numpy as np

from fedrepro.nn.kernels import sgd_step

_EMPTY = {np.dtype(t): np.empty(0, dtype=t) for t in (np.float32, np.float64)}   # no momentum buffer


class SGD:
    """Stateful SGD(+momentum) on one flat parameter vector.

    The momentum buffer is ``self.buf`` (None before the first step); ``reset()``
    clears it, e.g. at the start of a client's local round, and ``buf`` may be
    saved and assigned back to carry it across rounds.
    """

    def __init__(self, lr: float, momentum: float = 0.0, weight_decay: float = 0.0,
                 dampening: float = 0.0, nesterov: bool = False, fused: bool = True):
        for name, value in (("lr", lr), ("momentum", momentum), ("weight_decay", weight_decay),
                            ("dampening", dampening)):
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"SGD {name} must be a finite number >= 0, got {value!r}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD nesterov momentum needs momentum > 0 and dampening = 0")
        self.lr, self.momentum, self.weight_decay = float(lr), float(momentum), float(weight_decay)
        self.dampening, self.nesterov, self.fused = float(dampening), bool(nesterov), bool(fused)
        self.buf: np.ndarray | None = None

    def reset(self) -> None:
        self.buf = None

    def step(self, w: np.ndarray, grad: np.ndarray, rho: float = 0.0, anchor: np.ndarray | None = None,
             shift: np.ndarray | None = None) -> np.ndarray:
        """Update ``w`` (a float32 or float64 vector) in place with the gradient ``grad`` plus the local
        objective's terms rho (w - anchor) + shift (module docstring; vectors of w's dtype and shape,
        none modified); returns ``w``."""
        dtype = w.dtype
        if dtype not in _EMPTY or w.ndim != 1:
            raise TypeError(f"SGD: the parameters must be a float32 or float64 vector, got {dtype} of shape {w.shape}")
        if grad.shape != w.shape:
            raise ValueError(f"SGD: gradient shape {grad.shape} does not match parameters {w.shape}")
        if rho and anchor is None:
            raise ValueError("SGD: a proximal term (rho != 0) needs its anchor")
        for name, v in (("gradient", grad), ("anchor", anchor if rho else None), ("shift", shift)):
            if v is not None and (v.dtype != dtype or v.shape != w.shape):
                raise TypeError(f"SGD: the {name} must be a {dtype} vector of shape {w.shape}, got {v.dtype} {v.shape}")
        buf_mode = 0
        if self.momentum:
            buf_mode = 2
            if self.buf is None:
                self.buf, buf_mode = np.empty_like(w), 1
            elif self.buf.dtype != dtype or self.buf.shape != w.shape:
                raise TypeError(f"SGD: the momentum buffer ({self.buf.dtype} {self.buf.shape}) does not match "
                                f"the parameters ({dtype} {w.shape})")
        sgd_step(w, grad, anchor if rho else grad, grad if shift is None else shift,
                 _EMPTY[dtype] if self.buf is None else self.buf, rho, shift is not None, self.weight_decay,
                 self.momentum, 1.0 - self.dampening, buf_mode, self.nesterov, self.lr, self.fused)
        return w
