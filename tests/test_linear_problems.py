"""LinearModelProblem: gradients, Lipschitz constants, dense vs sparse, generators, builders."""
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from fedrepro.problems import build_problem
from fedrepro.problems.glm import LinearModelProblem, build_linreg_synthetic, logreg_from_arrays

QSAR = Path("/work/shared/datasets/qsar_oral_toxicity")


def _data(loss, seed=0, N=400, n=15, m=6, density=0.4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, n))
    X[rng.random((N, n)) > density] = 0.0
    X[:3] = 0.0                                       # empty rows (sparse segment sums)
    X[-2:] = 0.0
    ids = rng.permutation(np.arange(N) % m)
    y = rng.standard_normal(N) if loss == "squared" else (rng.random(N) < 0.3).astype(float)
    return X, y, ids


def _ref_loss(X, y, ids, loss, lam_i, i, w):
    A, b = X[ids == i], y[ids == i]
    z = A @ w
    val = 0.5 * (z - b) ** 2 if loss == "squared" else np.logaddexp(0, z) - b * z
    return val.mean() + 0.5 * lam_i * w @ w


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("reg", ["mean", "per_sample"])
def test_losses_grads_dense_sparse_finite_differences(loss, reg):
    X, y, ids = _data(loss)
    m, n = 6, X.shape[1]
    P = LinearModelProblem(X, y, ids, loss=loss, lam=0.05, reg_scaling=reg)
    Q = LinearModelProblem(sp.csr_matrix(X), y, ids, loss=loss, lam=0.05, reg_scaling=reg)
    sizes = np.bincount(ids)
    lam_i = 0.05 / sizes if reg == "per_sample" else np.full(m, 0.05)
    rng = np.random.default_rng(1)
    w = 0.3 * rng.standard_normal(n)
    cl = np.array([4, 0, 3])
    W = 0.3 * rng.standard_normal((3, n))
    ref = np.array([_ref_loss(X, y, ids, loss, lam_i[i], i, w) for i in range(m)])
    for prob in (P, Q):
        np.testing.assert_allclose(prob.client_losses(w), ref, rtol=1e-12)
        np.testing.assert_allclose(prob.client_losses(W, cl),
                                   [_ref_loss(X, y, ids, loss, lam_i[i], i, W[j]) for j, i in enumerate(cl)],
                                   rtol=1e-12)
        G = prob.client_grads(W, cl)
        h = 1e-6
        for j, i in enumerate(cl):
            fd = [(_ref_loss(X, y, ids, loss, lam_i[i], i, W[j] + h * e)
                   - _ref_loss(X, y, ids, loss, lam_i[i], i, W[j] - h * e)) / (2 * h) for e in np.eye(n)]
            np.testing.assert_allclose(G[j], fd, atol=1e-7)
        ev = prob.evaluate(w)
        assert ev["objective"] == pytest.approx(ref.mean(), rel=1e-12)
        np.testing.assert_allclose(prob.gradient(w), prob.client_grads(w).mean(axis=0), atol=1e-14)
        assert ev["grad_norm2"] == pytest.approx(float(prob.gradient(w) @ prob.gradient(w)), rel=1e-10)
        if loss == "logistic":
            assert ev["accuracy"] == pytest.approx(np.mean((X @ w > 0) == (y > 0.5)))
    # dense and sparse agree
    np.testing.assert_allclose(P.client_grads(W, cl), Q.client_grads(W, cl), atol=1e-14)
    np.testing.assert_allclose(P.lipschitz(), Q.lipschitz(), rtol=1e-10)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_lipschitz_exact(loss):
    X, y, ids = _data(loss, N=300, n=40, m=5)         # some clients with d_i > n, some < n? (60 rows vs 40)
    P = LinearModelProblem(X, y, ids, loss=loss, lam=0.01)
    r = P.lipschitz()
    for i in range(5):
        A = X[ids == i]
        lmax = np.linalg.eigvalsh(A.T @ A)[-1] / len(A)
        expect = lmax + 0.01 if loss == "squared" else lmax / 4 + 0.01
        assert r[i] == pytest.approx(expect, rel=1e-10)
    # gradient-Lipschitz inequality on random pairs
    rng = np.random.default_rng(3)
    for _ in range(5):
        U, V = rng.standard_normal((5, 40)), rng.standard_normal((5, 40))
        dg = np.linalg.norm(P.client_grads(U) - P.client_grads(V), axis=1)
        assert np.all(dg <= r * np.linalg.norm(U - V, axis=1) * (1 + 1e-10))
    code = LinearModelProblem(X, y, ids, loss="logistic", lam=0.01, lipschitz_rule="code") \
        if loss == "logistic" else None
    if code is not None:
        sizes = np.bincount(ids)
        np.testing.assert_allclose(code.lipschitz(), (r - 0.01) * 4 / 5 + 0.01 / sizes, rtol=1e-10)


