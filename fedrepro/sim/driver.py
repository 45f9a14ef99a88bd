"""The one simulation driver: an algorithm, a problem, a schedule and the client-to-server channel.

Every run, synchronous or asynchronous, goes through :func:`drive`. The driver owns what every run
shares: the run settings' checks, the problem pairing, the run context (seeded streams, the
client-state store), the channel (:class:`fedrepro.sim.channel.Channel`: privacy, adversary,
aggregation, checked against the algorithm and the schedule before any work), the clocks, the
evaluation and stop tests (:func:`fedrepro.sim.stopping.stop_check`) and the
:class:`~fedrepro.sim.result.RunResult`. A *schedule* says which clients work when:

* :class:`Rounds` -- synchronous rounds. Each round the sampler (default
  :class:`fedrepro.core.sampling.UniformSampler`) or the replayed selections
  (:class:`fedrepro.sim.replay.Replay`, kept in the order given) pick the clients; with a delay model
  every round also advances the virtual clock by its duration (:func:`fedrepro.sim.delays.sync_round_duration`)::

      w = algo.aggregate(state, problem, ctx, r)        # the server's model at the start of round r
      <evaluate w, stop tests>
      U = algo.client_job(state, problem, ctx, S, r)    # S = ctx.clients(r)
      S', U = channel(U)                                # privacy -> adversary -> aggregation
      algo.server_update(state, problem, ctx, S', U, r)

* :class:`Events` -- the event-driven asynchronous schedule (aspire spec 002 §3.0.1; FIDELITY AS-9):
  a deterministic discrete-event simulation on a virtual clock (delays, S active workers, bounded
  staleness tau, master processing time)::

      every worker gets the initial broadcast at time 0; its report arrives after its delay
      master iteration t (until the round cap, the time budget or a stop rule):
          <evaluate, stop tests>
          the jobs sent when iteration t-1 ended: U = algo.client_job(...); channel(U)
          wait (clock = arrival) until S_t reports are in, and the report of every worker not active
              for tau iterations (bounded staleness: a consumed report is at most tau iterations old)
          start = max(clock, master free); also take every report that arrived by then
          algo.server_update(state, problem, ctx, Q, reports_Q, t, info)
          the master is busy for master_time(master_load); Q's new jobs leave when it is free
      events are ordered by (arrival, worker); a worker has at most one job in flight.

  With S = N, zero jitter and equal delays every iteration consumes every worker: a synchronous round.

The algorithm's contract is the same under both: a client job returning its uploads (typed by the
algorithm's ``upload_kind``, :mod:`fedrepro.algorithms.base`) and a server update
(:meth:`~fedrepro.algorithms.base.Algorithm.client_job`, :meth:`~fedrepro.algorithms.base.Algorithm.server_update`);
which schedule an algorithm takes is its ``asynchronous`` flag (a synchronous algorithm's server step
is split in two hooks because the model is evaluated between them: ``receive`` the uploads, then
``aggregate`` at the start of the next round).
"""
from __future__ import annotations

import heapq
import time
from dataclasses import dataclass

import numpy as np

from fedrepro.algorithms.base import client_vectors
from fedrepro.core.context import RUN_DEFAULTS, RUN_OPTIONAL, RunContext, check_run_settings
from fedrepro.core.params import POSITIVE, POSITIVE_INT, validate_params
from fedrepro.core.sampling import UniformSampler
from fedrepro.core.store import resolve_store
from fedrepro.problems.base import FederatedProblem
from fedrepro.algorithms.pairing import check_pairing
from fedrepro.sim.channel import Channel
from fedrepro.sim.delays import sync_round_duration
from fedrepro.sim.result import RunResult, record_evaluation
from fedrepro.sim.stopping import check_stop_needs, stop_check

__all__ = ["drive", "Rounds", "Events", "schedule_for"]


class _Clocks:
    """Wall and CPU seconds since the run's start, and those spent in client jobs."""

    def __init__(self):
        self.t_start, self.cpu_start = time.perf_counter(), time.process_time()
        self.local_time = self.local_cpu_time = 0.0

    def job(self, fn, *args):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn(*args)
        self.local_time += time.perf_counter() - t0
        self.local_cpu_time += time.process_time() - c0
        return out

    def tail(self) -> dict:
        return {"wall_time": time.perf_counter() - self.t_start, "cpu_time": time.process_time() - self.cpu_start,
                "local_time": self.local_time, "local_cpu_time": self.local_cpu_time}


