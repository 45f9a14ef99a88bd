"""One path from a spec to a run: :func:`build_run` builds problem, algorithm, stop
rule, mechanism and attack from a cell (a sweep cell of the workflow, or the cell the
CLI makes from its flags); :func:`run_cell` simulates it and returns the tidy frame.

Mechanisms come only from :func:`fedrepro.sim.privacy.build_mechanism`, attacks only from
:func:`fedrepro.sim.attacks.build_attack`."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import pandas as pd

from fedrepro.algorithms import make_algorithm
from fedrepro.core.allocator import keep_freed_memory
from fedrepro.core.context import RUN_DEFAULTS, RUN_OPTIONAL, check_run_settings
from fedrepro.sim.aggregation import build_aggregator
from fedrepro.sim.attacks import build_attack
from fedrepro.sim.privacy import build_mechanism
from fedrepro.problems import build_problem
from fedrepro.experiments.results import run_frame
from fedrepro.sim.async_loop import simulate_async
from fedrepro.sim.delays import build_delays, resolve_staleness
from fedrepro.sim.loop import simulate
from fedrepro.sim.stopping import build_stop

#: run settings the asynchronous loop takes (the rest are synchronous: participation, stores)
ASYNC_SETTINGS = ("k0", "max_rounds", "eval_every", "time_limit", "metrics", "store", "diverge_factor")


def progress_printer(stream=sys.stderr, every_seconds: float = 5.0):
    """A ``progress`` callback printing round, objective (or the first evaluated metric) and elapsed
    time at most every ``every_seconds`` (rule logs show how far a long run is)."""
    last = [-float("inf")]

    def report(record):
        now = time.perf_counter()
        if now - last[0] >= every_seconds or record["round"] == 0:
            last[0] = now
            metric = "objective" if "objective" in record else \
                next(k for k in record if k not in ("round", "iteration"))
            print(f"round {record['round']:6d}  {metric} {record[metric]:.6g}  "
                  f"elapsed {record['wall_time']:.1f}s", file=stream, flush=True)
    return report


@dataclass
class Run:
    """Everything of one run, ready for :func:`fedrepro.sim.loop.simulate` (or
    :func:`fedrepro.sim.async_loop.simulate_async` for an asynchronous update rule)."""

    problem: object
    algorithm: object
    kwargs: dict = field(default_factory=dict)     # the loop's keyword arguments

    def simulate(self, progress=None):
        keep_freed_memory()          # large numpy temporaries reuse freed pages (fedrepro.core.allocator)
        loop = simulate_async if self.algorithm.asynchronous else simulate
        return loop(self.problem, self.algorithm, progress=progress, **self.kwargs)


def build_run(cell: dict, data_dir: str = "data/processed", reference: dict | None = None,
              problem=None, replay=None) -> Run:
    """Build the run a cell describes.

    ``cell`` keys: ``problem`` (spec for :func:`fedrepro.problems.build_problem`), ``algorithm``,
    ``params``, ``seed``, ``stop``, ``mechanism``, ``attack`` and the run settings of
    :data:`fedrepro.core.context.RUN_DEFAULTS` / ``RUN_OPTIONAL`` (``k0``, ``rho``, ``max_rounds``,
    ``eval_every``, ``time_limit``, ``metrics``, ``store``). ``problem``: an already built problem (the CLI's npz) used
    instead of ``cell['problem']``. ``reference``: final record of the reference run when the
    stop rule is ``target``. ``replay``: a :class:`fedrepro.sim.replay.Replay`.

    The attack is built first: a data-side attack that changes the federation (``backdoor``'s added
    worker) gives the problem's builder the options of the data it needs (``attack.problem_options()``).
    """
    attack = build_attack(cell.get("attack"))
    if problem is None:
        problem = build_problem(cell["problem"], cell["seed"], data_dir=data_dir,
                                **(attack.problem_options() if hasattr(attack, "problem_options") else {}))
    algorithm = make_algorithm(cell["algorithm"], **cell.get("params", {}))
    stop = build_stop(cell.get("stop"), problem, reference)
    settings = {key: cell.get(key, default) for key, default in {**RUN_DEFAULTS, **RUN_OPTIONAL}.items()}
    check_run_settings(seed=cell["seed"], **settings)       # before any work: the key and what is allowed
    delays, time_budget = build_delays(cell.get("delays")), cell.get("time_budget")
    if algorithm.asynchronous:
        check_async_cell(cell)
        kwargs = dict(seed=int(cell["seed"]), stop=stop, delays=delays, time_budget=time_budget,
                      tau=resolve_staleness(cell.get("tau"), problem.m),
                      mechanism=build_mechanism(cell.get("mechanism")), attack=attack,
                      **{k: v for k, v in settings.items() if k in ASYNC_SETTINGS})
        kwargs["max_iterations"] = kwargs.pop("max_rounds")
        return Run(problem, algorithm, kwargs)
    if cell.get("tau") is not None:
        raise ValueError(f"tau (bounded staleness) is a setting of the asynchronous schedule; algorithm "
                         f"{cell['algorithm']!r} runs in synchronous rounds, where every upload is fresh: remove tau")
    kwargs = dict(seed=int(cell["seed"]), stop=stop, mechanism=build_mechanism(cell.get("mechanism")),
                  attack=attack, aggregator=build_aggregator(cell.get("aggregator")),
                  delays=delays, time_budget=time_budget, **settings)
    if replay is not None:
        kwargs["replay"] = replay                  # simulate checks it against problem and round cap
    return Run(problem, algorithm, kwargs)


def check_async_cell(cell: dict) -> None:
    """An asynchronous update rule runs on the event-driven loop: it needs a delay model and takes no
    aggregator or participation rate (a ValueError names the key to remove); which mechanisms and attacks
    it takes, the channel says (:meth:`fedrepro.sim.channel.Channel.check`, schedule "async")."""
    if cell.get("delays") is None:
        raise ValueError(f"algorithm {cell['algorithm']!r} is asynchronous: give the cell a delay model "
                         "(delays: {H_max: 5, c0: 0.05, ...}; {} for the defaults)")
    if cell.get("rho", 1.0) != 1.0:
        raise ValueError(f"algorithm {cell['algorithm']!r} is asynchronous: the number of active workers is its "
                         "parameter S, not rho; remove rho")


def run_cell(cell: dict, data_dir: str = "data/processed", reference: dict | None = None,
             progress=None) -> pd.DataFrame:
    """Run the cell and return its tidy frame (one row per evaluated round).

    ``reference`` is the final record of the reference run when the cell's stop rule is
    ``target`` (baselines stopping at FedADMM's objective).
    """
    run = build_run(cell, data_dir=data_dir, reference=reference)
    result = run.simulate(progress=progress)
    return run_frame(cell, result, run.problem.describe(), run.algorithm.params())
