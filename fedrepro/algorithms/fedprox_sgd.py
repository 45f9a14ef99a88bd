"""FedProx (Li et al., MLSys 2020) with local minibatch SGD, as in Gong et al.'s baselines (spec 003 §3.5).

Client i of round t solves min_w f_i(w) + (mu/2)||w - theta^t||^2 inexactly: E epochs of minibatch
SGD from theta^t (E_i ~ U{1..E} with ``random_epochs``), the proximal gradient added at every step
(momentum acts on the sum)::

    g <- grad mean loss(w; b) + mu (w - theta^t) ;  v <- momentum v + g ;  w <- w - lr v

and uploads w; the server averages the models as FedAvg does. ``mu`` is the name of Li et al.'s
paper; ``rho`` is the run's participation rate, never the proximal coefficient.

Every other parameter and its default is :class:`~fedrepro.algorithms.fedavg_sgd.FedAvgSGD`'s, so that
FedAvg vs FedProx differ only in the proximal term unless the experiment says otherwise; mu = 0 is
FedAvg (tests/test_fedprox_fair.py). Gong et al.'s baselines (momentum 0.5, E_i ~ U{1..E}, unweighted
average) are set in fedrepro/papers/fedadmm_gong/experiments.yaml.

Cell ids: until issue #44 this algorithm called mu ``rho`` and defaulted to momentum 0.5, random epochs
and the unweighted average. :attr:`FedProxSGD.id_legacy` writes a cell's parameters in those terms for
its id (:func:`fedrepro.experiments.expansion.cell_id`), so that every cell keeps the id (and result file)
it had: the same computation, the same id.
"""
from __future__ import annotations

from dataclasses import dataclass

from fedrepro.algorithms.fedavg_sgd import FedAvgSGD
from fedrepro.algorithms.local_epochs import LocalEpochsState
from fedrepro.core.params import NONNEGATIVE


@dataclass(slots=True)
class FedProxSGDState(LocalEpochsState):
    rho_now: float = 0.0                  # the proximal (or penalty) coefficient of the round being trained


@dataclass
class ProximalSGD(FedAvgSGD):
    """FedAvg's local epochs with a proximal term c_t (w - theta^t) in every local gradient; c_t is
    :meth:`prox_at` (FedProx's mu, FedADMM-Gong's scheduled penalty). Not registered: the base of
    :class:`FedProxSGD` and :class:`~fedrepro.algorithms.fedadmm_gong.FedADMMGong`."""

    name = "proximal_sgd"
    state_class = FedProxSGDState

    def prox_at(self, r: int) -> float:
        """The proximal coefficient of round r."""
        raise NotImplementedError

    def client_update(self, state, problem, ctx, clients, r, rows=None):
        state.rho_now = self.prox_at(r)
        return super().client_update(state, problem, ctx, clients, r, rows)

    def local_terms(self, state, problem, ctx, j, client):
        """c_t (w - theta^t), theta^t = state.w the broadcast model (nothing for c_t = 0)."""
        return {"rho": state.rho_now, "anchor": state.w}


@dataclass
class FedProxSGD(ProximalSGD):
    """mu : proximal coefficient (Li et al.'s mu); every other parameter and default is fedavg_sgd's.

    mu: spec 003 §3.5: 0.1, Table III grid {0.001 .. 1}. Every other parameter and default:
    :class:`~fedrepro.algorithms.fedavg_sgd.FedAvgSGD`'s (FedAvg and FedProx differ only in the proximal
    term unless the experiment says otherwise)."""

    mu: float = 0.1

    name = "fedprox_sgd"
    constraints = {"mu": [NONNEGATIVE]}
    # a parameter's former name -> its name now (a config that still uses it is refused, naming both)
    renamed = {"rho": ("mu", "rho is the run's participation rate; FedProx's proximal coefficient is mu")}
    # the cell id is computed from the parameters as they were written before issue #44 (see module doc)
    id_legacy = {"names": {"mu": "rho"},
                 "defaults": {"momentum": 0.5, "random_epochs": True, "aggregation": "unweighted"}}

    def prox_at(self, r: int) -> float:
        """The proximal coefficient of round r (constant)."""
        return float(self.mu)
