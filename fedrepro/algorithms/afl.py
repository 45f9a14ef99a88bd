"""AFL, agnostic federated learning (Mohri, Sivek & Suresh, ICML 2019), in the federated
full-participation form of aspire spec 002 §3.6 (as the DRFA authors' FedTorch baseline runs it)::

    lambda^0 = prior q (uniform by default)
    round r: every worker j gets w^r and uploads g_j = grad f_j(w^r; minibatch of min(B, n_j) from
             ("minibatch", r, j)) and F_j = f_j(w^r; min(B_loss, n_j) samples from ("loss_batch", r, j))
    w^{r+1}      = clip(w^r - lr sum_j lambda_j^r g_j, +-alpha1)
    lambda^{r+1} = Proj_Delta(lambda^r + gamma_r F),  gamma_r = gamma_lambda decay^r  (F at w^r: simultaneous)
    lambda_floor > 0 (FedTorch: 1e-3): Proj_Delta becomes the projection onto {lambda >= floor, sum 1}

The evaluated model is the last iterate, or with ``average_iterates`` the mean of w^0..w^r (the
original Stochastic-AFL output). The gradients are the uploads (mechanisms and attacks see them);
the losses are reported beside them. One communication per round, one gradient per worker: the
virtual clock prices a job of one step. Trace columns: the mixture weights (lambda_min,
lambda_max, lambda_last, lambda_<j>) and the gradients computed so far (local_steps).
"""
from __future__ import annotations

import math

from dataclasses import dataclass
from numbers import Real

import numpy as np

from fedrepro.algorithms._mixture import (PRIOR, check_prior, mixture_metrics, reported_losses, require_all_workers,
                                          resolve_prior)
from fedrepro.algorithms.base import State
from fedrepro.algorithms.sync_base import SyncAlgorithm
from fedrepro.algorithms.fedavg_sgd import weighted_sum
from fedrepro.algorithms.local_epochs import random_batch
from fedrepro.algorithms.ops.simplex import project_simplex
from fedrepro.core.params import NONNEGATIVE, POSITIVE, POSITIVE_INT, Boolean, Interval, Options
from fedrepro.problems.protocols import MINIBATCH_LOSS


@dataclass(slots=True)
class AFLState(State):
    x: np.ndarray | None = None           # the current iterate w^r (state.w is the evaluated model)
    lam: np.ndarray | None = None         # (N,) mixture weights lambda^r
    grads: np.ndarray | None = None       # (N, dim) the last round's uploaded gradients, one row per sender
    senders: np.ndarray | None = None     # (N,) the worker of each row of grads (the round's order)
    F: np.ndarray | None = None           # (N,) the last round's reported losses, by worker id
    w_sum: np.ndarray | None = None       # sum of the iterates so far (average_iterates), float64
    n_iterates: int = 0
    local_steps: int = 0                  # minibatch gradients of all workers so far


