"""Problem capabilities (fedrepro.problems.protocols): algorithms declare what they read beyond
FederatedProblem, and an unsuitable algorithm x problem pairing fails before the run."""
import json
from dataclasses import dataclass, field

import numpy as np
import pytest

from fedrepro.core.params import Anything

from fedrepro.algorithms import algorithm_class, algorithm_names, make_algorithm
from fedrepro.algorithms.krum import Krum
from fedrepro.sim.attacks import build_attack
from fedrepro.data.dataset import Dataset
from fedrepro.core.params import ConfigError
from fedrepro.experiments.expansion import all_cells, expand
from fedrepro.problems import build_problem, problem_class, problem_names
from fedrepro.problems.base import FederatedProblem
from fedrepro.algorithms.pairing import check_pairing, missing
from fedrepro.problems.protocols import (CAPABILITIES, LIPSCHITZ, LOSS_KIND, STEP_CONSTANT, STOCHASTIC, Capability,
                                         capabilities_of, provides)
from fedrepro.sim.async_loop import simulate_async
from fedrepro.sim.delays import DelayModel
from fedrepro.sim.loop import simulate
from tests.toys import Quadratic

PAPERS = ["fedadmm_zhou", "fedepm", "frpg"]


def _toy_dataset(name="toy", n=240, p=4, C=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, n)
    X = np.abs(rng.normal(size=(C, p))[y] + rng.normal(size=(n, p))) / 4
    split = np.where(np.arange(n) < int(0.8 * n), "train", "test")
    return Dataset(name, X, y, split)


def _softmax(**spec):
    base = {"name": "softmax", "dataset": "toy", "Q": 6, "batch": 3, "n_classes": 3, "partition": "iid"}
    base.update(spec)
    return build_problem(base, 0, dataset=_toy_dataset())


def _linreg_synthetic():
    return build_problem({"name": "linreg_synthetic", "m": 6, "n": 4, "d_low": 10, "d_high": 20}, 0)


@dataclass
class ProbeKrum(Krum):
    """Krum that logs every init call (a test probe)."""

    log: list = field(default_factory=list)
    constraints = {"log": [Anything("a list")]}

    def init(self, problem, ctx):
        self.log.append("init")
        return super().init(problem, ctx)


# ---- the run rejects an unsuitable pairing before it starts --------------------------------
def test_krum_on_linreg_synthetic_fails_before_any_round():
    problem, alg, records = _linreg_synthetic(), ProbeKrum(), []
    # label_flip would die inside attack.prepare (no flip_labels) if the check came later
    with pytest.raises(ValueError) as err:
        simulate(problem, alg, max_rounds=3, attack=build_attack({"name": "label_flip"}), progress=records.append)
    msg = str(err.value)
    assert msg.startswith("algorithm 'krum' cannot run on problem 'linreg_synthetic")
    for part in ("minibatch sampling (StochasticProblem: sample_minibatch, minibatch_grads)",
                 "a faulty-worker split (ByzantineProblem: senders)", "(LinearModelProblem) does not provide",
                 "e.g. softmax"):
        assert part in msg
    assert alg.log == [] and records == []


def test_frpg_on_linreg_synthetic_fails_before_any_round(monkeypatch):
    calls = []
    monkeypatch.setattr(algorithm_class("frpg"), "init", lambda self, p, ctx: calls.append("init"))
    records = []
    with pytest.raises(ValueError, match=r"algorithm 'frpg' cannot run on problem 'linreg_synthetic") as err:
        simulate(_linreg_synthetic(), make_algorithm("frpg"), max_rounds=3, progress=records.append)
    msg = str(err.value)
    for cap in ("StochasticProblem", "ByzantineProblem", "StepConstantProblem: L",
                "ConsensusProblem: delta, server_loss, reliable, reliable_losses"):
        assert cap in msg
    assert calls == [] and records == []


