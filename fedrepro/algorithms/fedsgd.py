"""FedSGD (McMahan et al., AISTATS 2017) as spec 003 §3.4 defines it for Gong et al.'s Table III.

Each selected client computes the full-batch gradient of its mean loss at the broadcast model
and uploads it; the server takes one step::

    g_i = grad f_i(theta^t)   (one pass over all n_i samples) ;  theta^{t+1} = theta^t - lr mean_S g_i

On the harness this is one epoch of one full batch (E = 1, B = full, no momentum, fixed); the
gradient of that single step is the upload (the client's own step is not used). The mean is
unweighted (paper) or by n_i (``aggregation: data_size``). Mathematically FedAvg with E = 1, B = full.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrepro.algorithms.fedavg_sgd import FedAvgSGD
from fedrepro.algorithms.local_epochs import LocalEpochsState
from fedrepro.core.params import Integral, Interval, Options, Real


@dataclass(slots=True)
class FedSGDState(LocalEpochsState):
    grad: np.ndarray | None = None        # the gradient of the client being trained


@dataclass
class FedSGD(FedAvgSGD):
    """lr : server step (spec 003 §3.4: tuned, the largest stable value 0.5 expected).
    aggregation : ``unweighted`` (default) | ``data_size``. E, B, momentum, random_epochs are fixed
    (1, ``"full"``, 0, false): they define FedSGD."""

    lr: float = 0.5
    E: int = 1
    B: int | str = "full"
    aggregation: str = "unweighted"

    name = "fedsgd"
    state_class = FedSGDState
    upload_kind = "gradient"                # one full-batch gradient per client
    constraints = {"E": [Interval(Integral, 1, 1)], "B": [Options("full")], "momentum": [Interval(Real, 0, 0)],
                   "random_epochs": [Options(False)]}

    def local_gradient(self, state, problem, ctx, j, client, w, g):
        state.grad = g.copy()                          # grad f_i(theta^t): the single full-batch step's

    def client_upload(self, state, problem, ctx, j, client, w, steps):
        return state.grad

    def aggregate(self, state, problem, ctx, r):
        if state.uploads is None:
            return state.w
        theta = state.w.astype(np.float64) - self.lr * self.upload_mean(state, problem)
        state.uploads = None
        return theta.astype(state.w.dtype)
