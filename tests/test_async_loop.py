"""The event-driven asynchronous loop (fedrepro.sim.async_loop) and its delay models (fedrepro.sim.delays),
aspire spec 002 section 3.0.1: event order and staleness on hand-built delay tables, reports queued
while the master is busy, bounded staleness, determinism (also across processes), and the reduction
to synchronous rounds with S = N, zero jitter and equal delays."""
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from fedrepro.algorithms.async_base import AsyncAlgorithm
from fedrepro.core.context import RunContext
from fedrepro.core.params import Anything
from fedrepro.sim.async_loop import simulate_async
from fedrepro.sim.delays import DelayModel, DelayTable, drfa_round_duration, sync_round_duration
from fedrepro.sim.loop import simulate
from fedrepro.sim.stopping import GradientTolerance
from tests.toys import LocalGD, Quadratic

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class SyncAsAsync(AsyncAlgorithm):
    """A synchronous algorithm's hooks as an asynchronous rule (worker job = client_update of the
    dispatched workers; master iteration = receive + aggregate); logs (t, Q, start, staleness)."""

    inner: object = None
    log: list = field(default_factory=list)
    name = "sync_as_async"
    constraints = {"inner": [Anything("a synchronous algorithm")], "log": [Anything("a list")]}

    def init(self, problem, ctx):
        state = self.inner.init(problem, ctx)
        state.w = self.inner.aggregate(state, problem, ctx, 0)
        return state

    def worker_compute(self, state, problem, ctx, workers, t):
        return list(self.inner.client_update(state, problem, ctx, workers, t))

    def master_update(self, state, problem, ctx, workers, reports, t, info):
        self.log.append((t, workers.tolist(), float(info["clock"]), info["staleness"].tolist()))
        self.inner.receive(state, problem, ctx, workers, np.stack(reports), t)
        state.w = self.inner.aggregate(state, problem, ctx, t + 1)


def problem(m=3, dim=2, seed=0):
    return Quadratic(np.random.default_rng(seed).normal(size=(m, dim)))


def run_table(durations, master=0.0, S=1, iters=6, tau=None):
    rule = SyncAsAsync(inner=LocalGD(step=0.5), S=S)
    res = simulate_async(problem(len(durations)), rule, DelayTable(durations, master=master), max_iterations=iters,
                         tau=tau)
    return rule.log, res


def test_event_order_and_staleness_on_a_hand_built_table():
    # worker 0 takes 1 s per job, worker 1 2.5 s, worker 2 10 s; S = 1, the master takes no time
    log, res = run_table([[1.0], [2.5], [10.0]])
    assert log == [
        (0, [0], 1.0, [0]),
        (1, [0], 2.0, [0]),
        (2, [1], 2.5, [2]),          # worker 1's report was computed at the initial broadcast
        (3, [0], 3.0, [1]),
        (4, [0], 4.0, [0]),
        (5, [0, 1], 5.0, [0, 2]),    # tie at 5.0: both reports arrived by the start of the iteration
    ]
    assert [r["virtual_time"] for r in res.trace] == [0.0, 1.0, 2.0, 2.5, 3.0, 4.0, 5.0]
    assert [r["uploads"] for r in res.trace] == [0, 1, 2, 3, 4, 5, 7]
    assert res.info["max_staleness"] == 2 and res.trace[-1]["max_staleness"] == 2


def test_reports_arriving_while_the_master_is_busy_are_queued_for_the_next_iteration():
    # master busy 1 s per iteration; workers 1 and 2 report at 1.2 and 1.4, during the first iteration
    log, res = run_table([[1.0], [1.2], [1.4]], master=1.0, iters=3)
    assert log == [(0, [0], 1.0, [0]), (1, [1, 2], 2.0, [1, 1]), (2, [0], 3.0, [1])]
    assert [r["virtual_time"] for r in res.trace] == [0.0, 2.0, 3.0, 4.0]


def test_bounded_staleness_forces_a_wait_for_the_slow_worker():
    log, _ = run_table([[1.0], [2.5], [10.0]], tau=3, iters=5)
    # iteration 3: worker 2 has not been active for tau = 3 iterations, so the master waits for it
    # (clock 10) and takes every report in by then
    assert log[:3] == [(0, [0], 1.0, [0]), (1, [0], 2.0, [0]), (2, [1], 2.5, [2])]
    assert log[3] == (3, [0, 1, 2], 10.0, [1, 0, 3])
    # heterogeneous random delays: the bound holds and binds; without it reports get staler
    p = problem(6)
    model = DelayModel(H_max=5, sigma=0.3)
    stale = {}
    for tau in (4, None):
        rule = SyncAsAsync(inner=LocalGD(step=0.5), S=1)
        res = simulate_async(p, rule, model, max_iterations=300, tau=tau, seed=2)
        stale[tau] = max(max(s) for *_, s in rule.log)
        assert res.info["max_staleness"] == stale[tau]
    assert stale[4] == 4 and stale[None] > 4


