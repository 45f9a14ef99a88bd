"""The event-driven asynchronous loop: a deterministic discrete-event simulation on a virtual clock
(aspire spec 002, section 3.0.1; FIDELITY AS-9). The second loop of the package, with the contracts of the
synchronous :mod:`fedrepro.sim.loop`: a :class:`~fedrepro.core.context.RunContext` passed to every
hook, seeded streams per purpose, trace records (with ``virtual_time``), the stop rules of
:mod:`fedrepro.sim.stopping`, ``problem.evaluate(w, metrics)`` and a :class:`~fedrepro.sim.result.RunResult`.

The seam: an asynchronous method is an update rule, a
:class:`fedrepro.algorithms.async_base.AsyncAlgorithm` (hooks ``init``, ``worker_compute``,
``master_update``, ``active_count``, ``master_load``, ``round_metrics``; see that module), and the
timing is a delay model of :mod:`fedrepro.sim.delays` (``bind(m, ctx)`` -> ``duration(worker,
n_steps, start, job)``, ``master_time(units, cp)``). The loop decides which reports each master
iteration consumes::

    every worker gets the initial broadcast at time 0; its report arrives after its delay
    master iteration t (until max_iterations, the time budget or a stop rule):
        wait (clock = arrival) until S_t reports are in, and the report of every worker not active
            for tau iterations (bounded staleness: a consumed report is at most tau iterations old)
        start = max(clock, master free); also take every report that arrived by then (reports that
            came while the master was busy queue up and all go into the next iteration)
        Q = their workers; master_update(Q); the master is busy for master_time(master_load)
        Q's new jobs leave when the master is free: arrival = master free + delay
    events are ordered by (arrival, worker); a worker has at most one job in flight.

With S = N, zero jitter and equal delays every iteration consumes every worker: a synchronous round.
"""
from __future__ import annotations

import heapq
import time

import numpy as np

from fedrepro.algorithms.async_base import AsyncAlgorithm
from fedrepro.core.context import RUN_DEFAULTS, RUN_OPTIONAL, RunContext, check_run_settings
from fedrepro.core.params import POSITIVE, POSITIVE_INT, validate_params
from fedrepro.problems.base import FederatedProblem
from fedrepro.problems.protocols import check_pairing
from fedrepro.sim.channel import Channel
from fedrepro.sim.result import RunResult, record_evaluation
from fedrepro.sim.stopping import check_stop_needs, stop_check

ASYNC_CONSTRAINTS = {"tau": [None, POSITIVE_INT], "time_budget": [None, POSITIVE]}


