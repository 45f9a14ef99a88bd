"""Synchronous and asynchronous algorithms share one vocabulary (issue #26): two sibling kinds over one
base that refuses nothing it declares, ASPIRE's workers on the local-SGD driver, and one stop check
for both loops."""
import inspect
from dataclasses import dataclass

import numpy as np
import pytest

import fedrepro.sim.async_loop as async_loop
import fedrepro.sim.driver as driver
import fedrepro.sim.loop as sync_loop
import fedrepro.sim.stopping as stopping
from fedrepro.algorithms import algorithm_class, algorithm_names, make_algorithm
from fedrepro.algorithms.async_base import AsyncAlgorithm
from fedrepro.algorithms.base import Algorithm, State
from fedrepro.algorithms.sync_base import SyncAlgorithm
from fedrepro.core.context import RunContext
from fedrepro.nn.optim import SGD
from fedrepro.sim.delays import DelayModel
from tests.toys import LocalGD, Quadratic, worker_blobs

SYNC_HOOKS = ("aggregate", "client_update", "begin_round", "local_step", "upload", "receive", "round_phases")
ASYNC_HOOKS = ("worker_compute", "master_update", "active_count", "master_load")
SHARED_HOOKS = ("prepare", "init", "round_metrics", "requirements", "params", "variants", "parameter_constraints",
                "upload_to_update", "update_to_upload")


@dataclass
class BareSync(SyncAlgorithm):
    name = "bare_sync"


@dataclass
class BareAsync(AsyncAlgorithm):
    name = "bare_async"


def _blobs():
    return worker_blobs([12] * 3, [6] * 3, n_classes=3, dim=4, seed=0, init="torch")


def test_every_registered_algorithm_is_exactly_one_kind():
    for name in algorithm_names(available_only=False):
        cls = algorithm_class(name)
        kinds = [k for k in (SyncAlgorithm, AsyncAlgorithm) if issubclass(cls, k)]
        assert len(kinds) == 1, (name, kinds)
        assert cls.asynchronous is (kinds[0] is AsyncAlgorithm), name
        assert issubclass(cls, Algorithm)


def test_no_class_carries_the_sibling_kinds_hooks():
    # the base declares neither kind's hooks, so neither kind inherits hooks it would have to refuse
    for hook in SYNC_HOOKS + ASYNC_HOOKS:
        assert not hasattr(Algorithm, hook), hook
    for name in algorithm_names(available_only=False):
        cls = algorithm_class(name)
        foreign = ASYNC_HOOKS if issubclass(cls, SyncAlgorithm) else SYNC_HOOKS
        assert not [h for h in foreign if hasattr(cls, h)], name


@pytest.mark.parametrize("cls", [Algorithm, BareSync, BareAsync])
def test_the_shared_base_refuses_nothing_it_declares(cls):
    problem, ctx = _blobs(), RunContext(seed=3, max_rounds=5)
    alg = cls()
    alg.prepare(problem, ctx)
    state = alg.init(problem, ctx)
    assert type(state) is State and np.array_equal(state.w, problem.init_params(ctx.rng("init")))
    assert alg.round_metrics(state, problem, ctx) == {} and cls.RECORDS == ()
    assert alg.requirements() == () and cls.variants() == {}
    assert alg.params() == ({"S": 1} if cls is BareAsync else {})
    assert set(cls.parameter_constraints()) == set(alg.params())
    # every method the base declares is exercised above
    declared = {k for k, v in vars(Algorithm).items() if inspect.isfunction(v) or isinstance(v, classmethod)}
    assert declared - {"__init__", "__post_init__", "__eq__", "__repr__"} == set(SHARED_HOOKS)