def test_s_equal_n_with_equal_delays_and_no_jitter_is_a_synchronous_round():
    p = Quadratic.random(m=5, dim=4, seed=3)
    k0, rounds = 3, 12
    sync = simulate(p, LocalGD(step=0.3), k0=k0, rho=1.0, max_rounds=rounds, seed=1)
    model = DelayModel(H_max=1.0, c0=0.05, m0=0.2, sigma=0.0, mu0=0.01, mu1=0.0)
    rule = SyncAsAsync(inner=LocalGD(step=0.3), S=p.m)
    asy = simulate_async(p, rule, model, k0=k0, max_iterations=rounds, seed=1)
    assert all(Q == list(range(p.m)) and stale == [0] * p.m for _, Q, _, stale in rule.log)
    assert [r["round"] for r in asy.trace] == [r["round"] for r in sync.trace]
    for key in ("objective", "grad_norm2", "uploaded"):
        np.testing.assert_array_equal([r[key] for r in asy.trace[1:]], [r[key] for r in sync.trace[1:]])
    np.testing.assert_array_equal(asy.w, sync.w)
    # each iteration lasts one synchronous round of the same delay model: k0 c0 + m0 + mu0
    bound = model.bind(p.m, RunContext(seed=1))
    step = sync_round_duration(bound, 0, [(np.arange(p.m), k0)])
    assert step == pytest.approx(k0 * 0.05 + 0.2 + 0.01)
    np.testing.assert_allclose([r["virtual_time"] for r in asy.trace], step * np.arange(rounds + 1), rtol=1e-12)
    assert asy.trace[-1]["uploads"] == rounds * p.m and asy.trace[-1]["iteration"] == rounds * p.m * k0
    timed = simulate(p, LocalGD(step=0.3), k0=k0, rho=1.0, max_rounds=rounds, seed=1, delays=model)
    np.testing.assert_allclose([r["virtual_time"] for r in timed.trace], [r["virtual_time"] for r in asy.trace],
                               rtol=1e-12)


def test_synchronous_loop_on_the_virtual_clock_matches_s_equal_n_with_jitter_and_stragglers():
    """The synchronous loop with a delay model prices round r at the max of the participants' jobs
    (job key r); the asynchronous loop with S = N consumes every worker each iteration (job key =
    the worker's job counter = t): the same draws, so the same clock, jitter and stragglers included."""
    p = Quadratic.random(m=6, dim=3, seed=5)
    model = DelayModel(H_max=5, sigma=0.3, mu0=0.02, mu1=0.0, schedule=[(2, 1.0, 3.0, 4.0)])
    sync = simulate(p, LocalGD(step=0.3), k0=2, max_rounds=15, seed=9, delays=model)
    asy = simulate_async(p, SyncAsAsync(inner=LocalGD(step=0.3), S=p.m), model, k0=2, max_iterations=15, seed=9)
    vt = np.array([r["virtual_time"] for r in sync.trace])
    np.testing.assert_allclose([r["virtual_time"] for r in asy.trace], vt, rtol=1e-12)
    np.testing.assert_array_equal([r["objective"] for r in asy.trace[1:]], [r["objective"] for r in sync.trace[1:]])
    assert np.ptp(np.diff(vt)) > 0.1                      # jittered, heterogeneous rounds
    assert "virtual_time" not in simulate(p, LocalGD(), max_rounds=2).trace[0]


def _trace_key(res):
    return [(r["round"], r["virtual_time"], r["uploads"], r["objective"]) for r in res.trace]


def _seeded_run(seed):
    rule = SyncAsAsync(inner=LocalGD(step=0.5), S=2)
    return simulate_async(Quadratic.random(m=6, dim=3, seed=0), rule, DelayModel(), max_iterations=40, tau=24,
                          seed=seed, eval_every=5)


