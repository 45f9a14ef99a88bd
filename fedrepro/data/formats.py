"""Parsers of the raw file formats the datasets come in: LIBSVM text (plain, .bz2, .gz),
IDX (MNIST / Fashion-MNIST, optionally gzipped) and CIFAR-10 binary batches. Pure functions of
bytes or a path; the dataset-specific loaders (:mod:`fedrepro.data.loaders`) build on them."""
from __future__ import annotations

import bz2
import gzip
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp


def parse_libsvm(raw: bytes, n_features: int | None = None) -> tuple[sp.csr_matrix, np.ndarray]:
    """Parse LIBSVM text ``label idx:val ...`` (1-based indices) without a Python loop over rows.

    Returns X (n_rows, n_features) CSR float64 with sorted indices and labels (n_rows,) float64.
    Blank lines are ignored; any other deviation (comments, ``qid``, bad tokens) raises ``ValueError``.
    """
    if not raw.endswith(b"\n"):
        raw += b"\n"
    buf = np.frombuffer(raw, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10)
    starts = np.r_[0, ends[:-1] + 1]
    visible = np.flatnonzero(~np.isin(buf, (9, 10, 13, 32)))
    nonblank = (np.searchsorted(visible, ends) - np.searchsorted(visible, starts)) > 0
    colons = np.flatnonzero(buf == 58)
    nnz = (np.searchsorted(colons, ends) - np.searchsorted(colons, starts))[nonblank]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        try:
            tokens = np.fromstring(raw.replace(b":", b" ").decode("ascii"), dtype=np.float64, sep=" ")
        except (DeprecationWarning, ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"malformed LIBSVM data: {exc}") from None
    per_row = 1 + 2 * nnz
    if tokens.size != per_row.sum():
        raise ValueError(f"malformed LIBSVM data: {tokens.size} numbers, expected {per_row.sum()}")
    is_label = np.zeros(tokens.size, dtype=bool)
    is_label[np.r_[0, np.cumsum(per_row)[:-1]].astype(np.int64)] = True
    pairs = tokens[~is_label].reshape(-1, 2)
    idx = pairs[:, 0].astype(np.int64)
    if (idx != pairs[:, 0]).any() or (idx < 1).any():
        raise ValueError("malformed LIBSVM data: feature indices must be integers >= 1")
    n_features = int(idx.max()) if n_features is None and idx.size else int(n_features or 0)
    if idx.size and idx.max() > n_features:
        raise ValueError(f"feature index {idx.max()} exceeds n_features={n_features}")
    X = sp.csr_matrix((pairs[:, 1], idx - 1, np.r_[0, np.cumsum(nnz)]), shape=(nnz.size, n_features))
    X.sum_duplicates()
    X.sort_indices()
    return X, tokens[is_label]


def read_libsvm(path, n_features: int | None = None) -> tuple[sp.csr_matrix, np.ndarray]:
    """:func:`parse_libsvm` of a plain, ``.bz2`` or ``.gz`` file."""
    path = Path(path)
    opener = {".bz2": bz2.open, ".gz": gzip.open}.get(path.suffix, open)
    with opener(path, "rb") as fh:
        return parse_libsvm(fh.read(), n_features)


def read_idx(path) -> np.ndarray:
    """Array stored in an IDX file (optionally gzipped): big-endian header, dims, then data."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        raw = fh.read()
    if raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"{path}: not an IDX file")
    dtypes = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
    ndim = raw[3]
    dims = np.frombuffer(raw, dtype=">u4", count=ndim, offset=4).astype(np.int64)
    dt = np.dtype(dtypes[raw[2]])
    arr = np.frombuffer(raw, dtype=dt, offset=4 + 4 * ndim)
    if arr.size != int(np.prod(dims)):
        raise ValueError(f"{path}: {arr.size} values, header says {tuple(dims)}")
    return arr.reshape(tuple(dims)).astype(dt.newbyteorder("="))


def read_cifar_bin(path) -> tuple[np.ndarray, np.ndarray]:
    """One binary batch: pixels uint8 (n, 3072) channel-major and labels int64 (n,)."""
    rec = np.fromfile(path, dtype=np.uint8)
    if rec.size % 3073:
        raise ValueError(f"{path}: size {rec.size} is not a multiple of 3073")
    rec = rec.reshape(-1, 3073)
    return rec[:, 1:], rec[:, 0].astype(np.int64)
