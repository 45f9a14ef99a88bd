"""Parsers of the raw file formats the datasets come in: LIBSVM text (plain, .bz2, .gz),
IDX (MNIST / Fashion-MNIST, optionally gzipped) and CIFAR-10 binary batches. Pure functions of
bytes or a path; the dataset-specific loaders (:mod:`fedrepro.data.loaders`) build on them."""
from __future__ import annotations

import bz2
import gzip
import io
from pathlib import Path

import numpy as np
import scipy.sparse as sp


def parse_libsvm(raw: bytes, n_features: int | None = None) -> tuple[sp.csr_matrix, np.ndarray]:
    """Parse LIBSVM text ``label idx:val ...`` (1-based indices, ascending within a row) with
    scikit-learn's compiled reader (:func:`sklearn.datasets.load_svmlight_file`).

    Returns X (n_rows, n_features) CSR float64 with sorted indices and labels (n_rows,) float64;
    ``n_features`` defaults to the largest index in the data (0 when there is none). Blank lines
    are ignored; any other deviation (comments, ``qid``, an index 0, non-integer or repeated
    indices, indices out of order, bad tokens, an index above ``n_features``) raises ``ValueError``
    naming it. (Until issue #44 a hand-written numpy parser did this; tests/test_data_loaders.py
    keeps it as the reference the arrays are compared with, element for element.)
    """
    from sklearn.datasets import load_svmlight_file

    for token, what in ((b"#", "a comment ('#')"), (b"qid:", "a query id ('qid:')")):
        if token in raw:        # scikit-learn would skip both silently; the datasets we read have neither
            raise ValueError(f"malformed LIBSVM data: {what} at byte {raw.index(token)}; plain "
                             "'label idx:val ...' lines are expected")
    try:        # n_features 0 (no feature may appear) is checked below: scikit-learn wants >= 1
        X, labels = load_svmlight_file(io.BytesIO(raw), n_features=n_features or None, dtype=np.float64,
                                       zero_based=False)
    except ValueError as exc:
        raise ValueError(f"malformed LIBSVM data: {exc}") from None
    if X.nnz and n_features is not None and X.indices.max() >= n_features:
        raise ValueError(f"feature index {X.indices.max() + 1} exceeds n_features={n_features}")
    width = int(n_features) if n_features is not None else (int(X.indices.max()) + 1 if X.nnz else 0)
    # scikit-learn pads the width to at least 1; rebuilding through scipy also gives its index dtype
    X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width))
    X.sort_indices()
    return X, np.asarray(labels, dtype=np.float64)


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
