"""A user's own federated data: one ``.npz`` with ``X`` (n_samples, n_features), ``y`` (n_samples,)
and ``client`` (n_samples,) integer client ids 0..m-1, every client non-empty (``client_ids`` is
accepted as an alias); optionally ``X_test`` / ``y_test``. Read by the ``linreg`` and ``softmax``
builders (``problem: {name: linreg, data: mine.npz}``), which is also the path ``fedrepro run`` takes."""
from __future__ import annotations

from pathlib import Path

import numpy as np

CLIENT_KEY, CLIENT_ALIASES = "client", ("client_ids",)


def load_client_npz(path: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """``(X, y, client, extras)`` of a user npz, checked; a ValueError names the file and the fix."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"data file {path} does not exist")
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as err:          # a text or pickle file, a truncated archive
        raise ValueError(f"{path} is not an npz archive of arrays (np.savez): {err}") from None
    if not hasattr(archive, "files"):
        raise ValueError(f"{path} holds a single array, not an npz archive with X, y and client (np.savez)")
    with archive as z:
        keys = [k for k in (CLIENT_KEY, *CLIENT_ALIASES) if k in z.files]
        missing = [k for k in ("X", "y") if k not in z.files] + ([] if keys else [CLIENT_KEY])
        if missing:
            raise ValueError(f"{path} lacks array(s) {missing}; it needs X (n, d), y (n,) and client (n,)")
        if len(keys) > 1:
            raise ValueError(f"{path} has both {keys[0]!r} and {keys[1]!r}; keep one array of client ids "
                             f"(named {CLIENT_KEY!r})")
        X, y, client = z["X"], z["y"], z[keys[0]].astype(np.int64)
        extra = {k: z[k] for k in ("X_test", "y_test") if k in z.files}
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{path}: X must be a non-empty 2-D array (n_samples, n_features); got shape {X.shape}")
    if y.ndim != 1 or client.ndim != 1:
        raise ValueError(f"{path}: y and client must be 1-D (n_samples,); got shapes {y.shape} and {client.shape}")
    if not (len(X) == len(y) == len(client)):
        raise ValueError(f"{path}: X, y and client must have the same length; got {len(X)}, {len(y)}, {len(client)}")
    for name, arr in (("X", X), ("y", y), *extra.items()):
        if np.issubdtype(np.asarray(arr).dtype, np.number) and not np.all(np.isfinite(arr)):
            bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
            raise ValueError(f"{path}: {name} has {bad} non-finite value(s) (NaN or inf); clean the data first")
    ids = np.unique(client)
    if ids[0] != 0 or ids[-1] != len(ids) - 1:
        raise ValueError(f"{path}: client ids must be 0..m-1 with every client non-empty; got {ids[:10]}...")
    return X, y, client, extra


def _found(y) -> str:
    values = np.unique(np.asarray(y))
    shown = ", ".join(f"{v:g}" if isinstance(v, (float, np.floating)) else str(v) for v in values[:10])
    return f"{len(values)} distinct value(s): {shown}{', ...' if len(values) > 10 else ''}"


def class_labels(y, path, problem: str, n_classes: int | None = None) -> np.ndarray:
    """``y`` of the user's npz ``path`` as integer class labels 0..C-1 (``C``: ``n_classes`` when given);
    anything else (fractional, negative, too large) is a ValueError naming the file and the labels found."""
    y = np.asarray(y)
    ok = y.size and np.issubdtype(y.dtype, np.number) and np.all(np.mod(y, 1) == 0) and y.min() >= 0 \
        and (n_classes is None or y.max() < n_classes)
    if not ok:
        upto = f"0..{n_classes - 1}" if n_classes else "0..C-1"
        raise ValueError(f"{path}: the {problem} problem needs integer class labels {upto} in y; found "
                         f"{_found(y)}; relabel y (e.g. np.unique(y, return_inverse=True)[1])")
    return y.astype(np.int64)


def binary_labels(y, path) -> np.ndarray:
    """``y`` of the user's npz ``path`` for a logistic problem: labels in {0, 1} ({-1, 1} is mapped
    -1 -> 0); anything else is a ValueError naming the file and the labels found."""
    y = np.asarray(y, dtype=float)
    if set(np.unique(y)) <= {-1.0, 1.0}:
        y = (y > 0).astype(float)
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError(f"{path}: a logistic problem needs labels y in {{0, 1}} (or {{-1, 1}}); found {_found(y)}; "
                         "map them to 0/1, or use loss: squared for regression targets")
    return y
