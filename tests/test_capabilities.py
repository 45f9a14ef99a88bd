"""The capability matrix (fedrepro.sim.capabilities): the page equals the code; every "runs" cell runs on a
tiny problem and its stage changes what the server receives (no silent no-op); every refused cell is
refused at config check, before any job, with its reason. A data-side attack runs on a tiny problem that
has what it needs (label_flip: the softmax toy or the worker blobs; backdoor: the blobs with an added
poisoned worker, against the same worker clean and no attack)."""
from pathlib import Path

import numpy as np
import pytest

from fedrepro.algorithms import algorithm_class, make_algorithm
from fedrepro.core.params import ConfigError
from fedrepro.experiments.expansion import expand
from fedrepro.problems import problem_class, problem_names
from fedrepro.algorithms.pairing import missing
from fedrepro.problems.protocols import provides
from fedrepro.sim import capabilities as cap
from fedrepro.sim.aggregation import build_aggregator
from fedrepro.sim.async_loop import simulate_async
from fedrepro.sim.attacks import ATTACKS, build_attack
from fedrepro.sim.delays import DelayModel
from fedrepro.sim.loop import simulate
from fedrepro.sim.privacy import build_mechanism
from tests.toys import backdoor_blobs, softmax_toy, worker_blobs

ROOT = Path(__file__).resolve().parents[1]
MATRIX = cap.matrix()
SPECS = {"attack": cap.ATTACK_SPECS, "mechanism": cap.MECHANISM_SPECS, "aggregator": cap.AGGREGATOR_SPECS}
# stage parameters that make the effect visible on a tiny problem in two rounds
VISIBLE = {("mechanism", "clip"): {"clip": 1e-3}, ("mechanism", "gaussian"): {"clip": 1e-3, "noise_multiplier": 1.0},
           ("aggregator", "centered_clipping"): {"tau": 1e-3}}


def test_the_page_is_the_code():
    assert (ROOT / "docs" / "capabilities.md").read_text() == cap.markdown(), \
        "docs/capabilities.md is stale: python -m fedrepro.sim.capabilities > docs/capabilities.md"


def _blobs():
    return worker_blobs([24] * 6, [8] * 6, n_classes=3, dim=6, seed=0)


def _toy(algorithm: str, needs: tuple, poisoned: bool):
    cls = algorithm_class(algorithm)
    makers = (lambda: backdoor_blobs(poisoned),) if any(c.name == "BackdoorProblem" for c in needs) else \
        (softmax_toy, _blobs)
    for make in makers:
        problem = make()
        if not missing(cls, type(problem)) and all(provides(problem, c) for c in needs):
            return problem
    pytest.fail(f"no tiny problem pairs with {algorithm}")


def _received(algorithm: str, stage: dict, needs: tuple = (), poisoned: bool = True) -> list:
    """The uploads (or the asynchronous reports' models) the server receives in a short run, and its model.
    ``needs``: what the stage's attack needs of the problem (a data-side attack acts on the last worker:
    Ind_j then trains that one)."""
    problem = _toy(algorithm, needs, poisoned)
    alg = make_algorithm(algorithm, **({"worker": problem.m - 1} if needs and algorithm == "individual" else {}))
    got = []
    if alg.asynchronous:
        update = alg.master_update

        def capture(state, problem, ctx, workers, reports, t, info):
            got.append(np.array([np.asarray(r[0], dtype=float) for r in reports]))
            return update(state, problem, ctx, workers, reports, t, info)
        alg.master_update = capture
        result = simulate_async(problem, alg, DelayModel(), max_iterations=6, eval_every=6, seed=3, **stage)
    else:
        receive = alg.receive

        def capture(state, problem, ctx, clients, uploads, r):
            got.append(np.array(uploads, dtype=float))
            return receive(state, problem, ctx, clients, uploads, r)
        alg.receive = capture
        k0 = int(getattr(alg, "T", 1))          # LFRPG uploads once per frame of T slots
        result = simulate(problem, alg, k0=k0, rho=1.0, max_rounds=2, eval_every=2, seed=3, **stage)
    # what the server received, and (for an algorithm that drops a silent worker's upload itself, reads_senders)
    # what it made of it
    return got + [np.asarray(result.w, dtype=float)]


def _stage(kind, option):
    spec = {**SPECS[kind][option], **VISIBLE.get((kind, SPECS[kind][option]["name"]), {})}
    build = {"attack": build_attack, "mechanism": build_mechanism, "aggregator": build_aggregator}[kind]
    return {kind: build(spec)}


RUNS = [(alg, kind, opt) for kind, table in MATRIX.items() for alg, row in table.items()
        for opt, v in row.items() if v == "runs"]
REFUSED = [(alg, kind, opt, v) for kind, table in MATRIX.items() for alg, row in table.items()
           for opt, v in row.items() if v != "runs"]


@pytest.mark.parametrize("alg,kind,option", RUNS, ids=[f"{a}-{k}-{o}" for a, k, o in RUNS])
def test_every_runs_cell_changes_what_the_server_receives(alg, kind, option):
    needs = ATTACKS[option].problem_requires if kind == "attack" else ()
    plain = _received(alg, {}, needs, poisoned=False)          # backdoor: the added worker clean, no attack
    staged = _received(alg, _stage(kind, option), needs)
    same = len(plain) == len(staged) and all(a.shape == b.shape and np.array_equal(a, b)
                                             for a, b in zip(plain, staged))
    assert not same, f"{kind} {option!r} on {alg} left every upload the server received unchanged"


def _registered_problem(alg):
    cls = algorithm_class(alg)
    for name in problem_names():
        pcls = problem_class(name)
        if pcls is not None and name != "worker_neural" and not missing(cls, pcls):
            # a valid block of that problem (softmax and logreg name their dataset, #44)
            return {"name": name, **({"dataset": "mnist"} if name in ("softmax", "logreg") else {})}
    return {"name": "worker_neural", "dataset": "fmnist3"}


@pytest.mark.parametrize("alg,kind,option,reason", REFUSED, ids=[f"{a}-{k}-{o}" for a, k, o, _ in REFUSED])
def test_every_refused_cell_is_refused_at_config_check(alg, kind, option, reason):
    spec = SPECS[kind][option]
    block = {"problem": _registered_problem(alg), "algorithms": {alg: None}, kind: spec}
    if algorithm_class(alg).asynchronous:
        block["delays"] = {}
    if kind == "attack" and ATTACKS[option].problem_requires:     # refused by the problem the attack needs
        assert reason.startswith("no registered problem that the algorithm runs on has what the attack needs")
        with pytest.raises(ConfigError, match=f"attack {option!r} cannot run on problem"):
            expand("custom", "x", block)
        return
    with pytest.raises(ConfigError, match=reason.split(" (")[0][:60].replace("(", r"\(").replace(")", r"\)")):
        expand("custom", "x", block)
