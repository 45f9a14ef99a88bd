"""DRFA-Prox (Deng, Kamani & Mahdavi, "Distributionally Robust Federated Averaging", NeurIPS 2020) as
aspire spec 002 §3.7 runs it, with the regularizer g(u) = -(mu/2)||u - q||^2 (mu = 0: plain DRFA)::

    lambda^0 = q (the prior; uniform in heterogeneity runs), w^0 = theta_0
    round s:
      t' ~ U{1..tau} from ("drfa_tprime", s)
      Phase 1 (model; tau local steps of min(B, n_i) minibatches, clip +-alpha1 after each):
        expected: D = all N workers, weights lambda_i^(s)
        sampled:  m draws i.i.d. from lambda^(s) (("drfa_sample", s, 0), with replacement); D = the
                  distinct workers drawn, weight (times drawn) / m
        w^(s+1) = sum_{i in D} p_i w_i^(tau);   wbar' = sum_{i in D} p_i w_i^(t')
      Phase 2 (losses at wbar', min(B_loss, n_i) samples from ("loss_batch", s, i)):
        expected: U = all workers, v_i = F_i;   sampled: U = m workers uniform without replacement
                  (("drfa_sample", s, 1)), v_i = (N/m) F_i for i in U, else 0
      lambda^(s+1) = Proj_Delta((y + gamma tau mu q) / (1 + gamma tau mu)),  y = lambda^(s) + gamma tau v

The local work is :class:`~fedrepro.algorithms.local_epochs.LocalSteps`; a worker uploads
[w_i^(tau), w_i^(t')] (2 dim values; a worker that did not take part in phase 1 uploads zeros and
carries no weight). The server runs phase 1's average and phase 2's loss queries when it receives
the uploads. :meth:`DRFAProx.round_phases` declares the two communications (phase 1: the workers
of D, tau steps; phase 2: those of U, one step), so the virtual clock prices a round as
:func:`fedrepro.sim.delays.drfa_round_duration` does. Trace columns: lambda_min, lambda_max,
lambda_last, lambda_<j>, local_steps.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrepro.algorithms._mixture import (PRIOR, check_prior, client_rows, mixture_metrics, reported_losses,
                                          require_all_workers, resolve_prior, rows_for_clients)
from fedrepro.algorithms.fedavg_sgd import weighted_sum
from fedrepro.algorithms.local_epochs import LocalSGDState, LocalSteps
from fedrepro.algorithms.ops.simplex import prox_simplex_quadratic
from fedrepro.core.params import NONNEGATIVE, POSITIVE_INT, Options
from fedrepro.problems.protocols import MINIBATCH_LOSS


@dataclass(slots=True)
class DRFAProxState(LocalSGDState):
    lam: np.ndarray | None = None         # (N,) lambda^(s)
    q: np.ndarray | None = None           # (N,) the prior
    tprime: int = 1                       # t' of the round being trained
    snapshot: np.ndarray | None = None    # w_i^(t') of the worker being trained
    phase1: np.ndarray | None = None      # D of the last round (distinct workers)
    phase1_weights: np.ndarray | None = None
    phase2: np.ndarray | None = None      # U of the last round
    F: np.ndarray | None = None           # (|U|,) the last round's reported losses
    w_next: np.ndarray | None = None      # w^(s+1), installed by aggregate


@dataclass
class DRFAProx(LocalSteps):
    """Parameters
    ----------
    lr : local SGD step eta (lr_base). momentum : SGD momentum (0: the spec). local_steps : tau (5).
    B : minibatch size (64). B_loss : loss minibatch (256). alpha1 : box projection (inf: none).
    gamma : lambda step (0.01). mu : regularizer weight (1; 0 = plain DRFA). prior : q, lambda^0 and
    the regularizer's centre; None (uniform), a vector of N non-negative numbers summing to 1, or
    {"last": r} (spec §4.5). participation : ``"expected"`` (all workers, weights lambda; FedTorch)
    | ``"sampled"`` (the paper's sampling). m : workers per phase with ``sampled`` (None: N).
    """

    lr: float = 0.05
    B_loss: int = 256
    gamma: float = 0.01
    mu: float = 1.0
    prior: object = None
    participation: str = "expected"
    m: int | None = None

    name = "drfa_prox"
    requires = (MINIBATCH_LOSS,)
    upload_kind = "vector"                # (w_i, w_i at step t'): the model update is w_i - w (fedrepro.sim.channel)
    upload_extra = "its model at the random step t' (for the loss phase) and the loss F_i it reports"
    state_class = DRFAProxState
    constraints = {"B_loss": [POSITIVE_INT], "gamma": [NONNEGATIVE], "mu": [NONNEGATIVE], "prior": PRIOR,
                   "participation": [Options("expected", "sampled")], "m": [None, POSITIVE_INT]}

    def __post_init__(self):
        super().__post_init__()
        check_prior(self.prior, self.name)

    def init(self, problem, ctx):
        N = problem.m
        if ctx.rho < 1:
            raise ValueError(f"{self.name}: it picks its own workers; run it with rho = 1 (got {ctx.rho})")
        if self.m is not None and self.m > N:
            raise ValueError(f"{self.name}: m={self.m} workers per phase but the problem has {N}; use m <= {N}")
        if self.participation == "expected" and self.m not in (None, N):
            raise ValueError(f"{self.name}: participation 'expected' uses all {N} workers; leave m out or "
                             "set participation: sampled")
        state = super().init(problem, ctx)
        state.q = resolve_prior(self.prior, N, self.name)
        state.lam = state.q.copy()
        return state

    # ---- phase 1: the model ------------------------------------------------------------------
    def client_update(self, state, problem, ctx, clients, r):
        require_all_workers(self.name, ctx, clients, problem.m)
        state.tprime = int(ctx.rng("drfa_tprime", r).integers(1, self.local_steps + 1))
        if self.participation == "expected":
            D, p = np.arange(problem.m), state.lam.copy()
        else:
            M = self.m or problem.m
            draws = ctx.rng("drfa_sample", r, 0).choice(problem.m, size=M, p=state.lam / state.lam.sum())
            D, counts = np.unique(draws, return_counts=True)
            p = counts / M
        state.phase1, state.phase1_weights = D, p
        rows = super().client_update(state, problem, ctx, D, r)
        return rows_for_clients(rows, D, clients)

    def start_point(self, state, problem, ctx, j, client, r):
        state.snapshot = None
        return super().start_point(state, problem, ctx, j, client, r)

    def after_step(self, state, problem, ctx, j, client, w, step):
        super().after_step(state, problem, ctx, j, client, w, step)     # the box projection
        if step == state.tprime:
            state.snapshot = w.copy()

    def client_upload(self, state, problem, ctx, j, client, w, steps):
        return np.concatenate([w, state.snapshot])

    # the channel's view: the first d entries are the model w_i; an attack rewrites them (as a model update
    # w_i - w) and leaves the snapshot as the client computed it
    def upload_to_update(self, state, problem, clients, uploads):
        return np.subtract(np.asarray(uploads)[:, :problem.dim], np.asarray(state.w)[None, :], dtype=np.float64)

    def update_to_upload(self, state, problem, clients, updates, like):
        out = np.array(like, copy=True)
        out[:, :problem.dim] = np.asarray(updates) + np.asarray(state.w, dtype=np.float64)[None, :]
        return out

    # ---- server: phase-1 average, phase 2 (losses), the lambda step ---------------------------
    def receive(self, state, problem, ctx, clients, uploads, r):
        N, dim = problem.m, problem.dim
        rows = uploads[client_rows(state.phase1, clients)]
        avg = weighted_sum(state.phase1_weights, rows)
        state.w_next = avg[:dim].astype(state.w.dtype)
        wbar = avg[dim:].astype(state.w.dtype)
        if self.participation == "expected":
            U, scale = np.arange(N), 1.0
        else:
            M = self.m or N
            U, scale = np.sort(ctx.rng("drfa_sample", r, 1).choice(N, size=M, replace=False)), N / M
        state.phase2 = U
        state.F = reported_losses(problem, ctx, wbar, U, r, self.B_loss)
        v = np.zeros(N)
        v[U] = scale * state.F
        c = self.gamma * self.local_steps
        state.lam = prox_simplex_quadratic(state.lam + c * v, state.q, c * self.mu)

    def aggregate(self, state, problem, ctx, r):
        if state.w_next is None:
            return state.w
        w, state.w_next = state.w_next, None
        return w

    RECORDS = ("lambda_min", "lambda_max", "lambda_last", "lambda_<j>", "local_steps", "local_samples")

    def round_metrics(self, state, problem, ctx):
        return {**mixture_metrics(state.lam), "local_steps": state.local_steps,
                "local_samples": state.local_samples}

    def round_phases(self, state, ctx, clients, r):
        return [(state.phase1, self.local_steps), (state.phase2, 1)]
