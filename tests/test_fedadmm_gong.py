"""Gong, Li & Freris (ICDE 2022): FedADMM (Alg. 1, Options I/II, diagnostic aliasing) and the baselines
FedSGD, FedProx, SCAFFOLD on the local-epochs harness (spec 003 §3, §7 A-C).

Every update rule is checked against a hand-written reference of the spec's pseudo-code on a tiny
float64 MLP (the gradient oracle is the model's; the local solver, duals, messages, control variates
and server steps are written out here), and the paper's reduction FedADMM -> FedProx / FedAvg
(spec §7 A2) bit for bit on float32."""
from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest

from fedrepro.algorithms import local_epochs, make_algorithm
from fedrepro.algorithms.base import client_vectors
from fedrepro.core.context import RunContext
from fedrepro.core.rng import stream
from fedrepro.core.sampling import UniformSampler
from fedrepro.nn import ModelSpec, build_model, mlp
from fedrepro.problems import problem_class
from fedrepro.problems.neural import NeuralProblem
from fedrepro.algorithms.pairing import check_pairing
from fedrepro.sim.loop import simulate
from tests.toys import NumpySGD, Quadratic

SPEC = ModelSpec((4,), mlp((5,), 3), "torch", "softmax_ce")
GONG = ("fedadmm_gong", "fedprox_sgd", "fedsgd", "scaffold")


def tiny(sizes=(6, 9, 7), dtype=np.float64, seed=0) -> NeuralProblem:
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    X = rng.normal(size=(n, 4))
    y = X[:, :3].argmax(axis=1).astype(np.int64)
    parts = np.split(rng.permutation(n), np.cumsum(sizes)[:-1])
    return NeuralProblem(build_model(SPEC, dtype=dtype), X, y, parts)


def drive(alg, p, rounds, seed=0, rho=2 / 3):
    """The loop of fedrepro.sim.loop written out (no evaluation): returns (theta^rounds, state)."""
    ctx = RunContext(seed=seed, rho=rho, sampler=UniformSampler(p.m, rho, seed))
    state = alg.init(p, ctx)
    for r in range(rounds):
        state.w = alg.aggregate(state, p, ctx, r)
        S = ctx.clients(r)
        alg.receive(state, p, ctx, S, alg.client_update(state, p, ctx, S, r), r)
    return alg.aggregate(state, p, ctx, rounds), state


# ---- the reference: spec 003 §3 pseudo-code, written out ---------------------------------------
def grad(p, w, batch):
    return p.model.loss_and_grad(w, p.X[batch], p.y[batch])[1]


def local_sgd(p, c, start, epochs, B, lr, mu, extra, seed, t, once=False):
    """Epochs of minibatch SGD (batches: the problem's shuffles from ("minibatch", t, c); ``once``: the
    first epoch's batches in every epoch, Algorithm 1 line 17); momentum v <- mu v + g, w <- w - lr v,
    v = 0 at the start (§3 'Momentum'). Returns (w, number of steps)."""
    w, v, k = start.copy(), np.zeros_like(start), 0
    rng = stream(seed, "minibatch", t, c)
    batches = list(p.epoch_batches(rng, c, B, 1)) * int(epochs) if once else p.epoch_batches(rng, c, B, epochs)
    for batch in batches:
        g = grad(p, w, batch) + extra(w)
        v = mu * v + g
        w = w - lr * v
        k += 1
    return w, k


def epochs_of(seed, t, n, E, random):
    return stream(seed, "epochs", t).integers(1, E + 1, size=n) if random else np.full(n, E)


def ref_fedadmm(p, rounds, seed=0, rho_part=2 / 3, *, lr=0.1, mu=0.5, E=3, B="full", random=True,
                rho=lambda t: 0.5, eta=lambda t: 1.0, init="local", first_visit="global", order="ascending",
                once=False):
    """Spec §3.1 (Option I), §3.2 (Option II, sequential_shared); Delta_i by eq. (4) as written. ``order``
    ``random``: the selected clients train in a permutation drawn from ("client_order", t) (the early
    code's np.random.choice order), E_i drawn by training position."""
    theta = p.init_params(stream(seed, "init"))
    theta0 = theta.copy()
    W, Y = {}, defaultdict(lambda: np.zeros(p.dim))
    sampler = UniformSampler(p.m, rho_part, seed)
    for t in range(rounds):
        S = sampler(t)
        if order == "random":
            S = S[stream(seed, "client_order", t).permutation(len(S))]
        Ei = epochs_of(seed, t, len(S), E, random)
        deltas, prev = [], None
        for j, c in enumerate(S):
            if init == "local":
                start = W.get(c, theta0 if first_visit == "theta0" else theta)
            elif init == "global":
                start = theta
            else:
                start = theta if j == 0 else prev
            y_old = Y[c]
            w, _ = local_sgd(p, c, start, Ei[j], B, lr, mu, lambda w: y_old + rho(t) * (w - theta), seed, t, once)
            y_new = y_old + rho(t) * (w - theta)                                     # Alg. 1 line 24
            deltas.append((w + y_new / rho(t)) - (start + y_old / rho(t)))           # eq. (4)
            Y[c] = y_new
            if init == "local":
                W[c] = w
            prev = w
        theta = theta + eta(t) * np.mean(deltas, axis=0)                             # eq. (5)
    return theta, W, Y


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


