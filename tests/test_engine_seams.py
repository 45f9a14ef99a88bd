"""The run-engine seams: context passed to hooks, declared state, client_update, client-state
stores, declared parameter constraints, run settings, configurable metrics, problem specs and
attack requirements."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pytest

from fedrepro.algorithms import algorithm_class, algorithm_names, make_algorithm
from fedrepro.algorithms.base import Algorithm, State
from fedrepro.core.context import RUN_CONSTRAINTS, RUN_DEFAULTS, RunContext
from fedrepro.core.params import Boolean, Interval, Integral, Options, Real, validate_params
from fedrepro.core.store import DenseStore, LazyStore, make_store, store_bytes
from fedrepro.core.params import ConfigError
from fedrepro.experiments.expansion import expand
from fedrepro.problems import build_problem, validate_problem_spec
from fedrepro.sim.attacks import build_attack
from fedrepro.sim.loop import simulate
from fedrepro.sim.stopping import GradientTolerance
from tests.toys import LocalGD, LocalGDState, Quadratic


# ---- declared state, context as an argument ---------------------------------------------------
@pytest.mark.parametrize("name", algorithm_names())
def test_every_algorithm_declares_a_slotted_state(name):
    cls = algorithm_class(name)
    assert issubclass(cls.state_class, State)
    assert "__dict__" not in dir(cls.state_class(w=np.zeros(2)))        # undeclared fields cannot be set
    assert all(f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
               for f in dataclasses.fields(cls.state_class) if f.name != "w")


def test_an_undeclared_state_field_is_an_error_at_the_line_that_sets_it():
    @dataclass
    class Sloppy(LocalGD):
        name = "sloppy"

        def begin_round(self, state, problem, ctx, clients, r):
            state.scratch = 1.0

    with pytest.raises(AttributeError, match="scratch"):
        simulate(Quadratic.random(), Sloppy(), max_rounds=2)


@pytest.mark.parametrize("name", ["fedadmm", "fedavg", "fedalt", "fedepm", "sfedavg", "sfedprox"])
def test_no_algorithm_keeps_the_context_in_its_state(name):
    P = Quadratic.random(m=6, dim=3)
    alg = make_algorithm(name)
    seen = []

    class Probe:                         # a mechanism sees the state every round
        def __call__(self, uploads, clients, r, state, ctx):
            seen.append(state)
            return uploads

    simulate(P, alg, k0=2, rho=0.5, max_rounds=3, mechanism=Probe())
    for state in seen:
        values = [getattr(state, f.name) for f in dataclasses.fields(state)]
        assert not any(isinstance(v, RunContext) for v in values)


# ---- client_update: local work belongs to the algorithm --------------------------------------
@dataclass
class RandomEpochsGD(LocalGD):
    """E_i ~ U{1..E} local steps per selected client, drawn from the run's ('epochs', r) stream."""

    E: int = 3
    name = "random_epochs_gd"
    constraints = {"E": [Interval(Integral, 1, None)]}

    def client_update(self, state, problem, ctx, clients, r):
        epochs = ctx.rng("epochs", r).integers(1, self.E + 1, size=len(clients))
        self.begin_round(state, problem, ctx, clients, r)
        active = np.arange(len(clients))
        for t in range(int(epochs.max())):
            active = active[epochs[active] > t]                 # clients that finished drop out
            state.W[clients[active]] -= self.step * problem.client_grads(state.W[clients[active]], clients[active])
        return self.upload(state, problem, ctx, clients, r)


def test_client_update_runs_heterogeneous_local_work_inside_the_one_loop():
    P = Quadratic.random(m=10, dim=4, seed=1)
    res = simulate(P, RandomEpochsGD(step=0.2, E=4), rho=0.5, max_rounds=6, seed=3)
    # the exact step count: sum over rounds of the drawn epochs (grad calls at per-client points)
    ctx = RunContext(rho=0.5, seed=3)
    expected_rows = sum(int((ctx.rng("epochs", r).integers(1, 5, size=5) > t).sum())
                        for r in range(6) for t in range(4))
    assert res.status == "max_rounds" and res.rounds == 6
    assert P.local_grad_calls == sum(1 for r in range(6) for t in range(
        int(ctx.rng("epochs", r).integers(1, 5, size=5).max())))
    assert expected_rows > 5 * 6                                 # more than one step per client
    again = simulate(Quadratic.random(m=10, dim=4, seed=1), RandomEpochsGD(step=0.2, E=4), rho=0.5,
                     max_rounds=6, seed=3)
    np.testing.assert_array_equal(res.w, again.w)


