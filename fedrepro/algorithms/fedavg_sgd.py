"""FedAvg of McMahan et al. (AISTATS 2017) with local minibatch SGD (spec 003 §3.3; FIDELITY SH-8, SH-11).

Each selected client trains E epochs of minibatch SGD (B) from the global model
(:mod:`fedrepro.algorithms.local_epochs`) and uploads its model; the server averages them:

    theta^{t+1} = sum_{i in S} p_i w_i^{t+1} / sum_{i in S} p_i,   p_i = n_i (McMahan) or 1 (Gong et al.)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrepro.algorithms.local_epochs import LocalEpochs
from fedrepro.core.params import Options


@dataclass
class FedAvgSGD(LocalEpochs):
    """aggregation : ``"data_size"`` (McMahan et al.: weights n_i) | ``"unweighted"`` (Gong et al.'s
    code ``average_weights``, spec 003 §3.3). Other parameters: :class:`LocalEpochs`."""

    aggregation: str = "data_size"

    name = "fedavg_sgd"
    constraints = {"aggregation": [Options("data_size", "unweighted")]}

    def aggregate(self, state, problem, ctx, r):
        if state.uploads is None:
            return state.w
        p = (problem.client_sizes[state.senders].astype(np.float64) if self.aggregation == "data_size"
             else np.ones(len(state.senders)))
        p /= p.sum()
        theta = np.zeros(state.uploads.shape[1], dtype=np.float64)
        for pj, row in zip(p, state.uploads):         # float64 accumulation, one row at a time
            theta += pj * row
        state.uploads = None
        return theta.astype(state.w.dtype)