def simulate_async(problem: FederatedProblem, algorithm: AsyncAlgorithm, delays, *,
                   max_iterations: int = RUN_DEFAULTS["max_rounds"], tau: int | None = None,
                   time_budget: float | None = None, k0: int = RUN_DEFAULTS["k0"], seed: int = 0,
                   eval_every: int = RUN_DEFAULTS["eval_every"], stop=None, progress=None,
                   time_limit: float | None = RUN_DEFAULTS["time_limit"], store: str = RUN_OPTIONAL["store"],
                   metrics=RUN_OPTIONAL["metrics"],
                   diverge_factor: float | None = RUN_OPTIONAL["diverge_factor"], mechanism=None,
                   attack=None) -> RunResult:
    """Run the asynchronous update rule ``algorithm`` on ``problem`` with the virtual timing ``delays``.

    Parameters
    ----------
    delays : a :class:`fedrepro.sim.delays.DelayModel` or :class:`~fedrepro.sim.delays.DelayTable`.
    max_iterations : cap on master iterations (status ``max_rounds`` when hit).
    tau : bounded staleness (iterations; None: unbounded). The aspire spec uses 4N.
    time_budget : virtual seconds; no master iteration starts at or after it (status ``time_budget``).
    k0 : local gradient steps per job (priced by the delay model; the rule reads ``ctx.k0``).
    eval_every : evaluate (and test ``stop``) every this many master iterations; the first and last
        are always evaluated. Records: ``round`` = master iteration t, ``virtual_time`` (clock when
        iteration t is done), ``uploads`` (reports consumed so far), ``iteration`` = uploads * k0,
        ``max_staleness``, the evaluated metrics, the rule's ``round_metrics`` and ``state.metrics``,
        wall/cpu times as in the synchronous loop.
    seed, stop, progress, time_limit (wall seconds), store, metrics : as in :func:`fedrepro.sim.loop.simulate`.
    mechanism, attack : the client-side stages of the channel (:mod:`fedrepro.sim.channel`), applied to
        the reports when their jobs leave (the worker computes them then); the channel refuses, before
        the run, what the asynchronous schedule cannot take (aggregators, silent workers, server-side noise).
    """
    check_run_settings(k0=k0, max_rounds=max_iterations, eval_every=eval_every, time_limit=time_limit,
                       store=store, metrics=metrics, seed=seed, diverge_factor=diverge_factor)
    validate_params("asynchronous run", {"tau": tau, "time_budget": time_budget}, ASYNC_CONSTRAINTS)
    if not isinstance(algorithm, AsyncAlgorithm):
        raise TypeError(f"simulate_async runs asynchronous update rules (AsyncAlgorithm); "
                        f"{getattr(algorithm, 'name', algorithm)!r} is synchronous: use fedrepro.sim.loop.simulate")
    check_pairing(algorithm, problem)
    metrics = problem.check_metrics(metrics)
    check_stop_needs(stop, metrics)
    ctx = RunContext(k0=int(k0), rho=1.0, seed=int(seed), max_rounds=int(max_iterations),
                     algorithm=algorithm.name, store=store,
                     time_budget=None if time_budget is None else float(time_budget))
    m = problem.m
    timing = delays.bind(m, ctx)
    channel = Channel(mechanism, attack)
    channel.check(algorithm, problem, schedule="async")
    channel.prepare(problem, ctx)
    algorithm.prepare(problem, ctx)

    t_start, cpu_start = time.perf_counter(), time.process_time()
    local = [0.0, 0.0]                                 # wall, cpu seconds in worker_compute
    heap: list = []                                    # (arrival, worker)
    flight: dict = {}                                  # worker -> (report, sent iteration, dispatched, arrival)
    jobs = np.zeros(m, dtype=np.int64)                 # job counter per worker (delay stream key)
    last_active = np.zeros(m, dtype=np.int64)

    def dispatch(state, workers, t, now):
        t0, c0 = time.perf_counter(), time.process_time()
        reports = algorithm.worker_compute(state, problem, ctx, workers, t)
        local[0] += time.perf_counter() - t0
        local[1] += time.process_time() - c0
        if len(reports) != len(workers):
            raise ValueError(f"{algorithm.name}.worker_compute returned {len(reports)} reports for "
                             f"{len(workers)} workers")
        if not channel.empty and len(reports):     # the channel, keyed by the iteration the jobs leave at
            _, sent = channel.transmit(algorithm.report_uploads(reports), np.asarray(workers), t, state, problem,
                                       algorithm, ctx)
            reports = algorithm.with_uploads(reports, sent)
        for j, rep in zip(workers, reports):
            j = int(j)
            arrival = now + timing.duration(j, ctx.k0, now, int(jobs[j]))
            jobs[j] += 1
            flight[j] = (rep, t, now, arrival)
            last_active[j] = t
            heapq.heappush(heap, (arrival, j))

    state = algorithm.init(problem, ctx)
    pending = (np.arange(m), 0.0)                      # jobs to send (workers, at virtual time)
    clock = master_free = 0.0
    uploads = max_stale = 0
    trace: list[dict] = []

    def evaluate():
        record = {"round": t, "iteration": uploads * ctx.k0, "virtual_time": clock, "uploads": uploads,
                  "max_staleness": max_stale}
        tail = {"wall_time": time.perf_counter() - t_start, "cpu_time": time.process_time() - cpu_start,
                "local_time": local[0], "local_cpu_time": local[1]}
        return record_evaluation(problem, algorithm, state, ctx, state.w, metrics, record, tail, trace,
                                 progress, stop, diverge_factor)

    t = 0
    while True:
        ended = stop_check(t, evaluate, max_rounds=max_iterations, eval_every=eval_every, clock=clock,
                           time_budget=time_budget, time_limit=time_limit, started=t_start)
        if ended:
            status, reason = ended
            break
        # the jobs sent when iteration t ended (computed here, after the stop tests, so that no job is
        # computed after the last iteration; nothing in between changes the state)
        dispatch(state, pending[0], t, pending[1])
        need = min(max(int(algorithm.active_count(state, problem, ctx, t)), 1), m)
        forced = set(np.flatnonzero(t - last_active >= tau).tolist()) if tau is not None else set()
        ready: set = set()
        while len(ready) < need or not forced <= ready:
            arrival, j = heapq.heappop(heap)
            clock = max(clock, arrival)
            ready.add(j)
        start = max(clock, master_free)
        while heap and heap[0][0] <= start:             # arrived while the master was busy
            ready.add(heapq.heappop(heap)[1])
        Q = np.array(sorted(ready), dtype=np.int64)
        got = [flight.pop(int(j)) for j in Q]
        sent = np.array([g[1] for g in got], dtype=np.int64)
        info = {"sent": sent, "staleness": t - sent, "dispatched": np.array([g[2] for g in got]),
                "arrival": np.array([g[3] for g in got]), "clock": start}
        info["rtt"] = info["arrival"] - info["dispatched"]
        max_stale = max(max_stale, int(info["staleness"].max()))
        algorithm.master_update(state, problem, ctx, Q, [g[0] for g in got], t, info)
        uploads += Q.size
        t += 1
        units, cp = algorithm.master_load(state)
        master_free = start + timing.master_time(units, cp)
        clock = master_free
        pending = (Q, master_free)
    return RunResult(trace=trace, status=status, stop_reason=reason, rounds=trace[-1]["round"],
                     iterations=trace[-1]["iteration"], wall_time=time.perf_counter() - t_start,
                     local_time=local[0], w=state.w, cpu_time=time.process_time() - cpu_start,
                     local_cpu_time=local[1],
                     info={"virtual_time": clock, "uploads": uploads, "max_staleness": max_stale,
                           "jobs_sent": int(jobs.sum())})