def test_wide_clients_lipschitz_small_gram():
    """d_i < n uses A_i A_i^T; padding rows must not change the result."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((90, 60))
    ids = np.repeat([0, 1, 2], [20, 30, 40])
    P = LinearModelProblem(X, rng.standard_normal(90), ids)
    for i, (a, b) in enumerate([(0, 20), (20, 50), (50, 90)]):
        A = X[a:b]
        assert P.lipschitz()[i] == pytest.approx(np.linalg.eigvalsh(A @ A.T)[-1] / len(A), rel=1e-10)


def test_client_ids_formats_and_weights():
    X, y, ids = _data("squared")
    parts = [np.flatnonzero(ids == i) for i in range(6)]
    A = LinearModelProblem(X, y, ids)
    B = LinearModelProblem(X, y, parts, weights=np.ones(6))
    w = np.ones(X.shape[1]) * 0.1
    np.testing.assert_allclose(A.client_losses(w), B.client_losses(w))
    assert B.objective(w) == pytest.approx(6 * A.objective(w))


def test_exact_least_squares_solution():
    X, y, ids = _data("squared", density=1.0)
    P = LinearModelProblem(X, y, ids)
    w = P.solve_exact()
    assert P.evaluate(w)["grad_norm2"] < 1e-24
    Q = LinearModelProblem(sp.csr_matrix(X), y, ids)
    np.testing.assert_allclose(Q.solve_exact(), w, atol=1e-10)


def test_bad_arguments_rejected():
    X, y, ids = _data("squared")
    with pytest.raises(ValueError, match="loss"):
        LinearModelProblem(X, y, ids, loss="hinge")
    with pytest.raises(ValueError, match="reg_scaling"):
        LinearModelProblem(X, y, ids, reg_scaling="sum")
    with pytest.raises(ValueError, match="labels"):
        LinearModelProblem(X, y, ids, loss="logistic")
    with pytest.raises(ValueError, match="generator"):
        build_linreg_synthetic({"m": 5, "n": 3, "generator": "matlab"}, 0)


def test_synthetic_generator_example51():
    spec = {"name": "linreg_synthetic", "m": 40, "n": 30}
    P = build_problem(spec, 7)
    Q = build_problem(spec, 7)
    assert P.m == 40 and P.dim == 30
    assert P.client_sizes.min() >= 50 and P.client_sizes.max() <= 150
    w = np.linspace(-1, 1, 30)
    assert P.objective(w) == Q.objective(w)                      # deterministic in the seed
    assert build_problem(spec, 8).objective(w) != P.objective(w)
    rows = np.concatenate([bk.X[bk.mask > 0] for bk in P._dense.buckets])
    d = len(rows)
    assert d == P.client_sizes.sum()
    # uniform rows are bounded by 5 and make up d - 2 ceil(d/3) rows: count rows with max |a| <= 5
    # exactly equal to uniform-type is not identifiable, but the sample variance of the mixture is
    # (1 + 5/3 + 25/3)/3 = 3.67
    assert 3.2 < rows.var() < 4.2
    C = build_problem({**spec, "generator": "code"}, 7)
    rows_c = np.concatenate([bk.X[bk.mask > 0] for bk in C._dense.buckets])
    assert 0.9 < rows_c.var() < 1.6                               # essentially N(0, 1)


@pytest.mark.skipif(not (QSAR / "toxicity.mat").exists(), reason="QSAR mirror file absent")
def test_qsar_problem_facts():
    import scipy.io as sio

    X = sio.loadmat(QSAR / "toxicity.mat")["X"]
    y = sio.loadmat(QSAR / "toxicityclass.mat")["y"].ravel()
    P = logreg_from_arrays(X, y, {"m": 100, "lam": 1e-3}, 0, "qot")
    assert P.sparse and P.dim == 1024 and P.client_sizes.sum() == 8992
    assert P.client_sizes.min() > 0.025 * 8992 / 100
    r = P.lipschitz()
    assert np.all(r > 1e-3)


def test_build_linreg_from_arrays_and_npz(tmp_path):
    X, y, ids = _data("squared")
    path = tmp_path / "mine.npz"
    np.savez(path, X=X, y=y, client_ids=ids)
    A = build_problem({"name": "linreg", "X": X, "y": y, "client_ids": ids}, 0)
    B = build_problem({"name": "linreg", "data": str(path), "lam": 0.0}, 0)
    w = np.full(X.shape[1], 0.2)
    assert A.objective(w) == pytest.approx(B.objective(w))
    assert A.m == 6 and A.loss == "squared"
