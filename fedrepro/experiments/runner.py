"""One path from a spec to a run: :func:`build_run` builds problem, algorithm, schedule, stop
rule and the channel's stages (mechanism, attack, aggregator) from a :class:`~fedrepro.experiments.spec.RunSpec` (a
sweep cell of the workflow, :meth:`~fedrepro.experiments.spec.RunSpec.from_cell`, or the CLI's flags,
:meth:`~fedrepro.experiments.spec.RunSpec.from_cli`); :func:`run_cell` simulates it and returns the tidy frame.
A cell dict is accepted too and read through :func:`~fedrepro.experiments.spec.as_spec`.

Mechanisms come only from :func:`fedrepro.sim.privacy.build_mechanism`, attacks only from
:func:`fedrepro.sim.attacks.build_attack`."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import pandas as pd

from fedrepro.algorithms import make_algorithm
from fedrepro.core.allocator import keep_freed_memory
from fedrepro.core.context import check_run_settings
from fedrepro.core.sampling import RecordingSampler, UniformSampler
from fedrepro.sim.aggregation import build_aggregator
from fedrepro.sim.attacks import build_attack
from fedrepro.sim.privacy import build_mechanism
from fedrepro.problems import build_problem
from fedrepro.experiments.results import run_frame
from fedrepro.experiments.spec import RunSpec, as_spec
from fedrepro.sim.delays import build_delays, resolve_staleness
from fedrepro.sim.driver import drive, schedule_for
from fedrepro.sim.stopping import build_stop

#: run settings the schedule takes (fedrepro.sim.driver.Rounds); the rest go to the driver
SCHEDULE_SETTINGS = ("rho", "sample_count")


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
    """Everything of one run, ready for :func:`fedrepro.sim.driver.drive`: the problem, the algorithm,
    its schedule (:class:`~fedrepro.sim.driver.Rounds` or :class:`~fedrepro.sim.driver.Events`) and the
    driver's keyword arguments."""

    problem: object
    algorithm: object
    schedule: object
    kwargs: dict = field(default_factory=dict)     # the driver's keyword arguments
    recorder: RecordingSampler | None = None       # the run's selections, in the order used (record_selections)

    def simulate(self, progress=None):
        keep_freed_memory()          # large numpy temporaries reuse freed pages (fedrepro.core.allocator)
        return drive(self.problem, self.algorithm, self.schedule, progress=progress, **self.kwargs)


def build_run(spec: RunSpec | dict, data_dir: str = "data/processed", reference: dict | None = None,
              problem=None, replay=None, sampler=None, record_selections: bool = False) -> Run:
    """Build the run ``spec`` describes (a :class:`~fedrepro.experiments.spec.RunSpec`, or a cell dict).

    The spec's ``problem`` (for :func:`fedrepro.problems.build_problem`), ``algorithm`` (name and its own
    parameters), ``seed``, ``stop``, ``channel`` (mechanism, attack, aggregator) and ``run`` settings
    (:data:`fedrepro.core.context.RUN_DEFAULTS` / ``RUN_OPTIONAL``: ``k0``, ``rho``, ``max_rounds``,
    ``eval_every``, ``time_limit``, ``metrics``, ``store``; the virtual-clock keys ``delays``, ``tau``,
    ``time_budget``). ``problem``: an already built problem (the CLI's registry dataset) used instead of
    ``spec.problem``.
    ``reference``: final record of the reference run when the stop rule is ``target``. ``replay``: a
    :class:`fedrepro.sim.replay.Replay`; ``sampler``: a client sampler instead of the default (both only
    for synchronous algorithms). A key the algorithm's schedule cannot take is a ValueError naming it
    (:func:`fedrepro.sim.driver.schedule_for`). ``record_selections``: the schedule's sampler (the cell's
    default :class:`~fedrepro.core.sampling.UniformSampler`, the given sampler or the replayed selections)
    is wrapped in a :class:`~fedrepro.core.sampling.RecordingSampler`, ``Run.recorder``: after the run its
    ``selections`` are the rounds' clients in the order used (:func:`fedrepro.sim.replay.write_selections`);
    for synchronous algorithms only (an asynchronous schedule has no rounds' selections).

    The attack is built first: a data-side attack that changes the federation (``backdoor``'s added
    worker) gives the problem's builder the options of the data it needs (``attack.problem_options()``).
    """
    spec = as_spec(spec)
    attack = build_attack(spec.channel.attack)
    algorithm = make_algorithm(spec.algorithm.name, **spec.algorithm.params)
    settings = spec.run.settings()
    check_run_settings(seed=spec.seed, **settings)       # before any work: the key and what is allowed
    schedule = cell_schedule(spec, algorithm, replay=replay, sampler=sampler)   # before the data are loaded
    if problem is None:
        problem = cell_problem(spec, data_dir, attack)
    if getattr(schedule, "tau", None) is not None:
        schedule.tau = resolve_staleness(spec.run.tau, problem.m)
    stop = build_stop(spec.stop, problem, reference)
    kwargs = dict(seed=int(spec.seed), stop=stop, mechanism=build_mechanism(spec.channel.mechanism),
                  attack=attack, aggregator=build_aggregator(spec.channel.aggregator),
                  **{k: v for k, v in settings.items() if k not in SCHEDULE_SETTINGS})
    recorder = None
    if record_selections:
        if algorithm.asynchronous:
            raise ValueError(f"algorithm {spec.algorithm.name!r} is asynchronous: its workers report as they finish, "
                             "so there are no rounds' client selections to record; recording is for synchronous "
                             "algorithms")
        if replay is not None and replay.selections is not None:
            replay.check(problem.m, problem.dim, settings["max_rounds"])   # the schedule then sees the sampler only
            recorder = RecordingSampler(replay.clients)
            schedule.replay = replay.without_selections()
        else:                                      # the schedule's sampler, the same draws
            recorder = RecordingSampler(schedule.sampler or UniformSampler(
                problem.m, float(settings["rho"]), int(spec.seed), settings["sample_count"]))
        schedule.sampler = recorder
    return Run(problem, algorithm, schedule, kwargs, recorder)