def test_exact_message_from_the_static_check():
    with pytest.raises(ValueError) as err:
        check_pairing(make_algorithm("krum"), problem_class("linreg_synthetic"), problem_name="linreg_synthetic")
    assert str(err.value) == (
        "algorithm 'krum' cannot run on problem 'linreg_synthetic': it needs minibatch sampling "
        "(StochasticProblem: sample_minibatch, minibatch_grads) and a faulty-worker split "
        "(ByzantineProblem: senders), which linreg_synthetic (LinearModelProblem) does not provide; "
        "use a problem that provides them, e.g. softmax; or implement sample_minibatch, minibatch_grads, "
        "senders on LinearModelProblem")


def test_suitable_pairings_run():
    res = simulate(_softmax(), make_algorithm("krum", f=1), max_rounds=2, seed=1)
    assert res.rounds == 2
    res = simulate(_linreg_synthetic(), make_algorithm("fedadmm"), k0=2, max_rounds=2)
    assert res.rounds == 2


# ---- what counts as providing a capability ---------------------------------------------------
class NoLipschitz(FederatedProblem):
    """Implements only the base interface (the base's lipschitz stub raises)."""

    name = "no_lipschitz"

    def __init__(self):
        self.m, self.dim = 3, 2
        self.client_sizes = np.ones(3, dtype=int)
        self.weights = np.full(3, 1 / 3)

    def client_losses(self, W, clients=None):
        return np.zeros(len(self._clients(clients, self.m)))

    def client_grads(self, W, clients=None):
        return np.zeros((len(self._clients(clients, self.m)), self.dim))


def test_base_stub_does_not_count_and_an_override_does():
    assert not provides(NoLipschitz, LIPSCHITZ) and not provides(NoLipschitz(), LIPSCHITZ)
    assert provides(Quadratic, LIPSCHITZ) and provides(Quadratic(np.zeros((2, 2))), LIPSCHITZ)
    with pytest.raises(ValueError, match=r"algorithm 'fedavg' cannot run on problem 'no_lipschitz'.*"
                                         r"LipschitzProblem: lipschitz.*e\.g\. adult_logreg"):
        simulate(NoLipschitz(), make_algorithm("fedavg"), max_rounds=1)
    assert simulate(NoLipschitz(), make_algorithm("fedepm"), k0=1, max_rounds=1).rounds == 1   # needs nothing


def test_instance_attributes_count_when_set_or_declared():
    class Declared(NoLipschitz):
        L: float

    class SetInInit(NoLipschitz):
        def __init__(self):
            super().__init__()
            self.L = 2.0

    assert provides(Declared, STEP_CONSTANT) and not provides(SetInInit, STEP_CONSTANT)
    assert provides(SetInInit(), STEP_CONSTANT) and not provides(NoLipschitz(), STEP_CONSTANT)


def test_parameter_dependent_requirements():
    softmax = problem_class("softmax")
    assert LOSS_KIND in missing(make_algorithm("fedadmm", r0_rule="code"), softmax)
    assert not missing(make_algorithm("fedadmm"), softmax)
    assert STEP_CONSTANT in make_algorithm("frpg").requirements()
    assert STEP_CONSTANT not in make_algorithm("frpg", L=300.0).requirements()
    assert STEP_CONSTANT not in make_algorithm("lfrpg", L=300.0).requirements()


# ---- declarations are true: what every algorithm reads is what it requires ----------------------
class Recorder:
    """Forwards to a problem and records every attribute an algorithm reads."""

    def __init__(self, inner):
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "seen", set())

    def __getattr__(self, name):
        self.seen.add(name)
        return getattr(self._inner, name)


BASE_INTERFACE = {n for n in dir(FederatedProblem) if not n.startswith("_")} - {"lipschitz"} | {
    "m", "dim", "client_sizes", "weights", "name"}
