"""The interface of a synchronous algorithm, run in synchronous rounds by the driver
(:func:`fedrepro.sim.driver.drive` with :class:`~fedrepro.sim.driver.Rounds`; :func:`fedrepro.sim.loop.simulate`).

The simulation loop owns time, rounds, client sampling, evaluation, stopping, privacy mechanisms
and attacks; the algorithm only says how the server aggregates and how clients update. What every
algorithm shares (parameters, constraints, state, ``init``, ``RECORDS``) is in
:class:`fedrepro.algorithms.base.Algorithm`:

    state = algo.init(problem, ctx)
    round r = 0, 1, ...:
        w = algo.aggregate(state, problem, ctx, r)          # server: global model from stored uploads
        <evaluate w, record, stop test>                     # loop
        S = ctx.clients(r)                                  # loop (same draws for every algorithm)
        U = algo.client_update(state, problem, ctx, S, r)   # local work of S, (len(S), upload_dim)
        U = mechanism(U) ; U = attack(U)                    # loop: privacy noise, Byzantine corruption
        algo.receive(state, problem, ctx, S, U, r)          # server stores the uploads

``client_update`` is the algorithm's: the default is

        algo.begin_round(state, problem, ctx, S, r)         # broadcast w to S (cache per-round quantities)
        for t in range(ctx.k0):
            algo.local_step(state, problem, ctx, S, r, t)   # one local iteration of every client in S
        return algo.upload(state, problem, ctx, S, r)

and an algorithm with heterogeneous local work (E_i epochs per client) overrides it.

Clients not in S keep their state (and their stale uploads on the server). Per-client
quantities live in stores made by ``ctx.client_store(m, dim)``, client i in row i; all per-client
work is vectorized over the rows of S.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrepro.algorithms.base import Algorithm, State
from fedrepro.core.context import RunContext
from fedrepro.problems.base import FederatedProblem


@dataclass
class SyncAlgorithm(Algorithm):
    """Base class of synchronous algorithms (see the module docstring)."""

    asynchronous = False

    def client_job(self, state, problem, ctx, clients, r):
        """The driver's client job (:mod:`fedrepro.sim.driver`): :meth:`client_update`."""
        return self.client_update(state, problem, ctx, clients, r)

    def server_update(self, state, problem, ctx, clients, uploads, r, info=None) -> None:
        """The driver's server update: :meth:`receive` (the model is then :meth:`aggregate`'d at the start
        of round r + 1, after which the driver evaluates it)."""
        self.receive(state, problem, ctx, clients, uploads, r)

    def aggregate(self, state: State, problem: FederatedProblem, ctx: RunContext, r: int) -> np.ndarray:
        """Server step at the start of round r; returns the new global model."""
        raise NotImplementedError

    def client_update(self, state: State, problem: FederatedProblem, ctx: RunContext, clients: np.ndarray,
                      r: int) -> np.ndarray:
        """All local work of ``clients`` in round r; returns their uploads (len(clients), upload_dim).
        Default: :meth:`begin_round`, ``ctx.k0`` x :meth:`local_step`, :meth:`upload`."""
        self.begin_round(state, problem, ctx, clients, r)
        for t in range(ctx.k0):
            self.local_step(state, problem, ctx, clients, r, t)
        return self.upload(state, problem, ctx, clients, r)

    def begin_round(self, state: State, problem: FederatedProblem, ctx: RunContext, clients: np.ndarray,
                    r: int) -> None:
        """Broadcast to ``clients``; default nothing."""

    def local_step(self, state: State, problem: FederatedProblem, ctx: RunContext, clients: np.ndarray, r: int,
                   t: int) -> None:
        """Local iteration t (0..k0-1) of every client in ``clients``."""
        raise NotImplementedError

    def upload(self, state: State, problem: FederatedProblem, ctx: RunContext, clients: np.ndarray,
               r: int) -> np.ndarray:
        """Vectors the clients send, shape (len(clients), upload_dim)."""
        raise NotImplementedError

    def receive(self, state: State, problem: FederatedProblem, ctx: RunContext, clients: np.ndarray,
                uploads: np.ndarray, r: int) -> None:
        """Server stores the (possibly perturbed) uploads."""
        raise NotImplementedError

    def round_phases(self, state: State, ctx: RunContext, clients: np.ndarray, r: int) -> list:
        """The communication phases of round r as (workers, local steps) pairs, priced on the virtual
        clock when the loop is given a delay model (:mod:`fedrepro.sim.delays`); default one phase of
        the round's clients doing ``ctx.k0`` steps (DRFA-Prox: a model phase and a loss phase)."""
        return [(clients, ctx.k0)]
