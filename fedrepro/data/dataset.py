"""The one processed-dataset format every loader produces and every experiment reads."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp


_SHARED: dict = {}          # Dataset.load_shared: (path, size, mtime) -> Dataset


@dataclass
class Dataset:
    """A processed dataset.

    Attributes
    ----------
    name : str
        Registry name, e.g. ``"adult"``.
    X : ndarray of shape (n_samples, n_features) or scipy.sparse.csr_matrix
        Features. Sparse datasets (real-sim, QSAR .mat) stay sparse.
    y : ndarray of shape (n_samples,)
        Labels (int for classification, float for regression).
    split : ndarray of shape (n_samples,) of str, optional
        ``"train"`` / ``"test"`` per sample (``None``: all train).
    groups : dict[str, ndarray of shape (n_samples,)]
        Natural groupings such as ``{"participant": ..., "location": ...}``.
    meta : dict
        Free-form facts (source files, preprocessing, licence, citation).
    """

    name: str
    X: object
    y: np.ndarray
    split: np.ndarray | None = None
    groups: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        n = self.X.shape[0]
        if len(self.y) != n:
            raise ValueError(f"dataset {self.name!r}: X has {n} rows but y has {len(self.y)}")
        if self.split is not None and len(self.split) != n:
            raise ValueError(f"dataset {self.name!r}: split has {len(self.split)} entries, expected {n}")
        for key, g in self.groups.items():
            if len(g) != n:
                raise ValueError(f"dataset {self.name!r}: group {key!r} has {len(g)} entries, expected {n}")

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def is_sparse(self) -> bool:
        return sp.issparse(self.X)

    def subset(self, which: str) -> "Dataset":
        """Rows whose ``split`` equals ``which`` (all rows when there is no split)."""
        if self.split is None:
            return self
        idx = np.flatnonzero(self.split == which)
        if len(idx) and idx[-1] - idx[0] + 1 == len(idx):     # contiguous rows: a view, no copy
            idx = slice(int(idx[0]), int(idx[-1]) + 1)
        return Dataset(self.name, self.X[idx], self.y[idx], self.split[idx],
                       {k: v[idx] for k, v in self.groups.items()}, dict(self.meta))

    def save(self, path: str | os.PathLike) -> None:
        """Write atomically to ``path`` (``.npz``); sparse X is stored as CSR parts."""
        import json

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {"y": self.y, "meta": np.array(json.dumps(self.meta, default=str))}
        if self.is_sparse:
            X = sp.csr_matrix(self.X)
            arrays.update(X_data=X.data, X_indices=X.indices, X_indptr=X.indptr,
                          X_shape=np.array(X.shape))
        else:
            arrays["X"] = np.asarray(self.X)
        if self.split is not None:
            arrays["split"] = np.asarray(self.split, dtype=str)
        for k, v in self.groups.items():
            arrays[f"group_{k}"] = np.asarray(v)
        tmp = path.with_name(path.name + ".partial.npz")
        np.savez(tmp, name=np.array(self.name), **arrays)
        os.replace(tmp, path)

    @classmethod
    def load_shared(cls, path: str | os.PathLike) -> "Dataset":
        """:meth:`load`, kept for the next call with the same file (one dataset per process: the
        cells of one Snakemake job read the same file). The arrays are read-only; the file is
        re-read when its size or modification time changes."""
        path = Path(path)
        st = path.stat()
        key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
        hit = _SHARED.get(key)
        if hit is None:
            hit = cls.load(path)
            for arr in (hit.X, hit.y, hit.split, *hit.groups.values()):
                if isinstance(arr, np.ndarray):
                    arr.flags.writeable = False
            _SHARED.clear()
            _SHARED[key] = hit
        return hit

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Dataset":
        import json

        with np.load(path, allow_pickle=False) as z:
            if "X" in z:
                X = z["X"]
            else:
                X = sp.csr_matrix((z["X_data"], z["X_indices"], z["X_indptr"]), shape=tuple(z["X_shape"]))
            groups = {k[len("group_"):]: z[k] for k in z.files if k.startswith("group_")}
            split = z["split"] if "split" in z else None
            return cls(str(z["name"]), X, z["y"], split, groups, json.loads(str(z["meta"])))