@dataclass
class AFL(SyncAlgorithm):
    """Parameters
    ----------
    lr : model step (lr_base). B : gradient minibatch (64). B_loss : loss minibatch (256).
    alpha1 : box projection of w (inf: none). gamma_lambda : lambda step (0.01; 0 keeps lambda^0).
    decay : gamma multiplied by it every round (1: constant; FedTorch 0.9). lambda_floor : lower
    bound of every lambda_j, kept by projecting onto the floored simplex (0: none; FedTorch 1e-3;
    at most 1/N).
    average_iterates : evaluate the mean of the iterates. prior : lambda^0; None (uniform), a
    vector of N non-negative numbers summing to 1, or {"last": r}.
    """

    lr: float = 0.05
    B: int = 64
    B_loss: int = 256
    alpha1: float = float("inf")
    gamma_lambda: float = 0.01
    decay: float = 1.0
    lambda_floor: float = 0.0
    average_iterates: bool = False
    prior: object = None

    name = "afl"
    upload_kind = "gradient"              # a minibatch gradient at x; the server steps against its lambda-weighted sum
    upload_extra = "the loss F_i it reports for the lambda step"
    requires = (MINIBATCH_LOSS,)
    client_vectors = 0
    state_class = AFLState
    constraints = {"lr": [POSITIVE], "B": [POSITIVE_INT], "B_loss": [POSITIVE_INT], "alpha1": [POSITIVE, Options(math.inf)],
                   "gamma_lambda": [NONNEGATIVE], "decay": [POSITIVE],
                   "lambda_floor": [Interval(Real, 0, 1, closed="left")], "average_iterates": [Boolean],
                   "prior": PRIOR}

    def __post_init__(self):
        super().__post_init__()
        check_prior(self.prior, self.name)

    def init(self, problem, ctx):
        if ctx.rho < 1:
            raise ValueError(f"{self.name}: needs full participation; run it with rho = 1 (got {ctx.rho})")
        if self.lambda_floor * problem.m > 1:
            raise ValueError(f"{self.name}: lambda_floor={self.lambda_floor} times {problem.m} workers exceeds 1; "
                             f"use lambda_floor <= {1 / problem.m:.6g}")
        w = problem.init_params(ctx.rng("init"))
        state = self.state_class(w=w, x=w.copy(), lam=resolve_prior(self.prior, problem.m, self.name).copy())
        if self.average_iterates:
            state.w_sum, state.n_iterates = w.astype(np.float64), 1
        return state

    def client_update(self, state, problem, ctx, clients, r):
        require_all_workers(self.name, ctx, clients, problem.m)
        x = state.x
        G = np.empty((len(clients), problem.dim), dtype=x.dtype)
        for j, c in enumerate(np.asarray(clients, dtype=np.int64)):
            idx = random_batch(problem, ctx.rng("minibatch", r, int(c)), c, self.B)
            problem.batch_loss_grad(x, idx, rng=ctx.rng("dropout", r, int(c)), out=G[j])
        clients = np.asarray(clients, dtype=np.int64)
        state.F = np.empty(problem.m)                    # by worker id (the round's clients: any order)
        state.F[clients] = reported_losses(problem, ctx, x, clients, r, self.B_loss)
        state.local_steps += len(clients)
        return G

    def receive(self, state, problem, ctx, clients, uploads, r):
        state.grads = uploads
        state.senders = np.asarray(clients, dtype=np.int64)

    def aggregate(self, state, problem, ctx, r):
        if state.grads is None:
            return state.w
        step = weighted_sum(state.lam[state.senders], state.grads)     # row j is worker senders[j]'s
        x = state.x - self.lr * step
        if np.isfinite(self.alpha1):
            np.clip(x, -self.alpha1, self.alpha1, out=x)
        state.x = x.astype(state.x.dtype)
        gamma = self.gamma_lambda * self.decay ** (r - 1)          # the step of round r - 1
        state.lam = self.project(state.lam + gamma * state.F)
        state.grads = None
        if not self.average_iterates:
            return state.x
        state.w_sum += state.x
        state.n_iterates += 1
        return (state.w_sum / state.n_iterates).astype(state.x.dtype)

    def project(self, y: np.ndarray) -> np.ndarray:
        """Euclidean projection onto {lambda >= lambda_floor, sum lambda = 1}: floor + s Proj_Delta((y -
        floor) / s), s = 1 - N floor (the simplex itself for floor 0)."""
        f = self.lambda_floor
        if not f:
            return project_simplex(y)
        s = 1.0 - y.size * f
        return np.full(y.size, f) if s <= 0 else f + s * project_simplex((y - f) / s)

    RECORDS = ("lambda_min", "lambda_max", "lambda_last", "lambda_<j>", "local_steps")

    def round_metrics(self, state, problem, ctx):
        return {**mixture_metrics(state.lam), "local_steps": state.local_steps}

    def round_phases(self, state, ctx, clients, r):
        return [(clients, 1)]