@dataclass
class Rounds:
    """Synchronous rounds (module docstring).

    rho : participation rate; the default sampler picks ceil(rho*m) uniform clients a round, or
        max(floor(rho*m), 1) with ``sample_count="floor"`` (FedAvg's C-fraction).
    sampler : callable ``r -> client ids`` (:mod:`fedrepro.core.sampling`) instead of the default.
    replay : a :class:`fedrepro.sim.replay.Replay`: recorded client selections (instead of the
        sampler, in the order given) and/or unit-scale noise (instead of the ``init``/``noise`` streams).
    delays : a delay model of :mod:`fedrepro.sim.delays`: records then carry ``virtual_time``, the sum of
        the round durations over the algorithm's ``round_phases``.
    time_budget : virtual seconds (needs ``delays``): no round starts at or after it (status ``time_budget``).
    """

    rho: float = RUN_DEFAULTS["rho"]
    sample_count: str = RUN_OPTIONAL["sample_count"]
    sampler: object = None
    replay: object = None
    delays: object = None
    time_budget: float | None = None

    kind = "sync"

    def check(self, problem, algorithm, max_rounds: int) -> None:
        check_run_settings(rho=self.rho, sample_count=self.sample_count)
        if self.time_budget is not None and (self.delays is None or not self.time_budget > 0):
            raise ValueError(f"time_budget={self.time_budget!r} needs a delay model (delays=...) and a positive "
                             "number of virtual seconds")
        if algorithm.asynchronous:
            raise TypeError(f"{getattr(algorithm, 'name', algorithm)!r} is an asynchronous update rule: it runs "
                            "on the event schedule (fedrepro.sim.driver.Events), not in synchronous rounds")
        if self.replay is not None:
            self.replay.check(problem.m, problem.dim, max_rounds)
            if self.replay.selections is not None and self.sampler is not None:
                raise ValueError("give either replayed selections or a sampler, not both")

    def context(self, problem, seed: int) -> dict:
        sampler = self.sampler
        if self.replay is not None and self.replay.selections is not None:
            sampler = self.replay.clients
        return {"rho": float(self.rho),
                "sampler": sampler or UniformSampler(problem.m, float(self.rho), int(seed), self.sample_count),
                "replay_noise": self.replay.noise_cursor() if self.replay is not None else None}

    def start(self, run, state) -> None:
        self.timing = self.delays.bind(run.problem.m, run.ctx) if self.delays is not None else None
        self.clock = 0.0

    def before_check(self, run, state, r: int) -> None:
        state.w = run.algorithm.aggregate(state, run.problem, run.ctx, r)

    def head(self, r: int) -> dict:
        return {"round": r, "iteration": r * self.k0}

    def tail(self) -> dict:
        return {"virtual_time": self.clock} if self.timing is not None else {}

    def step(self, run, state, r: int) -> None:
        algorithm, problem, ctx = run.algorithm, run.problem, run.ctx
        clients = ctx.clients(r)
        uploads = run.clocks.job(algorithm.client_job, state, problem, ctx, clients, r)
        senders = clients
        if not run.channel.empty:                    # privacy, adversary, aggregation (fedrepro.sim.channel)
            senders, uploads = run.channel.transmit(uploads, clients, r, state, problem, algorithm, ctx)
        algorithm.server_update(state, problem, ctx, senders, uploads, r, None)
        if self.timing is not None:
            self.clock += sync_round_duration(self.timing, r, algorithm.round_phases(state, ctx, clients, r),
                                              start=self.clock)

    def result(self, trace, ctx, store) -> dict:
        rounds = trace[-1]["round"] if trace else 0
        info = {"store": store} if store != "dense" else {}
        if ctx.replay_noise is not None:
            info["replay_noise_rows"] = (ctx.replay_noise.used, len(ctx.replay_noise.draws))   # (used, supplied)
        return {"rounds": rounds, "iterations": rounds * ctx.k0, "info": info}


