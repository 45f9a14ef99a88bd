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


def _logsumexp(z: np.ndarray) -> np.ndarray:
    m = z.max(axis=1)
    return m + np.log(np.exp(z - m[:, None]).sum(axis=1))


def logits_ce(z: np.ndarray, y: np.ndarray, grad: bool = True):
    """Returns (per-example losses (B,), gradient of their mean w.r.t. z or None)."""
    rows = np.arange(z.shape[0])
    losses = _logsumexp(z) - z[rows, y]
    if not grad:
        return losses, None
    g = _softmax(z)
    g[rows, y] -= 1
    g /= z.shape[0]
    return losses, g


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
