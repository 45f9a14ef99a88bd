"""The master's subproblem over the uncertainty sets (aspire, spec 002 sections 2.7, 3.3): every solver
against an independent scipy solve on random instances (HiGHS for the LPs, the 1-D dual for KL,
SLSQP for the ellipsoid): objective within 1e-8 relative, feasibility within 1e-9."""
import math

import numpy as np
import pytest
from scipy.optimize import linprog, minimize, minimize_scalar

from fedrepro.algorithms.ops.uncertainty_sets import (
    KL, Box, CDNorm, Ellipsoid, Polyhedron, Wasserstein1, ellipsoid_worst_case, make_uncertainty_set,
    overall_complexity, subproblem_complexity)

TIGHT = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
REL = 1e-8
FEAS = 1e-9


def rel_gap(ref, ours):
    return abs(ref - ours) / max(1.0, abs(ref))


def simplex_ok(p):
    assert abs(p.sum() - 1) <= FEAS and p.min() >= -FEAS


# ---- CD-norm ----------------------------------------------------------------------------------

def cd_linprog(f, q, pt, G):
    """Spec 3.3.1's reference LP in x = [p, s] (HiGHS, tight tolerances: the default 1e-7 lets the
    budget row be violated by ~1e-6, which shows up as a 1e-8 objective 'gain')."""
    n = f.size
    eye = np.eye(n)
    A_ub = np.block([[eye, -np.diag(pt)], [-eye, -np.diag(pt)], [np.zeros((1, n)), np.ones((1, n))]])
    res = linprog(np.r_[-f, np.zeros(n)], A_ub=A_ub, b_ub=np.r_[q, -q, G],
                  A_eq=np.r_[np.ones(n), np.zeros(n)][None], b_eq=[1.0],
                  bounds=[(max(0, q[j] - pt[j]), min(1, q[j] + pt[j])) for j in range(n)] + [(0, 1)] * n,
                  method="highs", options=TIGHT)
    assert res.status == 0
    return res.x[:n]


def cd_instance(rng, equal):
    n = int(rng.integers(2, 41))
    f = rng.exponential(size=n)
    tie = rng.random(n) < 0.2
    f[tie] = np.round(f[tie])                        # ties
    c = rng.choice([0.3, 1.0, 10.0, 0.0])
    q = np.full(n, 1.0 / n) if c == 0 else rng.dirichlet(np.full(n, c))
    G = rng.uniform(0, 1.2 * n)
    pt = (np.full(n, rng.choice([0.5 / n, 1.0 / n, 2.0 / n, max(q.min(), 1e-3)])) if equal
          else q * rng.uniform(0.2, 2.0, n) + 1e-3)
    if rng.random() < 0.25:
        pt[rng.random(n) < 0.2] = 0.0                # fixed workers, out of the budget
    return f, q, pt, G


def check_cd(p, q, pt, G):
    simplex_ok(p)
    assert np.all(np.abs(p - q) <= pt + FEAS)
    act = pt > 0
    assert np.sum(np.abs(p - q)[act] / pt[act]) <= G + FEAS


@pytest.mark.parametrize("equal,solver", [(True, "sort"), (True, "parametric"), (False, "parametric"),
                                          (False, "linprog")])
def test_cdnorm_matches_highs(equal, solver):
    rng = np.random.default_rng(11 if equal else 12)
    for _ in range(150):
        f, q, pt, G = cd_instance(rng, equal)
        s = CDNorm(q=q, ptilde=pt, Gamma=G, solver=solver)
        p = s.worst_case(f)
        check_cd(p, q, pt, G)
        assert s.contains(p) and not s.contains(p + 1e-6)
        ref = cd_linprog(f, q, pt, G)
        assert rel_gap(f @ ref, f @ p) <= REL, (f, q, pt, G)


