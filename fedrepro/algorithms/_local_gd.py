"""Shared machinery of the local-gradient baselines of Zhou & Li Sec. 5.3 (FedAvg, FedProx, FedAlt,
FedSim): a common step eta = step_c / max_i r_i (spec 3.6; per-client steps would bias the fixed
point, 7.C X4), local iterates of the selected clients started at the broadcast w, and server
averaging either over all clients with stale iterates (eq. (18), FedAvg) or over the clients of the
last round (eq. (17), FedProx/FedAlt/FedSim). Subclasses implement only :meth:`_step`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrepro.algorithms.base import State
from fedrepro.algorithms.sync_base import SyncAlgorithm
from fedrepro.core.params import POSITIVE, Options
from fedrepro.core.store import ClientStore
from fedrepro.problems.protocols import LIPSCHITZ


@dataclass(slots=True)
class LocalGDState(State):
    eta: float = 0.0                    # common step step_c / r_max
    r_mean: float = 0.0                 # mean_i r_i (FedProx's mu_p)
    wts: np.ndarray = None              # (m,) normalised client weights
    n_grad: int = 0                     # client gradients evaluated
    w_sel: np.ndarray = None            # (dim,) average over the last round's clients, eq. (17)
    Ws: ClientStore = None              # server copies of every client's iterate, eq. (18)
    V: np.ndarray = None                # (len(S), dim) local iterates of this round's clients
    mu_p: float = 0.0                   # FedProx proximal weight
    Vp: ClientStore = None              # FedAlt/FedSim personal models v_i (persist)


@dataclass
class LocalGD(SyncAlgorithm):
    """Base class; fields shared by all baselines.

    step_c : eta = step_c / r_max (tuned per setting by a grid; spec 3.6).
    averaging : "all" (eq. (18), all m clients, stale uploads) | "selected" (eq. (17)).
    """

    step_c: float = 0.5
    averaging: str = "selected"

    name = "local_gd"
    upload_kind = "model"                   # the local iterate v_i
    server_rule = "mean"                    # eq. (17) / (18): a weighted average of the uploads
    grads_per_step = 1
    requires = (LIPSCHITZ,)                 # eta = step_c / max_i r_i
    constraints = {"step_c": [POSITIVE], "averaging": [Options("all", "selected")]}
    state_class = LocalGDState

    def init(self, problem, ctx):
        st = LocalGDState(w=np.zeros(problem.dim))
        r = problem.lipschitz()
        st.eta = float(self.step_c / np.max(r))
        st.r_mean = float(np.mean(r))
        wts = np.asarray(problem.weights, dtype=np.float64)
        st.wts = wts / wts.sum()
        st.w_sel = np.zeros(problem.dim)
        if self.averaging == "all":
            st.Ws = ctx.client_store(problem.m, problem.dim)
        st.metrics = {"n_grad_evals": 0, "eta": st.eta}
        self._init_extra(st, problem, ctx)
        return st

    def _init_extra(self, state, problem, ctx):
        pass

    def aggregate(self, state, problem, ctx, r):
        if self.averaging == "all":
            return state.Ws.weighted_sum(state.wts)         # eq. (18)
        return state.w_sel                                  # eq. (17), computed in receive

    def begin_round(self, state, problem, ctx, clients, r):
        state.V = np.broadcast_to(state.w, (len(clients), problem.dim)).copy()

    def _grads(self, state, problem, X, clients, fresh):
        """grad f_i at the rows of X; ``fresh`` is False when X equals the broadcast w (shared-point
        call: one pass, reuses the evaluation's cache)."""
        state.n_grad += len(clients)
        if not fresh:
            return problem.client_grads(state.w, clients)
        return problem.client_grads(X, clients)

    def local_step(self, state, problem, ctx, clients, r, t):
        self._step(state, problem, clients, t)

    def _step(self, state, problem, clients, t):
        raise NotImplementedError

    def upload(self, state, problem, ctx, clients, r):
        return state.V

    def receive(self, state, problem, ctx, clients, uploads, r):
        if self.averaging == "all":
            state.Ws[clients] = uploads
        else:
            wl = state.wts[clients]
            state.w_sel = (wl / wl.sum()) @ uploads
        state.metrics["n_grad_evals"] = state.n_grad
