"""Synchronous rounds on the one driver (:mod:`fedrepro.sim.driver`): :func:`simulate` is
:func:`~fedrepro.sim.driver.drive` with the :class:`~fedrepro.sim.driver.Rounds` schedule.

See :mod:`fedrepro.algorithms.sync_base` for the round structure. The schedule owns client sampling
(purpose ``"sampling"``, keyed by round, so every algorithm sees the same draws for the same seed:
common random numbers; or replayed selections, :mod:`fedrepro.sim.replay`); the driver owns
evaluation, stopping, timing and the channel (privacy mechanisms, attacks, aggregators).
"""
from __future__ import annotations

from fedrepro.algorithms.sync_base import SyncAlgorithm
from fedrepro.core.context import RUN_DEFAULTS, RUN_OPTIONAL
from fedrepro.core.sampling import UniformSampler, sample_clients  # noqa: F401  (public names kept here)
from fedrepro.problems.base import FederatedProblem
from fedrepro.sim.driver import Rounds, drive
from fedrepro.sim.result import RunResult


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
    sampler : callable ``r -> client ids`` in the order selected (ascending under the default sampler;
        a replayed file's own order; see :mod:`fedrepro.core.sampling`); default ``UniformSampler(m, rho, seed)``, or the replayed selections. Algorithms read the
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
    if not isinstance(algorithm, SyncAlgorithm):
        raise TypeError(f"simulate runs synchronous algorithms (SyncAlgorithm); "
                        f"{getattr(algorithm, 'name', algorithm)!r} is an asynchronous update rule: use "
                        "fedrepro.sim.async_loop.simulate_async (or fedrepro.sim.driver.drive with Events)")
    schedule = Rounds(rho=rho, sample_count=sample_count, sampler=sampler, replay=replay, delays=delays,
                      time_budget=time_budget)
    return drive(problem, algorithm, schedule, k0=k0, max_rounds=max_rounds, seed=seed, eval_every=eval_every,
                 stop=stop, progress=progress, time_limit=time_limit, store=store, store_budget_mb=store_budget_mb,
                 metrics=metrics, diverge_factor=diverge_factor, mechanism=mechanism, attack=attack,
                 aggregator=aggregator)