def test_cdnorm_auto_paths_properties_and_sort_bound():
    rng = np.random.default_rng(3)
    f = rng.exponential(size=7)
    q = np.full(7, 1 / 7)
    s = CDNorm(q=q, ptilde=q, Gamma=2.5)
    assert s.equal_bounds()
    np.testing.assert_array_equal(s.worst_case(f), CDNorm(q=q, ptilde=q, Gamma=2.5, solver="sort").worst_case(f))
    # Gamma = 0 gives the prior; uniform q, ptilde = q: saturation at 2 floor(N/2) (AMBIG-23) = 6 for N = 7
    np.testing.assert_array_equal(CDNorm(q=q, ptilde=q, Gamma=0).worst_case(f), q)
    sat = CDNorm(q=q, ptilde=q, Gamma=6).worst_case(f)
    np.testing.assert_allclose(CDNorm(q=q, ptilde=q, Gamma=7).worst_case(f), sat, atol=1e-15)
    assert f @ CDNorm(q=q, ptilde=q, Gamma=5).worst_case(f) < f @ sat - 1e-6
    # ptilde = 0 fixes the worker at its prior and leaves it out of the budget
    pt = q.copy()
    pt[2] = 0
    p = CDNorm(q=q, ptilde=pt, Gamma=3).worst_case(f)
    assert p[2] == q[2]
    # a prior mass of 0 can only increase (p >= 0 added to Eq. 16, AMBIG-3)
    q2 = np.array([0.0, 0.5, 0.5])
    p = CDNorm(q=q2, ptilde=np.full(3, 0.4), Gamma=5).worst_case(np.array([0.0, 1.0, 2.0]))
    assert p.min() >= 0 and abs(p.sum() - 1) < 1e-15
    with pytest.raises(ValueError, match="path a"):
        CDNorm(q=q, ptilde=q * np.linspace(1, 2, 7), Gamma=1, solver="sort").worst_case(f)


def test_paper_sort_of_ptilde_f_ignores_the_simplex():
    """AMBIG-2: the paper's rule (merge sort of pt_j f_j, Bertsimas-Sim D-norm: raise the floor(Gamma)
    largest pt_j f_j by pt_j, the next by the fraction) ignores 1^T p = 1, so it is not a point of (16);
    the parametric path is feasible and matches HiGHS."""
    q = np.array([0.25, 0.25, 0.5])
    pt = np.array([0.05, 0.25, 0.5])
    f = np.array([3.0, 2.0, 1.0])
    G = 1.5
    order = np.argsort(-(pt * f), kind="stable")
    bs = q.copy()
    for rank, j in enumerate(order):
        bs[j] += pt[j] * min(1.0, max(0.0, G - rank))
    assert abs(bs.sum() - 1) > 0.1
    p = CDNorm(q=q, ptilde=pt, Gamma=G).worst_case(f)
    check_cd(p, q, pt, G)
    assert rel_gap(f @ cd_linprog(f, q, pt, G), f @ p) <= REL


def test_cdnorm_bad_input_is_named():
    q = np.full(3, 1 / 3)
    with pytest.raises(ValueError, match="Gamma"):
        CDNorm(q=q, ptilde=q, Gamma=-1)
    with pytest.raises(ValueError, match="probability vector"):
        CDNorm(q=[0.5, 0.6], ptilde=[0.1, 0.1], Gamma=1)
    with pytest.raises(ValueError, match="ptilde"):
        CDNorm(q=q, ptilde=[0.1, -0.1, 0.1], Gamma=1)
    with pytest.raises(ValueError, match="solver"):
        CDNorm(q=q, ptilde=q, Gamma=1, solver="merge")
    with pytest.raises(ValueError, match="loss vector"):
        CDNorm(q=q, ptilde=q, Gamma=1).worst_case([1.0, 2.0])


# ---- box ----------------------------------------------------------------------------------------

