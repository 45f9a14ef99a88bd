"""The interface of an asynchronous update rule, run by the driver on the event-driven
schedule (:func:`fedrepro.sim.driver.drive` with :class:`~fedrepro.sim.driver.Events`; :func:`fedrepro.sim.async_loop.simulate_async`).

The event-driven loop owns the virtual clock, the workers' in-flight jobs, the choice of the
reports each master iteration consumes (the S first arrivals, every worker at the staleness bound,
and whatever arrived while the master was busy), evaluation and stopping. The rule says what a
worker computes and how the master updates; every hook receives the run context ``ctx``:

    state = rule.init(problem, ctx)                                   # state.w: the evaluated model
    reports = rule.worker_compute(state, problem, ctx, workers, 0)    # initial broadcast to all workers
    master iteration t = 0, 1, ...:
        <evaluate state.w, record, stop test>                         # loop
        S_t = rule.active_count(state, problem, ctx, t)               # S (ASPIRE-ADP: from delay estimates)
        Q = <workers whose reports the master consumes>               # loop: sorted ids
        rule.master_update(state, problem, ctx, Q, reports_Q, t, info)    # iteration t -> t+1
        units, cp = rule.master_load(state)                          # master processing time (delay model)
        reports = rule.worker_compute(state, problem, ctx, Q, t + 1)  # new jobs of Q, delivered later

``worker_compute`` runs when the message leaves the master: it reads the master's values after
iteration t (that *is* the message, so nothing needs snapshotting) and returns one report per
worker (a list, position i for ``workers[i]``), which the master sees only when the job's delay has
passed. It must not write anything ``master_update`` reads (a worker's result travels in its
report); randomness comes from ``ctx.rng(purpose, worker, ...)``. Workers not in Q keep their
in-flight job, computed from the values of their last active iteration: the staleness of Eq. (11)
of the aspire paper. ``info`` holds arrays aligned with Q: ``sent`` (iteration the job was sent
at), ``staleness`` (t - sent), ``dispatched`` and ``arrival`` (virtual times), ``rtt``
(arrival - dispatched), and ``clock`` (virtual time the update starts).

Parameters, declared constraints, declared state, ``requires``, ``init`` and ``RECORDS`` are those of
every algorithm (:class:`~fedrepro.algorithms.base.Algorithm`, shared with the synchronous
:class:`~fedrepro.algorithms.sync_base.SyncAlgorithm`); ``S`` is the number of active workers (NAW).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrepro.algorithms.base import Algorithm
from fedrepro.core.params import POSITIVE_INT


@dataclass
class AsyncAlgorithm(Algorithm):
    """Base class of asynchronous update rules (see the module docstring)."""

    name = "async_base"
    asynchronous = True
    S: int = 1
    constraints = {"S": [POSITIVE_INT]}

    def client_job(self, state, problem, ctx, clients, t):
        """The driver's client job (:mod:`fedrepro.sim.driver`): :meth:`worker_compute`."""
        return self.worker_compute(state, problem, ctx, clients, t)

    def server_update(self, state, problem, ctx, clients, uploads, t, info=None) -> None:
        """The driver's server update: :meth:`master_update`."""
        self.master_update(state, problem, ctx, clients, uploads, t, info)

    def worker_compute(self, state, problem, ctx, workers, t: int) -> list:
        """Jobs sent to ``workers`` after master iteration t (t = 0: the initial broadcast); one report each."""
        raise NotImplementedError

    def master_update(self, state, problem, ctx, workers, reports: list, t: int, info: dict) -> None:
        """Master iteration t -> t+1 with the reports of ``workers`` (sorted); sets ``state.w``."""
        raise NotImplementedError

    def active_count(self, state, problem, ctx, t: int) -> int:
        """S_t, the number of reports the master waits for before iteration t (default S, at most m)."""
        return min(int(self.S), problem.m)

    def master_load(self, state) -> tuple[int, bool]:
        """(work units, cutting-plane solve?) of the iteration just done, priced by the delay model's
        master time mu0 + mu1 * units (+ t_cp); default (0, False)."""
        return 0, False

    # ---- the channel's view of a report (fedrepro.sim.channel) -----------------------------------
    # A rule whose reports carry a model declares upload_kind = "model" and the two maps below; the
    # event-driven loop then applies the channel's upload-side attacks and client-side mechanisms to
    # the reports of the workers a message leaves for (default: undeclared, refused at config check).
    def report_uploads(self, reports: list) -> np.ndarray:
        """The uploaded vectors of ``reports``, one row per report."""
        raise NotImplementedError(f"{self.name}: reports have no declared upload")

    def with_uploads(self, reports: list, uploads: np.ndarray) -> list:
        """``reports`` with their uploaded vectors replaced by the rows of ``uploads``."""
        raise NotImplementedError(f"{self.name}: reports have no declared upload")
