"""Per-client stores: dense vs lazy vs memmap give the same numbers; store 'auto'; memory estimates."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fedrepro.algorithms import make_algorithm
from fedrepro.algorithms.base import UNDECLARED_CLIENT_VECTORS, client_vectors
from fedrepro.core.store import (DenseStore, LazyStore, make_store, resident_bytes, resolve_store, run_memory_bytes,
                                 store_bytes)
from fedrepro.experiments.resources import cell_memory_mb
from fedrepro.sim.loop import simulate
from tests.test_neural_problem import toy
from tests.toys import LocalGD, Quadratic


def _ops(store, rng):
    """The same sequence of writes/reads on any store; returns everything read."""
    out = []
    for _ in range(6):
        ids = np.sort(rng.choice(store.m, 4, replace=False))
        store[ids] = store[ids] + rng.normal(size=(4, store.dim))
        out.append(store[ids].copy())
    store[3] = np.arange(store.dim)
    out += [store[3].copy(), store.to_array().copy(), store.sum(), store.weighted_sum(np.linspace(0, 1, store.m))]
    return out


@pytest.mark.parametrize("fill", [0.0, 1.5])
def test_dense_lazy_memmap_equivalent(fill, tmp_path):
    m, dim = 30, 7
    ref = _ops(DenseStore(m, dim, dtype=np.float32, fill=fill), np.random.default_rng(0))
    for store in (LazyStore(m, dim, fill=fill), LazyStore(m, dim, fill=fill, path=tmp_path / "rows.npy"),
                  make_store("memmap", m, dim, fill=fill)):
        got = _ops(store, np.random.default_rng(0))
        for a, b in zip(ref[:-2], got[:-2]):
            np.testing.assert_array_equal(a, b)                  # same dtype: exactly equal
        for a, b in zip(ref[-2:], got[-2:]):
            np.testing.assert_allclose(a, b, rtol=1e-6)          # reductions: accumulation order
    d64 = _ops(DenseStore(m, dim, fill=fill), np.random.default_rng(0))   # float64 vs float32 rows
    for a, b in zip(d64, ref):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_memmap_path_growth_and_nbytes(tmp_path):
    path = tmp_path / "rows.npy"
    s = LazyStore(100, 5, path=path)
    assert path.exists() and s.nbytes == 0 and s.written == 0
    s[[0, 1]] = 1.0
    assert s.nbytes == 2 * 5 * 4
    s[np.arange(2, 50)] = np.arange(48)[:, None]                  # grows the file, keeps rows
    assert s.written == 50 and s.nbytes == 50 * 5 * 4
    np.testing.assert_array_equal(s[[0, 1, 49, 99]], [[1.0] * 5, [1.0] * 5, [47.0] * 5, [0.0] * 5])
    assert np.load(path, mmap_mode="r").shape == (100, 5)       # all m rows from the start
    big = LazyStore(200, 100_000, path=tmp_path / "big.npy")      # 80 MB logical: a sparse file
    big[[3, 7]] = 1.0
    assert big.nbytes == 2 * 100_000 * 4
    assert (tmp_path / "big.npy").stat().st_size >= 200 * 100_000 * 4
    assert (tmp_path / "big.npy").stat().st_blocks * 512 < 8 * 100_000 * 4     # only written pages on disk
    tmp = make_store("memmap", 10, 3)
    assert Path(tmp._path).exists() and tmp.dtype == np.float32
    assert DenseStore(4, 3).nbytes == store_bytes("dense", 4, 3) == 96
    assert store_bytes("memmap", 4, 3) == 48 and resident_bytes("memmap", 4, 3) == 0
    with pytest.raises(ValueError, match="not allowed"):
        make_store("auto", 3, 3)


def _final(problem, algo, store, **kw):
    return simulate(problem, algo, k0=2, rho=0.5, max_rounds=6, seed=3, store=store, **kw)


def test_same_run_same_numbers_on_every_store():
    q = Quadratic.random(m=10, dim=6)
    dense = _final(q, LocalGD(step=0.5), "dense")
    lazy = _final(q, LocalGD(step=0.5), "lazy")
    mm = _final(q, LocalGD(step=0.5), "memmap")
    np.testing.assert_array_equal(lazy.w, mm.w)                   # both float32 rows: identical
    np.testing.assert_allclose(dense.w, lazy.w, rtol=1e-5, atol=1e-5)
    assert mm.info["store"] == "memmap" and "store" not in dense.info
    # a neural problem with an algorithm keeping two per-client stores (FedEPM harness)
    p = toy()
    runs = {s: _final(p, make_algorithm("sfedavg"), s, metrics=["objective"]) for s in ("dense", "lazy", "memmap")}
    np.testing.assert_array_equal(runs["lazy"].w, runs["memmap"].w)
    scale = np.abs(runs["dense"].w).max()                         # float32 rounding relative to the model
    assert np.abs(runs["dense"].w - runs["lazy"].w).max() <= 1e-5 * scale


def test_store_auto_resolves_from_the_budget():
    assert resolve_store("auto", 1000, 1_663_370, 2, budget_mb=4096) == "memmap"     # 26.6 GB float64
    assert resolve_store("auto", 100, 199_210, 2, budget_mb=4096) == "dense"         # 319 MB
    assert resolve_store("auto", 100, 199_210, 0, budget_mb=1e-9) == "dense"        # keeps no stores
    assert resolve_store("lazy", 1, 1, 99) == "lazy"
    with pytest.raises(ValueError, match="not allowed"):
        resolve_store("ram", 1, 1, 1)
    q = Quadratic.random(m=10, dim=6)
    small = _final(q, LocalGD(step=0.5), "auto", store_budget_mb=1e-4)               # 3 x 480 bytes > 104
    big = _final(q, LocalGD(step=0.5), "auto")
    assert small.info["store"] == "memmap" and "store" not in big.info
    np.testing.assert_array_equal(big.w, _final(q, LocalGD(step=0.5), "dense").w)
    with pytest.raises(ValueError, match="store_budget_mb"):
        _final(q, LocalGD(step=0.5), "auto", store_budget_mb=0)


def test_client_vectors_declared_or_conservative():
    assert client_vectors(make_algorithm("fedavg_sgd")) == 0
    assert client_vectors(LocalGD) == UNDECLARED_CLIENT_VECTORS


def test_memory_estimate_and_cell_mem_mb():
    mb = 2**20
    est = run_memory_bytes(m=1000, dim=1_663_370, vectors=2, clients_per_round=100, store="dense")
    assert est > 2 * 1000 * 1_663_370 * 8
    assert run_memory_bytes(m=1000, dim=1_663_370, vectors=2, clients_per_round=100, store="auto") < 3000 * mb
    cnn = {"name": "neural", "model": "cnn1", "dataset": "mnist", "m": 1000}
    dense = cell_memory_mb({"problem": cnn, "algorithm": "fedadmm", "rho": 0.1, "store": "dense"})
    auto = cell_memory_mb({"problem": cnn, "algorithm": "fedadmm", "rho": 0.1, "store": "auto"})
    assert dense > 3 * 1000 * 1_663_370 * 8 / mb and auto < 4500
    mlp = cell_memory_mb({"problem": {"name": "neural", "model": "mlp1", "m": 100}, "algorithm": "fedavg_sgd",
                          "rho": 0.1})
    data = 70000 * (784 * 4 + 8) / mb
    assert data + 1024 < mlp < 2500
    # other problems keep their formula
    cell = {"problem": {"name": "logreg", "m": 100, "n": 50}, "algorithm": "fedadmm"}
    assert cell_memory_mb(cell) == int(min(64000, 1000 + 8 * 6 * 100 * 100 * 150 / 2**20))


def test_client_store_dtype_and_kind_from_the_context():
    from fedrepro.core.context import RunContext

    assert RunContext(store="dense").client_store(3, 4).dtype == np.float64
    assert RunContext(store="dense").client_store(3, 4, dtype=np.float32).dtype == np.float32
    s = RunContext(store="memmap").client_store(3, 4, fill=2.0)
    assert isinstance(s, LazyStore) and s._path is not None and (s[[0, 2]] == 2.0).all()