def test_default_client_update_is_begin_round_k0_steps_upload():
    calls = []

    @dataclass
    class Traced(LocalGD):
        name = "traced"

        def begin_round(self, state, problem, ctx, clients, r):
            calls.append(("begin", r))
            super().begin_round(state, problem, ctx, clients, r)

        def local_step(self, state, problem, ctx, clients, r, t):
            calls.append(("step", r, t))
            super().local_step(state, problem, ctx, clients, r, t)

        def upload(self, state, problem, ctx, clients, r):
            calls.append(("upload", r))
            return super().upload(state, problem, ctx, clients, r)

    simulate(Quadratic.random(), Traced(), k0=3, max_rounds=2)
    one = [("begin", 0), ("step", 0, 0), ("step", 0, 1), ("step", 0, 2), ("upload", 0)]
    assert calls == one + [(c[0], 1, *c[2:]) for c in one]


# ---- client-state stores ---------------------------------------------------------------------
def test_lazy_store_reads_fill_until_written_and_counts_written_rows(tmp_path):
    fill = np.arange(4, dtype=np.float32)
    for path in (None, tmp_path / "rows.npy", "temp"):
        s = LazyStore(1000, 4, fill=fill, path=path)
        assert s.written == 0 and s.nbytes == 0
        np.testing.assert_array_equal(s[[3, 999]], np.stack([fill, fill]))
        s[[5, 7]] = np.ones((2, 4))
        s[np.array([7])] += 1.0
        np.testing.assert_array_equal(s[[5, 7, 6]], [[1] * 4, [2] * 4, fill])
        for i in range(20, 60):                                  # grows past its first allocation
            s[i] = i
        assert s.written == 42 and s.nbytes == 42 * 4 * 4
        dense = s.to_array()
        assert dense.shape == (1000, 4) and dense.dtype == np.float32
        np.testing.assert_allclose(s.sum(), dense.astype(np.float64).sum(axis=0), rtol=1e-6)
        w = np.linspace(0, 1, 1000)
        np.testing.assert_allclose(s.weighted_sum(w), w @ dense.astype(np.float64), rtol=1e-6)
    with pytest.raises(ValueError, match="fill"):
        LazyStore(3, 4, fill=np.zeros(5))


def test_dense_store_is_numpy_indexing_and_its_reductions_are_the_arrays():
    a = np.random.default_rng(0).normal(size=(6, 3))
    s = DenseStore.from_array(a.copy())
    assert s[1:3].base is not None                              # a slice is a view, as in numpy
    s[[0, 2]] = 0.0
    a[[0, 2]] = 0.0
    np.testing.assert_array_equal(s.to_array(), a)
    np.testing.assert_array_equal(s.sum(), a.sum(axis=0))
    w = np.arange(6.0)
    np.testing.assert_array_equal(s.weighted_sum(w), w @ a)
    assert store_bytes("dense", 1000, 1_663_370) == 1000 * 1_663_370 * 8
    assert store_bytes("lazy", 1000, 1_663_370, rows_written=100) == 100 * 1_663_370 * 4
    with pytest.raises(ValueError, match="lazy"):
        make_store("sparse", 2, 2)


@pytest.mark.parametrize("name", ["fedadmm", "fedepm", "fedavg", "fedalt"])
def test_lazy_float32_store_runs_the_same_algorithm_to_float32_accuracy(name):
    P = Quadratic.random(m=8, dim=4)
    dense = simulate(P, make_algorithm(name), k0=2, rho=0.5, max_rounds=8, seed=1)
    lazy = simulate(P, make_algorithm(name), k0=2, rho=0.5, max_rounds=8, seed=1, store="lazy")
    np.testing.assert_allclose(lazy.w, dense.w, rtol=1e-4, atol=1e-4 * np.abs(dense.w).max())
    assert [t["round"] for t in lazy.trace] == [t["round"] for t in dense.trace]


