"""SFedAvg: secure FedAvg with full local gradients (FedEPM paper, Algorithm 3 "[SFedAvg]").

Shares the FedEPM harness (:class:`~fedrepro.algorithms.fedepm.EPMHarness`):
same initial noise, evaluation block and eq. (39) upload noise (spec 001 7-A14).
SFedProx (:mod:`fedrepro.algorithms.sfedprox`) only changes the local update.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fedrepro.algorithms.fedepm import EPMHarness
from fedrepro.core.params import Options


@dataclass
class SFedAvg(EPMHarness):
    """Server (34): plain average of stored uploads; client (35) with step (38)

        gamma_i^k = 2 d_i / sqrt(2 k0 + ceil(k / k0))

    (with the code's mean-type f_i this is a step 2/sqrt(.) on the client's summed loss).
    At k in K the step starts from w and reuses G_i = grad f_i(w) of the evaluation block.

    Parameters
    ----------
    aggregate_over : ``"previous"`` (default; average the fresh uploads of the last
        round's participants, all m at the first aggregation -- Sec. IV-C and standard
        FedAvg) | ``"new"`` (literal eq. (34): the stored, mostly stale uploads of the
        clients sampled for the coming round). Spec 001 7-A13.
    """

    aggregate_over: str = "previous"

    name = "sfedavg"
    server_rule = "mean"                    # (34): the average of the stored uploads
    constraints = {"aggregate_over": [Options("previous", "new")]}

    def _server(self, state, problem, ctx, r):
        if self.aggregate_over == "new":
            who = ctx.clients(r)                        # the loop's draw for round r
        else:
            who = state.fresh
        return state.Z[who].mean(axis=0)

    def _gamma(self, state, ctx, S, r, t) -> np.ndarray:
        """Step (38) of the clients S at local step t of round r, shape (len(S),)."""
        k0 = ctx.k0
        tau = math.ceil(self._iteration(ctx, r, t) / k0)     # paper's floor is a ceiling (7-A15)
        return 2.0 * state.d[S] / math.sqrt(2 * k0 + tau)

    def _update(self, state, problem, ctx, S, r, t, gap):
        gamma = self._gamma(state, ctx, S, r, t)[:, None]
        if t == 0:
            return state.w - gamma * state.G[S]
        W = state.W[S]
        return W - gamma * problem.client_grads(W, S)
