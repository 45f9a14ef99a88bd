"""The synchronous baselines of aspire spec 002 (fedavg_steps §3.5, afl §3.6, drfa_prox §3.7,
individual §3.4) on the synchronous loop: each update by hand on the same minibatch indices, the
simplex projection against an exact enumeration, the virtual clock of DRFA's two phases, determinism
and the parameter checks."""
import itertools

import numpy as np
import pytest

from fedrepro.algorithms import make_algorithm
from fedrepro.algorithms.ops.simplex import project_simplex, prox_simplex_quadratic
from fedrepro.core.rng import stream
from fedrepro.sim.delays import DelayTable
from fedrepro.sim.loop import simulate
from tests.toys import worker_blobs

N, C, D = 4, 3, 6
SEED = 3


def _problem(seed=0, n=(40, 30, 25, 12), init="torch"):
    """N Gaussian-blob workers, worker j mostly class j % C, noisier with j; worker 3 has fewer
    samples than a minibatch of 16 (b = min(B, n_j))."""
    return worker_blobs(list(n), [10] * N, n_classes=C, dim=D, seed=seed, noise_growth=0.7, init=init)


def _batch(prob, purpose, r, j, b):
    """The minibatch rule by hand: min(b, n_j) samples without replacement from (purpose, r, j)."""
    part = prob.parts[j]
    if b >= part.size:
        return part
    return part[stream(SEED, purpose, r, j).choice(part.size, b, replace=False)]


def _w0(prob):
    return prob.init_params(stream(SEED, "init"))


def _run(prob, name, rounds=3, **params):
    return simulate(prob, make_algorithm(name, **params), max_rounds=rounds, seed=SEED, eval_every=1)


def _lam(record):
    return np.array([record[f"lambda_{j}"] for j in range(N)])


# ---------------------------------------------------------------- simplex projection
def _brute_projection(v):
    """Exact: over every support S, the projection onto the affine hull {u_S sums to 1, u_rest = 0};
    the closest feasible candidate."""
    best, best_d = None, np.inf
    for k in range(1, v.size + 1):
        for S in itertools.combinations(range(v.size), k):
            S = list(S)
            u = np.zeros_like(v)
            u[S] = v[S] - (v[S].sum() - 1.0) / k
            if u.min() >= -1e-12 and np.sum((u - v) ** 2) < best_d:
                best, best_d = u, np.sum((u - v) ** 2)
    return best


def test_simplex_projection_is_exact():
    rng = np.random.default_rng(0)
    for trial in range(60):
        v = rng.normal(size=rng.integers(1, 7)) * rng.choice([0.1, 1.0, 5.0])
        u = project_simplex(v)
        assert u.min() >= 0 and abs(u.sum() - 1) < 1e-12
        np.testing.assert_allclose(u, _brute_projection(v), atol=1e-12)
    q = np.array([0.1, 0.2, 0.3, 0.4])
    np.testing.assert_allclose(project_simplex(q), q, atol=1e-15)          # points of the simplex stay
    # larger vectors: the KKT conditions of the projection (u = max(v - theta, 0) with one theta)
    v = rng.normal(size=50)
    u = project_simplex(v)
    theta = (v - u)[u > 0]
    assert np.ptp(theta) < 1e-12 and np.all(v[u == 0] <= theta[0] + 1e-12)


def test_prox_step_is_the_regularized_argmax():
    from scipy.optimize import minimize

    rng = np.random.default_rng(1)
    for c in (0.0, 0.3, 5.0):
        y, q = rng.normal(size=5), project_simplex(rng.uniform(size=5))
        u = prox_simplex_quadratic(y, q, c)
        obj = lambda x: 0.5 * c * np.sum((x - q) ** 2) + 0.5 * np.sum((y - x) ** 2)      # noqa: E731
        ref = minimize(obj, np.full(5, 0.2), method="SLSQP", bounds=[(0, 1)] * 5, tol=1e-14,
                       constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}]).x
        np.testing.assert_allclose(u, ref, atol=1e-6)
    np.testing.assert_array_equal(prox_simplex_quadratic(y, q, 0.0), project_simplex(y))