# ---- declared parameter constraints ---------------------------------------------------------
def test_constraints_accept_and_reject():
    positive = Interval(Real, 0, None, closed="neither")
    assert positive.accepts(1e-9) and not positive.accepts(0) and not positive.accepts(True)
    # text is never a number (the config readers convert plain YAML 1.2 floats before this)
    assert not positive.accepts("1.0e4") and not positive.accepts("-1e-3") and not positive.accepts("ten")
    assert not positive.accepts(float("nan"))
    assert Interval(Integral, 1, None).accepts(3.0) and not Interval(Integral, 1, None).accepts(2.5)
    assert Options("a", "b").accepts("a") and not Options("a", "b").accepts(["a"])
    assert Boolean.accepts(False) and not Boolean.accepts(0)
    validate_params("x", {"k": None}, {"k": [None, positive]})
    with pytest.raises(ValueError, match=r"x: k=-1 is not allowed; expected None or a number in \(0, inf\)"):
        validate_params("x", {"k": -1}, {"k": [None, positive]})
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['q'\]"):
        validate_params("x", {"q": 1}, {"k": [positive]})


@pytest.mark.parametrize("name", algorithm_names())
def test_every_algorithm_parameter_has_a_declared_constraint(name):
    cls = algorithm_class(name)
    declared = cls.parameter_constraints()
    assert {f.name for f in dataclasses.fields(cls) if f.init} == set(declared)
    make_algorithm(name)                                         # the defaults satisfy them


@pytest.mark.parametrize("name, params, key", [
    ("fedadmm", {"nu": 1.5}, "nu"), ("fedadmm", {"kappa_max": 0}, "kappa_max"),
    ("fedavg", {"step_c": 0}, "step_c"), ("fedepm", {"mu_scaling": "x"}, "mu_scaling"),
    ("frpg", {"clip_g": 1}, "clip_g"), ("lfrpg", {"T": 0}, "T"), ("sfedprox", {"ell": 2.5}, "ell"),
    ("krum", {"f": -1}, "f"), ("geomed", {"init_rule": "x"}, "init_rule"), ("rsa", {"batch": 0}, "batch"),
])
def test_bad_parameter_values_name_the_algorithm_key_and_what_is_allowed(name, params, key):
    with pytest.raises(ValueError, match=rf"{name}: {key}=.* is not allowed; expected"):
        make_algorithm(name, **params)


def test_variants_are_the_string_option_parameters():
    assert set(algorithm_class("fedadmm").variants()) == {"r0_rule", "inner_check", "pi0"}
    assert algorithm_class("sfedavg").variants()["aggregate_over"] == ("previous", "new")


# ---- run settings, defined once -------------------------------------------------------------
@pytest.mark.parametrize("setting, value", [("k0", 0), ("rho", 0), ("rho", 1.5), ("max_rounds", -5),
                                            ("eval_every", 0), ("store", "sparse"), ("time_limit", 0)])
def test_bad_run_settings_fail_before_the_run(setting, value):
    alg = LocalGD()
    with pytest.raises(ValueError, match=rf"run: {setting}="):
        simulate(Quadratic.random(), alg, **{setting: value})


def test_run_defaults_are_the_loops_and_declared():
    import inspect

    sig = inspect.signature(simulate).parameters
    assert {k: sig[k].default for k in RUN_DEFAULTS} == RUN_DEFAULTS
    assert set(RUN_DEFAULTS) <= set(RUN_CONSTRAINTS)


# ---- evaluation metrics ---------------------------------------------------------------------
class CountingQuadratic(Quadratic):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.gradient_calls = 0

    def gradient(self, w):
        self.gradient_calls += 1
        return super().gradient(w)


def test_only_the_asked_metrics_are_computed_and_recorded():
    P = CountingQuadratic.random(m=5, dim=3)
    res = simulate(P, LocalGD(), max_rounds=4, metrics=["objective"])
    assert P.gradient_calls == 0
    assert all("grad_norm2" not in t and "objective" in t for t in res.trace)
    res = simulate(P, LocalGD(), max_rounds=4)                     # default: all the problem has
    assert P.gradient_calls == 5 and "grad_norm2" in res.trace[-1]
    with pytest.raises(ValueError, match=r"cannot evaluate \['accuracy'\]; its metrics are \['objective', "):
        simulate(P, LocalGD(), max_rounds=4, metrics=["accuracy"])


def test_a_stop_rule_needs_the_metrics_it_reads():
    with pytest.raises(ValueError, match=r"reads \['grad_norm2'\], which this run does not evaluate"):
        simulate(Quadratic.random(), LocalGD(), max_rounds=4, metrics=["objective"],
                 stop=GradientTolerance(tol=1e-9))