@pytest.mark.parametrize("cls", [BareSync, BareAsync])
def test_each_kind_implements_the_drivers_contract_from_its_hooks(cls, monkeypatch):
    # the driver (fedrepro.sim.driver) calls client_job and server_update only; each kind maps them to its hooks
    calls = []
    job, update = ("client_update", "receive") if cls is BareSync else ("worker_compute", "master_update")
    monkeypatch.setattr(cls, job, lambda self, *a: calls.append((job, a[3].tolist(), a[4])) or ["u"], raising=False)
    monkeypatch.setattr(cls, update, lambda self, *a: calls.append((update, a[3].tolist(), a[5])), raising=False)
    alg, clients = cls(), np.array([2, 0])
    assert alg.client_job(None, None, None, clients, 7) == ["u"]
    alg.server_update(None, None, None, clients, ["u"], 7, {"clock": 1.0})
    assert calls[0] == (job, [2, 0], 7)
    assert calls[1][:2] == (update, [2, 0]) and calls[1][2] in (7, ["u"])
    assert not hasattr(Algorithm, "client_job") and not hasattr(Algorithm, "server_update")


def test_each_loop_refuses_the_other_kind_by_name():
    with pytest.raises(TypeError, match="simulate_async"):
        sync_loop.simulate(_blobs(), make_algorithm("aspire"), max_rounds=1)
    with pytest.raises(TypeError, match="fedrepro.sim.loop.simulate"):
        async_loop.simulate_async(Quadratic(np.eye(2)), LocalGD(), DelayModel(), max_iterations=1)


def test_both_schedules_make_their_stop_tests_through_the_one_driver(monkeypatch):
    assert driver.stop_check is stopping.stop_check
    # the two entry points are the one driver under a schedule, nothing of their own
    assert "drive(" in inspect.getsource(sync_loop.simulate) and "drive(" in inspect.getsource(async_loop.simulate_async)
    assert not hasattr(sync_loop, "stop_check") and not hasattr(async_loop, "stop_check")
    calls = []

    def spy(r, evaluate, **kw):
        calls.append((r, kw["max_rounds"]))
        return stopping.stop_check(r, evaluate, **kw)

    monkeypatch.setattr(driver, "stop_check", spy)
    res = sync_loop.simulate(Quadratic(np.eye(3)), LocalGD(), max_rounds=3, eval_every=2)
    assert res.status == "max_rounds" and [r["round"] for r in res.trace] == [0, 2, 3]
    assert calls == [(r, 3) for r in range(4)]
    calls.clear()
    res = async_loop.simulate_async(_blobs(), make_algorithm("aspire", B=4, B_loss=4), DelayModel(),
                                    max_iterations=4, eval_every=2)
    assert res.status == "max_rounds" and [r["round"] for r in res.trace] == [0, 2, 4]
    assert calls == [(t, 4) for t in range(5)]


def test_stop_check_order_evaluation_then_cap_budget_and_wall_time():
    kw = dict(max_rounds=10, eval_every=5, clock=0.0, time_budget=None, time_limit=None, started=0.0)
    seen = []

    def evaluate(result=None):
        seen.append(True)
        return result

    assert stopping.stop_check(3, evaluate, **kw) is None and not seen            # not due: no evaluation
    assert stopping.stop_check(5, evaluate, **kw) is None and len(seen) == 1
    assert stopping.stop_check(10, evaluate, **kw) == ("max_rounds", "max_rounds") and len(seen) == 2
    assert stopping.stop_check(10, lambda: ("converged", "gradient"), **kw) == ("converged", "gradient")
    # the budget forces an evaluation of the last round it allows, then ends the run
    out = {**kw, "clock": 2.0, "time_budget": 2.0}
    assert stopping.stop_check(3, evaluate, **out) == ("time_budget", "time_budget") and len(seen) == 3
    assert stopping.stop_check(3, evaluate, **{**kw, "time_limit": 0.0}) == ("time_limit", "time_limit")


def test_unfused_sgd_step_rounds_the_product_first():
    # ASPIRE's worker step (11) is w -= a_w d with the product rounded; BLAS axpy may fuse it
    rng = np.random.default_rng(0)
    w, d = rng.normal(size=4096).astype(np.float32), rng.normal(size=4096).astype(np.float32)
    expected = w.copy()
    expected -= 0.0371 * d
    got = SGD(0.0371, fused=False).step(w.copy(), d)
    assert got.dtype == np.float32 and np.array_equal(got, expected)
