"""A problem is one registration (fedrepro.problems.registry.register): its builder (keys, class), cost
model, workers, datasets and npz form. A toy problem registered here, in this test only, is checked by the
config validation, gets resource requests, runs from a config block through the workflow's cell runner
(run_cell, as workflow/scripts/run_cells.py) and from the command line (fedrepro run), touching no other
file; and no module outside the registrations switches on a problem's name."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fedrepro
from fedrepro.cli import main
from fedrepro.core.params import POSITIVE_INT, Anything
from fedrepro.experiments import resources
from fedrepro.core.params import ConfigError
from fedrepro.experiments.expansion import check_cell, expand
from fedrepro.experiments.runner import run_cell
from fedrepro.problems import (PROBLEMS, build_problem, problem_class, problem_datasets, problem_names,
                               problem_workers, validate_problem_spec)
from fedrepro.problems.base import problem_spec
from fedrepro.problems.cost import ConvexCost, NeuralCost, WorkerCost
from fedrepro.problems.registry import ProblemSpec, UserData, get_problem, register, unregister
from fedrepro.problems.user_data import load_client_npz
from tests.toys import Quadratic


class ToyQuadratic(Quadratic):
    """f_i(w) = 1/2 ||w - c_i||^2: the tests' quadratic under its own problem name."""

    name = "toy_quadratic"


@problem_spec(m=[POSITIVE_INT], dim=[POSITIVE_INT], data=[Anything("path of an npz with X, y, client")])
def build_toy_quadratic(spec: dict, seed: int, **kwargs) -> ToyQuadratic:
    """Random centres (``m`` x ``dim``), or from a user's npz: each client's centre is the mean of its rows of X."""
    if "data" in spec:
        X, _, client, _ = load_client_npz(spec["data"])
        return ToyQuadratic(np.stack([X[client == i].mean(axis=0) for i in range(client.max() + 1)]))
    rng = np.random.default_rng(seed)
    return ToyQuadratic(rng.normal(size=(int(spec.get("m", 4)), int(spec.get("dim", 3)))))


TOY = ProblemSpec("toy_quadratic", build_toy_quadratic, cost=ConvexCost(), workers=("m", 4),
                  user_data={"toy_quadratic": UserData({"name": "toy_quadratic"})})


@pytest.fixture
def toy():
    """The toy problem, registered for one test."""
    register(TOY)
    yield TOY
    unregister(TOY.name)


def test_the_registrations_carry_what_the_readers_switched_on():
    assert problem_names() == ["adult_logreg", "linreg", "linreg_synthetic", "logreg", "neural", "softmax",
                               "worker_neural"]
    costs = {name: type(spec.cost) for name, spec in PROBLEMS.items()}
    assert costs == {"linreg_synthetic": ConvexCost, "linreg": ConvexCost, "logreg": ConvexCost,
                     "softmax": ConvexCost, "adult_logreg": ConvexCost, "neural": NeuralCost,
                     "worker_neural": WorkerCost}
    assert {n: s.workers for n, s in PROBLEMS.items() if s.workers} == {
        "linreg_synthetic": ("m", 100), "logreg": ("m", 100), "adult_logreg": ("m", 50), "softmax": ("Q", 20),
        "neural": ("m", 100)}
    assert get_problem("neural").constraints is not None and "model" in get_problem("neural").constraints
    with pytest.raises(ValueError, match="unknown problem 'nosuch'; allowed: adult_logreg, linreg"):
        get_problem("nosuch")


def test_a_problem_registered_twice_is_an_error(toy):
    with pytest.raises(ValueError, match="'toy_quadratic' is registered twice"):
        register(TOY)
    with pytest.raises(ValueError, match="--problem 'logreg' already runs problem 'linreg'"):
        register(ProblemSpec("other", build_toy_quadratic, user_data={"logreg": UserData({"name": "other"})}))
    assert "other" not in PROBLEMS