# ---------------------------------------------------------------- fedavg_steps
def _local_steps(prob, w, j, r, steps, lr, B, alpha1=np.inf, snapshot_at=None):
    """tau SGD steps of worker j by hand (one minibatch stream per (round, worker), a draw per step)."""
    w = w.copy()
    rng = stream(SEED, "minibatch", r, j)
    part = prob.parts[j]
    snap = None
    for s in range(1, steps + 1):
        idx = part if B >= part.size else part[rng.choice(part.size, B, replace=False)]
        _, g = prob.batch_loss_grad(w, idx)
        w = np.clip(w - np.float32(lr) * g, -alpha1, alpha1).astype(np.float32)
        if s == snapshot_at:
            snap = w.copy()
    return (w, snap) if snapshot_at else w


def test_fedavg_steps_round_by_hand_and_box_projection():
    prob = _problem()
    res = _run(prob, "fedavg_steps", rounds=2, lr=0.1, B=16, local_steps=3)
    w = _w0(prob)
    for r in range(2):
        w = np.mean([_local_steps(prob, w, j, r, 3, 0.1, 16) for j in range(N)], axis=0).astype(np.float32)
    np.testing.assert_allclose(res.w, w, rtol=1e-5, atol=1e-6)
    assert res.trace[-1]["local_steps"] == 2 * N * 3
    # prior weights
    q = [0.1, 0.2, 0.3, 0.4]
    res_q = _run(prob, "fedavg_steps", rounds=1, lr=0.1, B=16, local_steps=3, weights="prior", prior=q)
    ref = sum(qj * _local_steps(prob, _w0(prob), j, 0, 3, 0.1, 16) for j, qj in enumerate(q))
    np.testing.assert_allclose(res_q.w, ref, rtol=1e-5, atol=1e-6)
    # a small box binds: every coordinate within +-alpha1, some on the bound, unlike without it
    tight = _run(prob, "fedavg_steps", rounds=2, lr=0.5, B=16, local_steps=3, alpha1=0.05)
    assert np.abs(tight.w).max() <= 0.05 + 1e-7 and np.isclose(np.abs(tight.w), 0.05).any()
    free = _run(prob, "fedavg_steps", rounds=2, lr=0.5, B=16, local_steps=3)
    assert np.abs(free.w).max() > 0.05


# ---------------------------------------------------------------- afl
def test_afl_without_lambda_step_is_uniform_gradient_descent():
    prob = _problem()
    res = _run(prob, "afl", rounds=4, lr=0.2, B=16, gamma_lambda=0.0)
    w = _w0(prob)
    for r in range(4):
        g = np.mean([prob.batch_loss_grad(w, _batch(prob, "minibatch", r, j, 16))[1] for j in range(N)], axis=0)
        w = (w - 0.2 * g).astype(np.float32)
    np.testing.assert_allclose(res.w, w, rtol=1e-5, atol=1e-6)
    for rec in res.trace:
        np.testing.assert_array_equal(_lam(rec), np.full(N, 1 / N))


