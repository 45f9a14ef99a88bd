"""The row-fused GLM kernels (fedrepro.problems.glm_kernels) against the two-pass BLAS reference
(kernel="blas"): same numbers up to rounding, on dense and CSR data, both losses, one point per
client and a shared point, and the whole of a run."""
import numba
import numpy as np
import pytest
import scipy.sparse as sp

from fedrepro.algorithms import make_algorithm
from fedrepro.problems import build_problem, glm
from fedrepro.core import threads
from fedrepro.problems.glm import LinearModelProblem
from fedrepro.sim.loop import simulate

RTOL = 1e-12


def _data(seed=0, N=1500, n=300, m=12, sparse=False):
    rng = np.random.default_rng(seed)
    X = sp.random(N, n, density=0.05, random_state=seed, format="csr") if sparse else rng.standard_normal((N, n))
    y = (rng.random(N) < 0.4).astype(float)
    ids = rng.integers(0, m, N)
    ids[:m] = np.arange(m)                       # every client has a sample
    return X, y, ids


def _pair(loss, sparse, **kw):
    X, y, ids = _data(sparse=sparse)
    return tuple(LinearModelProblem(X, y, ids, loss=loss, kernel=k, **kw) for k in ("blas", "fused"))


def _close(a, b, rtol=RTOL):
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape
    scale = max(float(np.abs(a).max()), 1e-300)
    assert float(np.abs(a - b).max()) <= rtol * scale, (float(np.abs(a - b).max()) / scale)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("loss,kw", [("squared", {"lam": 0.0}), ("logistic", {"lam": 1e-2}),
                                     ("logistic", {"lam": 1e-2, "reg_scaling": "per_sample"})])
def test_fused_equals_blas(sparse, loss, kw):
    pb, pf = _pair(loss, sparse, **kw)
    rng = np.random.default_rng(1)
    w = rng.standard_normal(pb.dim) * 0.2
    S = np.array([7, 0, 3, 11, 5])                         # unsorted, several buckets
    W = rng.standard_normal((len(S), pb.dim)) * 0.2
    _close(pb.client_grads(W, S), pf.client_grads(W, S))
    _close(pb.client_losses(W, S), pf.client_losses(W, S))
    _close(pb.client_losses(w), pf.client_losses(w))
    _close(pb.gradient(w), pf.gradient(w))
    eb, ef = pb.evaluate(w), pf.evaluate(w)
    assert eb.keys() == ef.keys()
    for key in eb:
        _close(eb[key], ef[key])
    _close(pb.client_grads(w, S), pf.client_grads(w, S))   # after evaluate: the kept gradients


def test_not_kept_gradients_are_summed_in_slices(monkeypatch):
    """When the per-client gradients are too many to keep, the fused path sums them slice by slice."""
    pb, pf = _pair("logistic", False, lam=1e-3)
    w = np.random.default_rng(2).standard_normal(pb.dim) * 0.3
    ref = pb.gradient(w)
    monkeypatch.setattr(glm, "_KEEP_MAX", 3 * pf.dim)      # slices of 3 clients
    _close(ref, pf.gradient(w))
    _close(pb.objective(w), pf.objective(w))


def test_nan_propagates():
    """fastmath is limited to re-association: a NaN point gives NaN losses, so divergence is seen."""
    _, pf = _pair("logistic", False)
    W = np.zeros((2, pf.dim))
    W[1, 0] = np.nan
    losses = pf.client_losses(W, np.array([0, 1]))
    assert np.isfinite(losses[0]) and np.isnan(losses[1])
    assert np.isnan(pf.client_grads(W, np.array([0, 1]))[1]).all()


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="numba sees one core here (NUMBA_NUM_THREADS)")
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_threads_do_not_change_results(sparse):
    """The parallel kernels split the clients between threads; every client's sums are computed in
    the same order, so two threads give the same bits as one."""
    _, pf = _pair("logistic", sparse, lam=1e-2)
    rng = np.random.default_rng(3)
    S = np.arange(pf.m)
    W = rng.standard_normal((pf.m, pf.dim))
    before = threads.kernel_threads()
    try:
        threads.set_kernel_threads(1)
        one = pf.client_grads(W, S), pf.client_losses(W, S)
        threads.set_kernel_threads(2)
        two = pf.client_grads(W, S), pf.client_losses(W, S)
    finally:
        threads.set_kernel_threads(before)
    assert np.array_equal(one[0], two[0]) and np.array_equal(one[1], two[1])


@pytest.mark.parametrize("algorithm", ["fedadmm", "fedavg", "fedprox"])
def test_runs_agree_between_kernels(algorithm):
    """A whole run on a logistic problem: the traces of the two kernels agree to 1e-12."""
    X, y, ids = _data(N=2000, n=80, m=20)
    traces = []
    for kernel in ("blas", "fused"):
        p = LinearModelProblem(X, y, ids, loss="logistic", lam=1e-3, kernel=kernel)
        res = simulate(p, make_algorithm(algorithm), k0=5, rho=0.5, max_rounds=25, seed=4)
        traces.append([row["objective"] for row in res.trace])
    assert len(traces[0]) == len(traces[1]) > 20
    _close(traces[0], traces[1])


def test_kernel_key_is_validated():
    with pytest.raises(ValueError, match="kernel"):
        build_problem({"name": "linreg_synthetic", "m": 4, "n": 5, "kernel": "numba"}, 0)
    with pytest.raises(ValueError, match="kernel"):
        LinearModelProblem(*_data(N=50, n=3, m=2), kernel="fast")
    p = build_problem({"name": "linreg_synthetic", "m": 4, "n": 5, "kernel": "blas"}, 0)
    assert p.kernel == "blas" and p.describe()["kernel"] == "blas"
