"""Batched evaluation of a model on a test set."""
from __future__ import annotations

import numpy as np

from fedrepro.nn.heads import get_head


def evaluate(model, w: np.ndarray, X, y, batch: int = 256, head: str | None = None) -> dict:
    """Accuracy and mean loss (model's head unless overridden) over all of (X, y),
    in eval mode, ``batch`` examples at a time (bounds the im2col memory)."""
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"evaluate: batch must be a positive integer, got {batch!r}")
    n = len(X)
    if n == 0 or len(y) != n:
        raise ValueError(f"evaluate: X and y must be non-empty and of equal length, got {n} and {len(y)}")
    fn = get_head(head or model.head)
    loss_sum, correct = 0.0, 0
    for start in range(0, n, batch):
        yb = model.check_labels(np.asarray(y[start:start + batch]), min(batch, n - start))
        z = model.forward(w, X[start:start + batch])
        losses, _ = fn(z, yb, grad=False)
        loss_sum += float(losses.sum(dtype=np.float64))
        correct += int((z.argmax(axis=1) == yb).sum())
    return {"accuracy": correct / n, "loss": loss_sum / n}
