"""FedAvg of McMahan et al. (AISTATS 2017) with local minibatch SGD (spec 003 §3.3; FIDELITY SH-8, SH-11).

Each selected client trains E epochs of minibatch SGD (B) from the global model
(:mod:`fedrepro.algorithms.local_epochs`) and uploads its model; the server averages them:

    theta^{t+1} = sum_{i in S} p_i w_i^{t+1} / sum_{i in S} p_i,   p_i = n_i (McMahan) or 1 (Gong et al.)

:meth:`FedAvgSGD.upload_mean` (that weighted mean of the last round's uploads, float64) is the
server average the relatives on the harness share (FedProx, FedSGD, SCAFFOLD, FedADMM-Gong).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrepro.algorithms.local_epochs import LocalEpochs
from fedrepro.core.params import Options


def weighted_sum(p, rows) -> np.ndarray:
    """sum_j p_j rows[j], accumulated in float64 one row at a time (never an (n, dim) float64 copy)."""
    out = np.zeros(rows.shape[1], dtype=np.float64)
    for pj, row in zip(p, rows):
        out += pj * row
    return out


@dataclass
class FedAvgSGD(LocalEpochs):
    """aggregation : ``"data_size"`` (McMahan et al.: weights n_i) | ``"unweighted"`` (Gong et al.'s
    code ``average_weights``, spec 003 §3.3). Other parameters: :class:`LocalEpochs`."""

    aggregation: str = "data_size"

    name = "fedavg_sgd"
    upload_kind = "model"
    server_rule = "mean"                    # the (data-size or unweighted) mean of the uploads
    constraints = {"aggregation": [Options("data_size", "unweighted")]}

    def upload_mean(self, state, problem, cols: slice = slice(None)) -> np.ndarray:
        """sum_j p_j U_j / sum_j p_j over the last round's uploads (columns ``cols``), accumulated in
        float64 one row at a time; p_j = n_j (``data_size``) or 1 (``unweighted``)."""
        p = (problem.client_sizes[state.senders].astype(np.float64) if self.aggregation == "data_size"
             else np.ones(len(state.senders)))
        p /= p.sum()
        return weighted_sum(p, state.uploads[:, cols])

    def aggregate(self, state, problem, ctx, r):
        if state.uploads is None:
            return state.w
        theta = self.upload_mean(state, problem)
        state.uploads = None
        return theta.astype(state.w.dtype)
