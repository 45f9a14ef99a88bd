"""FedAvg vs FedProx, and names that do not collide (issue #44 item 4).

* ``fedprox_sgd``'s declared parameters and defaults are ``fedavg_sgd``'s plus ``mu``, and mu = 0 runs
  FedAvg exactly: a FedAvg-vs-FedProx sweep differs only in the proximal term unless the user says so.
* ``rho`` is only ever the run's participation rate: no algorithm has a parameter so named; FedProx's
  proximal coefficient is ``mu`` and FedADMM-Gong's penalty ``penalty``, and their former name ``rho`` in an
  algorithm block (or a grid key) is refused at config time, naming the key and the fix.
* The papers' cells keep their ids (:func:`fedrepro.experiments.expansion.id_params`) and their settings:
  Gong et al.'s FedProx still runs with momentum 0.5, E_i ~ U{1..E} and the unweighted mean.
"""
from __future__ import annotations

import numpy as np
import pytest

from fedrepro.algorithms import algorithm_class, algorithm_names, make_algorithm
from fedrepro.core.params import ConfigError
from fedrepro.experiments.expansion import RUN_KEYS, cell_id, expand, id_params, load_experiments
from fedrepro.experiments.yamlio import config_hash
from fedrepro.nn import ModelSpec, build_model, mlp
from fedrepro.problems.neural import NeuralProblem
from fedrepro.sim.loop import simulate


def tiny(dtype=np.float64) -> NeuralProblem:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 4))
    y = X[:, :3].argmax(axis=1).astype(np.int64)
    parts = np.split(rng.permutation(40), [7, 18, 26])
    return NeuralProblem(build_model(ModelSpec((4,), mlp((8,), 3), "torch", "softmax_ce"), dtype=dtype), X, y, parts)


def test_fedprox_declares_fedavgs_parameters_and_defaults_plus_mu():
    avg, prox = make_algorithm("fedavg_sgd").params(), make_algorithm("fedprox_sgd").params()
    assert {k: v for k, v in prox.items() if k != "mu"} == avg
    assert set(prox) - set(avg) == {"mu"} and prox["mu"] == 0.1
    avg_c = algorithm_class("fedavg_sgd").parameter_constraints()
    prox_c = algorithm_class("fedprox_sgd").parameter_constraints()
    assert set(prox_c) - set(avg_c) == {"mu"} and {k: prox_c[k] for k in avg_c} == avg_c


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fedprox_with_mu_0_is_fedavg_and_mu_moves_it(dtype):
    def run(name, **params):
        return simulate(tiny(dtype), make_algorithm(name, E=2, B=4, **params), rho=0.5, max_rounds=4, seed=1,
                        metrics=["objective"])

    avg, prox0 = run("fedavg_sgd"), run("fedprox_sgd", mu=0.0)
    assert np.array_equal(avg.w, prox0.w)
    assert [t["objective"] for t in avg.trace] == [t["objective"] for t in prox0.trace]
    # the same with the user's own non-default settings, given to both
    mine = dict(momentum=0.5, random_epochs=True, aggregation="unweighted")
    assert np.array_equal(run("fedavg_sgd", **mine).w, run("fedprox_sgd", mu=0.0, **mine).w)
    assert not np.allclose(run("fedprox_sgd", mu=0.5).w, avg.w)


def test_no_algorithm_has_a_parameter_named_like_a_run_setting():
    """``rho`` (participation), ``k0``, ``max_rounds`` ... in ``algorithms: {name: {...}}`` are always run settings
    of that algorithm's cells; an algorithm parameter of such a name would be ambiguous."""
    clash = {name: sorted(set(algorithm_class(name).__dataclass_fields__) & set(RUN_KEYS))
             for name in algorithm_names()}
    assert {k: v for k, v in clash.items() if v} == {}


