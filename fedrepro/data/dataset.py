"""The one processed-dataset format every loader produces and every experiment reads.

On disk a processed dataset is a folder ``<data_dir>/<key>/`` of uncompressed ``.npy`` arrays, each in
its own dtype, and ``dataset.json`` (name, meta, how X is stored, size of every array file), written last:
a folder without it is incomplete (see :meth:`Dataset.save`). Images keep their raw ``uint8`` pixels
(:class:`PixelArray`); X is memory-mapped on load, so a job reads only the rows it uses.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from fedrepro.core.kept import Kept


MANIFEST = "dataset.json"   # the file that makes a processed-dataset folder complete
FORMAT = 2                  # 1: one .npz per dataset (before issue #28), no longer read
# Dataset.load_shared: (path, size, mtime of the manifest) -> Dataset; the last 4 (memory-mapped: the
# pages held are the ones read)
_SHARED = Kept(4)


class PixelArray:
    """Images stored as their raw ``uint8`` pixels (n_samples, n_pixels), read as ``pixels / 255`` in
    ``dtype`` (``1 - pixels / 255`` when ``inverted``).

    Decoding runs the loaders' own arithmetic on the rows asked for (``x = pixels.astype(dtype);
    x /= 255``), so every value equals the one the whole-array conversion gives, bit for bit.
    ``X[rows]`` decodes only those rows; ``np.asarray(X)`` decodes all of them.
    """

    def __init__(self, pixels: np.ndarray, dtype=np.float64, inverted: bool = False):
        if pixels.dtype != np.uint8 or pixels.ndim != 2:
            raise ValueError(f"PixelArray needs a 2-D uint8 array, got {pixels.dtype} of shape {pixels.shape}")
        self.pixels, self.dtype, self.inverted = pixels, np.dtype(dtype), bool(inverted)

    shape = property(lambda self: self.pixels.shape)
    ndim = 2

    def __len__(self) -> int:
        return self.pixels.shape[0]

    def _decode(self, pixels) -> np.ndarray:
        x = np.asarray(pixels).astype(self.dtype)
        x /= 255
        return 1.0 - x if self.inverted else x

    def __getitem__(self, key):
        return self._decode(self.pixels[key])

    def __array__(self, dtype=None, copy=None):
        x = self._decode(self.pixels)
        return x if dtype is None else x.astype(dtype, copy=False)

    def __repr__(self) -> str:
        return (f"PixelArray({self.shape[0]}x{self.shape[1]} uint8 -> {self.dtype.name}"
                f"{', inverted' if self.inverted else ''})")


def processed_path(data_dir, key: str) -> Path:
    """The folder of processed dataset ``key`` (``name`` or ``name-variant``) in ``data_dir``;
    a ValueError naming the build command when it is missing or incomplete."""
    path = Path(data_dir) / key
    if not (path / MANIFEST).is_file():
        old = Path(data_dir) / f"{key}.npz"
        hint = (f"; {old} is the format before issue #28 and is no longer read (delete it)" if old.exists()
                else "")
        raise ValueError(f"processed dataset {key!r} not found: {path}/{MANIFEST} does not exist; build it with "
                         f"`snakemake data/processed/{key}/{MANIFEST}` (or fedrepro.data.load_dataset("
                         f"{key.split('-')[0]!r}, ...).save(path)){hint}")
    return path


@dataclass
class Dataset:
    """A processed dataset.

    Attributes
    ----------
    name : str
        Registry name, e.g. ``"adult"``.
    X : ndarray of shape (n_samples, n_features), scipy.sparse.csr_matrix or :class:`PixelArray`
        Features. Sparse datasets (real-sim, QSAR .mat) stay sparse; images are a
        :class:`PixelArray` (``X[rows]`` and ``np.asarray(X)`` are float ndarrays).
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
        """Write the folder ``path``: one ``.npy`` per array, then :data:`MANIFEST`.

        Written into ``<path>.partial`` and renamed into place, so a folder with a manifest is
        always complete; an existing ``path`` is replaced. Sparse X is stored as CSR parts,
        a :class:`PixelArray` as its uint8 pixels."""
        path = Path(path)
        if path.suffix == ".npz":
            raise ValueError(f"{path}: a processed dataset is a folder of .npy files now (issue #28), not an .npz")
        arrays = {"y": np.asarray(self.y)}
        if isinstance(self.X, PixelArray):
            arrays["X"] = self.X.pixels
            x_format = {"kind": "pixels", "dtype": self.X.dtype.name, "inverted": self.X.inverted}
        elif self.is_sparse:
            X = sp.csr_matrix(self.X)
            arrays.update(X_data=X.data, X_indices=X.indices, X_indptr=X.indptr)
            x_format = {"kind": "csr", "shape": list(X.shape)}
        else:
            arrays["X"] = np.asarray(self.X)
            x_format = {"kind": "dense"}
        if self.split is not None:
            arrays["split"] = np.asarray(self.split, dtype=str)
        for k, v in self.groups.items():
            arrays[f"group_{k}"] = np.asarray(v)
        tmp = path.with_name(path.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        files = {}
        for key, arr in arrays.items():
            np.save(tmp / f"{key}.npy", arr, allow_pickle=False)
            files[key] = (tmp / f"{key}.npy").stat().st_size
        manifest = {"format": FORMAT, "name": self.name, "X": x_format, "bytes": files, "meta": self.meta}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, default=str) + "\n")
        old = path.with_name(path.name + ".old.partial")
        if path.exists():
            shutil.rmtree(old, ignore_errors=True)
            os.replace(path, old)
        os.replace(tmp, path)
        shutil.rmtree(old, ignore_errors=True)

    @classmethod
    def load_shared(cls, path: str | os.PathLike) -> "Dataset":
        """:meth:`load`, kept for the next call with the same folder (the cells of one Snakemake job
        read the same data; a job whose cells alternate between datasets keeps the last
        ``_SHARED.size``). The arrays are read-only; the folder is re-read when its manifest's size or
        modification time changes (the older version is dropped)."""
        path = Path(path)
        st = (path / MANIFEST).stat()
        key = (str(path.resolve()), st.st_size, st.st_mtime_ns)

        def load():
            data = cls.load(path)
            X = data.X.pixels if isinstance(data.X, PixelArray) else data.X
            for arr in (X, data.y, data.split, *data.groups.values()):
                if isinstance(arr, np.ndarray):
                    arr.flags.writeable = False
            return data

        return _SHARED.get(key, load, stale=lambda k: k[0] == key[0])

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Dataset":
        """The dataset in folder ``path`` (written by :meth:`save`). Dense X and pixels are memory-mapped
        copy-on-write (writable; the file never changes), the other arrays are read into memory."""
        path = Path(path)
        manifest_path = path / MANIFEST
        if not manifest_path.is_file():
            raise FileNotFoundError(
                f"{path}: not a processed dataset (no {MANIFEST})"
                + ("; .npz files are the format before issue #28 and are no longer read: rebuild it with "
                   f"`snakemake data/processed/{path.stem}/{MANIFEST}`" if path.suffix == ".npz" else ""))
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("format") != FORMAT:
            raise ValueError(f"{path}: processed format {manifest.get('format')!r}, expected {FORMAT}; rebuild it")

        def array(key, mmap=False):
            file = path / f"{key}.npy"
            size = file.stat().st_size if file.is_file() else None
            if size != manifest["bytes"][key]:
                raise ValueError(f"{file}: {size} bytes, the manifest says {manifest['bytes'][key]}; rebuild it")
            return np.asarray(np.load(file, mmap_mode="c" if mmap else None, allow_pickle=False))

        x_format = manifest["X"]
        if x_format["kind"] == "pixels":
            X = PixelArray(array("X", mmap=True), x_format["dtype"], x_format["inverted"])
        elif x_format["kind"] == "csr":
            X = sp.csr_matrix((array("X_data"), array("X_indices"), array("X_indptr")), shape=tuple(x_format["shape"]))
        else:
            X = array("X", mmap=True)
        groups = {k[len("group_"):]: array(k) for k in manifest["bytes"] if k.startswith("group_")}
        split = array("split") if "split" in manifest["bytes"] else None
        return cls(manifest["name"], X, array("y"), split, groups, manifest["meta"])