def test_box_matches_highs():
    rng = np.random.default_rng(21)
    for _ in range(100):
        n = int(rng.integers(2, 41))
        f = rng.exponential(size=n)
        f[rng.random(n) < 0.2] = 1.0
        lo = rng.dirichlet(np.ones(n)) * rng.uniform(0, 1)
        up = lo + rng.uniform(0, 2.0 / n, n) + (1 - lo.sum()) / n * rng.uniform(0, 1.5)
        if up.sum() < 1:
            up += (1 - up.sum()) / n + 1e-12
        p = Box(p_low=lo, p_upp=up).worst_case(f)
        simplex_ok(p)
        assert np.all(p >= lo - FEAS) and np.all(p <= up + FEAS)
        ref = linprog(-f, A_eq=np.ones((1, n)), b_eq=[1.0], bounds=list(zip(lo, up)), method="highs",
                      options=TIGHT).x
        assert rel_gap(f @ ref, f @ p) <= REL
    with pytest.raises(ValueError, match="empty"):
        Box(p_low=[0.6, 0.6], p_upp=[1, 1])


# ---- ellipsoid --------------------------------------------------------------------------------------

def ellipsoid_slsqp(f, q, Q, beta, nonneg):
    Qi = np.linalg.inv(Q)
    cons = [{"type": "eq", "fun": lambda p: p.sum() - 1, "jac": lambda p: np.ones_like(p)},
            {"type": "ineq", "fun": lambda p: beta - (p - q) @ Qi @ (p - q), "jac": lambda p: -2 * Qi @ (p - q)}]
    best = None
    for start in (q, np.full(q.size, 1 / q.size)):
        res = minimize(lambda p: -f @ p, start, jac=lambda p: -f, constraints=cons, method="SLSQP",
                       bounds=[(0, None)] * q.size if nonneg else None, options={"ftol": 1e-16, "maxiter": 2000})
        if best is None or -res.fun > -best.fun:
            best = res
    # SLSQP ends up to ~1e-7 outside the quadric: pull it radially back towards q (stays in the simplex)
    d = best.x - q
    v = d @ Qi @ d
    return q + d * min(1.0, math.sqrt(beta / v)) if v > 0 else best.x


@pytest.mark.parametrize("big", [False, True])
def test_ellipsoid_matches_slsqp(big):
    """Small beta: the closed form (24) is inside the simplex; large beta: it leaves it and the
    exact active-set method on the faces p_Z = 0 takes over (AMBIG-20)."""
    rng = np.random.default_rng(31 + big)
    methods = set()
    for _ in range(60):
        n = int(rng.integers(2, 13))
        f = rng.exponential(size=n)
        q = rng.dirichlet(np.full(n, 2.0))
        B = rng.normal(size=(n, n))
        Q = (B @ B.T / n + 0.2 * np.eye(n)) * rng.uniform(0.02, 0.2)
        beta = rng.uniform(0.5, 5.0) if big else rng.uniform(0.0, 0.02) * q.min()
        p, how = ellipsoid_worst_case(f, q, Q, beta, return_method=True)
        methods.add(how)
        assert how != "slsqp"
        simplex_ok(p)
        assert (p - q) @ np.linalg.solve(Q, p - q) <= beta * (1 + FEAS) + FEAS
        ref = ellipsoid_slsqp(f, q, Q, beta, nonneg=True)
        # ours is feasible (above), so at most the optimum; SLSQP (made feasible) is the one that can
        # stop short (by up to ~2e-8 on one instance in 800 of a wider stress run)
        assert f @ p >= f @ ref - REL * max(1.0, abs(f @ ref)), (f @ ref, f @ p)
        assert rel_gap(f @ ref, f @ p) <= 1e-6
    assert "active_set" in methods if big else methods == {"closed_form"}