@pytest.mark.parametrize("name, old, new", [("fedprox_sgd", "rho", "mu"), ("fedadmm_gong", "rho", "penalty")])
def test_the_former_name_rho_is_refused_in_an_algorithm_block_and_a_grid(name, old, new):
    block = {"problem": {"name": "neural", "dataset": "mnist", "m": 10}, "rho": 0.1,
             "algorithms": {name: {old: 0.01}}}
    with pytest.raises(ConfigError, match=rf"x: algorithms\.{name}\.rho: .*'rho' \(rho is the run's participation "
                                          rf"rate; .* {new}\): write {new}: 0\.01.*set it on the experiment"):
        expand("custom", "x", block)
    swept = {**block, "algorithms": {name: {}}, "grid": {f"{name}.rho": [0.01, 0.1]}}
    with pytest.raises(ConfigError, match=rf"grid key {name}\.rho: .*write grid key {name}\.{new} for"):
        expand("custom", "x", swept)
    ok = {**block, "algorithms": {name: {new: 0.01}}, "grid": {"rho": [0.2, 0.4]}}
    assert sorted((c["rho"], c["params"][new]) for c in expand("custom", "x", ok)) == [(0.2, 0.01), (0.4, 0.01)]


def _legacy_id(cell: dict, params: dict) -> str:
    """The id a cell had before issue #44: the hash of its content with its parameters as written."""
    return config_hash({**{k: v for k, v in cell.items() if k not in ("cell", "columns", "shared")},
                        "params": params})[:12]


def test_cell_ids_are_those_of_the_parameters_in_their_former_terms():
    base = {"algorithm": "fedprox_sgd", "problem": {"name": "neural"}, "rho": 0.1, "seed": 0}
    gong = {"mu": 0.1, "momentum": 0.5, "random_epochs": True, "aggregation": "unweighted", "E": 10}
    # Gong et al.'s FedProx, written now with its settings explicit, has the id it had as {rho: 0.1, E: 10}
    assert cell_id({**base, "params": gong}) == _legacy_id(base, {"rho": 0.1, "E": 10})
    # the new defaults (momentum 0, fixed epochs, data-size mean) are another computation: another id
    assert id_params("fedprox_sgd", {"mu": 0.1}) == {"rho": 0.1, "momentum": 0.0, "random_epochs": False,
                                                   "aggregation": "data_size"}
    ids = {cell_id({**base, "params": p}) for p in ({}, {"mu": 0.1}, {"momentum": 0.5}, {"mu": 0.2}, gong,
                                                     {**gong, "momentum": 0.0}, {**gong, "random_epochs": False})}
    assert len(ids) == 7                          # no two share an id (as before, a default given is a new id)
    admm = {**base, "algorithm": "fedadmm_gong"}
    assert cell_id({**admm, "params": {"penalty": 0.01, "rho_2": 0.1}}) == _legacy_id(admm, {"rho": 0.01, "rho_2": 0.1})
    # an algorithm without a rename hashes its parameters as given
    avg = {**base, "algorithm": "fedavg_sgd", "params": {"momentum": 0.5}}
    assert cell_id(avg) == _legacy_id(avg, {"momentum": 0.5})


def test_gongs_fedprox_keeps_the_papers_settings():
    """The paper's FedProx baseline is the authors' code's (momentum 0.5, E_i ~ U{1..E}, unweighted mean),
    now written in its experiments, not taken from fedprox_sgd's defaults."""
    exps = load_experiments({"papers": ["fedadmm_gong"]}, ".")["fedadmm_gong"]
    seen = 0
    for scale in ("quick", "verify"):
        for exp_id, block in exps.items():
            for cell in expand("fedadmm_gong", exp_id, block, scale):
                if cell["algorithm"] == "fedprox_sgd":
                    alg = make_algorithm("fedprox_sgd", **cell["params"])
                    assert (alg.momentum, alg.random_epochs, alg.aggregation) == (0.5, True, "unweighted"), exp_id
                    assert "rho" not in cell["params"] and alg.mu in (0.001, 0.01, 0.1, 1.0)
                    seen += 1
    assert seen > 0
