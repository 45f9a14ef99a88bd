"""ASPIRE update rule (fedrepro.algorithms.aspire) on the event-driven loop: equations (11)-(15) by
hand, EASE plane management, variants, ADP and determinism."""
import numpy as np
import pytest

from fedrepro.algorithms import make_algorithm
from fedrepro.core.context import RunContext
from fedrepro.problems.worker_neural import WorkerNeuralProblem
from fedrepro.sim.async_loop import simulate_async
from fedrepro.sim.delays import DelayModel, DelayTable
from tests.toys import worker_blobs

N, C, D = 4, 3, 6


def _problem(seed=0, n=40):
    return worker_blobs([n] * N, [n // 2] * N, n_classes=C, dim=D, seed=seed)


def _run(alg, problem=None, iters=60, delays=None, **kw):
    return simulate_async(problem or _problem(), alg, delays or DelayModel(), max_iterations=iters,
                          eval_every=kw.pop("eval_every", 4), seed=kw.pop("seed", 3), **kw)


def test_worker_step_is_eq_11_and_master_update_is_eqs_12_to_15():
    prob = _problem()
    alg = make_algorithm("aspire", lr=0.05, B=8, B_loss=16, Gamma=2.0, alpha1=0.3)
    ctx = RunContext(seed=5, max_rounds=100)
    st = alg.init(prob, ctx)
    st.pi = np.array([0.1, 0.2, 0.3, 0.4])
    st.phi = np.random.default_rng(1).normal(size=st.phi.shape).astype(np.float32) * 0.1
    st.sum_phi = st.phi.sum(axis=0, dtype=np.float64)
    st.w = np.full(prob.dim, 0.05, dtype=np.float32)
    (w1, F1), = alg.worker_compute(st, prob, ctx, [2], 7)
    # by hand: one minibatch of 8 from ("minibatch", 7, 2), the step of (11), clip to +-alpha1
    alpha_w = N * 0.05
    kappa1 = 0.5 / alpha_w
    part = prob.parts[2]
    idx = part[ctx.rng("minibatch", 7, 2).choice(part.size, 8, replace=False)]
    _, g = prob.batch_loss_grad(st.W[2], idx)
    w_ref = np.clip(st.W[2] - alpha_w * (0.3 * g - st.phi[2] - kappa1 * (st.w - st.W[2])), -0.3, 0.3)
    np.testing.assert_allclose(w1, w_ref, rtol=1e-6, atol=1e-7)
    rng = ctx.rng("minibatch", 7, 2)
    rng.choice(part.size, 8, replace=False)
    assert F1 == pytest.approx(prob.batch_loss(w1, part[rng.choice(part.size, 16,
                                                                                              replace=False)]))
    # master iteration t = 7 with that report
    W, phi, z, h, lam, planes = st.W.copy(), st.phi.copy(), st.w.copy(), 0.2, np.array([0.7]), st.planes.copy()
    st.h, st.lam = h, lam.copy()
    F = st.F.copy()
    F[2] = F1
    W[2] = w1
    alg.master_update(st, prob, ctx, np.array([2]), [(w1, F1)], 7, {})
    eta_z = 1 / (2 * N * kappa1)
    z_ref = np.clip(z - eta_z * (phi.sum(0) + kappa1 * (N * z - W.sum(0))), -0.3, 0.3)
    np.testing.assert_allclose(st.w, z_ref, rtol=1e-5, atol=1e-6)
    h_ref = np.clip(h - 0.01 * (1 - lam.sum()), 0, 10)
    assert st.h == pytest.approx(h_ref)
    c1, c2 = max(1 / (0.5 * 8 ** (1 / 6)), 1e-3), max(1 / (0.1 * 8 ** (1 / 6)), 1e-3)
    lam_ref = np.clip(lam + 0.5 * (planes @ F - h_ref - c1 * lam), 0, 1)
    np.testing.assert_allclose(st.lam[:1], lam_ref)
    phi_ref = np.clip(phi[2] + 0.1 * (z_ref - w1 - c2 * phi[2]), -10, 10)
    np.testing.assert_allclose(st.phi[2], phi_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(st.phi[0], phi[0])               # only active workers move phi (15)
    np.testing.assert_allclose(st.sum_phi, st.phi.sum(0), atol=1e-6)
    np.testing.assert_allclose(st.sum_W, st.W.sum(0), atol=1e-6)


def test_mix_even_adds_no_plane_and_weights_follow_the_prior():
    res = _run(make_algorithm("aspire", Gamma=0.0, lr=0.1))
    assert {r["n_planes"] for r in res.trace} == {1}
    last = res.trace[-1]
    assert last["pi_min"] == pytest.approx(last["pi_max"]) == pytest.approx(last["sum_lambda"] / N)


def test_cutting_planes_grow_for_cp_and_are_removed_by_ease():
    # noisy reported losses (B_loss = 8) move the worst case between vertices of P
    cp = _run(make_algorithm("aspire", lr=0.1, ease=False, k=2, B_loss=8), iters=400)
    ease = _run(make_algorithm("aspire", lr=0.1, ease=True, k=2, B_loss=8), iters=400)
    n_cp = [r["n_planes"] for r in cp.trace]
    assert n_cp == sorted(n_cp) and n_cp[-1] > 1 and cp.trace[-1]["planes_removed"] == 0
    assert ease.trace[-1]["planes_removed"] > 0
    assert ease.trace[-1]["n_planes"] < n_cp[-1]


def test_planes_stop_after_T1():
    res = _run(make_algorithm("aspire", lr=0.1, ease=False, k=2, T1_fraction=0.25, B_loss=8), iters=120,
               eval_every=1)
    assert {r["T1"] for r in res.trace} == {30.0}
    n = [r["n_planes"] for r in res.trace]
    assert n[30] > 1 and len(set(n[30:])) == 1          # planes grow before T1, never after
    explicit = _run(make_algorithm("aspire", lr=0.1, ease=False, k=2, T1=30, B_loss=8), iters=120, eval_every=1)
    assert [r["n_planes"] for r in explicit.trace] == n


def test_T1_of_a_time_budgeted_run_is_fixed_on_the_clock_inside_the_run():
    # a 100,000-iteration cap (the Fig. 4 cells) must not push T1 past the run: the budget decides it
    budget = 60.0
    res = _run(make_algorithm("aspire", lr=0.1, ease=False, k=2, B_loss=8), iters=100_000, eval_every=1,
               time_budget=budget)
    last = res.trace[-1]["round"]
    T1 = {r["T1"] for r in res.trace if not np.isnan(r["T1"])}
    assert len(T1) == 1
    T1 = int(T1.pop())
    assert 0 < T1 < last
    # the first iteration starting at or after half the budget is T1 - 1: the clock before it is < B/2
    clock = {r["round"]: r["virtual_time"] for r in res.trace}        # virtual time when iteration t is done
    assert clock[T1 - 1] < budget / 2 <= clock[T1]
    assert all(np.isnan(r["T1"]) for r in res.trace if r["round"] < T1 - 1)
    n = [r["n_planes"] for r in res.trace]
    assert n[T1] > 1 and len(set(n[T1:])) == 1                        # flat after T1
    long = _run(make_algorithm("aspire", lr=0.1, ease=False, k=2, B_loss=8, T1_fraction=0.9), iters=100_000,
                eval_every=1, time_budget=budget)
    assert long.trace[-1]["n_planes"] > n[-1]                          # a later cutoff keeps adding planes


def test_T1_is_validated():
    with pytest.raises(ValueError, match="not inside the run"):
        _run(make_algorithm("aspire", T1=60), iters=60)
    with pytest.raises(ValueError, match="time budget"):
        _run(make_algorithm("aspire", T1=10), iters=60, time_budget=20.0)
    for bad in (0.0, 1.0, -0.2):
        with pytest.raises(ValueError, match="T1_fraction"):
            make_algorithm("aspire", T1_fraction=bad)
    with pytest.raises(ValueError, match="T1"):
        make_algorithm("aspire", T1=0)


def test_same_seed_same_trace_and_seed_changes_it():
    a = _run(make_algorithm("aspire", lr=0.1), seed=4)
    b = _run(make_algorithm("aspire", lr=0.1), seed=4)
    c = _run(make_algorithm("aspire", lr=0.1), seed=5)
    strip = lambda tr: [{k: v for k, v in r.items() if "time" not in k or k == "virtual_time"} for r in tr]  # noqa: E731
    assert strip(a.trace) == strip(b.trace)
    assert strip(a.trace) != strip(c.trace)


def test_S_equal_N_consumes_every_worker_each_iteration():
    table = DelayTable([[1.0]] * N)
    res = _run(make_algorithm("aspire", lr=0.1, S=N), delays=table, iters=20, eval_every=1)
    assert all(r["uploads"] == N * r["round"] for r in res.trace)
    assert res.trace[-1]["virtual_time"] == pytest.approx(20.0)


def test_adp_switches_S_around_a_straggler_episode():
    delays = DelayModel(H_max=1.0, c0=0.0, m0=1.0, sigma=0.05, mu1=0.0,
                        schedule=[{"worker": 2, "start": 10.0, "end": 30.0, "factor": 4.0}])
    res = _run(make_algorithm("aspire", lr=0.1, adp={"s": 1, "beta1": 1.5}), delays=delays, iters=400,
               eval_every=1, time_budget=45.0)
    S = [(r["virtual_time"], r["active_workers"]) for r in res.trace]
    before = [s for t, s in S if 3 < t < 10]
    during = [s for t, s in S if 18 < t < 30]
    after = [s for t, s in S if 40 < t]
    assert set(before) == {N} and 1 in during and after and after[-1] == N
    printed = _run(make_algorithm("aspire", lr=0.1, adp={"s": 1, "beta1": 1.5, "rule": "printed"}), delays=delays,
                   iters=400, eval_every=1, time_budget=45.0)
    assert {r["active_workers"] for r in printed.trace if 3 < r["virtual_time"] < 10} == {1}


@pytest.mark.parametrize("params, match", [
    ({"S": 9}, "S=9"), ({"prior": [0.5, 0.5]}, "2 entries"), ({"adp": {"speed": 1}}, "unknown adp"),
    ({"adp": {"rule": "other"}}, "rule"), ({"Gamma": -1}, "Gamma"),
])
def test_bad_parameters_are_named(params, match):
    with pytest.raises(ValueError, match=match):
        _run(make_algorithm("aspire", **params), iters=2)


def test_attack_prior_down_weights_the_last_worker():
    alg = make_algorithm("aspire", prior={"last": 0.2}, Gamma=float(N))
    st = alg.init(_problem(), RunContext(seed=0, max_rounds=10))
    np.testing.assert_allclose(st.q, [1 / 3.2] * 3 + [0.2 / 3.2])
    assert not st.uset.equal_bounds()          # heterogeneous ptilde: the exact parametric path (spec 3.3.1 b)


def test_a_malicious_worker_is_outside_the_worst_case_metrics_and_the_run_trains():
    base = _problem()
    X_bd = base.X_test[:10]
    prob = WorkerNeuralProblem(base.model, base.X, base.y, base.parts, base.X_test, base.y_test,
                               base.test_parts[:-1] + [np.array([], dtype=np.int64)], malicious=N - 1,
                               backdoor=(X_bd, 0))
    names = prob.metric_names()
    assert f"acc_worker_{N - 1}" not in names and f"loss_worker_{N - 1}" in names and "attack_success" in names
    res = _run(make_algorithm("aspire", lr=0.1, prior={"last": 0.2}), problem=prob, iters=40)
    assert res.status == "max_rounds" and res.trace[-1]["round"] == 40
    assert all(np.isfinite(v) for k, v in res.trace[-1].items() if isinstance(v, float))
    assert res.trace[-1]["acc_w"] == min(res.trace[-1][f"acc_worker_{j}"] for j in range(N - 1))


def test_a_malicious_worker_raises_the_losses_it_reports():
    # the attack `backdoor` owns the malicious worker's behaviour (aspire App. C.2, FIDELITY AS-27): the problem
    # holds its data (built for the attack), the attack makes it report its losses x loss_scale
    from fedrepro.sim.attacks import build_attack
    from fedrepro.sim.loop import simulate

    base = _problem()

    def problem():
        return WorkerNeuralProblem(base.model, base.X, base.y, base.parts, base.X_test, base.y_test,
                                   base.test_parts[:-1] + [np.array([], dtype=np.int64)], malicious=N - 1,
                                   backdoor=(base.X_test[:10], 0))

    def backdoor():
        return build_attack({"name": "backdoor", "loss_scale": 10.0})

    honest, liar = problem(), problem()
    ctx = RunContext(seed=1, max_rounds=10)
    alg = make_algorithm("aspire", lr=0.1)
    attack = backdoor()
    attack.check(alg, liar)
    attack.prepare(liar, ctx)
    assert attack.faulty.tolist() == [N - 1]
    assert liar.reported_loss(N - 1, 0.3) == pytest.approx(3.0) and liar.reported_loss(0, 0.3) == 0.3
    assert honest.reported_loss(N - 1, 0.3) == 0.3                    # no attack: every worker honest
    F_h, F_l = alg.init(honest, ctx).F, alg.init(liar, ctx).F
    np.testing.assert_allclose(F_l, np.r_[F_h[:-1], 10 * F_h[-1]])
    (_, f_h), = alg.worker_compute(alg.init(honest, ctx), honest, ctx, [N - 1], 0)
    (_, f_l), = alg.worker_compute(alg.init(liar, ctx), liar, ctx, [N - 1], 0)
    assert f_l == pytest.approx(10 * f_h)
    # AFL's lambda (loss-driven) moves to the liar; the honest run keeps it lower
    runs = {"honest": simulate(problem(), make_algorithm("afl", lr=0.1), max_rounds=30, seed=2, eval_every=30),
            "liar": simulate(problem(), make_algorithm("afl", lr=0.1), max_rounds=30, seed=2, eval_every=30,
                             attack=backdoor())}
    assert runs["liar"].trace[-1]["lambda_last"] > runs["honest"].trace[-1]["lambda_last"] + 0.2
    with pytest.raises(ValueError, match="loss_scale"):
        build_attack({"name": "backdoor", "loss_scale": 0.5})