def test_ellipsoid_printed_set_without_nonnegativity():
    rng = np.random.default_rng(5)
    n = 6
    f, q = rng.exponential(size=n), np.full(n, 1 / n)
    Q = np.eye(n)
    beta = 4.0
    p = Ellipsoid(q=q, Q=Q, beta=beta, nonnegative=False).worst_case(f)
    assert p.min() < 0                                         # (23) as printed leaves the simplex
    ref = ellipsoid_slsqp(f, q, Q, beta, nonneg=False)
    assert rel_gap(f @ ref, f @ p) <= REL and abs(p.sum() - 1) <= FEAS
    with pytest.raises(ValueError, match="positive definite"):
        Ellipsoid(q=q, Q=-np.eye(n), beta=1)


# ---- KL -------------------------------------------------------------------------------------------

def kl_dual(f, q, beta):
    """min_{alpha > 0} alpha beta + alpha log sum_j q_j exp(f_j / alpha) (strong duality), on log alpha."""
    fm = f.max()

    def dual(la):
        a = math.exp(la)
        return fm + a * beta + a * math.log(q @ np.exp((f - fm) / a))

    res = minimize_scalar(dual, bounds=(-40, 15), method="bounded", options={"xatol": 1e-12, "maxiter": 2000})
    return min(res.fun, dual(-40.0))


def test_kl_matches_dual():
    rng = np.random.default_rng(41)
    for _ in range(150):
        n = int(rng.integers(2, 41))
        f = rng.exponential(size=n)
        f[rng.random(n) < 0.2] = 1.0
        q = rng.dirichlet(np.full(n, rng.choice([0.3, 1.0, 10.0])))
        q = np.maximum(q, 1e-12)
        q /= q.sum()
        beta = rng.uniform(0, 1.5) ** 2
        p = KL(q=q, beta=beta).worst_case(f)
        simplex_ok(p)
        s = p > 0
        assert np.sum(p[s] * np.log(p[s] / q[s])) <= beta + FEAS
        assert rel_gap(kl_dual(f, q, beta), f @ p) <= REL
    q = np.array([0.2, 0.3, 0.5])
    f = np.array([1.0, 3.0, 3.0])
    np.testing.assert_allclose(KL(q=q, beta=10).worst_case(f), [0, 0.375, 0.625])   # argmax-restricted prior
    np.testing.assert_array_equal(KL(q=q, beta=0).worst_case(f), q)


# ---- Wasserstein-1 ------------------------------------------------------------------------------

def w1_linprog(f, q, beta):
    """LP (30) in (p, gamma): sum_j gamma_ij = p_i, sum_i gamma_ij = q_j, sum gamma_ij |i - j| <= beta."""
    n = f.size
    C = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]).ravel()
    A_eq = np.zeros((2 * n, n + n * n))
    for i in range(n):
        A_eq[i, i] = -1
        A_eq[i, n + i * n:n + (i + 1) * n] = 1           # row sums of gamma = p
    for j in range(n):
        A_eq[n + j, n + j::n] = 1                          # column sums = q
    res = linprog(np.r_[-f, np.zeros(n * n)], A_ub=np.r_[np.zeros(n), C][None], b_ub=[beta], A_eq=A_eq,
                  b_eq=np.r_[np.zeros(n), q], bounds=(0, None), method="highs", options=TIGHT)
    assert res.status == 0
    return res.x[:n]


def test_wasserstein1_matches_highs():
    rng = np.random.default_rng(51)
    for _ in range(100):
        n = int(rng.integers(2, 21))
        f = rng.exponential(size=n)
        f[rng.random(n) < 0.2] = 1.0
        q = rng.dirichlet(np.full(n, rng.choice([0.3, 1.0, 10.0])))
        beta = rng.uniform(0, n / 2)
        s = Wasserstein1(q=q, beta=beta)
        gamma = s.transport_plan(f)
        p = gamma.sum(axis=1)
        simplex_ok(p)
        np.testing.assert_allclose(gamma.sum(axis=0), q, atol=FEAS)
        assert gamma.min() >= 0
        assert np.sum(gamma * np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])) <= beta + FEAS
        ref = w1_linprog(f, q, beta)
        assert rel_gap(f @ ref, f @ p) <= REL


# ---- polyhedron ---------------------------------------------------------------------------------