# ---- FedADMM ---------------------------------------------------------------------------------
@pytest.mark.parametrize("init, first_visit, order", [("local", "global", None), ("local", "theta0", None),
                                                      ("global", "global", None),
                                                      ("sequential_shared", "global", None),
                                                      ("sequential_shared", "global", "ascending")])
def test_fedadmm_matches_algorithm_1_by_hand(init, first_visit, order):
    p = tiny()
    alg = make_algorithm("fedadmm_gong", lr=0.1, momentum=0.5, E=3, B="full", penalty=0.5, local_init=init,
                         first_visit_init=first_visit, **({} if order is None else {"client_order": order}))
    theta, st = drive(alg, p, rounds=4)
    eff = order or ("random" if init == "sequential_shared" else "ascending")
    ref, W, Y = ref_fedadmm(p, 4, rho=lambda t: 0.5, init=init, first_visit=first_visit, order=eff)
    close(theta, ref)
    assert set(Y) == {0, 1, 2}                                   # every client took part (not all every round)
    for c in Y:
        close(st.Y[c], Y[c])
        if init == "local":
            close(st.W[c], W[c])
    assert (st.W is None) == (init != "local")
    # the variants genuinely differ
    if init != "local" or first_visit != "global":
        assert not np.allclose(theta, ref_fedadmm(p, 4, rho=lambda t: 0.5)[0])


def test_algorithm_1_as_printed_makes_the_batches_once_and_takes_plain_sgd_steps():
    """Lines 17-23 of Algorithm 1: "create batches" once per ClientUpdate, then E_i epochs over them, each
    step w <- w - eta_i (grad + y_i + rho (w - theta)): batches: once, momentum 0 (the *_alg1 twins)."""
    p = tiny(sizes=(7, 9, 8))
    alg = make_algorithm("fedadmm_gong", lr=0.1, momentum=0.0, E=3, B=2, penalty=0.5, random_epochs=True,
                         batches="once")
    theta, st = drive(alg, p, rounds=3)
    ref, W, _ = ref_fedadmm(p, 3, lr=0.1, mu=0.0, E=3, B=2, rho=lambda t: 0.5, once=True)
    close(theta, ref)
    for c in W:
        close(st.W[c], W[c])
    # the per-epoch reshuffle (the default, PyTorch's shuffling loader) is another run
    assert not np.allclose(theta, ref_fedadmm(p, 3, lr=0.1, mu=0.0, E=3, B=2, rho=lambda t: 0.5)[0])
    # Option II (Fig. 8) runs the same printed lines from the global model theta^t
    alg2 = make_algorithm("fedadmm_gong", lr=0.1, momentum=0.0, E=3, B=2, penalty=0.5, random_epochs=True,
                          batches="once", local_init="global")
    ref2 = ref_fedadmm(p, 3, lr=0.1, mu=0.0, E=3, B=2, rho=lambda t: 0.5, init="global", once=True)[0]
    close(drive(alg2, p, rounds=3)[0], ref2)
    assert not np.allclose(ref2, ref)
    with pytest.raises(ValueError, match="batches"):
        make_algorithm("fedadmm_gong", batches="twice")


