"""FedADMM (Zhou & Li, "Federated Learning via Inexact ADMM", Algorithm 1 with the inner solver (15)).

Per client i: weight alpha_i, Lipschitz constant r_i, a_i = alpha_i r_i, sigma_i = r0 a_i (Sec. 5.2:
sigma_i = 0.2 r_i / m). The server keeps z_i = sigma_i w_i + pi_i of every client (stale for clients
not selected) and averages w = sum_i z_i / sum_i sigma_i (eq. (4)). Each selected client runs k0
local iterations (5)-(8): eps_i <- nu eps_i, at most ``kappa_max`` linearised steps (15) started at
the global w, then the dual update pi_i += sigma_i (w_i - w) (7) and z_i = sigma_i w_i + pi_i (8).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fedrepro.algorithms.base import State
from fedrepro.algorithms.sync_base import SyncAlgorithm
from fedrepro.algorithms.ops import admm_step
from fedrepro.core.params import POSITIVE, POSITIVE_INT, Interval, Options, Real
from fedrepro.core.store import ClientStore
from fedrepro.problems.protocols import LIPSCHITZ, LOSS_KIND


@dataclass(slots=True)
class FedADMMState(State):
    alpha: np.ndarray = None            # (m,) client weights alpha_i
    a: np.ndarray = None                # (m,) alpha_i r_i
    sig: np.ndarray = None              # (m,) sigma_i
    sigma: float = 0.0                  # sum_i sigma_i
    eps: np.ndarray = None              # (m,) inner accuracies eps_i
    Pi: ClientStore = None              # duals pi_i
    Z: ClientStore = None               # server copies z_i = sigma_i w_i + pi_i
    n_grad: int = 0                     # client gradients evaluated
    gw: np.ndarray = None               # (len(S), dim) alpha_i grad f_i(w), cached per round
    pi: np.ndarray = None               # (len(S), dim) this round's duals of S (Pi's rows; written back at upload)
    Wloc: np.ndarray = None             # (len(S), dim) local models w_i after the last local step


@dataclass
class FedADMM(SyncAlgorithm):
    """Parameters
    ----------
    r0 : sigma_i = r0 * alpha_i * r_i (paper 0.2).
    r0_rule : "paper" (use ``r0``) | "code" (authors' code: least squares 0.5/log10(9+k0), logistic
        0.05 + 0.01*[d/n >= 1000]; spec 7.A C6).
    nu : accuracy decay eps_i <- nu eps_i (5), applied with equality while selected (FIDELITY ZH-12).
    eps0 : initial inner accuracy; None = k0^2 (paper).
    kappa_max : inner prox-linear steps per local iteration (code: 3; FIDELITY ZH-10).
    inner_check : "code" (step-length test with the gradient of the previous inner iterate and
        threshold eps_i*n; costs no gradient) | "paper" (condition (6) with the fresh gradient and
        threshold eps_i; one gradient per inner step) (FIDELITY ZH-11).
    pi0 : "zero" (Sec. 5.2, code) | "neg_grad" (Algorithm 1 as printed: pi_i^0 = -alpha_i grad f_i(0)) (P2).
    """

    r0: float = 0.2
    r0_rule: str = "paper"
    nu: float = 0.95
    eps0: float | None = None
    kappa_max: int = 3
    inner_check: str = "code"
    pi0: str = "zero"

    name = "fedadmm"
    upload_kind = "vector"                  # z_i = sigma_i w_i + pi_i, eq. (8)
    server_rule = "mean"                    # eq. (4): w = sum_i z_i / sum_i sigma_i, a sigma-weighted mean
    requires = (LIPSCHITZ,)                 # a_i = alpha_i r_i
    constraints = {"r0": [POSITIVE], "r0_rule": [Options("paper", "code")], "nu": [Interval(Real, 0, 1, "right")],
                   "eps0": [None, POSITIVE], "kappa_max": [POSITIVE_INT], "inner_check": [Options("code", "paper")],
                   "pi0": [Options("zero", "neg_grad")]}
    state_class = FedADMMState

    def requirements(self):
        return super().requirements() + ((LOSS_KIND,) if self.r0_rule == "code" else ())

    def effective_r0(self, problem, k0: int) -> float:
        if self.r0_rule == "paper":
            return float(self.r0)
        if getattr(problem, "loss", "squared") == "squared":
            return 0.5 / math.log10(9 + k0)
        d = float(np.sum(problem.client_sizes))
        return 0.05 + 0.01 * (d / problem.dim >= 1000)

    # ---- hooks -------------------------------------------------------------------------------
    def prepare(self, problem, ctx):
        if self.inner_check == "code":
            admm_step.load()

    def init(self, problem, ctx):
        m, n = problem.m, problem.dim
        alpha = np.asarray(problem.weights, dtype=np.float64)
        r = problem.lipschitz()
        st = FedADMMState(w=np.zeros(n))
        st.alpha = alpha
        st.a = alpha * r                                   # alpha_i r_i
        st.sig = self.effective_r0(problem, ctx.k0) * st.a  # sigma_i
        st.sigma = float(st.sig.sum())
        st.eps = np.full(m, float(ctx.k0 ** 2 if self.eps0 is None else self.eps0))
        st.Pi = ctx.client_store(m, n)
        st.Z = ctx.client_store(m, n)                      # z_i = sigma_i w_i + pi_i with w_i = 0
        if self.pi0 == "neg_grad":
            st.Pi[:] = -alpha[:, None] * problem.client_grads(np.zeros(n))
            st.Z[:] = st.Pi[:]
            st.n_grad += m
        st.metrics = {"n_grad_evals": st.n_grad, "r0": self.effective_r0(problem, ctx.k0)}
        return st

    def aggregate(self, state, problem, ctx, r):
        return state.Z.sum() / state.sigma                  # eq. (4)

    def begin_round(self, state, problem, ctx, clients, r):
        state.gw = state.alpha[clients, None] * problem.client_grads(state.w, clients)   # g_i^w, cached
        state.n_grad += len(clients)
        state.pi = state.Pi[clients]                        # updated in place by the local steps
        state.Wloc = None

    def local_step(self, state, problem, ctx, clients, r, t):
        w, alpha = state.w, state.alpha
        a, sg = state.a[clients, None], state.sig[clients, None]
        pi = state.pi
        eps = state.eps[clients] * self.nu                  # (5)
        state.eps[clients] = eps
        code = self.inner_check == "code"
        thr = eps * problem.dim if code else eps
        compiled = code and admm_step.accepts(pi, state.gw, w)
        G = None
        if compiled:
            # the arithmetic below in one pass over each client's row (bit-identical V and pi); it also
            # applies (7) to the clients done at step 1
            V, done = admm_step.first_step(w, pi, state.gw, a[:, 0], sg[:, 0], thr)
        else:
            # first step of (15) from v^0 = w (FIDELITY ZH-13) with the cached gradient g_i^w:
            # v^1 = (a w + sigma w - pi - g)/(a + sigma) = w - (pi + g)/(a + sigma)
            E = pi + state.gw
            V = E / (a + sg)
            np.subtract(w, V, out=V)                        # V = w - E/(a + sigma), no temporary
            if code:
                # residual with the gradient of the previous inner iterate (here g_i^w):
                # g + pi + sigma (v^1 - w) = E a/(a + sigma), computed without forming it
                res = (a[:, 0] / (a[:, 0] + sg[:, 0])) ** 2 * np.einsum("ij,ij->i", E, E)
                done = res < thr
            else:
                G = alpha[clients, None] * problem.client_grads(V, clients)  # fresh gradient, (6)
                state.n_grad += len(clients)
                R = G + pi + sg * (V - w)
                done = np.einsum("ij,ij->i", R, R) <= thr
        act = np.flatnonzero(~done)
        if len(act) and self.kappa_max > 1:
            V[act] = self._more_inner_steps(state, problem, clients[act], V[act], pi[act], a[act], sg[act],
                                            thr[act], None if code else G[act])
        rows = act if compiled else slice(None)             # (7) still to apply
        D = np.subtract(V[rows], w)
        D *= sg[rows]
        pi[rows] += D                                       # (7): pi += sigma (V - w)
        state.Wloc = V

    def _more_inner_steps(self, state, problem, cl, V, pi, a, sg, thr, G):
        """Inner steps 2..kappa_max of (15) for the clients whose test failed at step 1."""
        w, alpha = state.w, state.alpha
        code = G is None
        act = np.arange(len(cl))
        for step in range(1, int(self.kappa_max)):
            if code:                                        # gradient at the previous inner iterate
                Gs = alpha[cl[act], None] * problem.client_grads(V[act], cl[act])
                state.n_grad += len(act)
            else:
                Gs = G[act]
            Vn = (a[act] * V[act] + sg[act] * w - pi[act] - Gs) / (a[act] + sg[act])   # eq. (15)
            if not code:
                Gs = alpha[cl[act], None] * problem.client_grads(Vn, cl[act])
                state.n_grad += len(act)
                G[act] = Gs
            R = Gs + pi[act] + sg[act] * (Vn - w)
            res = np.einsum("ij,ij->i", R, R)
            V[act] = Vn
            act = act[~(res < thr[act] if code else res <= thr[act])]
            if len(act) == 0:
                break
        return V

    def upload(self, state, problem, ctx, clients, r):
        state.Pi[clients] = state.pi
        return state.sig[clients, None] * state.Wloc + state.pi            # (8) z_i

    def receive(self, state, problem, ctx, clients, uploads, r):
        state.Z[clients] = uploads
        state.metrics["n_grad_evals"] = state.n_grad

    # ---- the channel's view of z_i (fedrepro.sim.channel) --------------------------------------
    def upload_to_update(self, state, problem, clients, uploads):
        """z_i stands for the model z_i / sigma_i: eq. (4) is the sigma-weighted mean of these, so the
        update is d_i = z_i / sigma_i - w."""
        sg = state.sig[np.asarray(clients), None]
        return np.asarray(uploads, dtype=np.float64) / sg - state.w[None, :]

    def update_to_upload(self, state, problem, clients, updates, like):
        sg = state.sig[np.asarray(clients), None]
        return (sg * (state.w[None, :] + np.asarray(updates, dtype=np.float64))).astype(np.asarray(like).dtype)
