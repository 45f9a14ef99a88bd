"""RSA with the l1 penalty (Li, Xu, Chen, Giannakis, Ling, AAAI 2019), the FRPG benchmark (spec 004 sec. 3.3).

Iteration k = r + 1, step a_k = a / sqrt(k):

    master:  x0 <- x0 - a_k (delta x0 + lam sum_n sign(x0 - z_n))          (sign(0) = 0)
    worker:  x_n <- x_n - a_k (q(x_n) + lam sign(x_n - x0))                 (q includes delta x_n)

``rsa_order="jacobi"`` (default): the master uses the uploads z_n = x_n of
iteration k-1 and the workers the old x0; ``"gauss_seidel"`` (public RSA code):
the master uses the workers' new models. The paper states a = 3 ("3/sqrt(k)") but not RSA's
penalty weight lam (spec A9: default lam = 1.6, FRPG's lambda); the workflow sweeps it.
``loss_F`` is F of (5) with the Huber penalty weighted by this run's own ``lam`` (as FRPG's F
uses FRPG's lambda) and ``loss_rsa_l1`` RSA's own l1 objective with the same ``lam``; ``loss_data`` and
``loss_penalty`` are F's two parts (F = loss_data + lam loss_penalty), as FRPG records them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrepro.algorithms.base import State
from fedrepro.algorithms.sync_base import SyncAlgorithm
from fedrepro.algorithms.ops.huber_prox import huber
from fedrepro.core.params import POSITIVE, POSITIVE_INT, Options
from fedrepro.core.store import ClientStore
from fedrepro.problems.protocols import BYZANTINE, CONSENSUS, STOCHASTIC


@dataclass(slots=True)
class RSAState(State):
    X: ClientStore = None               # worker models x_n
    Z: ClientStore = None               # x_n of the previous iteration (Jacobi uploads)
    pending: np.ndarray = None          # sum_n sign(x0 - z_n) received, applied by the next aggregate


@dataclass
class RSA(SyncAlgorithm):
    a: float = 3.0
    lam: float = 1.6
    rsa_order: str = "jacobi"
    mu: float = 1e-3          # Huber mu, only for the loss_F metric
    batch: int | None = None

    name = "rsa"
    slots_per_upload = 1
    requires = (STOCHASTIC, BYZANTINE, CONSENSUS)
    constraints = {"a": [POSITIVE], "lam": [POSITIVE], "rsa_order": [Options("jacobi", "gauss_seidel")],
                   "mu": [POSITIVE], "batch": [None, POSITIVE_INT]}
    state_class = RSAState
    upload_kind = "model"
    reads_senders = True

    def init(self, problem, ctx):
        if ctx.k0 != 1:
            raise ValueError(f"rsa: k0={ctx.k0}; RSA communicates every iteration (k0=1)")
        st = RSAState(w=np.zeros(problem.dim))
        st.X = ctx.client_store(problem.m, problem.dim)
        st.Z = ctx.client_store(problem.m, problem.dim)
        return st

    def aggregate(self, state, problem, ctx, r):
        if state.pending is not None:
            step = self.a / np.sqrt(r)                             # iteration k = r of the stored uploads
            state.w = state.w - step * (problem.delta * state.w + self.lam * state.pending)
            state.pending = None
        return state.w

    def local_step(self, state, problem, ctx, clients, r, t):
        step = self.a / np.sqrt(r + 1)
        X = state.X[clients]
        state.Z[clients] = X
        idx = problem.sample_minibatch(ctx.rng("minibatch", r, t), clients, self.batch)
        q = problem.minibatch_grads(X, idx)
        state.X[clients] = X - step * (q + self.lam * np.sign(X - state.w))

    def upload(self, state, problem, ctx, clients, r):
        return (state.Z if self.rsa_order == "jacobi" else state.X)[clients].copy()

    def faulty_upload(self, state, problem, clients, models):
        """A faulty worker's upload is its model itself (z_n = c xi)."""
        return models[0]

    def receive(self, state, problem, ctx, clients, uploads, r):
        keep = problem.senders(clients)
        state.pending = np.sign(state.w - uploads[keep]).sum(axis=0)

    RECORDS = ("loss_F", "loss_rsa_l1", "loss_data", "loss_penalty")

    def round_metrics(self, state, problem, ctx):
        rel = problem.reliable
        Xn = state.X[rel]
        base = problem.reliable_losses(Xn, rel).sum() + problem.server_loss(state.w)
        penalty = huber(state.w - Xn, self.mu).sum()
        # both penalties weighted by this run's own lambda; loss_data and loss_penalty (FRPG's parts of F) let
        # F be compared at FRPG's lambda
        l1 = np.abs(state.w - Xn).sum()
        return {"loss_F": float(base + self.lam * penalty), "loss_rsa_l1": float(base + self.lam * l1),
                "loss_data": float(base), "loss_penalty": float(penalty)}