def test_early_code_client_order_is_its_own_random_stream():
    """sequential_shared trains the selected clients in a permutation from ("client_order", r): it
    differs from ascending order, is the same for the same seed, changes with the seed, leaves the
    selection unchanged, and the uploads/steps/epochs come back in the selected set's order."""
    p = tiny(sizes=(5, 6, 7, 8, 9, 10))
    alg = make_algorithm("fedadmm_gong", E=3, B=4, penalty=0.5, local_init="sequential_shared")
    asc = make_algorithm("fedadmm_gong", E=3, B=4, penalty=0.5, local_init="sequential_shared", client_order="ascending")
    assert alg.order == "random" and asc.order == "ascending"
    assert make_algorithm("fedadmm_gong").order == "ascending"
    orders = []
    for r in range(6):
        S = np.arange(6)
        perm = alg.training_order(RunContext(seed=3, rho=1.0), S, r)
        assert sorted(perm) == list(range(6))
        np.testing.assert_array_equal(perm, stream(3, "client_order", r).permutation(6))
        np.testing.assert_array_equal(perm, alg.training_order(RunContext(seed=3, rho=1.0), S, r))
        orders.append(tuple(perm))
    assert len(set(orders)) > 1 and any(o != tuple(range(6)) for o in orders)
    assert tuple(alg.training_order(RunContext(seed=4, rho=1.0), np.arange(6), 0)) != orders[0]
    th_r, st_r = drive(alg, p, rounds=3, seed=1, rho=0.5)
    th_a, st_a = drive(asc, p, rounds=3, seed=1, rho=0.5)
    assert not np.allclose(th_r, th_a)                              # the order changes the early code's result
    np.testing.assert_array_equal(drive(alg, p, rounds=3, seed=1, rho=0.5)[0], th_r)     # same config, same numbers
    np.testing.assert_array_equal(np.sort(st_r.order), st_r.senders)   # same selection, another order
    # Option I / II: the clients are independent; a random order is refused, not silently ignored
    for init in ("local", "global"):
        with pytest.raises(ValueError, match="client_order: random needs local_init: sequential_shared"):
            make_algorithm("fedadmm_gong", local_init=init, client_order="random")
    with pytest.raises(ValueError):
        make_algorithm("fedadmm_gong", local_init="sequential_shared", client_order="descending")


def test_early_code_fixed_epochs_option():
    """random_epochs: false runs E epochs for every client (the early code's --fixed 1); true draws E_i."""
    p = tiny(sizes=(8, 8, 8))
    fixed = make_algorithm("fedadmm_gong", E=3, B=4, local_init="sequential_shared", random_epochs=False)
    rand = make_algorithm("fedadmm_gong", E=3, B=4, local_init="sequential_shared", random_epochs=True)
    _, sf = drive(fixed, p, rounds=5, seed=2)
    assert (sf.epochs == 3).all() and (sf.steps == 3 * 2).all()
    seen = set()
    for seed in range(6):
        _, sr = drive(rand, p, rounds=1, seed=seed)
        seen |= set(int(e) for e in sr.epochs)
        np.testing.assert_array_equal(sr.steps, 2 * sr.epochs)       # steps follow each client's own E_i
    assert seen - {3} and seen <= {1, 2, 3}
    th_f, th_r = drive(fixed, p, rounds=3, seed=2)[0], drive(rand, p, rounds=3, seed=2)[0]
    assert not np.allclose(th_f, th_r)
    th_ref = ref_fedadmm(p, 3, seed=2, E=3, B=4, rho=lambda t: 0.01, random=False, init="sequential_shared",
                         order="random")[0]
    close(th_f, th_ref)


def test_fedadmm_minibatches_momentum_and_schedules_by_hand():
    """B < n_i (shuffled minibatches, last partial batch kept), rho and eta switching at round 2."""
    p = tiny()
    alg = make_algorithm("fedadmm_gong", lr=0.05, momentum=0.5, E=2, B=4, penalty=0.2, rho_2=1.5, rho_switch=2,
                         eta=1.0, eta_2=0.5, eta_switch=2)
    theta, _ = drive(alg, p, rounds=4)
    sched = lambda a, b: (lambda t: a if t < 2 else b)           # noqa: E731
    close(theta, ref_fedadmm(p, 4, lr=0.05, E=2, B=4, rho=sched(0.2, 1.5), eta=sched(1.0, 0.5))[0])
    # a switch one round late is a different run: the schedule acts at the round named
    late = ref_fedadmm(p, 4, lr=0.05, E=2, B=4, rho=lambda t: 0.2 if t < 3 else 1.5,
                       eta=lambda t: 1.0 if t < 3 else 0.5)[0]
    assert not np.allclose(theta, late)