RUNS = {   # algorithm -> (problem, params, k0)
    "fedadmm": ("linreg", {"r0_rule": "code"}, 2), "fedavg": ("linreg", {}, 2), "fedprox": ("linreg", {}, 2),
    "fedalt": ("linreg", {}, 2), "fedsim": ("linreg", {}, 2), "fedepm": ("linreg", {}, 2),
    "sfedavg": ("linreg", {}, 2), "sfedprox": ("linreg", {}, 2), "frpg": ("softmax", {}, 1),
    "lfrpg": ("softmax", {"T": 2}, 2), "rsa": ("softmax", {}, 1), "krum": ("softmax", {"f": 1}, 1),
    "geomed": ("softmax", {}, 1), "sgd_mean": ("softmax", {}, 1),
    "fedavg_sgd": ("neural", {"E": 2, "B": 7, "random_epochs": True}, 1),
    "fedadmm_gong": ("neural", {"E": 2, "B": 7}, 1), "fedprox_sgd": ("neural", {"E": 2, "B": 7}, 1),
    "fedsgd": ("neural", {}, 1), "scaffold": ("neural", {"E": 2, "B": 7}, 1),
    # asynchronous update rules (run on simulate_async with the default delay model)
    **{name: ("neural", {"B": 7, "B_loss": 9}, 1)
       for name in ("aspire", "aspire_cp", "aspire_sync", "aspire_per", "aspire_adp", "mix_even")},
    "fedavg_steps": ("neural", {"B": 7, "local_steps": 2}, 1), "afl": ("neural", {"B": 7, "B_loss": 9}, 1),
    "drfa_prox": ("neural", {"B": 7, "B_loss": 9, "local_steps": 2}, 1),
    "individual": ("neural", {"B": 7, "worker": 1}, 1),
}


def test_every_registered_algorithm_is_covered():
    assert set(RUNS) == set(algorithm_names())


@pytest.mark.parametrize("name", sorted(RUNS))
def test_what_an_algorithm_reads_is_declared(name, monkeypatch):
    kind, params, k0 = RUNS[name]
    from tests.test_neural_problem import toy

    problem = Recorder({"softmax": _softmax, "neural": toy}.get(kind, _linreg_synthetic)())
    monkeypatch.setattr("fedrepro.sim.driver.check_pairing", lambda a, p: None)   # record reads, not the check
    alg = make_algorithm(name, **params)
    if alg.asynchronous:
        simulate_async(problem, alg, DelayModel(), k0=k0, max_iterations=12, eval_every=4, seed=2)
    else:
        simulate(problem, alg, k0=k0, max_rounds=3, seed=2)
    declared = {m for c in alg.requirements() for m in c.members}
    extra = problem.seen - BASE_INTERFACE
    assert extra <= declared, f"{name} reads {sorted(extra - declared)} without declaring them in requires"
    assert declared <= problem.seen, f"{name} declares {sorted(declared - problem.seen)} it never reads"


def test_capabilities_are_consistent():
    assert len({c.name for c in CAPABILITIES}) == len(CAPABILITIES)
    for name in algorithm_names():
        assert all(isinstance(c, Capability) for c in algorithm_class(name).requires)


# ---- static view (builder's declared class) matches the built problems --------------------------
def _build_each(tmp_path):
    ds = _toy_dataset()
    ds_bin = Dataset("toybin", ds.X, (ds.y > 0).astype(np.int64))
    ds_bin.save(tmp_path / "toybin")
    Dataset("adult", np.abs(ds.X), (ds.y > 0).astype(np.int64)).save(tmp_path / "adult")
    ids = np.arange(len(ds.y)) % 4
    return {
        "linreg_synthetic": _linreg_synthetic(),
        "linreg": build_problem({"name": "linreg", "X": ds.X, "y": ds.y.astype(float), "client_ids": ids}, 0),
        "logreg": build_problem({"name": "logreg", "dataset": "toybin", "m": 4}, 0, data_dir=tmp_path),
        "softmax": _softmax(),
        "adult_logreg": build_problem({"name": "adult_logreg", "m": 4}, 0, data_dir=tmp_path),
        "neural": build_problem({"name": "neural", "m": 4, "dataset": "mnist"}, 0,
                                dataset=Dataset("mnist", np.random.default_rng(0).random((40, 784)),
                                                np.arange(40) % 10, np.array(["train", "test"] * 20))),
        "worker_neural": _worker_neural(tmp_path),
    }


