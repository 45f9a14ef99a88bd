"""Output heads: per-example losses of the logits z (B, K) and labels y (B,),
and the gradient of the batch-mean loss with respect to z.

* ``logits_ce``: standard cross-entropy, loss = -log softmax(z)_y.
* ``softmax_ce``: the FedADMM authors' "double softmax" (spec 003 §5): the network
  ends in a Softmax layer and ``CrossEntropyLoss`` applies log-softmax again,
  loss = -log softmax(p)_y = -p_y + log sum_j exp(p_j), p = softmax(z).
  Backward (mean over B): q = softmax(p), g_p = (q - onehot(y)) / B,
  g_z = p * (g_p - <g_p, p>) row-wise (the softmax Jacobian applied to g_p).
"""
from __future__ import annotations

import numpy as np


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    e /= e.sum(axis=1, keepdims=True)
    return e


def logits_ce(z: np.ndarray, y: np.ndarray, grad: bool = True):
    """Returns (per-example losses (B,), gradient of their mean w.r.t. z or None).
    One exponential pass serves both: e = exp(z - max z), loss = log sum e - (z_y - max z),
    d mean / dz = (e / sum e - onehot(y)) / B."""
    rows = np.arange(z.shape[0])
    m = z.max(axis=1, keepdims=True)
    e = np.exp(z - m)
    s = e.sum(axis=1)
    losses = np.log(s) - (z[rows, y] - m[:, 0])
    if not grad:
        return losses, None
    e /= s[:, None]
    e[rows, y] -= 1
    e /= z.shape[0]
    return losses, e


def softmax_ce(z: np.ndarray, y: np.ndarray, grad: bool = True):
    """Double-softmax head; returns (per-example losses (B,), d mean / dz or None)."""
    rows = np.arange(z.shape[0])
    p = _softmax(z)
    e = np.exp(p)                        # p in [0, 1]: no shift needed
    s = e.sum(axis=1)
    losses = np.log(s) - p[rows, y]
    if not grad:
        return losses, None
    gp = e / s[:, None]                  # q = softmax(p)
    gp[rows, y] -= 1
    gp /= z.shape[0]
    gz = gp - (gp * p).sum(axis=1, keepdims=True)
    gz *= p
    return losses, gz


HEADS = {"softmax_ce": softmax_ce, "logits_ce": logits_ce}


def get_head(name: str):
    try:
        return HEADS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown head {name!r}; choose one of {', '.join(HEADS)}") from None