def test_divergence_is_detected_on_what_the_run_evaluates():
    class Exploding(Quadratic):
        def objective(self, w):
            return 1.0

        def gradient(self, w):
            return np.full(self.dim, np.inf)

    P = Exploding.random(m=4, dim=2)
    assert simulate(P, LocalGD(), max_rounds=5).status == "diverged"
    assert simulate(P, LocalGD(), max_rounds=5, metrics=["objective"]).status == "max_rounds"


# ---- problem specs and attacks ---------------------------------------------------------------
def test_unknown_problem_keys_are_rejected_by_builder_and_at_parse_time():
    spec = {"name": "linreg_synthetic", "m": 4, "n": 3, "d_lo": 3, "nn": 7}
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['d_lo', 'nn'\]"):
        build_problem(spec, 0)
    with pytest.raises(ValueError, match=r"problem 'linreg_synthetic': m=0 is not allowed"):
        validate_problem_spec({"name": "linreg_synthetic", "m": 0})
    block = {"problem": spec, "algorithms": {"fedadmm": None}, "max_rounds": 2}
    with pytest.raises(ConfigError, match=r"experiment custom/x: problem 'linreg_synthetic': unknown key"):
        expand("custom", "x", block)
    with pytest.raises(ConfigError, match=r"run: rho=2"):
        expand("custom", "x", {"problem": {"name": "linreg_synthetic"}, "algorithms": {"fedadmm": None}, "rho": 2})


def test_attacks_declare_what_they_need():
    linreg = build_problem({"name": "linreg_synthetic", "m": 6, "n": 3, "d_low": 5, "d_high": 8}, 0)
    with pytest.raises(ValueError, match=r"attack 'label_flip' cannot run on problem .*rewritable training labels"):
        simulate(linreg, make_algorithm("fedavg"), max_rounds=2, attack=build_attack({"name": "label_flip"}))
    # an algorithm that does not say what it uploads cannot be attacked on its uploads
    undeclared = make_algorithm("fedavg")
    object.__setattr__(undeclared, "upload_kind", None)
    with pytest.raises(ValueError, match=r"attack 'gaussian' cannot corrupt the uploads of algorithm 'fedavg'.*"
                                         r"faulty_upload"):
        simulate(linreg, undeclared, max_rounds=2, attack=build_attack({"name": "gaussian"}))
    with pytest.raises(ValueError, match=r"attack 'sign_flip' cannot corrupt .*'fedavg'.*undeclared"):
        simulate(linreg, undeclared, max_rounds=2, attack=build_attack({"name": "sign_flip"}))
    # an aggregator cannot replace a server step that is not an average (FedEPM's ENS server)
    block = {"problem": {"name": "linreg_synthetic"}, "algorithms": {"fedepm": None}, "aggregator": {"name": "krum"}}
    with pytest.raises(ConfigError, match="aggregator 'krum' cannot replace the server step of algorithm 'fedepm'"):
        expand("custom", "x", block)


def test_toy_state_is_declared():
    assert issubclass(LocalGDState, State) and LocalGD.state_class is LocalGDState
    assert isinstance(LocalGD(), Algorithm)


def test_attack_and_stop_blocks_reject_unknown_keys_and_bad_values():
    from fedrepro.sim.stopping import build_stop, validate_stop_spec

    with pytest.raises(ValueError, match=r"attack 'gaussian': unknown key\(s\) \['cc'\]"):
        build_attack({"name": "gaussian", "cc": 3})
    with pytest.raises(ValueError, match=r"attack 'gaussian': c=-1 is not allowed"):
        build_attack({"name": "gaussian", "c": -1})
    build_attack({"name": "gaussian", "c": 1.0e4, "B": 2})
    with pytest.raises(ValueError, match=r"attack 'gaussian': c='1.0e4' is not allowed"):
        build_attack({"name": "gaussian", "c": "1.0e4", "B": 2})    # text (a quoted number) is not a number
    with pytest.raises(ValueError, match=r"stop rule 'gradient': unknown key\(s\) \['tolerance'\]"):
        validate_stop_spec({"rule": "gradient", "tolerance": 1e-3})
    with pytest.raises(ValueError, match=r"stop rule 'epm': variant='x' is not allowed"):
        build_stop({"rule": "epm", "variant": "x"}, Quadratic.random())
    block = {"problem": {"name": "linreg_synthetic"}, "algorithms": {"fedadmm": None},
             "stop": {"rule": "fedadmm30", "epsilon": 1e-3}}
    with pytest.raises(ConfigError, match=r"stop rule 'fedadmm30': unknown key\(s\) \['epsilon'\]"):
        expand("custom", "x", block)
