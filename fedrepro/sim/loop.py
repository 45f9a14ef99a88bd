"""The one simulation loop every synchronous algorithm runs on.

See :mod:`fedrepro.algorithms.sync_base` for the round structure. The loop owns
client sampling (purpose ``"sampling"``, keyed by round, so every algorithm
sees the same draws for the same seed: common random numbers; or replayed
selections, :mod:`fedrepro.sim.replay`), evaluation, stopping, timing, privacy
mechanisms and attacks.
"""
from __future__ import annotations

import time

from fedrepro.algorithms.base import client_vectors
from fedrepro.algorithms.sync_base import SyncAlgorithm
from fedrepro.core.context import RUN_DEFAULTS, RUN_OPTIONAL, RunContext, check_run_settings
from fedrepro.core.store import resolve_store
from fedrepro.core.sampling import UniformSampler, sample_clients  # noqa: F401  (sample_clients: public name kept here)
from fedrepro.problems.base import FederatedProblem
from fedrepro.problems.protocols import check_pairing
from fedrepro.sim.channel import Channel
from fedrepro.sim.delays import sync_round_duration
from fedrepro.sim.result import RunResult, record_evaluation
from fedrepro.sim.stopping import check_stop_needs, stop_check


def simulate(problem: FederatedProblem, algorithm: SyncAlgorithm, *, k0: int = RUN_DEFAULTS["k0"],
             rho: float = RUN_DEFAULTS["rho"], max_rounds: int = RUN_DEFAULTS["max_rounds"], seed: int = 0,
             eval_every: int = RUN_DEFAULTS["eval_every"], stop=None, mechanism=None, attack=None, aggregator=None,
             time_limit: float | None = RUN_DEFAULTS["time_limit"], progress=None, replay=None, sampler=None,
             store: str = RUN_OPTIONAL["store"], metrics=RUN_OPTIONAL["metrics"],
             store_budget_mb: float = RUN_OPTIONAL["store_budget_mb"],
             sample_count: str = RUN_OPTIONAL["sample_count"], delays=None, time_budget: float | None = None,
             diverge_factor: float | None = RUN_OPTIONAL["diverge_factor"]) -> RunResult:
    """Run ``algorithm`` on ``problem``.

    Parameters
    ----------
    k0 : local iterations per round (communication every k0 iterations).
    rho : participation rate; each round the sampler picks the clients (default
        :class:`fedrepro.core.sampling.UniformSampler`: ceil(rho*m) uniform clients, or
        max(floor(rho*m), 1) with ``sample_count="floor"``, FedAvg's C-fraction).
    max_rounds : cap on communication rounds (status ``max_rounds`` when hit).
    seed : run seed (sampling, noise, attacks, minibatches all derive from it).
    eval_every : evaluate (and test ``stop``) every this many rounds; the first
        and last rounds are always evaluated.
    metrics : names of the problem's metrics to evaluate (default: all of
        ``problem.metric_names()``; a neural model may skip the full-data gradient norm). The run
        ends as ``diverged`` when any evaluated metric or the model is not finite.
    stop : a rule from :mod:`fedrepro.sim.stopping` (or None: run to ``max_rounds``).
    mechanism, attack, aggregator : the stages of the client-to-server channel
        (:class:`fedrepro.sim.channel.Channel`; built by :func:`fedrepro.sim.privacy.build_mechanism`,
        :func:`fedrepro.sim.attacks.build_attack`, :func:`fedrepro.sim.aggregation.build_aggregator`),
        applied to every round's uploads; a stage the algorithm cannot take is refused before the run.
    progress : callable ``(record) -> None`` called after each evaluation.
    replay : a :class:`fedrepro.sim.replay.Replay`: recorded client selections (instead of
        the sampler) and/or unit-scale noise (instead of the ``init``/``noise``
        streams), checked against the problem and ``max_rounds`` before the run.
    sampler : callable ``r -> sorted client ids`` (see :mod:`fedrepro.core.sampling`); default
        ``UniformSampler(m, rho, seed)``, or the replayed selections. Algorithms read the
        round's clients through ``ctx.clients(r)``, never by re-deriving the draw.
    diverge_factor : the run ends as ``diverged`` when |objective| exceeds this factor times
        max(1, |objective at round 0|) (default 1e12; None: only non-finite values count).
    store : how algorithms hold per-client state: ``"dense"`` (in-memory float64 arrays),
        ``"lazy"`` (rows created when first written, float32), ``"memmap"`` (lazy, in a temporary
        file) or ``"auto"``: dense when the algorithm's ``client_vectors`` dense stores fit in
        ``store_budget_mb`` MiB, else memmap (:func:`fedrepro.core.store.resolve_store`; the kind
        used is ``result.info["store"]``).
    delays : a delay model of :mod:`fedrepro.sim.delays`: records then carry ``virtual_time``, the
        sum of the round durations (:func:`~fedrepro.sim.delays.sync_round_duration` over the
        algorithm's ``round_phases``), the clock of the asynchronous loop.
    time_budget : virtual seconds (needs ``delays``): no round starts at or after it (status
        ``time_budget``), as in the asynchronous loop.

    An algorithm that needs a capability the problem lacks (:mod:`fedrepro.problems.protocols`)
    is rejected with a ValueError before anything runs.
    """
    check_run_settings(k0=k0, rho=rho, max_rounds=max_rounds, eval_every=eval_every, time_limit=time_limit,
                       store=store, metrics=metrics, seed=seed, store_budget_mb=store_budget_mb,
                       sample_count=sample_count, diverge_factor=diverge_factor)
    if time_budget is not None and (delays is None or not time_budget > 0):
        raise ValueError(f"simulate: time_budget={time_budget!r} needs a delay model (delays=...) and a positive "
                         "number of virtual seconds")
    if not isinstance(algorithm, SyncAlgorithm):
        raise TypeError(f"simulate runs synchronous algorithms (SyncAlgorithm); "
                        f"{getattr(algorithm, 'name', algorithm)!r} is an asynchronous update rule: use "
                        "fedrepro.sim.async_loop.simulate_async")
    check_pairing(algorithm, problem)
    metrics = problem.check_metrics(metrics)
    check_stop_needs(stop, metrics)
    if replay is not None:
        replay.check(problem.m, problem.dim, max_rounds)
    if replay is not None and replay.selections is not None:
        if sampler is not None:
            raise ValueError("simulate: give either replayed selections or a sampler, not both")
        sampler = replay.clients
    store = resolve_store(store, problem.m, problem.dim, client_vectors(algorithm), store_budget_mb)
    ctx = RunContext(k0=int(k0), rho=float(rho), seed=int(seed), max_rounds=int(max_rounds),
                     replay_noise=replay.noise_cursor() if replay is not None else None,
                     sampler=sampler or UniformSampler(problem.m, float(rho), int(seed), sample_count),
                     algorithm=algorithm.name, store=store)
    channel = Channel(mechanism, attack, aggregator)
    channel.check(algorithm, problem)
    channel.prepare(problem, ctx)
    algorithm.prepare(problem, ctx)

    t_start, cpu_start = time.perf_counter(), time.process_time()
    local_time = local_cpu_time = 0.0
    state = algorithm.init(problem, ctx)
    timing, virtual_time = (delays.bind(problem.m, ctx) if delays is not None else None), 0.0
    trace: list[dict] = []

    def evaluate():
        tail = {"wall_time": time.perf_counter() - t_start, "cpu_time": time.process_time() - cpu_start,
                "local_time": local_time, "local_cpu_time": local_cpu_time,
                **({"virtual_time": virtual_time} if timing is not None else {})}
        return record_evaluation(problem, algorithm, state, ctx, state.w, metrics,
                                 {"round": r, "iteration": r * ctx.k0}, tail, trace, progress, stop, diverge_factor)

    for r in range(max_rounds + 1):
        state.w = algorithm.aggregate(state, problem, ctx, r)
        ended = stop_check(r, evaluate, max_rounds=max_rounds, eval_every=eval_every, clock=virtual_time,
                           time_budget=time_budget, time_limit=time_limit, started=t_start)
        if ended:
            status, reason = ended
            break
        clients = ctx.clients(r)
        t0, c0 = time.perf_counter(), time.process_time()
        uploads = algorithm.client_update(state, problem, ctx, clients, r)
        local_time += time.perf_counter() - t0
        local_cpu_time += time.process_time() - c0
        senders = clients
        if not channel.empty:                    # privacy, adversary, aggregation (fedrepro.sim.channel)
            senders, uploads = channel.transmit(uploads, clients, r, state, problem, algorithm, ctx)
        algorithm.receive(state, problem, ctx, senders, uploads, r)
        if timing is not None:
            virtual_time += sync_round_duration(timing, r, algorithm.round_phases(state, ctx, clients, r),
                                                start=virtual_time)
    rounds = trace[-1]["round"] if trace else 0
    info = {"store": store} if store != "dense" else {}
    if ctx.replay_noise is not None:
        info["replay_noise_rows"] = (ctx.replay_noise.used, len(ctx.replay_noise.draws))   # (used, supplied)
    return RunResult(trace=trace, status=status, stop_reason=reason, rounds=rounds,
                     iterations=rounds * ctx.k0, wall_time=time.perf_counter() - t_start,
                     local_time=local_time, w=state.w, cpu_time=time.process_time() - cpu_start,
                     local_cpu_time=local_cpu_time, info=info)
