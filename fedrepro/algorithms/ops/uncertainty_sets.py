"""The master's cutting-plane subproblem over an uncertainty set of mixture weights (aspire, spec 002;
choices: FIDELITY AS-1 to AS-8).

Every set P answers one question, ``worst_case(f)``: the maximiser of

    max_p  sum_j (p_j - pbar) f_j   s.t.  p in P            (Eq. 17 / 22 / 24 / 26 / 28 / 30)

(pbar does not move the argmax since 1^T p = 1, so it is left out). Every set lies in the simplex:
p >= 0 is added where the printed set omits it (spec 7, AMBIG-3 and AMBIG-20).

Sets (spec 2.7, 3.3):

- :class:`CDNorm` (Eq. 16): |p_j - q_j| <= pt_j, sum_j |p_j - q_j| / pt_j <= Gamma, 1^T p = 1, p >= 0.
  ``solver="sort"`` is the exact O(N log N) two-pointer for equal pt (spec 3.3.1 path a),
  ``"parametric"`` the exact parametric Lagrangian for any pt (path b), ``"auto"`` picks path a when all
  positive pt_j are equal, else b; ``"linprog"`` solves the LP with HiGHS (a cross-check). The paper's
  "merge sort of pt_j f_j" is exact only for equal pt (AMBIG-2).
- :class:`Box` (Eq. 21): p_low <= p <= p_upp, 1^T p = 1; exact fill in descending f.
- :class:`Ellipsoid` (Eq. 23): (p - q)^T Q^{-1} (p - q) <= beta, 1^T p = 1 (+ p >= 0 unless
  ``nonnegative=False``); closed form, and an exact active-set method on the faces {p_Z = 0} when the
  closed form leaves the simplex (its result is KKT-checked; SLSQP is the fallback).
- :class:`Polyhedron` (Eq. 25): D p <= c, 1^T p = 1, p >= 0; HiGHS dual simplex.
- :class:`KL` (Eq. 27): sum_j p_j log(p_j / q_j) <= beta; p ~ q exp(f / alpha), bisection on log alpha.
- :class:`Wasserstein1` (Eq. 29/30): W1(p, q) <= beta with ground cost |x_i - x_j| (x_i = i): the LP (30)
  is a multiple-choice knapsack LP (each source j moves its mass q_j along the upper concave hull of
  its options (cost |x_i - x_j|, gain f_i)), solved exactly by one global greedy over hull segments.

:func:`subproblem_complexity` and :func:`overall_complexity` evaluate the arithmetic-complexity bounds
of Table 1 and Table 2 (Fig. 1) with natural logarithms.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from fedrepro.core.params import NONNEGATIVE, Anything, Boolean, Interval, Options, Real, validate_params

__all__ = ["UncertaintySet", "CDNorm", "Box", "Ellipsoid", "Polyhedron", "KL", "Wasserstein1",
           "UNCERTAINTY_SETS", "make_uncertainty_set", "cdnorm_worst_case", "box_worst_case",
           "ellipsoid_worst_case", "polyhedron_worst_case", "kl_worst_case", "wasserstein1_worst_case",
           "subproblem_complexity", "overall_complexity", "COMPLEXITY_SETS"]


# ---- input checks -----------------------------------------------------------------------------

def _vector(name: str, x, n: int | None = None) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim != 1 or x.size == 0 or (n is not None and x.size != n):
        want = f"length {n}" if n is not None else "a non-empty vector"
        raise ValueError(f"{name} must be {want}, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite, got {x}")
    return x


def _prior(q, owner: str) -> np.ndarray:
    q = _vector(f"{owner}: prior q", q)
    if np.any(q < 0) or abs(q.sum() - 1.0) > 1e-9:
        raise ValueError(f"{owner}: the prior q must be a probability vector (q >= 0, sum 1), "
                         f"got sum {q.sum():.12g}, min {q.min():.3g}; normalise it")
    return q


def _losses(f, n: int, owner: str) -> np.ndarray:
    return _vector(f"{owner}: loss vector f", f, n)


# HiGHS's default feasibility tolerance (1e-7) lets a budget row be violated by ~1e-6 on these
# badly scaled LPs; the set's feasibility is wanted to 1e-9
_HIGHS_TIGHT = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


# ---- CD-norm (Eq. 16/17, spec 3.3.1) ----------------------------------------------------------

def _cd_capacities(q, pt):
    """Increase capacity u_j = min(pt_j, 1 - q_j), decrease capacity l_j = min(pt_j, q_j) (p >= 0)."""
    return np.minimum(pt, 1.0 - q).clip(0.0), np.minimum(pt, q).clip(0.0)


def _cd_sort(f, q, pt, Gamma):
    """Path (a): equal positive pt_j = pi. The budget is total moved mass <= Gamma pi / 2; increases go
    to the largest f, decreases come from the smallest f (exchange argument)."""
    u, l = _cd_capacities(q, pt)
    pi = pt[pt > 0][0]
    order = np.argsort(-f, kind="stable")
    ru, rl = u.copy(), l.copy()
    mass = Gamma * pi / 2.0
    delta = np.zeros_like(f)
    a, b = 0, f.size - 1
    while a < b and mass > 0:
        i, k = order[a], order[b]
        if ru[i] <= 0:
            a += 1
            continue
        if rl[k] <= 0:
            b -= 1
            continue
        if f[i] <= f[k]:
            break
        s = min(ru[i], rl[k], mass)
        delta[i] += s
        delta[k] -= s
        ru[i] -= s
        rl[k] -= s
        mass -= s
    return q + delta


def _cd_greedy(f, u, l, w, theta):
    """Maximiser of the budget Lagrangian sum_j f_j d_j - theta sum_j w_j |d_j| (w = 1/pt) over the
    bounds and sum d = 0: move mass from the smallest e-_k = f_k + theta w_k to the largest
    e+_i = f_i - theta w_i while e+ > e- (no worker is both giver and receiver)."""
    ep, em = f - theta * w, f + theta * w
    up, dn = np.argsort(-ep, kind="stable"), np.argsort(em, kind="stable")
    ru, rl = u.copy(), l.copy()
    delta = np.zeros_like(f)
    a = b = 0
    n = f.size
    while a < n and b < n:
        i, k = up[a], dn[b]
        if ru[i] <= 0:
            a += 1
            continue
        if rl[k] <= 0:
            b += 1
            continue
        if ep[i] <= em[k]:
            break
        s = min(ru[i], rl[k])
        delta[i] += s
        delta[k] -= s
        ru[i] -= s
        rl[k] -= s
    return delta


def _cd_parametric(f, q, pt, Gamma):
    """Path (b), any pt: the greedy of the budget Lagrangian is constant between the breakpoints where
    two of the e+/e- values swap order; the smallest breakpoint interval whose greedy meets the budget
    and its left neighbour are both Lagrangian-optimal at the breakpoint between them, so the convex
    combination that makes the budget tight is LP-optimal."""
    act = pt > 0                                   # pt_j = 0: p_j = q_j, out of the budget
    p = q.copy()
    if not act.any():
        return p
    fa, qa, pa = f[act], q[act], pt[act]
    u, l = _cd_capacities(qa, pa)
    w = 1.0 / pa

    def budget(d):
        return float(np.abs(d) @ w)

    d0 = _cd_greedy(fa, u, l, w, 0.0)
    if budget(d0) <= Gamma:
        p[act] = qa + d0
        return p
    df = fa[:, None] - fa[None, :]
    ws, wd = w[:, None] + w[None, :], w[:, None] - w[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        cand = np.concatenate([(df / ws).ravel(), (df / wd).ravel(), (-df / wd).ravel()])
    cand = cand[np.isfinite(cand) & (cand > 0)]
    theta = np.unique(np.concatenate([[0.0], cand]))
    theta = np.append(theta, 2.0 * theta[-1] + 1.0)            # sentinel: nothing moves beyond it
    mids = np.concatenate([[0.0], 0.5 * (theta[:-1] + theta[1:])])
    lo, hi = 0, mids.size - 1                                  # B(mids[lo]) > Gamma >= B(mids[hi])
    cache = {0: d0}
    while hi - lo > 1:
        mid = (lo + hi) // 2
        cache[mid] = _cd_greedy(fa, u, l, w, mids[mid])
        if budget(cache[mid]) <= Gamma:
            hi = mid
        else:
            lo = mid
    dL = cache[lo]
    dR = cache[hi] if hi in cache else _cd_greedy(fa, u, l, w, mids[hi])
    BL, BR = budget(dL), budget(dR)
    alpha = (Gamma - BR) / (BL - BR)
    p[act] = qa + alpha * dL + (1.0 - alpha) * dR
    return p


def _cd_linprog(f, q, pt, Gamma):
    """The LP in (p, s) with s_j >= |p_j - q_j| / pt_j (pt_j = 0: p_j fixed at q_j), HiGHS."""
    from scipy.optimize import linprog
    n = f.size
    act = pt > 0
    ptc = np.where(act, pt, 1.0)
    eye = np.eye(n)
    A_ub = np.block([[eye, -np.diag(ptc)], [-eye, -np.diag(ptc)], [np.zeros((1, n)), act[None, :].astype(float)]])
    b_ub = np.concatenate([q, -q, [Gamma]])
    A_eq = np.concatenate([np.ones(n), np.zeros(n)])[None, :]
    bounds = [(max(0.0, q[j] - pt[j]), min(1.0, q[j] + pt[j])) for j in range(n)] + [(0.0, None)] * n
    res = linprog(np.concatenate([-f, np.zeros(n)]), A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=[1.0],
                  bounds=bounds, method="highs", options=_HIGHS_TIGHT)
    if res.status != 0:
        raise RuntimeError(f"CD-norm LP: HiGHS failed ({res.message})")
    return res.x[:n]


CD_SOLVERS = ("auto", "sort", "parametric", "linprog")


def cdnorm_worst_case(f, q, ptilde, Gamma, solver: str = "auto") -> np.ndarray:
    """argmax_p f.p over the CD-norm set (Eq. 16 with p >= 0); see :class:`CDNorm`."""
    return CDNorm(q=q, ptilde=ptilde, Gamma=Gamma, solver=solver).worst_case(f)


# ---- the other sets ---------------------------------------------------------------------------

def box_worst_case(f, p_low, p_upp) -> np.ndarray:
    return Box(p_low=p_low, p_upp=p_upp).worst_case(f)


def _ellipsoid_face(f, q, Q, beta, Z):
    """max f.p s.t. (p-q)^T Q^{-1} (p-q) <= beta, 1^T p = 1, p_Z = 0 in closed form. With d = p - q and
    A d = r (rows 1^T and e_j, j in Z): d0 = Q A^T y0 (minimum-norm solution, M = A Q A^T, M y0 = r)
    plus sqrt(beta - d0^T Q^{-1} d0) Q g / sqrt(g^T Q g), g = f - A^T y1 (M y1 = A Q f). Returns
    (p, multipliers of p_Z >= 0) or None when the face misses the ellipsoid."""
    n = f.size
    A = np.zeros((1 + len(Z), n))
    A[0] = 1.0
    A[np.arange(1, 1 + len(Z)), Z] = 1.0
    r = np.zeros(1 + len(Z))
    r[1:] = -q[Z]
    AQ = A @ Q
    M = AQ @ A.T
    y0 = np.linalg.solve(M, r)
    d0 = AQ.T @ y0
    rem = beta - float(y0 @ r)                 # d0^T Q^{-1} d0 = y0^T M y0 = y0^T r
    if rem < -1e-13 * max(1.0, beta):
        return None
    rem = max(rem, 0.0)
    y1 = np.linalg.solve(M, AQ @ f)
    g = f - A.T @ y1
    Qg = Q @ g
    gQg = float(g @ Qg)
    flat = len(Z) + 1 >= n or gQg <= 1e-24 * max(float(f @ Q @ f), 1e-300)   # f is constant on the face
    if flat or rem == 0.0:
        if not flat:                            # the face touches the ellipsoid in one point
            return None
        return q + d0, -y1[1:]
    s = math.sqrt(rem)
    two_theta = math.sqrt(gQg) / s              # stationarity: f + mu - nu 1 = 2 theta Q^{-1} d
    y = y1 - two_theta * y0
    return q + d0 + s * Qg / math.sqrt(gQg), -y[1:]


def _ellipsoid_slsqp(f, q, Q, beta):
    from scipy.optimize import minimize
    Qi = np.linalg.inv(Q)
    cons = [{"type": "eq", "fun": lambda p: p.sum() - 1.0, "jac": lambda p: np.ones_like(p)},
            {"type": "ineq", "fun": lambda p: beta - (p - q) @ Qi @ (p - q), "jac": lambda p: -2.0 * Qi @ (p - q)}]
    res = minimize(lambda p: -f @ p, q, jac=lambda p: -f, constraints=cons, bounds=[(0, None)] * f.size,
                   method="SLSQP", options={"ftol": 1e-15, "maxiter": 1000})
    return res.x


def ellipsoid_worst_case(f, q, Q, beta, nonnegative: bool = True, return_method: bool = False):
    """argmax_p f.p over the ellipsoid set; ``return_method`` also returns how it was solved:
    ``"closed_form"``, ``"active_set"`` (exact, KKT-checked) or ``"slsqp"`` (fallback)."""
    s = Ellipsoid(q=q, Q=Q, beta=beta, nonnegative=nonnegative)
    p, how = s._solve(_losses(f, s.q.size, "ellipsoid"))
    return (p, how) if return_method else p


def polyhedron_worst_case(f, D, c) -> np.ndarray:
    return Polyhedron(D=D, c=c).worst_case(f)


def kl_worst_case(f, q, beta) -> np.ndarray:
    return KL(q=q, beta=beta).worst_case(f)


def wasserstein1_worst_case(f, q, beta, support=None) -> np.ndarray:
    return Wasserstein1(q=q, beta=beta, support=support).worst_case(f)


# ---- the set objects --------------------------------------------------------------------------

@dataclass
class UncertaintySet:
    """Base class: a dataclass whose fields are the set's parameters, checked on construction
    against ``constraints`` (:mod:`fedrepro.core.params`); ``worst_case(f)`` solves the subproblem."""

    name = "base"
    constraints = {}

    def __post_init__(self):
        validate_params(f"uncertainty set {self.name!r}", self.params(), self.constraints)
        self._check()

    def params(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if not k.startswith("_")}

    def _check(self) -> None:
        """Array checks (shapes, signs, non-emptiness) with messages naming the fix."""

    def worst_case(self, f) -> np.ndarray:
        raise NotImplementedError

    def complexity(self, n: int, eps_prime: float = 1e-3) -> float:
        """Table 1 bound for this set with N = n workers (natural logs)."""
        return float(subproblem_complexity(self.name, n, eps_prime))


@dataclass
class CDNorm(UncertaintySet):
    """Constrained D-norm set (Eq. 16): q prior, ptilde >= 0 per-worker bounds (pt_j = 0 fixes
    p_j = q_j and drops j from the budget), Gamma >= 0 budget."""

    q: np.ndarray = None
    ptilde: np.ndarray = None
    Gamma: float = 1.0
    solver: str = "auto"
    name = "cdnorm"
    constraints = {"q": [Anything("a probability vector")], "ptilde": [Anything("a non-negative vector")],
                   "Gamma": [NONNEGATIVE], "solver": [Options(*CD_SOLVERS)]}

    def _check(self):
        self.q = _prior(self.q, "cdnorm")
        self.ptilde = _vector("cdnorm: ptilde", self.ptilde, self.q.size)
        if np.any(self.ptilde < 0):
            raise ValueError(f"cdnorm: ptilde must be >= 0 (the bounds |p_j - q_j| <= ptilde_j), got {self.ptilde}")
        self.Gamma = float(self.Gamma)

    def equal_bounds(self) -> bool:
        pos = self.ptilde[self.ptilde > 0]
        return pos.size == 0 or bool(np.all(pos == pos[0]))

    def worst_case(self, f):
        f = _losses(f, self.q.size, "cdnorm")
        q, pt, G = self.q, self.ptilde, self.Gamma
        if G == 0 or not np.any(pt > 0):
            return q.copy()
        solver = self.solver
        if solver == "auto":
            solver = "sort" if self.equal_bounds() else "parametric"
        if solver == "sort":
            if not self.equal_bounds():
                raise ValueError("cdnorm: solver='sort' (spec 3.3.1 path a) is exact only for equal positive "
                                 "ptilde; use solver='parametric' or 'auto'")
            return _cd_sort(f, q, pt, G)
        if solver == "parametric":
            return _cd_parametric(f, q, pt, G)
        return _cd_linprog(f, q, pt, G)

    def contains(self, p, tol: float = 1e-9) -> bool:
        d = np.asarray(p) - self.q
        act = self.ptilde > 0
        return bool(abs(np.sum(p) - 1) <= tol and np.all(np.asarray(p) >= -tol)
                    and np.all(np.abs(d) <= self.ptilde + tol)
                    and np.sum(np.abs(d[act]) / self.ptilde[act]) <= self.Gamma + tol)


@dataclass
class Box(UncertaintySet):
    """Box set (Eq. 21): 0 <= p_low <= p <= p_upp, 1^T p = 1 (needs sum p_low <= 1 <= sum p_upp)."""

    p_low: np.ndarray = None
    p_upp: np.ndarray = None
    name = "box"
    constraints = {"p_low": [Anything("a non-negative vector")], "p_upp": [Anything("a vector >= p_low")]}

    def _check(self):
        self.p_low = _vector("box: p_low", self.p_low)
        self.p_upp = _vector("box: p_upp", self.p_upp, self.p_low.size)
        if np.any(self.p_low < 0) or np.any(self.p_upp < self.p_low):
            raise ValueError("box: need 0 <= p_low <= p_upp elementwise")
        if not self.p_low.sum() <= 1.0 + 1e-12 <= self.p_upp.sum() + 2e-12:
            raise ValueError(f"box: the set is empty: need sum(p_low) = {self.p_low.sum():.6g} <= 1 <= "
                             f"sum(p_upp) = {self.p_upp.sum():.6g}; widen the bounds")

    def worst_case(self, f):
        f = _losses(f, self.p_low.size, "box")
        p = self.p_low.copy()
        rest = 1.0 - p.sum()
        for j in np.argsort(-f, kind="stable"):
            if rest <= 0:
                break
            s = min(self.p_upp[j] - self.p_low[j], rest)
            p[j] += s
            rest -= s
        return p


@dataclass
class Ellipsoid(UncertaintySet):
    """Ellipsoid set (Eq. 23): (p - q)^T Q^{-1} (p - q) <= beta, 1^T p = 1, and p >= 0 unless
    ``nonnegative=False`` (the printed set; spec AMBIG-20). Q symmetric positive definite."""

    q: np.ndarray = None
    Q: np.ndarray = None
    beta: float = 0.1
    nonnegative: bool = True
    name = "ellipsoid"
    constraints = {"q": [Anything("a probability vector")], "Q": [Anything("a positive definite matrix")],
                   "beta": [NONNEGATIVE], "nonnegative": [Boolean]}

    def _check(self):
        self.q = _prior(self.q, "ellipsoid")
        n = self.q.size
        self.Q = np.asarray(self.Q, dtype=float)
        if self.Q.shape != (n, n) or not np.allclose(self.Q, self.Q.T):
            raise ValueError(f"ellipsoid: Q must be a symmetric ({n}, {n}) matrix, got shape {self.Q.shape}")
        try:
            np.linalg.cholesky(self.Q)
        except np.linalg.LinAlgError:
            raise ValueError("ellipsoid: Q must be positive definite (Cholesky failed)") from None
        self.beta = float(self.beta)

    def _solve(self, f):
        q, Q, beta = self.q, self.Q, self.beta
        p, _ = _ellipsoid_face(f, q, Q, beta, np.zeros(0, dtype=int))
        if not self.nonnegative or np.all(p >= 0):
            return p, "closed_form"
        # active set on the faces p_Z = 0: add the most negative free entry, drop the most negative
        # multiplier; stop at a point satisfying the KKT conditions (exact optimum)
        Z: list[int] = []
        seen = set()
        tol = 1e-12
        for _ in range(4 * f.size + 4):
            key = tuple(sorted(Z))
            if key in seen:
                break
            seen.add(key)
            out = _ellipsoid_face(f, q, Q, beta, np.array(sorted(Z), dtype=int))
            if out is None:
                break
            p, mu = out
            free = np.setdiff1d(np.arange(f.size), Z)
            neg = free[p[free] < -tol]
            scale = max(1.0, float(np.abs(f).max()))
            if neg.size == 0 and (mu.size == 0 or mu.min() >= -tol * scale):
                p = p.copy()
                p[sorted(Z)] = 0.0
                return p, "active_set"
            if neg.size:
                Z.append(int(neg[np.argmin(p[neg])]))
            else:
                Z.remove(sorted(Z)[int(np.argmin(mu))])
        warnings.warn("ellipsoid: the active-set method did not certify an optimum; using SLSQP",
                      RuntimeWarning, stacklevel=3)
        return _ellipsoid_slsqp(f, q, Q, beta), "slsqp"

    def worst_case(self, f):
        return self._solve(_losses(f, self.q.size, "ellipsoid"))[0]


@dataclass
class Polyhedron(UncertaintySet):
    """Polyhedral set (Eq. 25): D p <= c, 1^T p = 1, p >= 0; solved by HiGHS (dual simplex)."""

    D: np.ndarray = None
    c: np.ndarray = None
    name = "polyhedron"
    constraints = {"D": [Anything("an (L_in, N) matrix")], "c": [Anything("a vector of length L_in")]}

    def _check(self):
        self.D = np.asarray(self.D, dtype=float)
        if self.D.ndim != 2 or self.D.size == 0:
            raise ValueError(f"polyhedron: D must be an (L_in, N) matrix, got shape {self.D.shape}")
        self.c = _vector("polyhedron: c", self.c, self.D.shape[0])

    def worst_case(self, f):
        from scipy.optimize import linprog
        f = _losses(f, self.D.shape[1], "polyhedron")
        res = linprog(-f, A_ub=self.D, b_ub=self.c, A_eq=np.ones((1, f.size)), b_eq=[1.0],
                      bounds=[(0, None)] * f.size, method="highs-ds", options=_HIGHS_TIGHT)
        if res.status == 2:
            raise ValueError("polyhedron: the set {D p <= c, 1^T p = 1, p >= 0} is empty; check D and c")
        if res.status != 0:
            raise RuntimeError(f"polyhedron: HiGHS failed ({res.message})")
        return res.x

    def complexity(self, n, eps_prime=1e-3):
        return float(subproblem_complexity("polyhedron", n, eps_prime, m=self.D.shape[0]))


@dataclass
class KL(UncertaintySet):
    """KL-divergence set (Eq. 27): sum_j p_j log(p_j / q_j) <= beta, 1^T p = 1."""

    q: np.ndarray = None
    beta: float = 0.1
    name = "kl"
    constraints = {"q": [Anything("a probability vector")], "beta": [NONNEGATIVE]}

    def _check(self):
        self.q = _prior(self.q, "kl")
        self.beta = float(self.beta)

    @staticmethod
    def _tilt(f, q, alpha):
        """p(alpha) ~ q exp(f / alpha) and KL(p(alpha) || q), stably."""
        z = (f - f.max()) / alpha
        e = q * np.exp(z)
        s = e.sum()
        p = e / s
        return p, float(p @ z - math.log(s))

    def worst_case(self, f):
        q = self.q
        f = _losses(f, q.size, "kl")
        sup = q > 0
        fs, qs = f[sup], q[sup]
        top = fs == fs.max()
        p = np.zeros_like(q)
        kl_max = -math.log(qs[top].sum())          # KL of q restricted to argmax f (alpha -> 0)
        if self.beta == 0 or np.all(top):
            return q.copy()
        if self.beta >= kl_max:
            p[np.flatnonzero(sup)[top]] = qs[top] / qs[top].sum()
            return p
        # KL(p(alpha)||q) decreases from kl_max (alpha -> 0) to 0 (alpha -> inf): bisection on log alpha,
        # keeping the feasible end (KL <= beta)
        spread = float(fs.max() - fs.min())
        lo, hi = math.log(spread) - 5.0, math.log(spread) + 5.0
        while self._tilt(fs, qs, math.exp(lo))[1] <= self.beta:
            lo -= 5.0
        while self._tilt(fs, qs, math.exp(hi))[1] > self.beta:
            hi += 5.0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):
                break
            if self._tilt(fs, qs, math.exp(mid))[1] > self.beta:
                lo = mid
            else:
                hi = mid
        p[sup] = self._tilt(fs, qs, math.exp(hi))[0]
        return p


@dataclass
class Wasserstein1(UncertaintySet):
    """Wasserstein-1 ball (Eq. 29): min_{gamma in Pi(p, q)} sum gamma_ij |x_i - x_j| <= beta, with
    support points x (default x_i = i, the paper's choice)."""

    q: np.ndarray = None
    beta: float = 0.1
    support: np.ndarray = None
    name = "wasserstein1"
    constraints = {"q": [Anything("a probability vector")], "beta": [NONNEGATIVE],
                   "support": [None, Anything("a vector of support points")]}

    def _check(self):
        self.q = _prior(self.q, "wasserstein1")
        n = self.q.size
        self.support = np.arange(n, dtype=float) if self.support is None else \
            _vector("wasserstein1: support", self.support, n)
        self.beta = float(self.beta)

    def transport_plan(self, f) -> np.ndarray:
        """gamma (N x N, gamma[i, j] = mass moved from q_j to p_i) of the worst case."""
        q, x = self.q, self.support
        f = _losses(f, q.size, "wasserstein1")
        n = q.size
        C = np.abs(x[:, None] - x[None, :])
        hulls, segs = {}, []
        for j in range(n):
            if q[j] <= 0:
                continue
            # options (cost C[i, j], gain f_i); upper concave hull from the best zero-cost option,
            # keeping only strictly increasing gain
            order = np.lexsort((-f, C[:, j]))
            pts = []
            for i in order:
                c, g = C[i, j], f[i]
                if pts and g <= pts[-1][1]:
                    continue
                while len(pts) >= 2:
                    (c1, g1), (c2, g2) = pts[-2][:2], pts[-1][:2]
                    if (g2 - g1) * (c - c1) <= (g - g1) * (c2 - c1):     # pts[-1] on or below the chord
                        pts.pop()
                    else:
                        break
                pts.append((c, g, i))
            hulls[j] = pts
            for k in range(1, len(pts)):
                dc, dg = pts[k][0] - pts[k - 1][0], pts[k][1] - pts[k - 1][1]
                segs.append((-dg / dc, j, k, dc * q[j]))
        segs.sort(key=lambda s: (s[0], s[1], s[2]))    # steepest first; per source the hull order
        level = {j: (0, 0.0) for j in hulls}           # (vertex index, fraction towards the next one)
        budget = self.beta
        for _, j, k, cost in segs:
            if budget <= 0:
                break
            if cost <= budget:
                level[j] = (k, 0.0)
                budget -= cost
            else:
                level[j] = (k - 1, budget / cost)
                budget = 0.0
        gamma = np.zeros((n, n))
        for j, pts in hulls.items():
            k, frac = level[j]
            gamma[pts[k][2], j] += q[j] * (1.0 - frac)
            if frac > 0:
                gamma[pts[k + 1][2], j] += q[j] * frac
        return gamma

    def worst_case(self, f):
        return self.transport_plan(f).sum(axis=1)


UNCERTAINTY_SETS = {cls.name: cls for cls in (CDNorm, Box, Ellipsoid, Polyhedron, KL, Wasserstein1)}


def make_uncertainty_set(name: str, **params) -> UncertaintySet:
    """Build a set by name (:data:`UNCERTAINTY_SETS`) with its parameters."""
    if name not in UNCERTAINTY_SETS:
        raise ValueError(f"unknown uncertainty set {name!r}; choose one of {sorted(UNCERTAINTY_SETS)}")
    return UNCERTAINTY_SETS[name](**params)


# ---- arithmetic complexity (Table 1, Table 2, Fig. 1) ---------------------------------------------

COMPLEXITY_SETS = ("box", "ellipsoid", "polyhedron", "kl", "wasserstein1", "cdnorm")
_EPS = Interval(Real, 0, 1, closed="neither")


def subproblem_complexity(name: str, N, eps_prime: float = 1e-3, m=None, k=None):
    """Table 1's arithmetic-complexity bound of the cutting-plane subproblem (natural logs):

    box, cdnorm: n log n, n = N
    ellipsoid:   (m+1)^{1/2} n (n^2 + m + sum_{i<=m} k_i^2) log(1/eps'), n = N, m = 1, k_i = N
    polyhedron:  (m+n)^{3/2} n^2 log(1/eps'), n = N, m = L_in (default N)
    kl:          n^{7/2} |log eps'|, n = N  (AMBIG-18: |.|)
    wasserstein1:(m+n)^{3/2} n^2 log(1/eps'), m = 1, n = N + N^2 (AMBIG-19: as printed)

    ``N`` and ``eps_prime`` may be arrays (broadcast); ``m`` (constraints) and ``k`` (cone size, all
    k_i equal) override the defaults where the set has them."""
    validate_params("subproblem_complexity", {"name": name}, {"name": [Options(*COMPLEXITY_SETS)]})
    N = np.asarray(N, dtype=float)
    eps = np.asarray(eps_prime, dtype=float)
    if np.any(N < 1):
        raise ValueError(f"subproblem_complexity: N must be >= 1, got {N}")
    if np.any(~((eps > 0) & (eps < 1))):
        raise ValueError(f"subproblem_complexity: eps_prime must be in {_EPS}, got {eps_prime}")
    L = np.log(1.0 / eps)
    if name in ("box", "cdnorm"):
        return N * np.log(N) + 0.0 * L
    if name == "ellipsoid":
        m = 1.0 if m is None else np.asarray(m, float)
        k = N if k is None else np.asarray(k, float)
        return np.sqrt(m + 1.0) * N * (N**2 + m + m * k**2) * L
    if name == "polyhedron":
        m = N if m is None else np.asarray(m, float)
        return (m + N) ** 1.5 * N**2 * L
    if name == "kl":
        return N**3.5 * np.abs(np.log(eps))
    n = N + N**2
    m = 1.0 if m is None else np.asarray(m, float)
    return (m + n) ** 1.5 * n**2 * L


def overall_complexity(name: str, N, K1, eps: float, T1: int, k: int, eps_prime: float = 1e-3, m=None):
    """Table 2: O(K_1 / eps^6 + floor(T1 / k) C_set), C_set = :func:`subproblem_complexity`."""
    validate_params("overall_complexity", {"eps": eps, "T1": T1, "k": k},
                    {"eps": [_EPS], "T1": [Interval(Real, 0, None)], "k": [Interval(Real, 1, None)]})
    return np.asarray(K1, float) / eps**6 + math.floor(T1 / k) * subproblem_complexity(name, N, eps_prime, m=m)