def test_afl_lambda_moves_to_the_largest_loss_and_stays_on_the_simplex():
    prob = _problem()
    res = _run(prob, "afl", rounds=1, lr=0.2, B=16, B_loss=20, gamma_lambda=0.05)
    w0 = _w0(prob)
    F = np.array([prob.batch_loss(w0, _batch(prob, "loss_batch", 0, j, 20)) for j in range(N)])
    lam1 = _lam(res.trace[-1])
    np.testing.assert_allclose(lam1, project_simplex(np.full(N, 1 / N) + 0.05 * F), atol=1e-12)
    assert np.argmax(lam1) == np.argmax(F) and lam1[np.argmax(F)] > 1 / N
    long = _run(prob, "afl", rounds=25, lr=0.2, B=16, gamma_lambda=0.5)
    for rec in long.trace:
        lam = _lam(rec)
        assert lam.min() >= 0 and abs(lam.sum() - 1) < 1e-12
        assert rec["lambda_max"] == lam.max() and rec["lambda_last"] == lam[-1]
    # the weight goes to the worker that uniform weights leave worst off, and the worst loss drops
    uniform = _run(prob, "afl", rounds=25, lr=0.2, B=16, gamma_lambda=0.0).trace[-1]
    worst = int(np.argmax([uniform[f"loss_worker_{j}"] for j in range(N)]))
    assert np.argmax(_lam(long.trace[-1])) == worst
    assert long.trace[-1]["loss_w"] < uniform["loss_w"] - 0.05
    # options: floor keeps every weight >= floor; averaging evaluates the mean of the iterates
    floored = _run(prob, "afl", rounds=10, lr=0.2, B=16, gamma_lambda=0.5, lambda_floor=0.01)
    assert min(_lam(r).min() for r in floored.trace) >= 0.01 - 1e-12
    assert all(abs(_lam(r).sum() - 1) < 1e-12 for r in floored.trace)
    assert np.isclose(_lam(floored.trace[-1]).min(), 0.01)               # the floor binds
    avg = _run(prob, "afl", rounds=3, lr=0.2, B=16, gamma_lambda=0.0, average_iterates=True)
    its = [_run(prob, "afl", rounds=k, lr=0.2, B=16, gamma_lambda=0.0).w for k in range(4)]
    np.testing.assert_allclose(avg.w, np.mean(its, axis=0), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- drfa_prox
def test_drfa_prox_expected_round_by_hand():
    prob = _problem()
    q = np.array([0.4, 0.3, 0.2, 0.1])
    tau, lr, B, B_loss, gamma, mu = 3, 0.1, 16, 20, 0.05, 2.0
    res = _run(prob, "drfa_prox", rounds=1, lr=lr, B=B, B_loss=B_loss, local_steps=tau, gamma=gamma, mu=mu,
               prior=q.tolist(), alpha1=0.3)
    np.testing.assert_array_equal(_lam(res.trace[0]), q)
    tp = int(stream(SEED, "drfa_tprime", 0).integers(1, tau + 1))
    outs = [_local_steps(prob, _w0(prob), j, 0, tau, lr, B, alpha1=0.3, snapshot_at=tp) for j in range(N)]
    w1 = sum(q[j] * outs[j][0].astype(np.float64) for j in range(N))
    wbar = sum(q[j] * outs[j][1].astype(np.float64) for j in range(N)).astype(np.float32)
    F = np.array([prob.batch_loss(wbar, _batch(prob, "loss_batch", 0, j, B_loss)) for j in range(N)])
    y = q + gamma * tau * F
    c = gamma * tau * mu
    lam1 = project_simplex((y + c * q) / (1 + c))
    np.testing.assert_allclose(res.w, w1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_lam(res.trace[1]), lam1, atol=1e-12)
    # mu = 0 is plain DRFA: lambda^1 = Proj(lambda^0 + gamma tau v)
    plain = _run(prob, "drfa_prox", rounds=1, lr=lr, B=B, B_loss=B_loss, local_steps=tau, gamma=gamma, mu=0.0,
                 prior=q.tolist(), alpha1=0.3)
    np.testing.assert_allclose(_lam(plain.trace[1]), project_simplex(y), atol=1e-12)
    np.testing.assert_array_equal(plain.w, res.w)          # the model phase does not depend on mu


def test_drfa_prox_large_mu_keeps_the_prior_and_sampled_mode_runs():
    prob = _problem()
    q = [0.1, 0.2, 0.3, 0.4]
    res = _run(prob, "drfa_prox", rounds=6, B=16, local_steps=2, gamma=0.5, mu=1e6, prior=q)
    for rec in res.trace:
        np.testing.assert_allclose(_lam(rec), q, atol=1e-5)
    loose = _run(prob, "drfa_prox", rounds=6, B=16, local_steps=2, gamma=0.5, mu=0.0, prior=q)
    assert np.abs(_lam(loose.trace[-1]) - q).max() > 0.05
    sampled = _run(prob, "drfa_prox", rounds=6, B=16, local_steps=2, gamma=0.5, participation="sampled", m=2)
    for rec in sampled.trace:
        assert _lam(rec).min() >= 0 and abs(_lam(rec).sum() - 1) < 1e-12
    assert sampled.trace[-1]["local_steps"] <= 6 * 2 * 2      # at most m distinct workers, tau steps each


def test_drfa_virtual_clock_is_model_phase_max_plus_loss_phase_max():
    from fedrepro.algorithms.drfa_prox import DRFAProx

    phases = []

    class Spy(DRFAProx):
        def round_phases(self, state, ctx, clients, r):
            out = super().round_phases(state, ctx, clients, r)
            phases.append([(np.array(w).copy(), n) for w, n in out])
            return out

    prob = _problem()
    rng = np.random.default_rng(5)
    table = rng.uniform(0.5, 3.0, size=(N, 6))
    alg = Spy(B=16, local_steps=2, gamma=0.5, participation="sampled", m=2)
    res = simulate(prob, alg, max_rounds=5, seed=SEED, eval_every=1, delays=DelayTable([list(t) for t in table]))
    total = 0.0
    for r, rec in enumerate(res.trace):
        assert rec["virtual_time"] == pytest.approx(total, rel=1e-12)
        if r < len(phases):
            (D1, tau), (U, one) = phases[r]
            assert tau == 2 and one == 1 and 1 <= D1.size <= 2 and U.size == 2
            total += table[D1, r].max() + table[U, r].max()
    # expected participation: both phases are all workers
    res = simulate(prob, DRFAProx(B=16, local_steps=2), max_rounds=2, seed=SEED,
                   delays=DelayTable([list(t) for t in table]))
    assert res.trace[-1]["virtual_time"] == pytest.approx(2 * table[:, 0].max() + 2 * table[:, 1].max())


# ---------------------------------------------------------------- individual
def test_individual_touches_only_its_worker():
    prob = _problem()
    seen = []
    inner = prob.batch_loss_grad

    def spy(w, idx, rng=None, out=None):
        seen.append(np.array(idx))
        return inner(w, idx, rng=rng, out=out)

    prob.batch_loss_grad = spy
    res = simulate(prob, make_algorithm("individual", worker=2, lr=0.1, B=8), max_rounds=5, seed=SEED,
                   delays=DelayTable([[1.0], [2.0], [0.5], [4.0]]))
    assert len(seen) == 5 and all(np.isin(i, prob.parts[2]).all() for i in seen)
    w = _w0(prob)
    for r in range(5):
        w = _local_steps(prob, w, 2, r, 1, 0.1, 8)
    np.testing.assert_allclose(res.w, w, rtol=1e-5, atol=1e-6)
    assert res.trace[-1]["virtual_time"] == pytest.approx(5 * 0.5)      # worker 2's jobs only
    assert "acc_worker_0" in res.trace[-1]                                # scored on every worker


# ---------------------------------------------------------------- determinism and checks
@pytest.mark.parametrize("name,params", [("afl", {"gamma_lambda": 0.3}),
                                         ("drfa_prox", {"participation": "sampled", "m": 3}),
                                         ("fedavg_steps", {}), ("individual", {"worker": 1})])
def test_same_seed_same_trace(name, params):
    prob = _problem()
    clocks = ("wall_time", "cpu_time", "local_time", "local_cpu_time")

    def trace(seed):
        res = simulate(prob, make_algorithm(name, B=16, **params), max_rounds=3, seed=seed)
        return [{k: v for k, v in r.items() if k not in clocks} for r in res.trace], res.w

    (t1, w1), (t2, w2), (t3, w3) = trace(4), trace(4), trace(5)
    assert t1 == t2 and np.array_equal(w1, w2)
    assert not np.array_equal(w1, w3)


def test_bad_parameters_fail_before_the_run():
    with pytest.raises(ValueError, match="gamma_lambda"):
        make_algorithm("afl", gamma_lambda=-0.1)
    with pytest.raises(ValueError, match="gamma"):
        make_algorithm("drfa_prox", gamma=-1)
    with pytest.raises(ValueError, match="sum to 1"):
        make_algorithm("drfa_prox", prior=[0.5, 0.2, 0.2, 0.2])
    with pytest.raises(ValueError, match="non-negative"):
        make_algorithm("afl", prior=[1.5, -0.5])
    with pytest.raises(ValueError, match="weights='prior'"):
        make_algorithm("fedavg_steps", prior=[0.5, 0.5])
    with pytest.raises(ValueError, match="participation"):
        make_algorithm("drfa_prox", participation="all")
    prob = _problem()
    for name in ("afl", "drfa_prox"):
        with pytest.raises(ValueError, match="3 entries but the problem has 4 workers"):
            simulate(prob, make_algorithm(name, prior=[0.2, 0.3, 0.5]), max_rounds=1)
    with pytest.raises(ValueError, match="rho = 1"):
        simulate(prob, make_algorithm("afl"), max_rounds=1, rho=0.5)
    with pytest.raises(ValueError, match="m <= 4"):
        simulate(prob, make_algorithm("drfa_prox", participation="sampled", m=5), max_rounds=1)
    with pytest.raises(ValueError, match="leave m out"):
        simulate(prob, make_algorithm("drfa_prox", m=2), max_rounds=1)
    with pytest.raises(ValueError, match="worker=7"):
        simulate(prob, make_algorithm("individual", worker=7), max_rounds=1)
    with pytest.raises(ValueError, match="lambda_floor"):
        simulate(prob, make_algorithm("afl", lambda_floor=0.3), max_rounds=1)