EVENT_CONSTRAINTS = {"tau": [None, POSITIVE_INT], "time_budget": [None, POSITIVE]}


@dataclass
class Events:
    """The event-driven asynchronous schedule (module docstring).

    delays : a :class:`fedrepro.sim.delays.DelayModel` or :class:`~fedrepro.sim.delays.DelayTable`.
    tau : bounded staleness (iterations; None: unbounded). The aspire spec uses 4N.
    time_budget : virtual seconds; no master iteration starts at or after it (status ``time_budget``).

    A master iteration is the run's round: ``max_rounds`` caps them, ``eval_every`` counts them, and a
    record's ``round`` is the master iteration t; records also carry ``virtual_time`` (clock when
    iteration t is done), ``uploads`` (reports consumed so far), ``iteration`` = uploads * k0 and
    ``max_staleness``. ``k0`` is the local gradient steps per job (priced by the delay model).
    """

    delays: object
    tau: int | None = None
    time_budget: float | None = None

    kind = "async"

    def check(self, problem, algorithm, max_rounds: int) -> None:
        validate_params("asynchronous run", {"tau": self.tau, "time_budget": self.time_budget}, EVENT_CONSTRAINTS)
        if self.delays is None:
            raise ValueError("the event schedule needs a delay model (delays=...)")
        if not algorithm.asynchronous:
            raise TypeError(f"{getattr(algorithm, 'name', algorithm)!r} is synchronous: it runs in rounds "
                            "(fedrepro.sim.driver.Rounds), not on the event schedule")

    def context(self, problem, seed: int) -> dict:
        return {"time_budget": None if self.time_budget is None else float(self.time_budget)}

    def start(self, run, state) -> None:
        m = run.problem.m
        self.timing = self.delays.bind(m, run.ctx)
        self.heap: list = []                               # (arrival, worker)
        self.flight: dict = {}                             # worker -> (report, sent iteration, dispatched, arrival)
        self.jobs = np.zeros(m, dtype=np.int64)            # job counter per worker (delay stream key)
        self.last_active = np.zeros(m, dtype=np.int64)
        self.pending = (np.arange(m), 0.0)                 # jobs to send (workers, at virtual time)
        self.clock = self.master_free = 0.0
        self.uploads = self.max_stale = 0

    def before_check(self, run, state, t: int) -> None:
        pass

    def head(self, t: int) -> dict:
        return {"round": t, "iteration": self.uploads * self.k0, "virtual_time": self.clock,
                "uploads": self.uploads, "max_staleness": self.max_stale}

    def tail(self) -> dict:
        return {}

    def _dispatch(self, run, state, workers, t: int, now: float) -> None:
        algorithm, problem, ctx = run.algorithm, run.problem, run.ctx
        reports = run.clocks.job(algorithm.client_job, state, problem, ctx, workers, t)
        if len(reports) != len(workers):
            raise ValueError(f"{algorithm.name}.worker_compute returned {len(reports)} reports for "
                             f"{len(workers)} workers")
        if not run.channel.empty and len(reports):     # the channel, keyed by the iteration the jobs leave at
            _, sent = run.channel.transmit(algorithm.report_uploads(reports), np.asarray(workers), t, state,
                                           problem, algorithm, ctx)
            reports = algorithm.with_uploads(reports, sent)
        for j, rep in zip(workers, reports):
            j = int(j)
            arrival = now + self.timing.duration(j, ctx.k0, now, int(self.jobs[j]))
            self.jobs[j] += 1
            self.flight[j] = (rep, t, now, arrival)
            self.last_active[j] = t
            heapq.heappush(self.heap, (arrival, j))

    def step(self, run, state, t: int) -> None:
        algorithm, problem, ctx = run.algorithm, run.problem, run.ctx
        m = problem.m
        # the jobs sent when iteration t-1 ended (computed here, after the stop tests, so that no job is
        # computed after the last iteration; nothing in between changes the state)
        self._dispatch(run, state, self.pending[0], t, self.pending[1])
        need = min(max(int(algorithm.active_count(state, problem, ctx, t)), 1), m)
        forced = set(np.flatnonzero(t - self.last_active >= self.tau).tolist()) if self.tau is not None else set()
        ready: set = set()
        while len(ready) < need or not forced <= ready:
            arrival, j = heapq.heappop(self.heap)
            self.clock = max(self.clock, arrival)
            ready.add(j)
        start = max(self.clock, self.master_free)
        while self.heap and self.heap[0][0] <= start:             # arrived while the master was busy
            ready.add(heapq.heappop(self.heap)[1])
        Q = np.array(sorted(ready), dtype=np.int64)
        got = [self.flight.pop(int(j)) for j in Q]
        sent = np.array([g[1] for g in got], dtype=np.int64)
        info = {"sent": sent, "staleness": t - sent, "dispatched": np.array([g[2] for g in got]),
                "arrival": np.array([g[3] for g in got]), "clock": start}
        info["rtt"] = info["arrival"] - info["dispatched"]
        self.max_stale = max(self.max_stale, int(info["staleness"].max()))
        algorithm.server_update(state, problem, ctx, Q, [g[0] for g in got], t, info)
        self.uploads += Q.size
        units, cp = algorithm.master_load(state)
        self.master_free = start + self.timing.master_time(units, cp)
        self.clock = self.master_free
        self.pending = (Q, self.master_free)

    def result(self, trace, ctx, store) -> dict:
        return {"rounds": trace[-1]["round"], "iterations": trace[-1]["iteration"],
                "info": {"virtual_time": self.clock, "uploads": self.uploads, "max_staleness": self.max_stale,
                         "jobs_sent": int(self.jobs.sum()), **({"store": store} if store != "dense" else {})}}


