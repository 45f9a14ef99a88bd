"""Per-client state: one vector per client (client models, duals, stored uploads ...).

Algorithms keep every per-client quantity in a :class:`ClientStore` made by
:meth:`fedrepro.core.context.RunContext.client_store`, never in a raw (m, dim) array, so the run
decides how it is held:

* ``"dense"`` (default): one in-memory (m, dim) array -- what the convex problems use;
* ``"lazy"``: rows exist only once written (unwritten rows read as the fill row), optionally in
  float32 and backed by a memory-mapped file -- for neural models with many clients, where
  m x dim float64 would not fit (e.g. 1000 clients x 1.66 M parameters = 13 GB);
* ``"memmap"``: a lazy float32 store whose rows live in a temporary memory-mapped file;
* ``"auto"`` (a run setting, resolved by :func:`resolve_store` before the run): dense when the
  algorithm's per-client stores fit the run's budget (``store_budget_mb``), else memmap.

Indexing follows numpy: ``store[clients]`` is a (len(clients), dim) array (a view for a slice of
a dense store, a copy otherwise), ``store[clients] = rows`` writes. Reductions over all clients
(:meth:`sum`, :meth:`weighted_sum`, :meth:`to_array`) are methods, so a lazy store can stream them.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

STORE_KINDS = ("dense", "lazy", "memmap")          # what make_store builds
RUN_STORE_KINDS = STORE_KINDS + ("auto",)          # what a run may ask for
DEFAULT_STORE_BUDGET_MB = 4096                     # "auto": dense while the stores fit this


class ClientStore:
    """Interface: m rows of length dim, row i belonging to client i."""

    m: int
    dim: int
    dtype: np.dtype

    @property
    def shape(self) -> tuple[int, int]:
        return (self.m, self.dim)

    def __len__(self) -> int:
        return self.m

    def __getitem__(self, clients) -> np.ndarray:
        raise NotImplementedError

    def __setitem__(self, clients, rows) -> None:
        raise NotImplementedError

    def sum(self) -> np.ndarray:
        """sum_i x_i, shape (dim,)."""
        raise NotImplementedError

    def weighted_sum(self, weights: np.ndarray) -> np.ndarray:
        """sum_i weights_i x_i, shape (dim,)."""
        raise NotImplementedError

    def to_array(self) -> np.ndarray:
        """All rows as one (m, dim) array."""
        raise NotImplementedError

    @property
    def nbytes(self) -> int:
        raise NotImplementedError


class DenseStore(ClientStore):
    """All rows in one (m, dim) array (``to_array`` returns it, not a copy)."""

    def __init__(self, m: int, dim: int, dtype=np.float64, fill: float | np.ndarray = 0.0):
        self.m, self.dim, self.dtype = int(m), int(dim), np.dtype(dtype)
        self._a = np.zeros((self.m, self.dim), dtype=self.dtype)
        if np.any(fill != 0):
            self._a[:] = fill

    @classmethod
    def from_array(cls, array: np.ndarray) -> "DenseStore":
        """A store holding ``array`` (m, dim) itself (no copy)."""
        store = cls.__new__(cls)
        store._a = array
        store.m, store.dim = array.shape
        store.dtype = array.dtype
        return store

    def __getitem__(self, clients):
        return self._a[clients]

    def __setitem__(self, clients, rows):
        self._a[clients] = rows

    def sum(self):
        return self._a.sum(axis=0)

    def weighted_sum(self, weights):
        return weights @ self._a

    def to_array(self):
        return self._a

    @property
    def nbytes(self):
        return self._a.nbytes


class LazyStore(ClientStore):
    """Rows allocated when first written; an unwritten row reads as ``fill`` (a scalar or a
    (dim,) row, e.g. the initial model). ``path``: back the written rows by a memory-mapped file
    (created in a temporary directory when ``path="temp"``) instead of RAM.

    Memory: ``nbytes`` counts the written rows (``written * dim * itemsize``).
    """

    def __init__(self, m: int, dim: int, dtype=np.float32, fill: float | np.ndarray = 0.0,
                 path: str | Path | None = None):
        self.m, self.dim, self.dtype = int(m), int(dim), np.dtype(dtype)
        fill = np.asarray(fill, dtype=self.dtype)
        if fill.shape not in ((), (self.dim,)):
            raise ValueError(f"LazyStore: fill must be a scalar or a ({self.dim},) row, got shape {fill.shape}")
        self._fill = np.broadcast_to(fill, (self.dim,))
        self._slot = np.full(self.m, -1, dtype=np.int64)      # client -> row of _rows, -1 unwritten
        self._count = 0
        self._tmp = None
        if path == "temp":
            self._tmp = tempfile.TemporaryDirectory(prefix="fedrepro-store-")
            path = Path(self._tmp.name) / "rows.f"
        self._path = None if path is None else Path(path)
        # a file holds all m rows from the start: a sparse file (only written rows take disk), so
        # the store never grows by copying written rows through memory
        self._rows = self._allocate(self.m if self._path is not None else min(self.m, 8))

    def _allocate(self, n_rows: int) -> np.ndarray:
        if self._path is None:
            return np.empty((n_rows, self.dim), dtype=self.dtype)
        return np.lib.format.open_memmap(self._path, mode="w+", dtype=self.dtype, shape=(n_rows, self.dim))

    def _grow(self, need: int) -> None:
        if need <= len(self._rows):                        # always so for a file-backed store
            return
        n_rows = min(self.m, max(need, 2 * len(self._rows)))
        rows = self._allocate(n_rows)
        rows[:self._count] = self._rows[:self._count]
        self._rows = rows

    def _ids(self, clients) -> np.ndarray:
        return np.arange(self.m)[clients] if isinstance(clients, slice) else np.atleast_1d(np.asarray(clients))

    def __getitem__(self, clients):
        ids = self._ids(clients)
        out = np.empty((len(ids), self.dim), dtype=self.dtype)
        slots = self._slot[ids]
        have = slots >= 0
        out[have] = self._rows[slots[have]]
        out[~have] = self._fill
        if np.isscalar(clients) or (isinstance(clients, np.ndarray) and clients.ndim == 0):
            return out[0]
        return out

    def __setitem__(self, clients, rows):
        ids = self._ids(clients)
        new = np.unique(ids[self._slot[ids] < 0])
        if len(new):
            self._grow(self._count + len(new))
            self._slot[new] = np.arange(self._count, self._count + len(new))
            self._count += len(new)
        self._rows[self._slot[ids]] = np.broadcast_to(np.asarray(rows, dtype=self.dtype), (len(ids), self.dim))

    def _chunks(self, rows: int = 256):
        for a in range(0, self.m, rows):
            yield a, self[slice(a, min(a + rows, self.m))]

    def sum(self):
        out = np.zeros(self.dim, dtype=np.float64)
        for _, block in self._chunks():
            out += block.sum(axis=0, dtype=np.float64)
        return out

    def weighted_sum(self, weights):
        weights = np.asarray(weights, dtype=np.float64)
        out = np.zeros(self.dim, dtype=np.float64)
        for a, block in self._chunks():
            out += weights[a:a + len(block)] @ block
        return out

    def to_array(self):
        return self[slice(None)]

    @property
    def written(self) -> int:
        """Clients whose row has been written."""
        return self._count

    @property
    def nbytes(self):
        return self._count * self.dim * self.dtype.itemsize


def make_store(kind: str, m: int, dim: int, *, dtype=None, fill=0.0, path=None) -> ClientStore:
    """A store of the named kind (:data:`STORE_KINDS`); dense defaults to float64, lazy and memmap
    to float32 (memmap: a LazyStore backed by a file, ``path`` or a temporary one)."""
    if kind == "dense":
        return DenseStore(m, dim, dtype=np.float64 if dtype is None else dtype, fill=fill)
    if kind in ("lazy", "memmap"):
        if kind == "memmap" and path is None:
            path = "temp"
        return LazyStore(m, dim, dtype=np.float32 if dtype is None else dtype, fill=fill, path=path)
    raise ValueError(f"client state store {kind!r} is not allowed; choose one of {list(STORE_KINDS)}")


def store_bytes(kind: str, m: int, dim: int, rows_written: int | None = None, dtype=None) -> int:
    """Size of one store's rows: dense m*dim*itemsize; lazy/memmap rows_written*dim*itemsize
    (default: all m rows, the bound after every client has taken part). For memmap these bytes
    are on disk (page cache the kernel can drop), not resident memory: see :func:`resident_bytes`."""
    itemsize = np.dtype((np.float64 if kind == "dense" else np.float32) if dtype is None else dtype).itemsize
    rows = m if kind == "dense" or rows_written is None else min(int(rows_written), m)
    return rows * int(dim) * itemsize


def resident_bytes(kind: str, m: int, dim: int, rows_written: int | None = None, dtype=None) -> int:
    """Resident memory of one store: :func:`store_bytes`, except a memmap store (file-backed: 0)."""
    return 0 if kind == "memmap" else store_bytes(kind, m, dim, rows_written, dtype)


def resolve_store(kind: str, m: int, dim: int, vectors: int, budget_mb: float = DEFAULT_STORE_BUDGET_MB) -> str:
    """The concrete store kind of a run: ``kind`` itself, or for ``"auto"`` ``"dense"`` when
    ``vectors`` dense (m, dim) float64 stores fit in ``budget_mb`` MiB, else ``"memmap"``."""
    if kind not in RUN_STORE_KINDS:
        raise ValueError(f"client state store {kind!r} is not allowed; choose one of {list(RUN_STORE_KINDS)}")
    if kind != "auto":
        return kind
    return "dense" if int(vectors) * store_bytes("dense", m, dim) <= float(budget_mb) * 2**20 else "memmap"


def run_memory_bytes(*, m: int, dim: int, vectors: int, clients_per_round: int, data_bytes: int = 0,
                     workspace_bytes: int = 0, store: str = "auto", budget_mb: float = DEFAULT_STORE_BUDGET_MB,
                     model_copies: int = 8) -> int:
    """Resident-memory estimate of one run: data + per-client stores (the kind ``store`` resolves
    to, every row written) + the round's uploads (clients_per_round x dim float32, twice: uploads
    and their perturbed copy) + ``model_copies`` float64 model vectors (global, local, gradient,
    momentum, aggregate ...) + the model's workspace."""
    kind = resolve_store(store, m, dim, vectors, budget_mb)
    stores = int(vectors) * resident_bytes(kind, m, dim)
    uploads = 2 * int(clients_per_round) * int(dim) * 4
    return int(data_bytes) + stores + uploads + int(model_copies) * int(dim) * 8 + int(workspace_bytes)
