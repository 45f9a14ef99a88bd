"""SCAFFOLD (Karimireddy et al., ICML 2020), option II control variates, with local minibatch SGD
(spec 003 §3.6, §7 C2): the baseline of Gong et al.

Server state theta, c; client state c_i (a client store), all 0 at the start. Client i of round t
trains E epochs of minibatch SGD from theta^t with the corrected gradient (momentum ``momentum``,
0 by default as in the early code)::

    g <- grad mean loss(y; b) - c_i + c ;  v <- mu v + g ;  y <- y - lr v        (K steps)
    c_i^+ = c_i - c + (theta^t - y) / (K lr)                                        (option II)
    upload [Delta y_i = y - theta^t, Delta c_i = c_i^+ - c_i]  (2 d floats) ;  c_i <- c_i^+

(differences formed in float64, uploaded in the model dtype: the memory estimate's upload term).

K = the client's actual number of local steps E_i ceil(n_i / B) (``K: actual_steps``) or the early
code's constant 50 (``K: fixed_50``). Server, with eta_g the global step::

    theta^{t+1} = theta^t + eta_g mean_S Delta y_i        (unweighted, or n_i with aggregation: data_size)
    c^{t+1}     = c^t + (1/m) sum_{i in S} Delta c_i       (= c + (|S|/m) mean_S Delta c_i, always unweighted)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrepro.algorithms.fedavg_sgd import FedAvgSGD
from fedrepro.algorithms.local_epochs import LocalEpochsState
from fedrepro.core.params import POSITIVE, Options
from fedrepro.core.store import ClientStore

FIXED_K = {"fixed_50": 50}


@dataclass(slots=True)
class ScaffoldState(LocalEpochsState):
    c: np.ndarray | None = None           # server control variate (dim,) float64
    C: ClientStore | None = None          # client control variates c_i
    c_old: np.ndarray | None = None       # c_i of the client being trained (float64)
    correction: np.ndarray | None = None  # c - c_i in the model dtype (added to every local gradient)


@dataclass
class Scaffold(FedAvgSGD):
    """eta_g : global step (1.0). K : ``actual_steps`` (standard SCAFFOLD) | ``fixed_50`` (early code).
    momentum : 0 (early code default; option II assumes plain SGD). aggregation : ``unweighted``
    (Gong et al.) | ``data_size`` (of Delta y). Other parameters: :class:`~fedrepro.algorithms.local_epochs.LocalEpochs`."""

    aggregation: str = "unweighted"
    eta_g: float = 1.0
    K: str = "actual_steps"

    name = "scaffold"
    client_vectors = 1                    # c_i
    state_class = ScaffoldState
    upload_kind = "vector"                # (Delta y_i, Delta c_i): the model update is Delta y_i (fedrepro.sim.channel)
    upload_extra = "Delta c_i, the change of its control variate"
    constraints = {"eta_g": [POSITIVE], "K": [Options("actual_steps", *FIXED_K)]}

    def init(self, problem, ctx):
        state = super().init(problem, ctx)
        state.c = np.zeros(problem.dim, dtype=np.float64)
        state.C = ctx.client_store(problem.m, problem.dim, dtype=state.w.dtype)
        return state

    def start_point(self, state, problem, ctx, j, client, r):
        state.c_old = np.asarray(state.C[client], dtype=np.float64).copy()
        state.correction = (state.c - state.c_old).astype(state.w.dtype)
        return np.array(state.w, copy=True)

    def local_terms(self, state, problem, ctx, j, client):
        return {"shift": state.correction}                                    # g - c_i + c

    def client_upload(self, state, problem, ctx, j, client, w, steps):
        K = steps if self.K == "actual_steps" else FIXED_K[self.K]
        dy = w.astype(np.float64) - state.w.astype(np.float64)
        c_new = state.c_old - state.c - dy / (K * self.lr)                   # option II
        state.C[client] = c_new
        c_new = np.asarray(state.C[client], dtype=np.float64)                # as stored: c = mean_i c_i stays exact
        return np.concatenate([dy, c_new - state.c_old]).astype(state.w.dtype)     # 2 d floats, model dtype

    # the channel's view (fedrepro.sim.channel): the first d entries are the model update Delta y_i; an
    # attack or aggregator rewrites them and leaves Delta c_i as the client computed it
    def upload_to_update(self, state, problem, clients, uploads):
        return np.array(np.asarray(uploads)[:, :problem.dim], dtype=np.float64)

    def update_to_upload(self, state, problem, clients, updates, like):
        out = np.array(like, copy=True)
        out[:, :problem.dim] = updates
        return out

    def aggregate(self, state, problem, ctx, r):
        if state.uploads is None:
            return state.w
        d = problem.dim
        theta = state.w.astype(np.float64) + self.eta_g * self.upload_mean(state, problem, slice(0, d))
        dc = np.zeros(d, dtype=np.float64)
        for row in state.uploads[:, d:]:
            dc += row
        state.c += dc / problem.m
        state.uploads = None
        return theta.astype(state.w.dtype)
