"""FedAvg with local steps and a box projection, as aspire spec 002 §3.5 runs it (McMahan et al. 2017
with the even weights the ASPIRE paper states)::

    broadcast w^r to the round's workers (full participation: rho = 1)
    each worker j: w_j = w^r; local_steps times: w_j <- clip(w_j - lr grad f_j(w_j; minibatch B), +-alpha1)
    w^{r+1} = sum_j p_j w_j / sum_j p_j,   p_j = 1 (weights "uniform": 1/N) or q_j (weights "prior")

The client side is :class:`~fedrepro.algorithms.local_epochs.LocalSteps` (fresh min(B, n_j) minibatches
from the stream ("minibatch", r, j), the projection after every step). One communication round per
round; its virtual duration is the max over the workers of a job of ``local_steps`` steps.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrepro.algorithms._mixture import PRIOR, check_prior, resolve_prior
from fedrepro.algorithms.fedavg_sgd import weighted_sum
from fedrepro.algorithms.local_epochs import LocalSGDState, LocalSteps
from fedrepro.core.params import Options


@dataclass(slots=True)
class FedAvgStepsState(LocalSGDState):
    q: np.ndarray | None = None           # (N,) aggregation weights (uniform, or the prior)


@dataclass
class FedAvgSteps(LocalSteps):
    """Parameters
    ----------
    lr : local SGD step (lr_base). momentum : SGD momentum (0: plain SGD, the spec). local_steps :
    tau_local (5). B : minibatch size (64). alpha1 : box projection radius (inf: none).
    weights : ``"uniform"`` (even weights 1/N, the paper) | ``"prior"`` (q_j of ``prior``).
    prior : None (uniform), a vector of N non-negative numbers summing to 1, or {"last": r}
    (spec §4.5); only with ``weights: prior``.
    """

    lr: float = 0.05
    weights: str = "uniform"
    prior: object = None

    name = "fedavg_steps"
    state_class = FedAvgStepsState
    upload_kind = "model"
    server_rule = "mean"                    # the prior-weighted or plain mean of the uploads
    constraints = {"weights": [Options("uniform", "prior")], "prior": PRIOR}

    def __post_init__(self):
        super().__post_init__()
        check_prior(self.prior, self.name)
        if self.prior is not None and self.weights != "prior":
            raise ValueError(f"{self.name}: a prior is used only with weights='prior'; set weights: prior "
                             "or leave prior out")

    def init(self, problem, ctx):
        state = super().init(problem, ctx)
        state.q = resolve_prior(self.prior, problem.m, self.name)
        return state

    def aggregate(self, state, problem, ctx, r):
        if state.uploads is None:
            return state.w
        p = state.q[state.senders] if self.weights == "prior" else np.ones(len(state.senders))
        if not p.sum() > 0:
            raise ValueError(f"{self.name}: the round's workers {state.senders.tolist()} all have prior weight 0")
        w = weighted_sum(p / p.sum(), state.uploads)
        state.uploads = None
        return w.astype(state.w.dtype)

    def round_phases(self, state, ctx, clients, r):
        return [(clients, self.local_steps)]
