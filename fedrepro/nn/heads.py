"""Output heads: per-example losses of the logits z (B, K) and labels y (B,),
and the gradient of the batch-mean loss with respect to z.

* ``logits_ce``: standard cross-entropy, loss = -log softmax(z)_y.
* ``softmax_ce``: the FedADMM authors' "double softmax" (spec 003 §5): the network
  ends in a Softmax layer and ``CrossEntropyLoss`` applies log-softmax again,
  loss = -log softmax(p)_y = -p_y + log sum_j exp(p_j), p = softmax(z).
  Backward (mean over B): q = softmax(p), g_p = (q - onehot(y)) / B,
  g_z = p * (g_p - <g_p, p>) row-wise (the softmax Jacobian applied to g_p).

Both are compiled (:mod:`fedrepro.nn.kernels`): one pass per example instead of a dozen
numpy calls on a (50, 10) array (`logits_ce` 14.6 -> 5.0 us, benchmarks/README.md).
"""
from __future__ import annotations

import numpy as np

from fedrepro.nn import kernels

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _head(kernel, z, y, grad: bool, out):
    z = np.asarray(z)
    if z.dtype not in _FLOATS:
        z = z.astype(np.float64)
    if z.ndim != 2:
        raise ValueError(f"head: z must be (B, K) logits, got shape {z.shape}")
    y = np.asarray(y)
    if y.shape != z.shape[:1] or y.dtype.kind not in "iu":
        raise ValueError(f"head: y must be {z.shape[0]} integer labels, got {y.dtype} array of shape {y.shape}")
    y = np.ascontiguousarray(y, dtype=np.int64)
    losses = np.empty(z.shape[0], dtype=z.dtype)
    if not grad:
        g = np.empty((0, 0), dtype=z.dtype)
    elif out is None:
        g = np.empty_like(z, order="C")
    elif not isinstance(out, np.ndarray) or out.shape != z.shape or out.dtype != z.dtype:
        raise ValueError(f"head: out must be a {z.dtype} array of shape {z.shape}, got "
                         f"{getattr(out, 'dtype', type(out).__name__)} {getattr(out, 'shape', '')}")
    else:
        g = out
    bad = kernel(z, y, losses, g, bool(grad))
    if bad >= 0:
        raise ValueError(f"head: labels must be in [0, {z.shape[1]}), got {y[bad]} at position {bad}")
    return losses, (g if grad else None)


def logits_ce(z: np.ndarray, y: np.ndarray, grad: bool = True, out: np.ndarray | None = None):
    """Returns (per-example losses (B,), gradient of their mean w.r.t. z or None).
    One exponential pass serves both: e = exp(z - max z), loss = log sum e - (z_y - max z),
    d mean / dz = (e / sum e - onehot(y)) / B. ``out``: a (B, K) array (any strides, z's dtype)
    that receives the gradient."""
    return _head(kernels.logits_ce, z, y, grad, out)


def softmax_ce(z: np.ndarray, y: np.ndarray, grad: bool = True, out: np.ndarray | None = None):
    """Double-softmax head; returns (per-example losses (B,), d mean / dz or None); ``out`` as in
    :func:`logits_ce`."""
    return _head(kernels.softmax_ce, z, y, grad, out)


HEADS = {"softmax_ce": softmax_ce, "logits_ce": logits_ce}


def get_head(name: str):
    try:
        return HEADS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown head {name!r}; choose one of {', '.join(HEADS)}") from None