def schedule_for(algorithm, *, rho: float = RUN_DEFAULTS["rho"], sample_count: str = RUN_OPTIONAL["sample_count"],
                 sampler=None, replay=None, delays=None, tau: int | None = None, time_budget: float | None = None):
    """The schedule ``algorithm`` runs on, from the cell's keys: :class:`Events` for an asynchronous
    update rule (which takes no rho, sampler or replay), else :class:`Rounds` (which takes no tau: every
    upload of a synchronous round is fresh). A key the schedule cannot take is a ValueError naming it."""
    name = getattr(algorithm, "name", algorithm)
    if algorithm.asynchronous:
        given = [k for k, v in (("rho", rho != 1.0), ("sampler", sampler is not None), ("replay", replay is not None),
                                ("sample_count", sample_count != RUN_OPTIONAL["sample_count"])) if v]
        if given:
            raise ValueError(f"algorithm {name!r} is asynchronous: the number of active workers is its parameter "
                             f"S, and it has no rounds to sample or replay; remove {', '.join(given)}")
        if delays is None:
            raise ValueError(f"algorithm {name!r} is asynchronous: give the cell a delay model "
                             "(delays: {H_max: 5, c0: 0.05, ...}; {} for the defaults)")
        return Events(delays=delays, tau=tau, time_budget=time_budget)
    if tau is not None:
        raise ValueError(f"tau (bounded staleness) is a setting of the asynchronous schedule; algorithm {name!r} "
                         "runs in synchronous rounds, where every upload is fresh: remove tau")
    return Rounds(rho=rho, sample_count=sample_count, sampler=sampler, replay=replay, delays=delays,
                  time_budget=time_budget)


@dataclass
class _Run:
    problem: FederatedProblem
    algorithm: object
    ctx: RunContext
    channel: Channel
    clocks: _Clocks


