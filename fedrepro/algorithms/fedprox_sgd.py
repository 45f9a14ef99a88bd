"""FedProx (Li et al., MLSys 2020) with local minibatch SGD, as in Gong et al.'s baselines (spec 003 §3.5).

Client i of round t solves min_w f_i(w) + (rho/2)||w - theta^t||^2 inexactly: E_i ~ U{1..E}
epochs of minibatch SGD (``random_epochs``, default; fixed E otherwise) from theta^t, the
proximal gradient added at every step (momentum acts on the sum)::

    g <- grad mean loss(w; b) + rho (w - theta^t) ;  v <- mu v + g ;  w <- w - lr v

and uploads w; the server averages the models as FedAvg does (unweighted by default, Gong et
al.'s ``average_weights``; ``aggregation: data_size`` weights n_i). rho = 0 is FedAvg.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrepro.algorithms.fedavg_sgd import FedAvgSGD
from fedrepro.algorithms.local_epochs import LocalEpochsState
from fedrepro.core.params import NONNEGATIVE


@dataclass(slots=True)
class FedProxSGDState(LocalEpochsState):
    rho_now: float = 0.0                  # the proximal coefficient of the round being trained


@dataclass
class FedProxSGD(FedAvgSGD):
    """rho : proximal coefficient (FedProx's mu; spec 003 §3.5: 0.1, Table III grid {0.001 .. 1}).
    Defaults of Gong et al.: random epochs, momentum 0.5, unweighted average. Other parameters:
    :class:`~fedrepro.algorithms.fedavg_sgd.FedAvgSGD`."""

    momentum: float = 0.5
    random_epochs: bool = True
    aggregation: str = "unweighted"
    rho: float = 0.1

    name = "fedprox_sgd"
    state_class = FedProxSGDState
    constraints = {"rho": [NONNEGATIVE]}

    def rho_at(self, r: int) -> float:
        """The proximal coefficient of round r (constant here; FedADMM-Gong schedules it)."""
        return float(self.rho)

    def client_update(self, state, problem, ctx, clients, r, rows=None):
        state.rho_now = self.rho_at(r)
        return super().client_update(state, problem, ctx, clients, r, rows)

    def local_terms(self, state, problem, ctx, j, client):
        """rho_t (w - theta^t), theta^t = state.w the broadcast model (nothing for rho_t = 0)."""
        return {"rho": state.rho_now, "anchor": state.w}