def problem_options(attack) -> dict:
    """What a data-side attack asks of the problem's builder (``backdoor``'s added worker), else {}."""
    return attack.problem_options() if hasattr(attack, "problem_options") else {}


def cell_problem(spec: RunSpec | dict, data_dir: str = "data/processed", attack=None):
    """The problem of a run, with its data partitioned among the clients: what :func:`build_run`
    builds (``attack``: the run's built attack, else built here from ``spec.channel.attack``). The
    partition tables (:mod:`fedrepro.experiments.partitions`) are read off this same object."""
    spec = as_spec(spec)
    if attack is None:
        attack = build_attack(spec.channel.attack)
    return build_problem(spec.problem, spec.seed, data_dir=data_dir, **problem_options(attack))


def cell_schedule(spec: RunSpec | dict, algorithm, replay=None, sampler=None):
    """The schedule of a run (:func:`fedrepro.sim.driver.schedule_for`); ``tau`` is resolved
    against the problem's worker count by :func:`build_run` (here only checked)."""
    run = as_spec(spec).run
    if run.tau is not None:
        resolve_staleness(run.tau, 1)
    return schedule_for(algorithm, rho=run.rho, sample_count=run.sample_count, sampler=sampler,
                        replay=replay, delays=build_delays(run.delays), tau=run.tau,
                        time_budget=run.time_budget)


def run_cell(spec: RunSpec | dict, data_dir: str = "data/processed", reference: dict | None = None,
             progress=None) -> pd.DataFrame:
    """Run ``spec`` (a :class:`~fedrepro.experiments.spec.RunSpec`, or a cell dict) and return its tidy frame
    (one row per evaluated round).

    ``reference`` is the final record of the reference run when the cell's stop rule is
    ``target`` (baselines stopping at FedADMM's objective).
    """
    spec = as_spec(spec)
    return complete_run(spec, build_run(spec, data_dir=data_dir, reference=reference), progress)[1]


def complete_run(spec: RunSpec, run: Run, progress=None):
    """Simulate ``run`` (built from ``spec`` by :func:`build_run`) and return ``(result, frame)``: the
    :class:`~fedrepro.sim.result.RunResult` and its tidy frame. The workflow's :func:`run_cell` and the CLI
    (``fedrepro run``, which checks its replay files between building and simulating) both end here."""
    result = run.simulate(progress=progress)
    return result, run_frame(spec, result, run.problem.describe(), run.algorithm.params())
