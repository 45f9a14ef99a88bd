"""ASPIRE (Jiao, Yang & Song, aspire spec 002 §3.1-3.2): asynchronous single-loop alternating gradient
projection on the regularized augmented Lagrangian (10) of the cutting-plane problem (8), with EASE
plane management, as an update rule of the driver's event-driven schedule (:class:`fedrepro.sim.driver.Events`).

Blocks: local models w_j, consensus z (the evaluated model), epigraph h, plane multipliers lambda_l,
consensus multipliers phi_j. Every plane is p^(l) in the uncertainty set P (a_l = p^(l) - pbar 1, so
the constraint of plane l reads p^(l).f - h <= 0 and pbar cancels, spec §2.4); the effective weight
of worker j is pi_j = sum_l lambda_l p^(l)_j.

Worker j, message (z~, pi~_j, phi~_j, t~) (``worker_compute``)::

    repeat local_steps times:   w_j <- clip(w_j - a_w(t~) (pi~_j g - phi~_j - kappa_1 (z~ - w_j)), +-alpha_1)   (11)
    F_j = minibatch loss (B_loss samples, fresh) at the new w_j; report (w_j, F_j)

a_w(t) = alpha_w for t < T1, lr_after_T1 alpha_w after (AMBIG-5, 24). T1, the cutting-plane cutoff
(not given by the paper), is inside every run (FIDELITY AS-25): the parameter ``T1`` (master
iterations, < max_rounds), else ``T1_fraction`` of the run's length -- of ``max_rounds`` when the run
has no time budget; with a virtual time budget B, T1 = 1 + the first iteration that starts at virtual
time >= T1_fraction B (so iteration T1 - 1 is the last that may add a plane and every job sent after
it uses the constant step), or T1_fraction max_rounds if that comes first. Decided on the virtual
clock, so deterministic and never past the run's end. Master iteration t -> t+1 with the
reports of Q (``master_update``, Gauss-Seidel order M1-M4, AMBIG-26)::

    z <- clip(z - eta_z (sum_j phi_j + kappa_1 sum_j (z - w_j)), +-alpha_1)                          (12)
    h <- clip(h - eta_h (1 - sum_l lambda_l), 0, alpha_2)                                             (13)
    lambda_l <- clip(lambda_l + rho_1 (p^(l).F - h - c_1^t lambda_l), 0, alpha_3)                     (14)
    phi_j <- clip(phi_j + rho_2 (z - w_j - c_2^t phi_j), +-alpha_4)   for j in Q                       (15)
    c_i^t = max(1 / (rho_i (t+1)^(1/6)), c_min)                                                        (Setting 2)
    every k iterations while t < T1: EASE -- add the worst-case p of the set if it violates (18) (new
    multiplier 0); ASPIRE-EASE also removes old planes whose multiplier was 0 in two consecutive
    iterations (20), keeping the most violated one if all would go (AMBIG-13).

Variants (spec §3.2) are parameters: ``ease=False`` ASPIRE-CP; ``S = N`` ASPIRE-EASE(-);
``local_steps = 5`` ASPIRE-EASE_per; ``Gamma = 0`` Mix_Even; ``adp`` ASPIRE-ADP (S_t from the
master's delay estimates, Eq. 35, rule ``text`` or ``printed``, AMBIG-4).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import count, repeat
from numbers import Real

import numpy as np

from fedrepro.algorithms._mixture import report
from fedrepro.algorithms.async_base import AsyncAlgorithm
from fedrepro.algorithms.base import State
from fedrepro.algorithms.local_epochs import local_sgd, random_batch
from fedrepro.algorithms.ops import aspire_step
from fedrepro.algorithms.ops.priors import PRIOR_CONSTRAINT, resolve_prior
from fedrepro.algorithms.ops.uncertainty_sets import UNCERTAINTY_SETS, make_uncertainty_set
from fedrepro.core.params import NONNEGATIVE, POSITIVE, POSITIVE_INT, Anything, Boolean, Interval, Options
from fedrepro.nn.optim import SGD
from fedrepro.problems.protocols import MINIBATCH_LOSS, NETWORK


@dataclass(slots=True)
class AspireState(State):
    W: np.ndarray | None = None          # (N, dim) the workers' last reported local models (master cache)
    phi: np.ndarray | None = None        # (N, dim) consensus multipliers
    sum_W: np.ndarray | None = None      # running sums over workers (float64), for (12)
    sum_phi: np.ndarray | None = None
    F: np.ndarray | None = None          # (N,) cached reported losses
    h: float = 0.0
    planes: np.ndarray | None = None     # (L, N) the planes' p^(l)
    lam: np.ndarray | None = None        # (L,) multipliers
    lam_prev: np.ndarray | None = None
    pi: np.ndarray | None = None         # (N,) effective weights sum_l lambda_l p^(l)
    q: np.ndarray | None = None          # prior
    uset: object = None                  # the uncertainty set (EASE subproblem)
    T1: int = 0                          # cutoff (while T1_time is set: a cap, the clock may fix it earlier)
    T1_time: float | None = None         # time-budgeted runs: virtual time whose first iteration fixes T1
    k: int = 1
    delay_est: np.ndarray | None = None  # ASPIRE-ADP: EMA of each worker's round trip (NaN: none yet)
    S_t: int = 1
    planes_added: int = 0
    planes_removed: int = 0
    cp_solved: bool = False


@dataclass
class Aspire(AsyncAlgorithm):
    """Parameters (spec §3.1 defaults; None means "derived", see each)
    ----------
    lr : lr_base, the per-step rate of a mean loss; alpha_w = alpha_w_factor x lr (None: N).
    Gamma : CD-norm budget (None: N). prior : q, "uniform" or a vector, or {"last": ratio} (attack
        runs: the last worker gets ratio/(N-1+ratio), the others 1/(N-1+ratio), spec §4.5).
    ptilde_scale : ptilde_j = scale q_j. uncertainty_set / set_params : another set of Section 5 for
        step E1 (``cdnorm`` uses q, ptilde, Gamma).
    ease : remove planes (20) (False: ASPIRE-CP). local_steps : steps of (11) per job (5: EASE_per).
    S : active workers per iteration (None: all N, the synchronous ASPIRE-EASE(-)). adp : None, or {s, beta1, beta_ema, rule: text|printed}.
    kappa1_times_alpha_w : kappa_1 alpha_w (0.5); eta_z = 1 / (2 N kappa_1).
    eta_h, rho1, rho2, c_min, alpha1..alpha4, lr_after_T1, k (plane period; None: N), B, B_loss, viol_tol :
        spec §3.1.
    T1 : the cutting-plane cutoff in master iterations (None: from T1_fraction); must be < max_rounds,
        refused with a time budget (the budget's iteration count is only known on the clock).
    T1_fraction : in (0, 1): T1 = fraction x max_rounds, or, with a time budget B, 1 + the first iteration
        starting at virtual time >= fraction x B (module docstring).
    """

    lr: float = 0.05
    alpha_w_factor: float | None = None
    Gamma: float | None = None
    prior: object = "uniform"
    ptilde_scale: float = 1.0
    uncertainty_set: str = "cdnorm"
    set_params: dict | None = None
    ease: bool = True
    local_steps: int = 1
    S: int | None = 1
    adp: dict | None = None
    kappa1_times_alpha_w: float = 0.5
    eta_h: float = 0.01
    rho1: float = 0.5
    rho2: float = 0.1
    c_min: float = 1e-3
    alpha1: float = 5.0
    alpha2: float = 10.0
    alpha3: float = 1.0
    alpha4: float = 10.0
    lr_after_T1: float = 0.5
    T1: int | None = None
    T1_fraction: float = 0.5
    k: int | None = None
    B: int = 64
    B_loss: int = 256
    viol_tol: float = 1e-9

    name = "aspire"
    upload_kind = "model"                   # a report is (w_j, F_j): the worker's model and its loss
    upload_extra = "the loss F_j it reports"

    def report_uploads(self, reports):
        return np.stack([rep[0] for rep in reports]) if reports else np.empty((0, 0))

    def with_uploads(self, reports, uploads):
        return [(np.asarray(u, dtype=rep[0].dtype), rep[1]) for rep, u in zip(reports, uploads)]
    requires = (MINIBATCH_LOSS, NETWORK)
    client_vectors = 2
    state_class = AspireState
    constraints = {
        "lr": [POSITIVE], "alpha_w_factor": [None, POSITIVE], "Gamma": [None, NONNEGATIVE],
        "prior": [PRIOR_CONSTRAINT], "ptilde_scale": [NONNEGATIVE],
        "uncertainty_set": [Options(*UNCERTAINTY_SETS)], "set_params": [None, Anything("the set's parameters")],
        "S": [None, POSITIVE_INT], "ease": [Boolean], "local_steps": [POSITIVE_INT], "adp": [None, Anything("{s, beta1, beta_ema, rule}")],
        "kappa1_times_alpha_w": [POSITIVE], "eta_h": [NONNEGATIVE], "rho1": [POSITIVE], "rho2": [POSITIVE],
        "c_min": [POSITIVE], "alpha1": [POSITIVE], "alpha2": [POSITIVE], "alpha3": [POSITIVE],
        "alpha4": [POSITIVE], "lr_after_T1": [POSITIVE], "T1": [None, POSITIVE_INT],
        "T1_fraction": [Interval(Real, 0, 1, closed="neither")],
        "k": [None, POSITIVE_INT], "B": [POSITIVE_INT], "B_loss": [POSITIVE_INT], "viol_tol": [NONNEGATIVE],
    }

    ADP_DEFAULTS = {"s": 1, "beta1": 1.5, "beta_ema": 0.5, "rule": "text"}

    def __post_init__(self):
        super().__post_init__()
        if self.adp is not None:
            unknown = set(self.adp) - set(self.ADP_DEFAULTS)
            if unknown:
                raise ValueError(f"aspire: unknown adp keys {sorted(unknown)}; allowed {sorted(self.ADP_DEFAULTS)}")
            adp = {**self.ADP_DEFAULTS, **self.adp}
            if adp["rule"] not in ("text", "printed") or not (isinstance(adp["s"], int) and adp["s"] >= 1) \
                    or not adp["beta1"] >= 0 or not 0 < adp["beta_ema"] <= 1:
                raise ValueError(f"aspire: adp={self.adp!r} needs s >= 1 (int), beta1 >= 0, 0 < beta_ema <= 1, "
                                 "rule 'text' or 'printed'")

    # ---- derived constants ------------------------------------------------------------
    def _alpha_w(self, m: int) -> float:
        return (m if self.alpha_w_factor is None else self.alpha_w_factor) * self.lr

    def _constants(self, m: int):
        alpha_w = self._alpha_w(m)
        kappa1 = self.kappa1_times_alpha_w / alpha_w
        return alpha_w, kappa1, 1.0 / (2 * m * kappa1)

    def _S(self, m: int) -> int:
        return m if self.S is None else min(self.S, m)

    def _make_set(self, q: np.ndarray, m: int):
        if self.uncertainty_set == "cdnorm":
            params = {"q": q, "ptilde": self.ptilde_scale * q, "Gamma": m if self.Gamma is None else self.Gamma,
                      **(self.set_params or {})}
        else:
            params = dict(self.set_params or {})
            if "q" in UNCERTAINTY_SETS[self.uncertainty_set].__dataclass_fields__:
                params.setdefault("q", q)
        return make_uncertainty_set(self.uncertainty_set, **params)

    # ---- the rule ------------------------------------------------------------------------
    def init(self, problem, ctx) -> AspireState:
        m = problem.m
        if self.S is not None and self.S > m:
            raise ValueError(f"aspire: S={self.S} active workers but the problem has {m} workers; use S <= {m}")
        q = resolve_prior(self.prior, m, "aspire")
        w0 = problem.init_params(ctx.rng("init"))
        W = np.tile(w0, (m, 1))
        F = np.array([report(problem, j, problem.batch_loss(w0, random_batch(problem, ctx.rng("loss_batch", j), j,
                                                                             self.B_loss)))
                      for j in range(m)])
        T1, T1_time = self._cutoff(ctx)
        planes = q[None, :].copy()                       # A^0 = {q - pbar 1} (AMBIG-12)
        state = AspireState(w=w0.copy(), W=W, phi=np.zeros_like(W), sum_W=W.sum(axis=0, dtype=np.float64),
                            sum_phi=np.zeros(problem.dim), F=F, planes=planes, lam=np.ones(1),
                            lam_prev=np.ones(1), pi=q.copy(), q=q, uset=self._make_set(q, m),
                            T1=T1, T1_time=T1_time, k=self.k or m,
                            delay_est=np.full(m, np.nan), S_t=self._S(m))
        return state

    def _cutoff(self, ctx) -> tuple[int, float | None]:
        """(T1, or its cap while the clock decides it; the virtual time that fixes it, or None)."""
        budget = getattr(ctx, "time_budget", None)
        if self.T1 is not None:
            if budget is not None:
                raise ValueError(f"aspire: T1={self.T1} with a time budget ({budget:g} s): the iterations the budget "
                                 "allows are only known on the virtual clock; give T1_fraction instead")
            if self.T1 >= ctx.max_rounds:
                raise ValueError(f"aspire: T1={self.T1} is not inside the run (max_rounds={ctx.max_rounds}); "
                                 f"use T1 < {ctx.max_rounds} or T1_fraction")
            return int(self.T1), None
        cap = int(self.T1_fraction * ctx.max_rounds)
        return cap, (None if budget is None else self.T1_fraction * float(budget))

    def worker_compute(self, state, problem, ctx, workers, t: int) -> list:
        alpha_w, kappa1, _ = self._constants(problem.m)
        sgd = SGD(alpha_w if t < state.T1 else self.lr_after_T1 * alpha_w, fused=False)     # a_w(t~)
        z = state.w
        reports = []
        grad = np.empty_like(z)
        dropout = problem.model.has_dropout
        T = z.dtype.type
        k1, a1 = T(kappa1), T(self.alpha1)
        for j in np.asarray(workers, dtype=np.int64):
            j = int(j)
            w = state.W[j].copy()
            pi_j, phi_j = T(state.pi[j]), state.phi[j]

            def gradient(w, g):
                # (11): grad_w Ltilde = pi_j grad f_j - phi_j - kappa_1 (z - w_j), in the order of its terms
                aspire_step.lagrangian_gradient(g, phi_j, z, w, pi_j, k1)

            rng = ctx.rng("minibatch", t, j)          # the job's minibatches, then its loss batch
            local_sgd(problem, w, (random_batch(problem, rng, j, self.B) for _ in range(self.local_steps)), sgd, grad,
                      dropout=(ctx.rng("dropout", t, j, s) for s in count()) if dropout else repeat(None),
                      local_gradient=gradient, after_step=lambda w, steps: aspire_step.clip_inplace(w, a1))
            reports.append((w, report(problem, j, problem.batch_loss(w, random_batch(problem, rng, j, self.B_loss)))))
        return reports

    def master_update(self, state, problem, ctx, workers, reports, t: int, info: dict) -> None:
        m = problem.m
        _, kappa1, eta_z = self._constants(m)
        for j, (w, F) in zip(workers, reports):                        # M0
            aspire_step.absorb_report(state.sum_W, state.W[j], w)
            state.F[j] = F
        clock = info.get("clock")
        if state.T1_time is not None and t < state.T1 and clock is not None and clock >= state.T1_time:
            state.T1, state.T1_time = t + 1, None                     # the clock fixes T1 (docstring)
        c1 = max(1.0 / (self.rho1 * (t + 1) ** (1 / 6)), self.c_min)
        c2 = max(1.0 / (self.rho2 * (t + 1) ** (1 / 6)), self.c_min)
        T = state.w.dtype.type
        z = np.empty_like(state.w)                                     # M1, (12)
        aspire_step.consensus_step(state.w, state.sum_phi, state.sum_W, T(m), kappa1, eta_z, self.alpha1, z)
        state.w = z
        state.h = float(np.clip(state.h - self.eta_h * (1.0 - state.lam.sum()), 0.0, self.alpha2))  # M2, (13)
        state.lam_prev = state.lam
        vals = state.planes @ state.F
        state.lam = np.clip(state.lam + self.rho1 * (vals - state.h - c1 * state.lam), 0.0, self.alpha3)  # M3, (14)
        for j in workers:                                              # M4, (15)
            aspire_step.dual_step(state.phi[j], state.sum_phi, state.w, state.W[j], T(self.rho2), T(c2),
                                  T(self.alpha4))
        state.cp_solved = (t + 1) % state.k == 0 and t < state.T1
        if state.cp_solved:                                            # M5: EASE
            self._ease(state)
        state.pi = state.lam @ state.planes
        if self.adp is not None:
            self._update_delays(state, workers, info)

    def _ease(self, state) -> None:
        vals = state.planes @ state.F
        p = state.uset.worst_case(state.F)
        best = float(vals.max())
        n_old = len(state.lam)
        if float(p @ state.F) > best + self.viol_tol * max(1.0, abs(best)):       # (18) violated: (19)
            state.planes = np.vstack([state.planes, p])
            state.lam = np.append(state.lam, 0.0)
            state.lam_prev = np.append(state.lam_prev, 0.0)
            state.planes_added += 1
        if self.ease:                                                  # (20), exact zeros (AMBIG-25)
            drop = np.zeros(len(state.lam), dtype=bool)
            drop[:n_old] = (state.lam[:n_old] == 0.0) & (state.lam_prev[:n_old] == 0.0)
            if drop.all():                                             # keep one plane (AMBIG-13)
                drop[int(np.argmax(state.planes @ state.F))] = False
            if drop.any():
                keep = ~drop
                state.planes, state.lam, state.lam_prev = state.planes[keep], state.lam[keep], state.lam_prev[keep]
                state.planes_removed += int(drop.sum())

    # ---- ASPIRE-ADP (Eq. 35) ---------------------------------------------------------------
    def _update_delays(self, state, workers, info) -> None:
        beta = {**self.ADP_DEFAULTS, **self.adp}["beta_ema"]
        for j, rtt in zip(workers, info["rtt"]):
            old = state.delay_est[j]
            state.delay_est[j] = rtt if np.isnan(old) else (1 - beta) * old + beta * rtt

    def active_count(self, state, problem, ctx, t: int) -> int:
        m = problem.m
        if self.adp is None:
            state.S_t = self._S(m)
            return state.S_t
        adp = {**self.ADP_DEFAULTS, **self.adp}
        s = min(int(adp["s"]), m)
        est = state.delay_est
        if np.isnan(est).any():
            state.S_t = s
        else:
            similar = float(est.max() - est.min()) <= adp["beta1"]
            if adp["rule"] == "text":          # similar delays: synchronous is better (text of Section 8)
                state.S_t = m if similar else s
            else:                              # Eq. (35) as printed
                state.S_t = s if similar else m
        return state.S_t

    def master_load(self, state) -> tuple[int, bool]:
        return len(state.lam), bool(state.cp_solved)

    RECORDS = ("n_planes", "h", "sum_lambda", "pi_min", "pi_max", "pi_last", "planes_added", "planes_removed",
               "active_workers", "T1", "delay_est_<j>")

    def round_metrics(self, state, problem, ctx) -> dict:
        out = {"n_planes": len(state.lam), "h": state.h, "sum_lambda": float(state.lam.sum()),
               "pi_min": float(state.pi.min()), "pi_max": float(state.pi.max()), "pi_last": float(state.pi[-1]),
               "planes_added": state.planes_added, "planes_removed": state.planes_removed,
               "active_workers": state.S_t,
               "T1": float("nan") if state.T1_time is not None else float(state.T1)}
        if self.adp is not None:
            out.update({f"delay_est_{j}": float(v) for j, v in enumerate(state.delay_est)})
        return out


# ---- the paper's named variants (spec §3.2): the same rule with other defaults --------------------
@dataclass
class AspireCP(Aspire):
    """ASPIRE-CP: planes are only added (no removal step (20))."""

    ease: bool = False
    name = "aspire_cp"


@dataclass
class AspireSync(Aspire):
    """ASPIRE-EASE(-): the master waits for all N workers every iteration."""

    S: int | None = None
    name = "aspire_sync"


@dataclass
class AspirePer(Aspire):
    """ASPIRE-EASE_per: 5 projected gradient steps of (11) per job ("periodic communication", AMBIG-10)."""

    local_steps: int = 5
    name = "aspire_per"


@dataclass
class MixEven(Aspire):
    """Mix_Even: ASPIRE with even weights, i.e. Gamma = 0 around the uniform prior (AMBIG-11)."""

    Gamma: float | None = 0.0
    name = "mix_even"


@dataclass
class AspireADP(Aspire):
    """ASPIRE-ADP (Section 8, Eq. 35): S_t chosen from the master's delay estimates."""

    adp: dict | None = None
    name = "aspire_adp"

    def __post_init__(self):
        if self.adp is None:
            self.adp = {}
        super().__post_init__()
