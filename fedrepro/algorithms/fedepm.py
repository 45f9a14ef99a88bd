"""FedEPM (Zhou & Li, "Exact Penalty Method for Federated Learning", Algorithm 2)
and the harness it shares with its baselines SFedAvg / SFedProx (Algorithm 3).

Round r of the simulation loop is the paper's round s = r + 1 (iterations
k = r k0, ..., r k0 + k0 - 1). Shared structure (spec 001 Sec. 3.0, authors'
FedEPM.m):

* server: w^(s) from the *stored* uploads Z (m, n); then the evaluation block
  computes F_s = sum_i f_i(w), G = [grad f_i(w)]_i (m, n) for all clients and
  err_s = ||mean_i G_i||^2 (recorded as ``err`` for the EPM stop rules). G is
  computed here, outside the loop's local time, as in the code (LCT, Sec. 3.6).
* clients in S: k0 local updates (algorithm-specific), then upload W[S]; the
  loop's mechanism (:mod:`fedrepro.sim.privacy`, eq. (39)) adds the noise and reads
  ``grad_l1`` = ||G_i||_1, ``gap_norm2`` = ||w_i^k - w||^2 (model before the
  last local step) and ``iteration`` = k + 1 from ``state.upload_info``.
* z_i^0 = stdlap(n) / mu0 (pure noise of scale 20, code), w_i^0 = 0; a run replaying
  another implementation's noise (:mod:`fedrepro.sim.replay`) takes the m unit rows from it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrepro.algorithms.base import State
from fedrepro.algorithms.sync_base import SyncAlgorithm
from fedrepro.algorithms.ops.elastic_net import ens, soft_threshold
from fedrepro.core.noise import stdlap, unit_laplace
from fedrepro.core.params import NONNEGATIVE, POSITIVE, Options
from fedrepro.core.store import ClientStore

INIT_NOISE = ("stdlap", "laplace", "zero")


@dataclass(slots=True)
class EPMState(State):
    W: ClientStore = None               # client models w_i
    Z: ClientStore = None               # stored uploads z_i
    d: np.ndarray = None                # (m,) client sizes d_i
    fresh: np.ndarray = None            # ids of the last uploaders
    G: np.ndarray = None                # (m, n) grad f_i at the current global model
    gap_norm2: np.ndarray = None        # (len(S),) ||w_i^k - w||^2 before the last local step
    lam: float = 0.0                    # FedEPM penalty lambda actually used
    eta: float = 0.0                    # FedEPM penalty eta actually used


@dataclass
class EPMHarness(SyncAlgorithm):
    """Shared state, evaluation block and upload bookkeeping of FedEPM, SFedAvg, SFedProx.

    Parameters
    ----------
    init_noise : initial uploads z_i^0: ``"stdlap"`` (code's randl / mu0), ``"laplace"``
        (plain Laplace of the same scale) or ``"zero"``.
    init_scale : scale of z_i^0 (code: 1 / mu0 = 20).
    client_loop : ``"vectorized"`` (default: all selected clients in one batched update) or
        ``"sequential"`` (one update call per client, like the authors' MATLAB loop; only for
        timing LCT with per-client overheads comparable to the paper's Table I, spec 3.6).

    Subclasses implement ``_server(state, problem, r) -> w`` and
    ``_update(state, problem, S, r, t, gap) -> new W[S]`` (len(S), n).
    State arrays: ``W`` (m, n) client models, ``Z`` (m, n) stored uploads,
    ``G`` (m, n) gradients at the current global model, ``fresh`` (ids of the
    last uploaders), ``d`` (m,) client sizes.
    """

    init_noise: str = "stdlap"
    init_scale: float = 20.0
    client_loop: str = "vectorized"

    name = "epm_harness"
    constraints = {"init_noise": [Options(*INIT_NOISE)], "init_scale": [NONNEGATIVE],
                   "client_loop": [Options("vectorized", "sequential")]}
    state_class = EPMState
    upload_kind = "model"                   # the local model w_i (eq. (39) adds the noise to it)
    # the objective the paper and code evaluate and stop on: f = sum_i f_i (client weights 1,
    # spec 001 Sec. 4-5); `fedrepro run` builds the user's problem with these weights by default
    objective_weights = "ones"

    # ---- hooks -------------------------------------------------------------------------
    def init(self, problem, ctx) -> State:
        m, n = problem.m, problem.dim
        st = EPMState(w=np.zeros(n))
        st.W = ctx.client_store(m, n)
        st.Z = ctx.client_store(m, n)
        if self.init_noise != "zero":            # unit draws (or replayed rows), scaled
            draw = stdlap if self.init_noise == "stdlap" else unit_laplace
            st.Z[:] = ctx.unit_noise(draw, (m, n), "init", 0) * self.init_scale
        st.d = np.asarray(problem.client_sizes, dtype=float)
        st.fresh = np.arange(m)                  # S^0 = [m]: every z_i^0 counts as fresh
        return st

    def aggregate(self, state, problem, ctx, r):
        w = self._server(state, problem, ctx, r)
        # evaluation block (all m clients, outside local time; spec Sec. 3.0 step 2)
        state.G = problem.client_grads(w)
        losses = problem.client_losses(w)
        g_mean = state.G.mean(axis=0)
        state.metrics["err"] = float(g_mean @ g_mean)
        state.metrics["objective_per_client"] = float(losses.mean())
        return w

    def local_step(self, state, problem, ctx, clients, r, t):
        gap = state.W[clients] - state.w
        if t == ctx.k0 - 1:                      # the noise uses the gap before the last step
            state.gap_norm2 = np.einsum("ij,ij->i", gap, gap)
        if self.client_loop == "vectorized":
            state.W[clients] = self._update(state, problem, ctx, clients, r, t, gap)
        else:
            for row, i in enumerate(clients):
                state.W[i] = self._update(state, problem, ctx, clients[row:row + 1], r, t, gap[row:row + 1])[0]

    def upload(self, state, problem, ctx, clients, r):
        state.upload_info = {
            "grad_l1": np.abs(state.G[clients]).sum(axis=1),
            "gap_norm2": state.gap_norm2,
            "iteration": (r + 1) * ctx.k0,               # k + 1 at the last local step
            "m": problem.m,
        }
        return state.W[clients].copy()

    def receive(self, state, problem, ctx, clients, uploads, r):
        state.Z[clients] = uploads
        state.fresh = np.asarray(clients)

    # ---- algorithm-specific ------------------------------------------------------------
    def _server(self, state, problem, ctx, r) -> np.ndarray:
        raise NotImplementedError

    def _update(self, state, problem, ctx, S, r, t, gap) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def _iteration(ctx, r, t) -> int:
        """Global iteration counter k of local step t in round r."""
        return r * ctx.k0 + t


@dataclass
class FedEPM(EPMHarness):
    """FedEPM, Algorithm 2 (code-faithful defaults, spec 001 Sec. 3.2).

    Server: w = ENS(Z; lam, eta) over ALL m stored uploads (stale included).
    Client i in S at iteration k (eq. (20), plus sign, see spec 7-A3):

        mu_i   = mu0 (1 + c ||w_i^k - w||^2) alpha^(k+1)
        mud_i  = mu_i / d_i  (``mu_scaling="over_di"``, code)  |  mu_i  (``"paper"``)
        w_i    = w + soft(mud_i (w_i^k - w) - g_i, lam) / (mud_i + eta)

    the exact minimiser of the linearised sub-problem (23) with g_i = grad f_i(w).

    Parameters
    ----------
    mu0, c, alpha : proximal weight schedule (0.05, 1e-8, 1.001).
    eta : None -> (0.02 m + 1)(rho + 0.1) 1e-5 (paper Sec. VII = code's 2e-5 (rho+0.1)(m/100+0.5)).
    lam : None -> eta / 2.
    mu_scaling : ``"over_di"`` (code; reproduces the paper's figures) | ``"paper"``.
    ens_sign : ``"corrected"`` | ``"paper"`` (eq. (15) as printed; wrong, for comparison).
    """

    mu0: float = 0.05
    c: float = 1e-8
    alpha: float = 1.001
    eta: float | None = None
    lam: float | None = None
    mu_scaling: str = "over_di"
    ens_sign: str = "corrected"

    name = "fedepm"
    constraints = {"mu0": [POSITIVE], "c": [NONNEGATIVE], "alpha": [POSITIVE], "eta": [None, POSITIVE],
                   "lam": [None, NONNEGATIVE], "mu_scaling": [Options("over_di", "paper")],
                   "ens_sign": [Options("corrected", "paper")]}

    def penalty(self, m: int, rho: float) -> tuple[float, float]:
        """(lam, eta) actually used for m clients and participation rate rho."""
        eta = (0.02 * m + 1.0) * (rho + 0.1) * 1e-5 if self.eta is None else float(self.eta)
        lam = eta / 2.0 if self.lam is None else float(self.lam)
        return lam, eta

    def init(self, problem, ctx):
        st = super().init(problem, ctx)
        st.lam, st.eta = self.penalty(problem.m, ctx.rho)
        st.metrics.update(penalty_lam=st.lam, penalty_eta=st.eta)     # the values used (params say None = auto)
        return st

    def _server(self, state, problem, ctx, r):
        return ens(state.Z.to_array(), state.lam, state.eta, sign=self.ens_sign)

    def _update(self, state, problem, ctx, S, r, t, gap):
        k = self._iteration(ctx, r, t)
        mu = self.mu0 * (1.0 + self.c * np.einsum("ij,ij->i", gap, gap)) * self.alpha ** (k + 1)
        mud = mu / state.d[S] if self.mu_scaling == "over_di" else mu
        v = soft_threshold(mud[:, None] * gap - state.G[S], state.lam) / (mud + state.eta)[:, None]
        return state.w + v
