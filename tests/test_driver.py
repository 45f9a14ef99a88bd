"""The one driver (issue #41): both schedules run through fedrepro.sim.driver.drive, the schedule takes
only the keys it can honour (the rest is an error naming the key), and the entry points are the driver."""
import numpy as np
import pytest

from fedrepro.algorithms import make_algorithm
from fedrepro.experiments.runner import build_run
from fedrepro.sim.delays import DelayModel
from fedrepro.sim.driver import Events, Rounds, drive, schedule_for
from fedrepro.sim.loop import simulate
from fedrepro.sim.async_loop import simulate_async
from tests.toys import worker_blobs


def _blobs():
    return worker_blobs([12] * 4, [6] * 4, n_classes=3, dim=4, seed=0, init="torch")


def _same(a, b):
    drop = ("wall_time", "cpu_time", "local_time", "local_cpu_time")
    assert [{k: v for k, v in r.items() if k not in drop} for r in a.trace] == \
        [{k: v for k, v in r.items() if k not in drop} for r in b.trace]
    assert np.array_equal(a.w, b.w) and a.status == b.status and a.info == b.info


def test_simulate_is_the_driver_in_rounds():
    alg = make_algorithm("fedavg_sgd", E=1, B=4, lr=0.1)
    a = simulate(_blobs(), alg, rho=0.5, max_rounds=4, seed=3, eval_every=2)
    b = drive(_blobs(), alg, Rounds(rho=0.5), max_rounds=4, seed=3, eval_every=2)
    _same(a, b)
    assert [r["round"] for r in a.trace] == [0, 2, 4] and a.trace[-1]["iteration"] == 4


def test_simulate_async_is_the_driver_on_events():
    alg = make_algorithm("aspire", B=4, B_loss=4, S=2)
    a = simulate_async(_blobs(), alg, DelayModel(), max_iterations=5, tau=3, seed=1)
    b = drive(_blobs(), alg, Events(DelayModel(), tau=3), max_rounds=5, seed=1)
    _same(a, b)
    assert a.trace[-1]["max_staleness"] <= 3 and "virtual_time" in a.trace[-1]


def test_a_schedule_refuses_the_other_kind():
    with pytest.raises(TypeError, match="asynchronous update rule"):
        drive(_blobs(), make_algorithm("aspire"), Rounds(), max_rounds=1)
    with pytest.raises(TypeError, match="synchronous"):
        drive(_blobs(), make_algorithm("fedavg_sgd"), Events(DelayModel()), max_rounds=1)


@pytest.mark.parametrize("keys, match", [
    ({"tau": 4}, "tau .* remove tau"),
])
def test_synchronous_rounds_take_no_staleness(keys, match):
    with pytest.raises(ValueError, match=match):
        schedule_for(make_algorithm("fedavg"), **keys)


@pytest.mark.parametrize("keys, match", [
    ({"rho": 0.5, "delays": DelayModel()}, "remove rho"),
    ({"replay": object(), "delays": DelayModel()}, "remove replay"),
    ({"sample_count": "floor", "delays": DelayModel()}, "remove sample_count"),
    ({}, "delay model"),
])
def test_the_event_schedule_takes_no_sampling(keys, match):
    with pytest.raises(ValueError, match=match):
        schedule_for(make_algorithm("aspire"), **keys)


def test_a_cell_gets_its_schedule_and_one_set_of_driver_settings():
    problem = _blobs()
    base = {"problem": {}, "seed": 0, "max_rounds": 3, "k0": 2}
    sync = build_run({**base, "algorithm": "fedavg_sgd", "rho": 0.5}, problem=problem)
    asyn = build_run({**base, "algorithm": "aspire", "delays": {}, "tau": "2N"}, problem=problem)
    assert isinstance(sync.schedule, Rounds) and sync.schedule.rho == 0.5
    assert isinstance(asyn.schedule, Events) and asyn.schedule.tau == 2 * problem.m
    # one set of driver settings, the same names under both schedules (no max_iterations rename)
    assert set(sync.kwargs) == set(asyn.kwargs) and sync.kwargs["max_rounds"] == asyn.kwargs["max_rounds"] == 3
    assert asyn.simulate().trace[-1]["round"] == 3 and sync.simulate().trace[-1]["round"] == 3
    with pytest.raises(ValueError, match="remove tau"):
        build_run({**base, "algorithm": "fedavg_sgd", "tau": 3}, problem=problem)
