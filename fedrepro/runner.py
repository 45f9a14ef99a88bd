"""Run one sweep cell: build problem, algorithm, stop rule, mechanism and attack,
simulate, and return the tidy results frame."""
from __future__ import annotations

import importlib
import sys
import time

import pandas as pd

from .algorithms import make_algorithm
from .problems import build_problem
from .results import run_frame
from .simulation import simulate
from .stopping import build_stop


def _component(kind: str, spec: dict | None):
    """Build a privacy mechanism or attack from its spec (``{'name': ..., ...}``)."""
    if not spec or spec.get("name") in (None, "none"):
        return None
    module = importlib.import_module({"mechanism": "fedrepro.privacy", "attack": "fedrepro.attacks"}[kind])
    registry = getattr(module, "MECHANISMS" if kind == "mechanism" else "ATTACKS")
    name = spec["name"]
    if name not in registry:
        raise ValueError(f"{kind}.name={name!r} is not allowed; choose one of {sorted(registry)}")
    return registry[name](spec)


def progress_printer(stream=sys.stderr, every_seconds: float = 5.0):
    """A ``progress`` callback printing round, objective and elapsed time at most every
    ``every_seconds`` (rule logs show how far a long run is)."""
    last = [-float("inf")]

    def report(record):
        now = time.perf_counter()
        if now - last[0] >= every_seconds or record["round"] == 0:
            last[0] = now
            print(f"round {record['round']:6d}  objective {record['objective']:.6g}  "
                  f"elapsed {record['wall_time']:.1f}s", file=stream, flush=True)
    return report


def run_cell(cell: dict, data_dir: str = "data/processed", reference: dict | None = None,
             progress=None) -> pd.DataFrame:
    """Run the cell and return its tidy frame (one row per evaluated round).

    ``reference`` is the final record of the reference run when the cell's stop rule is
    ``target`` (baselines stopping at FedADMM's objective).
    """
    problem = build_problem(cell["problem"], cell["seed"], data_dir=data_dir)
    algorithm = make_algorithm(cell["algorithm"], **cell.get("params", {}))
    stop = build_stop(cell.get("stop"), problem, reference)
    result = simulate(problem, algorithm, k0=int(cell.get("k0", 1)), rho=float(cell.get("rho", 1.0)),
                      max_rounds=int(cell.get("max_rounds", 100)), seed=int(cell["seed"]),
                      eval_every=int(cell.get("eval_every", 1)), stop=stop,
                      mechanism=_component("mechanism", cell.get("mechanism")),
                      attack=_component("attack", cell.get("attack")),
                      time_limit=cell.get("time_limit"), progress=progress)
    return run_frame(cell, result, problem.describe(), algorithm.params())
