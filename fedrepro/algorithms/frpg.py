"""FRPG: fault-resilient proximal gradient (Dong et al., Algorithm 1, eqs. (6)-(8), (16)-(17)).

The server keeps (u0, w0, v0), every worker (u_n, w_n, v_n). Round k = r + 1:

    beta = 2/(k+2),  alpha0 = (delta/14)(k+2)^2 + 1.5 L0,  alpha = (3 delta/14)(k+2)^2 + L   (16)-(17)
    server:  u0 = (1-beta) w0 + beta v0;  w0 = (1 - delta/alpha0) u0;  broadcast w0          (6a)-(6b)
    worker:  u = (1-beta) w + beta v;  q = minibatch grad at u (includes delta u)             (8a)
             (w, g) = worker_prox_step(w0, u, q, alpha)                                        (8b), (7)
             v = v - (delta (v - u) + q - g) / (delta + alpha beta);  upload g                 (8c)
    server:  v0 = (alpha0 beta v0 - sum_n g_n) / (delta + alpha0 beta)                        (6c), f0 = delta/2||.||^2

Mapping onto the simulation loop (keeps (6)-(8) exact): ``begin_round(r)`` does
(6a)-(6b) for k = r+1 and broadcasts; ``local_step`` does (8a)-(8c);
``receive`` validates and stores sum_n g_n; the next ``aggregate`` applies (6c)
and returns w_{0,k}, so the record of round r is (w_{0,r}, w_{n,r}) exactly as
the paper's CR r. LFRPG (:mod:`.lfrpg`) is this class with T > 1 slots per round.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrepro.algorithms.base import State
from fedrepro.algorithms.sync_base import SyncAlgorithm
from fedrepro.algorithms.ops.frpg_step import mix_points, update_v
from fedrepro.algorithms.ops.huber_prox import huber, penalty_grad, project_ball, worker_prox_step
from fedrepro.core.params import POSITIVE, POSITIVE_INT, Boolean, Options
from fedrepro.core.store import ClientStore
from fedrepro.problems.protocols import BYZANTINE, CONSENSUS, STEP_CONSTANT, STOCHASTIC


def _rows(clients: np.ndarray, m: int):
    """Row selector: a view (slice) when the round's clients are all workers in ascending order (rho = 1
    under the default sampler), else the ids (a replayed selection may list all workers in another
    order: the rows must follow it, as the minibatch rows do)."""
    return slice(None) if len(clients) == m and np.array_equal(clients, np.arange(m)) else clients


@dataclass(slots=True)
class FRPGState(State):
    v0: np.ndarray = None               # server v_0
    u0: np.ndarray = None               # server u_0
    V: ClientStore = None               # worker v_n
    Wmem: list = None                   # T stores: w_n per slot (T = 1: the worker model)
    Gsum: ClientStore = None            # sum over the frame's slots of the worker's g_n
    pending: np.ndarray = None          # sum_n g_n received, applied by the next aggregate
    k: int = 0                          # round index k = r + 1 of the step sizes


@dataclass
class FRPG(SyncAlgorithm):
    """Parameters
    ----------
    lam : penalty weight lambda (1.6).
    mu : Huber smoothing mu (1e-3).
    L : Lipschitz constant L_n of the step sizes (None: the problem's ``L``, i.e.
        the paper's per-dataset value 156/295/524).
    L0_mode : ``"dataset"`` (L0 = L, spec A3 default) or ``"delta"`` (L0 = delta,
        the exact constant of f0; the paper's literal reading).
    batch : minibatch size (None: the problem's ``batch``).
    clip_g : project every received g_n onto the lambda-ball (spec A6).
    """

    lam: float = 1.6
    mu: float = 1e-3
    L: float | None = None
    L0_mode: str = "dataset"
    batch: int | None = None
    clip_g: bool = True

    name = "frpg"
    requires = (STOCHASTIC, BYZANTINE, CONSENSUS)
    constraints = {"lam": [POSITIVE], "mu": [POSITIVE], "L": [None, POSITIVE], "L0_mode": [Options("dataset", "delta")],
                   "batch": [None, POSITIVE_INT], "clip_g": [Boolean]}
    state_class = FRPGState
    upload_kind = "gradient"                # the Huber penalty gradient G_n
    reads_senders = True

    def requirements(self):
        return super().requirements() + ((STEP_CONSTANT,) if self.L is None else ())

    # slots per communication round (T for LFRPG) and how u_{n,k} picks its w (literal | chain)
    def _slots(self) -> int:
        return 1

    def _memory_slot(self, t: int) -> int:
        return t

    @property
    def slots_per_upload(self) -> int:
        """Fresh faulty models per upload (attacks draw one per slot, spec A7)."""
        return self._slots()

    # ---- step sizes (16)-(17) / (27)-(28), k = round index starting at 1 ---------
    def _steps(self, problem, k: int):
        delta = problem.delta
        L = problem.L if self.L is None else float(self.L)
        L0 = L if self.L0_mode == "dataset" else delta
        beta = 2.0 / (k + 2)
        alpha0 = delta / 14.0 * (k + 2) ** 2 + 1.5 * L0
        alpha = 3.0 * delta / 14.0 * (k + 2) ** 2 + L
        return beta, alpha0, alpha

    def init(self, problem, ctx):
        T = self._slots()
        if ctx.k0 != T:
            raise ValueError(f"{self.name}: k0={ctx.k0} local steps per round, but the frame has T={T} "
                             f"slots; run with k0={T} (one upload per frame)")
        d, m = problem.dim, problem.m
        st = FRPGState(w=np.zeros(d))
        st.v0 = np.zeros(d)
        st.u0 = np.zeros(d)
        st.V = ctx.client_store(m, d)
        st.Wmem = [ctx.client_store(m, d) for _ in range(T)]
        st.Gsum = ctx.client_store(m, d)
        return st

    def aggregate(self, state, problem, ctx, r):
        if state.pending is not None:           # (6c) / (19c) with round-k parameters
            beta, alpha0, _ = self._steps(problem, state.k)
            state.v0 = (alpha0 * beta * state.v0 - state.pending) / (problem.delta + alpha0 * beta)
            state.pending = None
        return state.w

    def begin_round(self, state, problem, ctx, clients, r):
        state.k = r + 1
        beta, alpha0, alpha = self._steps(problem, state.k)
        state.u0 = (1 - beta) * state.w + beta * state.v0               # (6a)
        state.w = (1 - problem.delta / alpha0) * state.u0               # (6b): u0 - grad f0(u0)/alpha0
        state.Gsum[clients] = 0.0

    def local_step(self, state, problem, ctx, clients, r, t):
        beta, _, alpha = self._steps(problem, state.k)
        delta = problem.delta
        sel = _rows(clients, problem.m)
        prev = state.Wmem[self._memory_slot(t)][sel]
        V = state.V[sel]
        U = mix_points(prev, V, beta)                                    # (8a) / (21a)
        idx = problem.sample_minibatch(ctx.rng("minibatch", r, t), clients, self.batch)
        q = problem.minibatch_grads(U, idx)
        W, G = worker_prox_step(state.w, U, q, alpha, self.lam, self.mu)   # (8b), (7)
        state.V[sel] = update_v(V, U, q, G, delta, alpha, beta)         # (8c)
        state.Wmem[t][sel] = W
        state.Gsum[sel] += G

    def upload(self, state, problem, ctx, clients, r):
        return state.Gsum[clients] / self._slots()

    def faulty_upload(self, state, problem, clients, models):
        """What a worker whose model is ``models`` uploads: the (slot-averaged) penalty
        gradient lam grad p(w0 - w_n). models : (S, len(clients), d), S = slots_per_upload."""
        return penalty_grad(state.w, models, self.lam, self.mu).mean(axis=0)

    def receive(self, state, problem, ctx, clients, uploads, r):
        G = project_ball(uploads, self.lam) if self.clip_g else uploads
        state.pending = G[problem.senders(clients)].sum(axis=0)

    def worker_models(self, state) -> ClientStore:
        """w_n at the end of the last round/frame (m rows of length d)."""
        return state.Wmem[-1]

    RECORDS = ("loss_F", "loss_data", "loss_penalty")

    def round_metrics(self, state, problem, ctx):
        """loss_F = F(w) of (5) on the reliable workers (true labels, Huber penalty) = loss_data (the losses)
        + lam * loss_penalty (sum_n huber(w_0 - w_n)): the parts let F be compared at one lam across methods."""
        rel = problem.reliable
        Wn = self.worker_models(state)[rel]
        losses, penalty, server = problem.reliable_losses(Wn, rel).sum(), huber(state.w - Wn, self.mu).sum(), \
            problem.server_loss(state.w)
        return {"loss_F": float(losses + self.lam * penalty + server),          # the order of every earlier build
                "loss_data": float(losses + server), "loss_penalty": float(penalty)}