def test_same_seed_same_trace_also_in_another_process():
    a, b, c = _seeded_run(7), _seeded_run(7), _seeded_run(8)
    assert _trace_key(a) == _trace_key(b)
    assert [r["virtual_time"] for r in a.trace] != [r["virtual_time"] for r in c.trace]
    code = ("import json; from tests.test_async_loop import _seeded_run, _trace_key; "
            "print(json.dumps(_trace_key(_seeded_run(7))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert [tuple(x) for x in json.loads(out.stdout)] == _trace_key(a)


def test_delay_model_streams_schedule_and_sync_helpers():
    ctx = RunContext(seed=4)
    model = DelayModel(H_max=5, c0=0.05, m0=0.2, sigma=0.3, schedule=[(2, 10.0, 40.0, 4.0)])
    d = model.bind(4, ctx)
    assert sorted(d.h) == [1.0, 1 + 4 / 3, 1 + 8 / 3, 5.0]
    # the jitter of worker j's job k comes from its own stream ("delay", j, k, phase), whatever else was drawn
    xi = ctx.rng("delay", 1, 7, 0).lognormal(mean=-0.045, sigma=0.3)
    assert d.duration(1, 3, 0.0, 7) == pytest.approx((3 * 0.05 + 0.2) * d.h[1] * xi, rel=1e-15)
    draws = np.array([d.duration(0, 1, 0.0, k) for k in range(4000)]) / d.mean(0, 1, 0.0)
    assert abs(draws.mean() - 1) < 0.03                          # E[xi] = 1
    # straggler episode: the mean of worker 2 is x4 for jobs starting in [10, 40)
    assert d.mean(2, 1, 10.0) == 4 * d.mean(2, 1, 9.99) == 4 * d.mean(2, 1, 40.0)
    # synchronous rounds: max over the participants; DRFA-Prox: two phases, one after the other
    flat = DelayModel(sigma=0.0, factors=[1.0, 2.0, 3.0], mu0=0.5, mu1=0.0).bind(3, ctx)
    assert sync_round_duration(flat, 0, [([0, 1], 5)]) == pytest.approx(2 * (5 * 0.05 + 0.2) + 0.5)
    assert drfa_round_duration(flat, 0, [0, 1, 2], [0], tau=5) == pytest.approx(
        3 * (5 * 0.05 + 0.2) + 1 * (0.05 + 0.2) + 0.5)


def test_time_budget_stop_rule_and_eval_every():
    p = problem(4)
    rule = SyncAsAsync(inner=LocalGD(step=0.5), S=1)
    res = simulate_async(p, rule, DelayTable([[1.0], [1.5], [2.0], [3.0]]), max_iterations=1000, time_budget=7.0,
                         eval_every=4)
    assert res.status == "time_budget" and res.trace[-1]["virtual_time"] >= 7.0
    assert all(r["round"] % 4 == 0 for r in res.trace[:-1])
    assert all(r["virtual_time"] < 7.0 for r in res.trace[:-1])
    res = simulate_async(p, SyncAsAsync(inner=LocalGD(step=0.5), S=4), DelayModel(), max_iterations=500,
                         stop=GradientTolerance(tol=1e-20))
    assert res.status == "converged"
    np.testing.assert_allclose(res.w, p.optimum(), atol=1e-9)


def test_results_rows_carry_the_virtual_clock():
    from fedrepro.experiments.results import run_frame
    res = _seeded_run(3)
    df = run_frame({"algorithm": "sync_as_async", "seed": 3}, res, {"m": 6, "dim": 3}, {})
    assert list(df["virtual_time"]) == [r["virtual_time"] for r in res.trace]
    assert df["rounds"].iloc[0] == 40 and df["status"].iloc[0] == "max_rounds"


def test_bad_input_is_rejected_before_the_run():
    p = problem(3)
    rule = SyncAsAsync(inner=LocalGD())
    with pytest.raises(TypeError, match="synchronous"):
        simulate_async(p, LocalGD(), DelayModel())
    with pytest.raises(TypeError, match="simulate_async"):
        simulate(p, rule, max_rounds=2)
    with pytest.raises(ValueError, match="tau"):
        simulate_async(p, rule, DelayModel(), tau=0)
    with pytest.raises(ValueError, match="time_budget"):
        simulate_async(p, rule, DelayModel(), time_budget=-1.0)
    with pytest.raises(ValueError, match="2 workers"):
        simulate_async(p, rule, DelayTable([[1.0], [1.0]]))
    with pytest.raises(ValueError, match="S"):
        SyncAsAsync(inner=LocalGD(), S=0)
    with pytest.raises(ValueError, match="sigma"):
        DelayModel(sigma=-0.1)
    with pytest.raises(ValueError, match="start < end"):
        DelayModel(schedule=[(0, 5.0, 1.0, 2.0)])
    with pytest.raises(ValueError, match="worker must be an index"):
        DelayModel(schedule=[(7, 0.0, 1.0, 2.0)]).bind(3, RunContext())
    with pytest.raises(ValueError, match="grad_norm2"):
        simulate_async(p, rule, DelayModel(), metrics=["objective"], stop=GradientTolerance(tol=1.0))