def test_a_toy_problem_is_one_registration(toy):
    assert "toy_quadratic" in problem_names() and problem_class("toy_quadratic") is ToyQuadratic
    validate_problem_spec({"name": "toy_quadratic", "m": 5})
    with pytest.raises(ValueError, match="toy_quadratic"):
        validate_problem_spec({"name": "toy_quadratic", "m": 0})
    assert problem_workers({"name": "toy_quadratic", "m": 5}) == (5, "workers (problem.m = 5)")
    assert problem_datasets({"name": "toy_quadratic"}) == []
    assert build_problem({"name": "toy_quadratic", "m": 5, "dim": 2}, 0).c.shape == (5, 2)
    cell = {"problem": {"name": "toy_quadratic", "m": 5}, "algorithm": "fedavg", "max_rounds": 10, "rho": 1.0}
    assert resources.cell_threads(cell, 4) == 4                      # the convex cost model: kernel threads
    assert resources.estimated_runtime_min(cell, "quick") == 30      # its quick-scale floor
    assert resources.modelled_cell_seconds(cell) == pytest.approx(10 * (3 * 1e9 / 2e9 + 0.05))
    with pytest.raises(ConfigError, match="unknown problem 'toy_quadratic'"):
        unregister("toy_quadratic")
        try:
            check_cell({**cell, "paper": "custom", "experiment": "toy", "params": {}, "seed": 0, "k0": 1,
                        "eval_every": 1})
        finally:
            register(TOY)


def test_the_toy_problem_runs_from_a_config_block(toy):
    block = {"problem": {"name": "toy_quadratic", "m": 4, "dim": 3}, "algorithms": {"fedavg": {}},
             "seeds": 1, "max_rounds": 5, "rho": 1.0, "k0": 2, "stop": {"rule": "none"}}
    cell, = expand("custom", "toy", block, "quick", 0)         # validated on the way (check_cell)
    df = run_cell(cell)                                        # what the workflow's run_cells rule runs
    assert df["round"].tolist() == list(range(6))
    assert {json.loads(p)["name"] for p in df["problem"]} == {"toy_quadratic"}
    assert (df["m"] == 4).all() and df["objective"].iloc[-1] < df["objective"].iloc[0]


def test_the_toy_problem_runs_from_the_cli(toy, tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    data = tmp_path / "toy.npz"
    np.savez(data, X=X, y=np.zeros(40), client=np.repeat(np.arange(4), 10))
    out = tmp_path / "run.parquet"
    assert main(["run", "--algorithm", "fedavg", "--problem", "toy_quadratic", "--data", str(data), "--k0", "2",
                 "--rounds", "5", "--out", str(out), "--quiet"]) == 0
    df = pd.read_parquet(out)
    assert df["round"].tolist() == list(range(6))
    assert {json.loads(p)["name"] for p in df["problem"]} == {"toy_quadratic"}
    assert (df["m"] == 4).all() and df["objective"].iloc[-1] < df["objective"].iloc[0]
    assert "fedavg: status=max_rounds" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="--problem toy_quadratic needs --data"):
        main(["run", "--algorithm", "fedavg", "--problem", "toy_quadratic", "--out", str(out)])


PROBLEM_NAMES = ("linreg_synthetic", "linreg", "logreg", "softmax", "adult_logreg", "neural", "worker_neural")


def _name_switches(source: str) -> list:
    """``(line, name)`` of every comparison in ``source`` involving a registered problem's name as a literal."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            found += [(node.lineno, c.value) for c in ast.walk(node)
                      if isinstance(c, ast.Constant) and c.value in PROBLEM_NAMES]
    return found


def test_no_reader_switches_on_a_problem_name():
    """The resource requests and the CLI ask the registrations: neither compares a problem's name with a
    literal (``name == "neural"``, ``name in ("neural", ...)``)."""
    package = Path(fedrepro.__file__).parent
    found = {rel: _name_switches((package / rel).read_text())
             for rel in ("experiments/resources.py", "cli.py", "problems/__init__.py", "problems/cost.py")}
    assert not any(found.values()), found
    assert _name_switches('if (cell.get("problem") or {}).get("name") in ("neural", "worker_neural"):\n    pass\n') \
        == [(1, "neural"), (1, "worker_neural")]                   # the check can fail
