"""The event-driven asynchronous schedule on the one driver (:mod:`fedrepro.sim.driver`):
:func:`simulate_async` is :func:`~fedrepro.sim.driver.drive` with the :class:`~fedrepro.sim.driver.Events`
schedule (a deterministic discrete-event simulation on a virtual clock; aspire spec 002, section 3.0.1;
FIDELITY AS-9; the event rules are in the driver's docstring).

The seam: an asynchronous method is an update rule, a
:class:`fedrepro.algorithms.async_base.AsyncAlgorithm` (hooks ``init``, ``worker_compute``,
``master_update``, ``active_count``, ``master_load``, ``round_metrics``; see that module), and the
timing is a delay model of :mod:`fedrepro.sim.delays` (``bind(m, ctx)`` -> ``duration(worker,
n_steps, start, job)``, ``master_time(units, cp)``).
"""
from __future__ import annotations

from fedrepro.algorithms.async_base import AsyncAlgorithm
from fedrepro.core.context import RUN_DEFAULTS, RUN_OPTIONAL
from fedrepro.problems.base import FederatedProblem
from fedrepro.sim.driver import EVENT_CONSTRAINTS as ASYNC_CONSTRAINTS, Events, drive  # noqa: F401
from fedrepro.sim.result import RunResult


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
    if not isinstance(algorithm, AsyncAlgorithm):
        raise TypeError(f"simulate_async runs asynchronous update rules (AsyncAlgorithm); "
                        f"{getattr(algorithm, 'name', algorithm)!r} is synchronous: use fedrepro.sim.loop.simulate")
    return drive(problem, algorithm, Events(delays=delays, tau=tau, time_budget=time_budget), k0=k0,
                 max_rounds=max_iterations, seed=seed, eval_every=eval_every, stop=stop, progress=progress,
                 time_limit=time_limit, store=store, metrics=metrics, diverge_factor=diverge_factor,
                 mechanism=mechanism, attack=attack)
