"""Stochastic gradient baselines with a (robust) server aggregation rule (spec 004 sec. 3.4-3.6).

Iteration k = r + 1, step a_k = a / sqrt(k) ("3/sqrt(k)", Sec. V). Every worker
computes one minibatch gradient q_n at the broadcast w0 and uploads either

  * ``upload="gradient"``: q_n, and the server sets w0 <- w0 - a_k AGG({q_n}); or
  * ``upload="model"``: V_n = w0 - a_k q_n, and the server sets w0 <- AGG({V_n})

(spec A8: Krum and GeoMed "upload local models"). The subclasses only choose the
aggregation rule and the upload kind: :class:`SGDMean` (mean of gradients),
:class:`fedrepro.algorithms.krum.Krum`, :class:`fedrepro.algorithms.geomed.GeoMed`.
A faulty (Gaussian) worker's upload is its model c xi, or its "gradient" c xi for
gradient uploads (spec 3.7).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrepro.algorithms.base import State
from fedrepro.algorithms.sync_base import SyncAlgorithm
from fedrepro.algorithms.ops import aggregators
from fedrepro.core.params import POSITIVE, POSITIVE_INT
from fedrepro.core.store import ClientStore
from fedrepro.problems.protocols import BYZANTINE, STOCHASTIC


@dataclass(slots=True)
class RobustSGDState(State):
    Q: ClientStore = None               # the workers' latest minibatch gradients q_n


@dataclass
class RobustAggregationSGD(SyncAlgorithm):
    """Shared base. Parameters: ``a`` (step scale, 3), ``batch`` (None: the problem's)."""

    a: float = 3.0
    batch: int | None = None

    name = "robust_sgd"
    upload_kind = "gradient"
    slots_per_upload = 1
    requires = (STOCHASTIC, BYZANTINE)
    constraints = {"a": [POSITIVE], "batch": [None, POSITIVE_INT]}
    state_class = RobustSGDState
    reads_senders = True                    # a silent worker's upload is dropped in receive

    def aggregate_rows(self, V: np.ndarray, state) -> np.ndarray:
        """The server's rule over the received rows V (n, d) -> (d,)."""
        raise NotImplementedError

    def init(self, problem, ctx):
        if ctx.k0 != 1:
            raise ValueError(f"{self.name}: k0={ctx.k0}; this baseline takes one local step per round (k0=1)")
        st = RobustSGDState(w=np.zeros(problem.dim))
        st.Q = ctx.client_store(problem.m, problem.dim)
        return st

    def aggregate(self, state, problem, ctx, r):
        return state.w

    def _step(self, r):
        return self.a / np.sqrt(r + 1)

    def local_step(self, state, problem, ctx, clients, r, t):
        idx = problem.sample_minibatch(ctx.rng("minibatch", r, t), clients, self.batch)
        W = np.broadcast_to(state.w, (len(clients), problem.dim))
        state.Q[clients] = problem.minibatch_grads(W, idx)

    def upload(self, state, problem, ctx, clients, r):
        q = state.Q[clients]
        return q.copy() if self.upload_kind == "gradient" else state.w - self._step(r) * q

    def faulty_upload(self, state, problem, clients, models):
        return models[0]

    def receive(self, state, problem, ctx, clients, uploads, r):
        agg = self.aggregate_rows(uploads[problem.senders(clients)], state)
        state.w = state.w - self._step(r) * agg if self.upload_kind == "gradient" else agg


@dataclass
class SGDMean(RobustAggregationSGD):
    """SGD with the mean of the workers' gradients (the paper's "heuristic" baseline)."""

    name = "sgd_mean"
    upload_kind = "gradient"
    server_rule = "mean"                    # w <- w - a_r mean(g_n): a channel aggregator can stand in for the mean

    def aggregate_rows(self, V, state):
        return aggregators.mean(V)
