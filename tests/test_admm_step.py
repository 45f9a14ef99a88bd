"""FedADMM's compiled local step (fedrepro.algorithms.ops.admm_step) against its numpy expressions."""
import numpy as np
import pytest

from fedrepro.algorithms import make_algorithm
from fedrepro.algorithms.ops import admm_step
from fedrepro.core import threads
from fedrepro.problems.glm import LinearModelProblem, build_linreg_synthetic
from fedrepro.sim.loop import simulate


def _numpy_step(w, pi, gw, a, sg, thr):
    """The numpy expressions of FedADMM.local_step's first inner step (inner_check="code")."""
    E = pi + gw
    V = E / (a[:, None] + sg[:, None])
    np.subtract(w, V, out=V)
    res = (a / (a + sg)) ** 2 * np.einsum("ij,ij->i", E, E)
    done = res < thr
    D = np.subtract(V, w)
    D *= sg[:, None]
    pi = pi.copy()
    pi[done] += D[done]
    return V, done, pi


@pytest.mark.parametrize("n", [1, 7, 64])
def test_first_step_equals_numpy_bitwise(n):
    rng = np.random.default_rng(n)
    k = 9
    w, pi, gw = rng.standard_normal(n), rng.standard_normal((k, n)), rng.standard_normal((k, n))
    a, sg = rng.uniform(0.5, 2, k), rng.uniform(0.1, 1, k)
    E = pi + gw
    res = (a / (a + sg)) ** 2 * np.einsum("ij,ij->i", E, E)
    thr = res * np.where(np.arange(k) % 2 == 0, 2.0, 0.5)        # half the clients pass the test
    V0, done0, pi0 = _numpy_step(w, pi, gw, a, sg, thr)
    pi1 = pi.copy()
    V1, done1 = admm_step.first_step(w, pi1, gw, a, sg, thr)
    assert np.array_equal(done0, done1) and done1.sum() == (k + 1) // 2
    assert np.array_equal(V0, V1)
    assert np.array_equal(pi0, pi1)                              # done rows updated, the others untouched


def test_nan_propagates():
    pi = np.array([[np.nan, 1.0]])
    V, done = admm_step.first_step(np.zeros(2), pi, np.zeros((1, 2)), np.ones(1), np.ones(1), np.full(1, 1e300))
    assert np.isnan(V[0, 0]) and not done[0]


def test_accepts_only_float64_contiguous():
    x = np.zeros((3, 4))
    assert admm_step.accepts(x, x, np.zeros(4))
    assert not admm_step.accepts(x.astype(np.float32), x, np.zeros(4))
    assert not admm_step.accepts(np.zeros((4, 3)).T, x, np.zeros(4))


def _logistic(seed=0, N=800, n=30, m=40):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, m, N)
    ids[:m] = np.arange(m)
    return LinearModelProblem(rng.standard_normal((N, n)), (rng.random(N) < 0.4).astype(float), ids,
                              loss="logistic", lam=1e-2)


@pytest.mark.parametrize("build", [lambda: build_linreg_synthetic({"m": 40, "n": 30}, 0), _logistic],
                         ids=["linreg", "logreg"])
@pytest.mark.parametrize("kappa_max", [1, 3])
def test_runs_equal_numpy_path(build, kappa_max, monkeypatch):
    """Whole FedADMM runs: compiled step vs the numpy path give the same bits (1 and 2 threads)."""
    p = build()
    alg = make_algorithm("fedadmm", kappa_max=kappa_max, eps0=1e-9)   # small eps0: some clients need step 2+
    runs = {}
    before = threads.kernel_threads()
    try:
        for t in (1, 2):
            threads.set_kernel_threads(min(t, threads.numba.config.NUMBA_NUM_THREADS))
            runs[t] = simulate(p, alg, k0=5, rho=0.5, max_rounds=8, seed=1)
    finally:
        threads.set_kernel_threads(before)
    monkeypatch.setattr(admm_step, "accepts", lambda *a: False)
    ref = simulate(p, alg, k0=5, rho=0.5, max_rounds=8, seed=1)
    for res in runs.values():
        assert np.array_equal(res.w, ref.w)
        assert [r["objective"] for r in res.trace] == [r["objective"] for r in ref.trace]
    assert ref.final["n_grad_evals"] > 8 * 20 or kappa_max == 1     # the later inner steps did run