def _worker_neural(tmp_path):
    """A fmnist3 problem from a tiny processed fashion_mnist (classes 0, 2, 6 -> three workers)."""
    rng = np.random.default_rng(1)
    y = np.tile(np.arange(10), 12)
    Dataset("fashion_mnist", rng.random((120, 784)), y, np.array(["train"] * 80 + ["test"] * 40)).save(
        tmp_path / "fashion_mnist")
    return build_problem({"name": "worker_neural", "dataset": "fmnist3"}, 0, data_dir=tmp_path)


def test_problem_class_matches_built_problems(tmp_path):
    built = _build_each(tmp_path)
    assert set(built) == set(problem_names())
    for name, problem in built.items():
        cls = problem_class(name)
        assert type(problem) is cls
        assert capabilities_of(problem) == capabilities_of(cls), name
    assert STOCHASTIC in capabilities_of(problem_class("softmax"))
    assert STOCHASTIC not in capabilities_of(problem_class("linreg_synthetic"))


# ---- the papers' experiments pair, and a config that does not is rejected at parse time ---------
@pytest.mark.parametrize("scale", ["quick", pytest.param("paper", marks=pytest.mark.slow)])
def test_every_paper_cell_pairs(scale):
    cells = [c for cs in all_cells({"scale": scale, "papers": PAPERS}, ".").values() for c in cs]   # parse-time check
    pairs = {(c["algorithm"], c["problem"]["name"], json.dumps(c["params"], sort_keys=True)) for c in cells}
    for alg, prob, params in pairs:
        algorithm = make_algorithm(alg, **json.loads(params))
        check_pairing(algorithm, problem_class(prob), problem_name=prob)
    seen = {(alg, prob) for alg, prob, _ in pairs}
    assert {("frpg", "softmax"), ("lfrpg", "softmax"), ("krum", "softmax"), ("rsa", "softmax"),
            ("fedadmm", "linreg_synthetic"), ("fedadmm", "logreg"), ("fedepm", "adult_logreg")} <= seen


BAD = {"problem": {"name": "linreg_synthetic", "m": 10, "n": 5},
       "algorithms": {"fedadmm": {}, "krum": {}}, "max_rounds": 3}


def test_config_with_unsuitable_pairing_is_rejected_at_parse_time():
    with pytest.raises(ConfigError, match=r"experiment custom/bad: algorithm 'krum' cannot run on problem "
                                          r"'linreg_synthetic': it needs minibatch sampling"):
        all_cells({"scale": "quick", "experiments": {"bad": BAD}}, ".")
    with pytest.raises(ConfigError, match="frpg"):
        expand("p", "e", {**BAD, "algorithms": {"frpg": {"lam": [1.0, 2.0]}}})
    # the same block on a problem that provides everything expands
    assert expand("p", "e", {**BAD, "problem": {"name": "softmax", "dataset": "usps"},
                             "algorithms": {"krum": {}, "frpg": {}}})


def test_parse_time_check_names_unknown_algorithms_parameters_and_problems():
    with pytest.raises(ConfigError, match="experiment p/e: unknown algorithm 'fedxyz'"):
        expand("p", "e", {**BAD, "algorithms": {"fedxyz": {}}})
    with pytest.raises(ConfigError, match=r"experiment p/e: algorithm 'krum' has no parameter\(s\) \['lam'\]"):
        expand("p", "e", {**BAD, "problem": {"name": "softmax"}, "algorithms": {"krum": {"lam": 1.0}}})
    with pytest.raises(ConfigError, match="experiment p/e: unknown problem 'nosuch'"):
        expand("p", "e", {**BAD, "problem": {"name": "nosuch"}})
    with pytest.raises(ConfigError, match="LossKindProblem"):
        expand("p", "e", {**BAD, "problem": {"name": "softmax"}, "algorithms": {"fedadmm": {"r0_rule": "code"}}})