def test_schedules_switch_at_the_named_round():
    alg = make_algorithm("fedadmm_gong", eta=1.0, eta_2=0.5, eta_switch=60, penalty=0.01, rho_2=0.1, rho_switch=3)
    assert [alg.eta_at(t) for t in (0, 59, 60, 99)] == [1.0, 1.0, 0.5, 0.5]
    assert [alg.prox_at(t) for t in (0, 2, 3, 4)] == [0.01, 0.01, 0.1, 0.1]
    plain = make_algorithm("fedadmm_gong", eta=1.5, penalty=0.02)
    assert {plain.eta_at(t) for t in range(200)} == {1.5} and {plain.prox_at(t) for t in range(200)} == {0.02}


def test_option_ii_message_is_twice_the_model_change_and_eta_half_averages_the_models():
    p = tiny()
    alg = make_algorithm("fedadmm_gong", local_init="global", eta=0.5, E=2, B="full", random_epochs=False)
    ctx = RunContext(seed=3, rho=2 / 3, sampler=UniformSampler(p.m, 2 / 3, 3))
    st = alg.init(p, ctx)
    st.w = alg.aggregate(st, p, ctx, 0)
    U = alg.client_update(st, p, ctx, np.array([0, 2]), 0)
    W = (st.w + U / 2)                                            # the returned local models
    alg.receive(st, p, ctx, np.array([0, 2]), U, 0)
    close(alg.aggregate(st, p, ctx, 1), W.mean(axis=0))          # spec §3.2: eta = 0.5 -> plain average
    for j, c in enumerate([0, 2]):
        w, _ = local_sgd(p, c, st.w, 2, "full", 0.1, 0.5, lambda w: 0.01 * (w - st.w), 3, 0)
        close(U[j], 2 * (w - st.w))


def test_tracking_invariant_with_eta_s_over_m_and_theta0_first_visits():
    """Spec §3.1: eta = |S|/m, w_i^0 = theta^0, y_i^0 = 0 => theta^t = (1/m) sum_i (w_i + y_i/rho)."""
    p = tiny(sizes=(6, 9, 7, 5, 8, 4))
    alg = make_algorithm("fedadmm_gong", eta=2 / 6, penalty=0.5, first_visit_init="theta0", E=2, B=3)
    for rounds in (1, 3, 5):
        theta, st = drive(alg, p, rounds, rho=2 / 6)
        close(theta, (st.W.to_array() + st.Y.to_array() / 0.5).mean(axis=0))
    theta, st = drive(make_algorithm("fedadmm_gong", eta=1.0, penalty=0.5, first_visit_init="theta0", E=2, B=3),
                      p, 3, rho=2 / 6)
    assert not np.allclose(theta, (st.W.to_array() + st.Y.to_array() / 0.5).mean(axis=0))   # eta = 1 extrapolates


# ---- the reduction of Section III-B (spec §7 A2), bit for bit ------------------------------------
def f32():
    return tiny(sizes=(6, 9, 7, 11), dtype=np.float32, seed=1)


def run(name, **kw):
    common = dict(lr=0.1, momentum=0.5, E=3, B=4)
    return simulate(f32(), make_algorithm(name, **{**common, **kw}), rho=0.5, max_rounds=5, seed=4,
                    metrics=["objective"])


def test_fedadmm_without_dual_option_ii_eta_1_is_fedprox_and_fedavg_bit_for_bit():
    admm = dict(local_init="global", dual_ascent=False, eta=1.0)
    prox = run("fedprox_sgd", mu=0.3, random_epochs=True, aggregation="unweighted")   # FedADMM-Gong's local solver
    same = run("fedadmm_gong", penalty=0.3, **admm)
    assert prox.w.dtype == np.float32 and np.array_equal(prox.w, same.w)
    assert [t["objective"] for t in prox.trace] == [t["objective"] for t in same.trace]
    avg = run("fedavg_sgd", aggregation="unweighted")
    same0 = run("fedadmm_gong", penalty=0.0, random_epochs=False, **admm)
    assert np.array_equal(avg.w, same0.w)
    # ... and only there: with the dual, with Option I, or with eta != 1 it is another algorithm
    for other in ({**admm, "dual_ascent": True}, {**admm, "local_init": "local"}, {**admm, "eta": 0.9}):
        assert not np.allclose(run("fedadmm_gong", penalty=0.3, **other).w, prox.w, atol=1e-4)
    assert not np.array_equal(prox.w, avg.w)


# ---- the one-pass local step (issue #28) against the numpy passes it replaced -------------------
def numpy_proximal(alg, state, problem, ctx, j, client, w, g):
    """FedProx's local_gradient before issue #28: g += rho_t (w - theta^t) in the model dtype."""
    if state.rho_now:
        tmp = w - state.w
        tmp *= w.dtype.type(state.rho_now)
        g += tmp