def test_polyhedron_matches_the_dual_lp():
    """The primal (HiGHS dual simplex) against the LP dual min c.y + nu, D^T y + nu 1 >= f, y >= 0
    solved independently (HiGHS interior point)."""
    rng = np.random.default_rng(61)
    for _ in range(60):
        n = int(rng.integers(2, 21))
        L = int(rng.integers(1, 2 * n))
        f = rng.exponential(size=n)
        D = rng.normal(size=(L, n))
        c = D @ rng.dirichlet(np.ones(n)) + rng.uniform(0, 0.3, L)      # a simplex point is feasible
        p = Polyhedron(D=D, c=c).worst_case(f)
        simplex_ok(p)
        assert np.all(D @ p <= c + FEAS)
        dual = linprog(np.r_[c, 1.0], A_ub=-np.c_[D.T, np.ones(n)], b_ub=-f,
                       bounds=[(0, None)] * L + [(None, None)], method="highs-ipm", options=TIGHT)
        assert dual.status == 0
        assert rel_gap(dual.fun, f @ p) <= REL
    with pytest.raises(ValueError, match="empty"):
        Polyhedron(D=np.ones((1, 3)), c=[0.5]).worst_case(np.ones(3))


# ---- registry and complexity ----------------------------------------------------------------------

def test_registry_and_declared_parameters():
    q = np.full(4, 0.25)
    assert isinstance(make_uncertainty_set("kl", q=q, beta=0.1), KL)
    with pytest.raises(ValueError, match="unknown uncertainty set"):
        make_uncertainty_set("sphere", q=q)
    with pytest.raises(ValueError, match="beta"):
        KL(q=q, beta=-0.1)
    with pytest.raises(TypeError, match="Gamma"):
        make_uncertainty_set("kl", q=q, beta=0.1, Gamma=1)


def test_complexity_formulas_of_table1_and_table2():
    N, e = 10.0, 1e-3
    L = math.log(1 / e)
    assert subproblem_complexity("cdnorm", N, e) == subproblem_complexity("box", N, e) == N * math.log(N)
    assert KL(q=np.full(10, 0.1), beta=0.1).complexity(10, e) == subproblem_complexity("kl", N, e)
    assert Polyhedron(D=np.ones((3, 10)), c=np.ones(3)).complexity(10, e) == subproblem_complexity("polyhedron", N, e, m=3)
    assert math.isclose(subproblem_complexity("ellipsoid", N, e), math.sqrt(2) * N * (N**2 + 1 + N**2) * L)
    assert math.isclose(subproblem_complexity("ellipsoid", N, e, m=10),
                        math.sqrt(11) * N * (N**2 + 10 + 10 * N**2) * L)
    assert math.isclose(subproblem_complexity("polyhedron", N, e), (2 * N) ** 1.5 * N**2 * L)
    assert math.isclose(subproblem_complexity("kl", N, e), N**3.5 * L)
    n = N + N**2
    assert math.isclose(subproblem_complexity("wasserstein1", N, e), (1 + n) ** 1.5 * n**2 * L)
    Ns = np.arange(2, 101)
    curves = {k: subproblem_complexity(k, Ns, e) for k in ("box", "ellipsoid", "polyhedron", "kl", "wasserstein1")}
    assert all(curves["wasserstein1"][-1] > v[-1] for k, v in curves.items() if k != "wasserstein1")
    assert np.all(np.diff(subproblem_complexity("kl", 10, np.logspace(-10, -1, 10))) < 0)
    assert math.isclose(overall_complexity("cdnorm", 15, K1=100.0, eps=0.1, T1=1000, k=10, eps_prime=1e-6),
                        100 / 0.1**6 + 100 * 15 * math.log(15))
    with pytest.raises(ValueError, match="eps_prime"):
        subproblem_complexity("kl", 10, 2.0)
    with pytest.raises(ValueError, match="name"):
        subproblem_complexity("sphere", 10)