def drive(problem: FederatedProblem, algorithm, schedule, *, k0: int = RUN_DEFAULTS["k0"],
          max_rounds: int = RUN_DEFAULTS["max_rounds"], seed: int = 0, eval_every: int = RUN_DEFAULTS["eval_every"],
          stop=None, progress=None, time_limit: float | None = RUN_DEFAULTS["time_limit"],
          store: str = RUN_OPTIONAL["store"], store_budget_mb: float = RUN_OPTIONAL["store_budget_mb"],
          metrics=RUN_OPTIONAL["metrics"], diverge_factor: float | None = RUN_OPTIONAL["diverge_factor"],
          mechanism=None, attack=None, aggregator=None) -> RunResult:
    """Run ``algorithm`` on ``problem`` under ``schedule`` (:class:`Rounds` or :class:`Events`).

    Parameters
    ----------
    k0 : local iterations per round (per job under :class:`Events`).
    max_rounds : cap on rounds (master iterations; status ``max_rounds`` when hit).
    seed : run seed (sampling, noise, attacks, minibatches, delays all derive from it).
    eval_every : evaluate (and test ``stop``) every this many rounds; the first and last rounds are
        always evaluated.
    metrics : names of the problem's metrics to evaluate (default: all of ``problem.metric_names()``).
        The run ends as ``diverged`` when any evaluated metric or the model is not finite.
    stop : a rule from :mod:`fedrepro.sim.stopping` (or None: run to ``max_rounds``).
    progress : callable ``(record) -> None`` called after each evaluation.
    time_limit : wall seconds (status ``time_limit``).
    store : how algorithms hold per-client state: ``"dense"``, ``"lazy"``, ``"memmap"`` or ``"auto"``
        (dense when the algorithm's ``client_vectors`` dense stores fit in ``store_budget_mb`` MiB, else
        memmap: :func:`fedrepro.core.store.resolve_store`; the kind used is ``result.info["store"]``).
    diverge_factor : the run ends as ``diverged`` when |objective| exceeds this factor times
        max(1, |objective at round 0|) (None: only non-finite values count).
    mechanism, attack, aggregator : the stages of the client-to-server channel
        (:class:`fedrepro.sim.channel.Channel`; built by :func:`fedrepro.sim.privacy.build_mechanism`,
        :func:`fedrepro.sim.attacks.build_attack`, :func:`fedrepro.sim.aggregation.build_aggregator`),
        applied to every upload; a stage the algorithm or the schedule cannot take is refused before the run.

    Everything is checked before any work: the settings, the schedule against the algorithm, the
    problem's capabilities against the algorithm's needs (:mod:`fedrepro.problems.protocols`), the
    metrics against the stop rule, and the channel.
    """
    check_run_settings(k0=k0, max_rounds=max_rounds, eval_every=eval_every, time_limit=time_limit, store=store,
                       metrics=metrics, seed=seed, store_budget_mb=store_budget_mb, diverge_factor=diverge_factor)
    schedule.check(problem, algorithm, max_rounds)
    check_pairing(algorithm, problem)
    metrics = problem.check_metrics(metrics)
    check_stop_needs(stop, metrics)
    store = resolve_store(store, problem.m, problem.dim, client_vectors(algorithm), store_budget_mb)
    ctx = RunContext(k0=int(k0), seed=int(seed), max_rounds=int(max_rounds), algorithm=algorithm.name, store=store,
                     **schedule.context(problem, seed))
    channel = Channel(mechanism, attack, aggregator)
    channel.check(algorithm, problem, schedule=schedule.kind)
    channel.prepare(problem, ctx)
    algorithm.prepare(problem, ctx)

    clocks = _Clocks()
    run = _Run(problem, algorithm, ctx, channel, clocks)
    state = algorithm.init(problem, ctx)
    schedule.k0 = ctx.k0
    schedule.start(run, state)
    trace: list[dict] = []
    r = 0

    def evaluate():
        tail = {**clocks.tail(), **schedule.tail()}
        return record_evaluation(problem, algorithm, state, ctx, state.w, metrics, schedule.head(r), tail, trace,
                                 progress, stop, diverge_factor)

    while True:
        schedule.before_check(run, state, r)
        ended = stop_check(r, evaluate, max_rounds=max_rounds, eval_every=eval_every, clock=schedule.clock,
                           time_budget=schedule.time_budget, time_limit=time_limit, started=clocks.t_start)
        if ended:
            status, reason = ended
            break
        schedule.step(run, state, r)
        r += 1
    out = schedule.result(trace, ctx, store)
    return RunResult(trace=trace, status=status, stop_reason=reason, rounds=out["rounds"],
                     iterations=out["iterations"], wall_time=time.perf_counter() - clocks.t_start,
                     local_time=clocks.local_time, w=state.w, cpu_time=time.process_time() - clocks.cpu_start,
                     local_cpu_time=clocks.local_cpu_time, info=out["info"])