def numpy_augmented(alg, state, problem, ctx, j, client, w, g):
    """FedADMM-Gong's: the proximal term, then + y_i (the gradient of (3))."""
    numpy_proximal(alg, state, problem, ctx, j, client, w, g)
    if state.y_old is not None:
        g += state.y_old


def numpy_corrected(alg, state, problem, ctx, j, client, w, g):
    """SCAFFOLD's: g += c - c_i."""
    g += state.correction


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name, params, numpy_gradient", [
    ("fedadmm_gong", dict(local_init="local", momentum=0.9), numpy_augmented),         # Option I
    ("fedadmm_gong", dict(local_init="global", random_epochs=False), numpy_augmented),  # Option II
    ("fedadmm_gong", dict(local_init="sequential_shared", random_epochs=False, momentum=0.9),
     numpy_augmented),                                                                  # early code
    ("fedadmm_gong", dict(local_init="global", dual_ascent=False, rho_2=0.0, rho_switch=2), numpy_augmented),
    ("fedprox_sgd", dict(mu=0.7), numpy_proximal),
    ("fedprox_sgd", dict(mu=0.0, momentum=0.0), numpy_proximal),
    ("scaffold", dict(), numpy_corrected),
    ("scaffold", dict(momentum=0.9, K="fixed_50"), numpy_corrected),
    ("fedavg_sgd", dict(momentum=0.5), None),
])
def test_local_runs_equal_the_numpy_passes_bit_for_bit(monkeypatch, dtype, name, params, numpy_gradient):
    """Three rounds (E = 2 epochs of B = 4 on 11-17 samples: 3-10 steps per client) on a 323-parameter
    MLP (the kernel's vector body and remainder): the one-pass step (local_terms -> SGD.step) against
    the numpy passes it replaced (the hooks above + NumpySGD, patched into the same harness);
    np.array_equal on the model and every client store. Momentum 0.9 in some cases: buf * 0.5 is
    exact, so only there would a contraction of buf * mu + d to one FMA show."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(56, 4))
    y = X[:, :3].argmax(axis=1).astype(np.int64)
    parts = np.split(rng.permutation(56), np.cumsum((11, 17, 13, 15))[:-1])
    p = NeuralProblem(build_model(ModelSpec((4,), mlp((40,), 3), "torch", "softmax_ce"), dtype=dtype), X, y, parts)
    alg = make_algorithm(name, **{"lr": 0.1, "E": 2, "B": 4, **params})
    one_pass, st = drive(alg, p, 3, rho=3 / 4)
    cls = type(alg)
    monkeypatch.setattr(local_epochs, "SGD", NumpySGD)
    monkeypatch.setattr(cls, "local_terms", lambda self, *args: {})
    if numpy_gradient is not None:
        monkeypatch.setattr(cls, "local_gradient", numpy_gradient)
    numpy_run, ref = drive(alg, p, 3, rho=3 / 4)
    assert one_pass.dtype == dtype and np.array_equal(one_pass, numpy_run)
    assert not np.array_equal(one_pass, p.init_params(stream(0, "init")))
    for store in ("W", "Y", "C"):
        if getattr(st, store, None) is not None:
            assert np.array_equal(getattr(st, store).to_array(), getattr(ref, store).to_array()), store
    if name == "scaffold":
        assert np.array_equal(st.c, ref.c) and st.c.any()


# ---- FedProx, FedSGD -----------------------------------------------------------------------
@pytest.mark.parametrize("aggregation", ["unweighted", "data_size"])
def test_fedprox_by_hand(aggregation):
    p = tiny()
    alg = make_algorithm("fedprox_sgd", mu=0.7, E=3, B=4, momentum=0.5, random_epochs=True, aggregation=aggregation)
    theta, _ = drive(alg, p, 3)
    ref = p.init_params(stream(0, "init"))
    for t in range(3):
        S = UniformSampler(p.m, 2 / 3, 0)(t)
        Ei = epochs_of(0, t, len(S), 3, True)
        ws = [local_sgd(p, c, ref, Ei[j], 4, 0.1, 0.5, lambda w, th=ref: 0.7 * (w - th), 0, t)[0]
              for j, c in enumerate(S)]
        q = p.client_sizes[S] if aggregation == "data_size" else np.ones(len(S))
        ref = (q @ np.array(ws)) / q.sum()
    close(theta, ref)


@pytest.mark.parametrize("aggregation", ["unweighted", "data_size"])
def test_fedsgd_by_hand(aggregation):
    p = tiny()
    alg = make_algorithm("fedsgd", lr=0.5, aggregation=aggregation)
    theta, st = drive(alg, p, 3, rho=1.0)
    ref = p.init_params(stream(0, "init"))
    q = p.client_sizes if aggregation == "data_size" else np.ones(3)
    for t in range(3):
        G = np.array([grad(p, ref, p.parts[c]) for c in range(3)])
        ref = ref - 0.5 * (q @ G) / q.sum()
    close(theta, ref)
    assert st.steps.tolist() == [1, 1, 1]
    st.w = theta                                                 # the uploads are the gradients at theta^t
    U = alg.client_update(st, p, RunContext(seed=0), np.array([0, 2]), 3)
    np.testing.assert_array_equal(U, [grad(p, theta, p.parts[0]), grad(p, theta, p.parts[2])])


# ---- SCAFFOLD -----------------------------------------------------------------------------
@pytest.mark.parametrize("K", ["actual_steps", "fixed_50"])
def test_scaffold_control_variates_by_hand(K):
    p = tiny()
    lr, E, B = 0.1, 2, 4
    theta, st = drive(make_algorithm("scaffold", lr=lr, E=E, B=B, K=K), p, 4)
    ref = p.init_params(stream(0, "init"))
    c, C = np.zeros(p.dim), np.zeros((p.m, p.dim))
    for t in range(4):
        S = UniformSampler(p.m, 2 / 3, 0)(t)
        dys, dcs = [], []
        for c_id in S:
            y, k = local_sgd(p, c_id, ref, E, B, lr, 0.0, lambda w, ci=C[c_id].copy(), cc=c.copy(): cc - ci, 0, t)
            assert k == E * math.ceil(p.client_sizes[c_id] / B)          # the true step count
            Kc = k if K == "actual_steps" else 50
            ci_new = C[c_id] - c + (ref - y) / (Kc * lr)                  # option II
            dys.append(y - ref)
            dcs.append(ci_new - C[c_id])
            C[c_id] = ci_new
        ref = ref + np.mean(dys, axis=0)
        c = c + np.sum(dcs, axis=0) / p.m
    close(theta, ref)
    close(st.C.to_array(), C)
    close(st.c, c)
    close(st.c, C.mean(axis=0))                                   # c = mean_i c_i (all c_i start at 0)
    assert st.steps.tolist() == [E * math.ceil(p.client_sizes[c] / B) for c in UniformSampler(p.m, 2 / 3, 0)(3)]


def test_scaffold_k_changes_the_run():
    p = tiny()
    a = drive(make_algorithm("scaffold", E=2, B=4), p, 3)[0]
    b = drive(make_algorithm("scaffold", E=2, B=4, K="fixed_50"), p, 3)[0]
    assert not np.allclose(a, b)


# ---- parameters, pairing, memory declaration -------------------------------------------------
@pytest.mark.parametrize("name, params, match", [
    ("fedadmm_gong", {"eta": 0}, "eta=0"), ("fedadmm_gong", {"penalty": -0.1}, "penalty=-0.1"),
    ("fedadmm_gong", {"penalty": 0.0}, "penalty must be > 0 with dual_ascent"),
    ("fedadmm_gong", {"rho": 0.01}, "no parameter 'rho' .*participation rate.*write penalty: 0.01"),
    ("fedprox_sgd", {"rho": 0.1}, "no parameter 'rho' .*participation rate.*write mu: 0.1"),
    ("fedadmm_gong", {"rho_2": 0.0, "rho_switch": 5}, "penalty must be > 0 with dual_ascent"),
    ("fedadmm_gong", {"eta_2": 0.5}, "eta schedule needs both eta_2 and eta_switch"),
    ("fedadmm_gong", {"rho_switch": 60}, "rho schedule needs both rho_2 and rho_switch"),
    ("fedadmm_gong", {"eta_2": 0.5, "eta_switch": -1}, "eta_switch=-1"),
    ("fedadmm_gong", {"local_init": "warm"}, "local_init='warm'"),
    ("fedadmm_gong", {"first_visit_init": "zeros"}, "first_visit_init='zeros'"),
    ("fedadmm_gong", {"dual_ascent": 1}, "dual_ascent=1"), ("fedadmm_gong", {"E": 0}, "E=0"),
    ("fedprox_sgd", {"mu": -1.0}, "mu=-1.0"), ("fedadmm_gong", {"penalty": -1.0}, "penalty=-1.0"),
    ("fedprox_sgd", {"aggregation": "median"}, "aggregation"),
    ("fedsgd", {"E": 2}, "E=2"), ("fedsgd", {"B": 10}, "B=10"), ("fedsgd", {"momentum": 0.5}, "momentum=0.5"),
    ("fedsgd", {"random_epochs": True}, "random_epochs=True"), ("fedsgd", {"lr": 0}, "lr=0"),
    ("scaffold", {"K": "fixed_10"}, "K='fixed_10'"), ("scaffold", {"eta_g": 0.0}, "eta_g=0.0"),
])
def test_invalid_parameters_are_rejected_by_name(name, params, match):
    with pytest.raises(ValueError, match=f"{name}.*{match}"):
        make_algorithm(name, **params)


def test_valid_edge_parameters():
    make_algorithm("fedadmm_gong", penalty=0.0, dual_ascent=False)
    make_algorithm("fedprox_sgd", mu=0.0)
    make_algorithm("fedadmm_gong", eta_2=0.5, eta_switch=0, rho_2=1.0, rho_switch=60, B="full")


@pytest.mark.parametrize("name", GONG)
def test_pairs_with_the_neural_problem_only(name):
    alg = make_algorithm(name)
    check_pairing(alg, NeuralProblem)
    with pytest.raises(ValueError, match=f"'{name}' cannot run on problem 'linreg_synthetic'.*EpochProblem"):
        check_pairing(alg, problem_class("linreg_synthetic"), problem_name="linreg_synthetic")
    with pytest.raises(ValueError, match="EpochProblem"):
        simulate(Quadratic.random(), alg, max_rounds=1)


def test_declared_client_vectors_and_defaults():
    assert [client_vectors(make_algorithm(n)) for n in GONG] == [2, 0, 0, 1]
    admm = make_algorithm("fedadmm_gong")
    assert (admm.lr, admm.momentum, admm.penalty, admm.eta, admm.random_epochs, admm.aggregation, admm.local_init,
            admm.first_visit_init) == (0.1, 0.5, 0.01, 1.0, True, "unweighted", "local", "global")
    prox = make_algorithm("fedprox_sgd")
    assert (prox.mu, prox.momentum, prox.random_epochs, prox.aggregation) == (0.1, 0.0, False, "data_size")  # fedavg_sgd's
    sc = make_algorithm("scaffold")
    assert (sc.momentum, sc.random_epochs, sc.K, sc.eta_g, sc.aggregation) == (0.0, False, "actual_steps", 1.0,
                                                                              "unweighted")
    sgd = make_algorithm("fedsgd")
    assert (sgd.lr, sgd.E, sgd.B, sgd.momentum) == (0.5, 1, "full", 0.0)
    assert set(make_algorithm("fedadmm_gong").variants()) >= {"local_init", "first_visit_init", "aggregation"}


def test_option_i_lazy_store_holds_only_visited_clients_and_matches_dense():
    p = tiny(sizes=(6, 9, 7, 5, 8, 4), dtype=np.float32)
    runs = {s: simulate(p, make_algorithm("fedadmm_gong", E=2, B=4), rho=1 / 3, max_rounds=2, seed=0, store=s,
                        metrics=["objective"]) for s in ("dense", "lazy")}
    assert np.array_equal(runs["dense"].w, runs["lazy"].w)
    alg = make_algorithm("fedadmm_gong", E=2, B=4)
    ctx = RunContext(seed=0, rho=1 / 3, sampler=UniformSampler(p.m, 1 / 3, 0), store="lazy")
    st = alg.init(p, ctx)
    st.w = alg.aggregate(st, p, ctx, 0)
    alg.receive(st, p, ctx, np.array([1, 4]), alg.client_update(st, p, ctx, np.array([1, 4]), 0), 0)
    assert st.W.written == 2 and st.Y.written == 2 and st.visited.tolist() == [False, True, False, False, True, False]


def test_first_visits_under_option_i_are_option_ii_and_later_visits_differ():
    """Spec §7 A1: with first_visit_init: global, Options I and II coincide until a client returns."""
    p = tiny(sizes=(6, 9, 7, 5, 8, 4))
    one = {init: drive(make_algorithm("fedadmm_gong", local_init=init, E=2, B=4), p, 1, rho=1 / 2)[0]
           for init in ("local", "global")}
    np.testing.assert_array_equal(one["local"], one["global"])
    assert np.array_equal(drive(make_algorithm("fedadmm_gong", first_visit_init="theta0", E=2, B=4), p, 1,
                                rho=1 / 2)[0], one["local"])          # round 0: theta^t = theta^0
    later = {init: drive(make_algorithm("fedadmm_gong", local_init=init, E=2, B=4), p, 4, rho=1 / 2)[0]
             for init in ("local", "global")}
    assert not np.allclose(later["local"], later["global"])


@pytest.mark.parametrize("name, width, dtype", [("fedadmm_gong", 1, np.float64), ("fedprox_sgd", 1, np.float32),
                                                ("fedsgd", 1, np.float32), ("scaffold", 2, np.float32)])
def test_upload_sizes(name, width, dtype):
    """d floats per client (FedADMM's message as the exact float64 difference), SCAFFOLD 2 d (§3.6)."""
    p = f32()
    alg = make_algorithm(name)
    ctx = RunContext(seed=0, rho=0.5, sampler=UniformSampler(p.m, 0.5, 0))
    st = alg.init(p, ctx)
    U = alg.client_update(st, p, ctx, np.array([0, 3]), 0)
    assert U.shape == (2, width * p.dim) and U.dtype == dtype


@pytest.mark.parametrize("name", GONG)
def test_uploads_reuse_the_array_the_server_released_and_never_one_it_holds(name):
    """A round's uploads go into the previous round's array once ``aggregate`` has released it (its pages
    stay mapped: no fresh (|S|, d) array each round); while ``state.uploads`` still holds that array
    (a server that keeps it), the next round gets a new one and the held values stay as they were."""
    p = tiny()
    alg = make_algorithm(name, **({} if name == "fedsgd" else {"E": 1, "B": 4}),
                         **({"local_init": "sequential_shared", "client_order": "random"} if name == "fedadmm_gong" else {}))
    ctx = RunContext(seed=0, rho=1.0, sampler=UniformSampler(p.m, 1.0, 0))
    state = alg.init(p, ctx)
    state.w = alg.aggregate(state, p, ctx, 0)
    S = ctx.clients(0)
    first = alg.client_update(state, p, ctx, S, 0)
    alg.receive(state, p, ctx, S, first, 0)
    held = first.copy()
    second = alg.client_update(state, p, ctx, S, 1)            # round 0's uploads not yet aggregated
    assert second is not first
    np.testing.assert_array_equal(first, held)
    alg.receive(state, p, ctx, S, second, 1)
    state.w = alg.aggregate(state, p, ctx, 2)                  # releases them
    assert state.uploads is None
    assert alg.client_update(state, p, ctx, S, 2) is second
    state.uploads = second[:, :1]                              # a server holding a view of them
    assert not np.may_share_memory(alg.client_update(state, p, ctx, S, 3), second)


def test_client_drift_is_the_mean_squared_distance_of_the_rounds_models_from_the_global_model():
    """Fig. 9's "discrepancies between client models and the global model": client_drift is the mean over
    the round's clients of ||w_i - theta^t||^2 (every variant; a larger rho pulls the models closer)."""
    p = tiny()
    for init in ("local", "sequential_shared", "global"):
        alg = make_algorithm("fedadmm_gong", lr=0.1, momentum=0.5, E=3, B="full", penalty=0.5, local_init=init)
        ctx = RunContext(seed=0, rho=2 / 3, sampler=UniformSampler(p.m, 2 / 3, 0))
        state = alg.init(p, ctx)
        theta = np.array(state.w, copy=True)
        S = ctx.clients(0)
        seen = []
        real_upload = alg.client_upload

        def spy(state, problem, ctx, j, client, w, steps):
            seen.append(float(np.sum((w.astype(np.float64) - theta) ** 2)))
            return real_upload(state, problem, ctx, j, client, w, steps)
        alg.client_upload = spy
        alg.client_update(state, p, ctx, S, 0)
        assert len(seen) == len(S)
        assert alg.round_metrics(state, p, ctx)["client_drift"] == pytest.approx(np.mean(seen), rel=1e-12)
    # the proximal pull: a larger rho gives smaller drift (same streams)
    drift = {}
    for rho in (0.01, 10.0):
        alg = make_algorithm("fedadmm_gong", lr=0.1, momentum=0.0, E=3, B="full", penalty=rho)
        ctx = RunContext(seed=0, rho=2 / 3, sampler=UniformSampler(p.m, 2 / 3, 0))
        state = alg.init(p, ctx)
        alg.client_update(state, p, ctx, ctx.clients(0), 0)
        drift[rho] = alg.round_metrics(state, p, ctx)["client_drift"]
    assert drift[10.0] < drift[0.01]
    assert "client_drift" in make_algorithm("fedadmm_gong").RECORDS
