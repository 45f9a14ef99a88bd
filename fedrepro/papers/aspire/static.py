"""Static outputs of aspire (spec 002 §6): Table 1 (uncertainty sets), Table 2 (unified complexity),
Table 5 (workers and categories) and Fig. 1 (complexity formula curves). None of them needs training.

The complexity bounds are :func:`~fedrepro.algorithms.ops.uncertainty_sets.subproblem_complexity` and
:func:`~fedrepro.algorithms.ops.uncertainty_sets.overall_complexity` (natural logs, FIDELITY AS-8);
Table 1 adds the measured solve time of our exact solvers of each set's subproblem.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fedrepro.algorithms.ops.uncertainty_sets import (
    COMPLEXITY_SETS, make_uncertainty_set, overall_complexity, subproblem_complexity)
from fedrepro.figures.base import save_figure, write_table

__all__ = ["SETS", "SetRow", "TABLE1_ROWS", "SCMA_QUICK_PARAMS", "PAPER_TABLE5", "subproblem_instance",
           "constraint_violation", "solve_times", "table1_frame", "table2_frame", "table5_frame",
           "fig1_frame", "fig1", "growth_exponents", "fastest_growing_set", "cheapest_sets",
           "render_table1", "render_table2", "render_table5"]

SETS = COMPLEXITY_SETS          # the paper's row order: box, ellipsoid, polyhedron, kl, wasserstein1, cdnorm


@dataclass(frozen=True)
class SetRow:
    """One row of Table 1 as printed (``complexity`` without the O(.)), with Section 5's
    instantiation of n and m and the solver we use."""

    label: str
    P: str
    formulation: str
    flexibility: str
    complexity: str
    instantiation: str
    solver: str


TABLE1_ROWS = {
    "box": SetRow("Box", "{p : p_j^low ≤ p_j ≤ p_j^upp, 1ᵀp = 1}", "LP¹", "2N", "n log(n)", "n = N",
                  "exact fill in descending f"),
    "ellipsoid": SetRow("Ellipsoid", "{p : (p − q)ᵀ Q⁻¹ (p − q) ≤ β, 1ᵀp = 1}", "SOCP", "1",
                        "(m+1)^{1/2} n (n^2 + m + Σ_{i=1}^m k_i^2) log(1/ε')", "n = N, m = 1, k_1 = N",
                        "closed form (24), exact active set when it leaves the simplex"),
    "polyhedron": SetRow("Polyhedron", "{p : D p ⪯ c, 1ᵀp = 1}", "LP", "L_in × (N+1)",
                         "(m+n)^{3/2} n^2 log(1/ε')", "n = N, m = L_in", "HiGHS dual simplex"),
    "kl": SetRow("KL-Divergence", "{p : Σ_{j=1}^N p_j log(p_j/q_j) ≤ β, 1ᵀp = 1}", "REP", "1",
                 "(n)^{7/2} log(ε')", "n = N", "bisection on the tilt q·exp(f/α)"),
    "wasserstein1": SetRow("Wasserstein-1 Distance",
                           "{p : min_{γ∈Π(p,q)} Σ_{i=1}^N Σ_{j=1}^N γ(x_i, y_j) |x_i − y_j| ≤ β, 1ᵀp = 1}",
                           "LP", "1", "(m+n)^{3/2} n^2 log(1/ε')", "n = N + N^2, m = 1",
                           "exact multiple-choice knapsack greedy"),
    "cdnorm": SetRow("CD-norm", "{p : −p̃_j ≤ p_j − q_j ≤ p̃_j, Σ_{j=1}^N |p_j − q_j|/p̃_j ≤ Γ, 1ᵀp = 1}",
                     "LP¹", "1", "n log(n)", "n = N", "exact two-pointer sort (equal p̃)"),
}

TABLE1_CAPTION = (
    "Table 1 — comparison among uncertainty sets (static, from the paper; complexity columns as printed). "
    "¹ LP solvable by merge sort plus a few arithmetic operations. Flexibility: number of parameters that "
    "trade robustness against performance. The KL bound is printed as log(ε') (negative); Fig. 1 and Table 2's "
    "evaluated column use |log ε'| (spec AMBIG-18). Last columns: median wall time of OUR exact solver of the "
    "subproblem (fedrepro.algorithms.ops.uncertainty_sets) on seeded random instances, every solution "
    "checked feasible (instances: fedrepro.papers.aspire.static.subproblem_instance).")


# ---- Table 1: the measured solve times --------------------------------------------------------

def subproblem_instance(name: str, N: int, rng: np.random.Generator):
    """A seeded instance of set ``name`` with N workers: uniform prior q = 1/N and

    - box: p_low = q / 2, p_upp = 2 q;
    - ellipsoid: Q = I / N, beta = 1 / (2 N^2) (the ball stays inside the simplex: |p_j - q_j| <=
      sqrt(beta / N) = q_j / sqrt(2 N), so the closed form (24) is the answer);
    - polyhedron: L_in = N rows D ~ N(0, 1), c = D q + u, u ~ U(0, 1/N) (q strictly feasible);
    - kl: beta = 0.1;  wasserstein1: beta = 1, support x_i = i;
    - cdnorm: ptilde = q, Gamma = N / 2.

    Returns the set (:func:`make_uncertainty_set`)."""
    q = np.full(N, 1.0 / N)
    if name == "box":
        return make_uncertainty_set("box", p_low=q / 2, p_upp=2 * q)
    if name == "ellipsoid":
        return make_uncertainty_set("ellipsoid", q=q, Q=np.eye(N) / N, beta=1.0 / (2 * N * N))
    if name == "polyhedron":
        D = rng.standard_normal((N, N))
        return make_uncertainty_set("polyhedron", D=D, c=D @ q + rng.uniform(0, 1.0 / N, N))
    if name == "kl":
        return make_uncertainty_set("kl", q=q, beta=0.1)
    if name == "wasserstein1":
        return make_uncertainty_set("wasserstein1", q=q, beta=1.0)
    if name == "cdnorm":
        return make_uncertainty_set("cdnorm", q=q, ptilde=q.copy(), Gamma=N / 2)
    raise ValueError(f"unknown uncertainty set {name!r}; choose one of {SETS}")


def _w1_1d(p, q, x) -> float:
    """W1 between p and q on the real line (support x): integral of |F_p - F_q|."""
    o = np.argsort(x)
    gaps = np.diff(x[o])
    return float(np.abs(np.cumsum(p[o] - q[o]))[:-1] @ gaps)


def _set_violation(s, p) -> float:
    """How far p is outside the set's own constraints (0 when inside)."""
    name = s.name
    if name == "box":
        return float(max((s.p_low - p).max(), (p - s.p_upp).max(), 0.0))
    if name == "ellipsoid":
        d = p - s.q
        return max(float(d @ np.linalg.solve(s.Q, d)) - s.beta, 0.0)
    if name == "polyhedron":
        return float(max((s.D @ p - s.c).max(), 0.0))
    if name == "kl":
        sup = p > 0
        return max(float(p[sup] @ np.log(p[sup] / s.q[sup])) - s.beta, 0.0)
    if name == "wasserstein1":
        return max(_w1_1d(p, s.q, s.support) - s.beta, 0.0)
    if name == "cdnorm":
        d, act = p - s.q, s.ptilde > 0
        return float(max((np.abs(d) - s.ptilde).max(), np.sum(np.abs(d[act]) / s.ptilde[act]) - s.Gamma, 0.0))
    raise ValueError(f"no feasibility check for set {name!r}")


def constraint_violation(s, p) -> float:
    """Largest violation of p in set ``s``: the simplex (1ᵀp = 1, p >= 0) and the set's constraints."""
    p = np.asarray(p, dtype=float)
    return max(abs(p.sum() - 1.0), float(max(-p.min(), 0.0)), _set_violation(s, p))


def solve_times(name: str, N: int, repeats: int = 15, rng=None, tol: float = 1e-8) -> float:
    """Median wall time (ms, time.perf_counter) of ``worst_case(f)`` over ``repeats`` loss vectors
    f ~ Exp(1) on :func:`subproblem_instance`; raises if a solution is infeasible (beyond ``tol``).
    One untimed warm-up call (imports, caches) precedes the timed ones."""
    rng = np.random.default_rng(0) if rng is None else rng
    s = subproblem_instance(name, N, rng)
    s.worst_case(rng.exponential(1.0, N))
    times = []
    for _ in range(repeats):
        f = rng.exponential(1.0, N)
        t0 = time.perf_counter()
        p = s.worst_case(f)
        times.append(time.perf_counter() - t0)
        viol = constraint_violation(s, p)
        if not viol <= tol:
            raise RuntimeError(f"table 1 timing: {name} at N = {N} returned an infeasible p "
                               f"(violation {viol:.3g} > {tol:g}); the time would be of a wrong answer")
    return 1e3 * float(np.median(times))


def _time_column(N: int) -> str:
    return f"time N={N} (ms)"


def table1_frame(N_values=(5, 15, 50), repeats: int = 15, seed: int = 0) -> pd.DataFrame:
    """Table 1 as printed (set, P, formulation, flexibility, complexity) plus Section 5's n, m, our
    solver, and one column per N of the median solve time (ms) of :func:`solve_times`."""
    rng = np.random.default_rng(seed)
    rows = []
    for name in SETS:
        r = TABLE1_ROWS[name]
        row = {"set": name, "uncertainty set": r.label, "P": r.P, "formulation": r.formulation,
               "flexibility": r.flexibility, "complexity": f"O({r.complexity})",
               "n, m (Section 5)": r.instantiation, "our solver": r.solver}
        row.update({_time_column(N): solve_times(name, N, repeats, rng) for N in N_values})
        rows.append(row)
    return pd.DataFrame(rows)


# ---- Table 2 ----------------------------------------------------------------------------------

SCMA_QUICK_PARAMS = 22_023          # the quick 2x128 SC-MA MLP (spec §5; model aspire_quick_mlp_scma)


def table2_frame(P: int = SCMA_QUICK_PARAMS, N: int = 15, eps: float = 0.1, T1: int = 1000, k: int = 10,
                 eps_prime: float = 1e-6) -> pd.DataFrame:
    """Table 2's O(K_1/ε^6 + ⌊T_1/k⌋ C_set) per set, and the bound evaluated for K_1 = P N (the
    gradient projections touch P parameters on each of N workers): both terms and their sum
    (:func:`overall_complexity`; C_set with Fig. 1's defaults, polyhedron L_in = N)."""
    K1 = P * N
    rows = []
    for name in SETS:
        c_set = float(subproblem_complexity(name, N, eps_prime))
        rows.append({"set": name, "uncertainty set": TABLE1_ROWS[name].label,
                     "overall complexity": f"O(K_1/ε^6 + ⌊T_1/k⌋ {TABLE1_ROWS[name].complexity})",
                     "K_1/ε^6": K1 / eps**6, "⌊T_1/k⌋ C_set": math.floor(T1 / k) * c_set,
                     "total": float(overall_complexity(name, N, K1, eps, T1, k, eps_prime))})
    out = pd.DataFrame(rows)
    out.attrs["instance"] = dict(P=P, N=N, K_1=K1, eps=eps, T1=T1, k=k, eps_prime=eps_prime)
    return out


# ---- Table 5 ----------------------------------------------------------------------------------

PAPER_TABLE5 = {"SHL": (6, 8), "Person Activity": (5, 11), "SC-MA": (15, 7), "Fashion-MNIST": (3, 3)}
_REALISED = ("workers", "classes", "n_train", "n_test", "d")
NOT_BUILT = "not built here"


def table5_frame(realised: dict | None = None) -> pd.DataFrame:
    """Table 5's workers / categories per dataset (paper), and the realised workers, classes, sample
    counts and feature dimension d where ``realised`` ({dataset: {"n_train", "n_test", "d",
    "workers", "classes"}}) has the dataset ("not built here" otherwise)."""
    realised = realised or {}
    rows = []
    for ds, (workers, classes) in PAPER_TABLE5.items():
        got = realised.get(ds) or {}
        row = {"dataset": ds, "workers (paper)": workers, "categories (paper)": classes}
        row.update({f"{key} (ours)": got.get(key, NOT_BUILT) for key in _REALISED})
        rows.append(row)
    return pd.DataFrame(rows)


# ---- Fig. 1 -----------------------------------------------------------------------------------

FIG1_N = np.arange(2, 101)
FIG1_EPS = np.logspace(-10, -1, 46)
FIG1_M = (1, 10, 50, 100)
FIG1_PANELS = {"a": "vs N (ε' = 1e-3)", "b": "ellipsoid vs N, m constraints (ε' = 1e-3)",
               "c": "vs ε' (N = 10)", "d": "vs ε' (N = 100)"}


def _rows(panel, name, N, eps, x, m=None):
    c = np.broadcast_to(subproblem_complexity(name, N, eps, m=m), np.shape(x))
    return pd.DataFrame({"panel": panel, "set": name, "m": m, "N": np.broadcast_to(N, np.shape(x)),
                         "eps_prime": np.broadcast_to(eps, np.shape(x)), "x": x, "complexity": c})


def fig1_frame() -> pd.DataFrame:
    """The curves of Fig. 1 (spec aspire/fig1), one row per point: panel, set, m (panel b; else the
    set's default), N, eps_prime, x (N in a/b, eps' in c/d), complexity (Table 1, natural logs)."""
    parts = [_rows("a", s, FIG1_N, 1e-3, FIG1_N) for s in SETS]
    parts += [_rows("b", "ellipsoid", FIG1_N, 1e-3, FIG1_N, m=m) for m in FIG1_M]
    parts += [_rows(p, s, N, FIG1_EPS, FIG1_EPS) for p, N in (("c", 10), ("d", 100)) for s in SETS]
    return pd.concat(parts, ignore_index=True)


STYLE = {"box": ("tab:blue", "-"), "ellipsoid": ("tab:orange", "-"), "polyhedron": ("tab:green", "-"),
         "kl": ("tab:red", "-"), "wasserstein1": ("tab:purple", "-"), "cdnorm": ("k", "--")}


def _panel(ax, sub, panel):
    for (name, m), g in sub.groupby(["set", "m"], sort=False, dropna=False):
        color, ls = STYLE[name]
        label = TABLE1_ROWS[name].label if panel != "b" else f"ellipsoid, m = {int(m)}"
        ax.plot(g["x"], g["complexity"], color=None if panel == "b" else color, ls=ls, lw=1.4, label=label)
    ax.set_yscale("log")
    if panel in "cd":
        ax.set_xscale("log")
    ax.set_xlabel("N (workers)" if panel in "ab" else "ε'")
    ax.set_ylabel("arithmetic complexity")
    ax.set_title(f"({panel}) {FIG1_PANELS[panel]}", fontsize=9)
    ax.grid(alpha=0.3, lw=0.4)
    ax.legend(fontsize=7, loc="best", framealpha=0.9)


def fig1(path, frame: pd.DataFrame | None = None) -> list[Path]:
    """Draw Fig. 1's four panels (log y) from :func:`fig1_frame` and save them with
    :func:`~fedrepro.figures.base.save_figure` as ``path`` .png and .pdf (a suffix on ``path`` is
    dropped); returns the written paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = fig1_frame() if frame is None else frame
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    for ax, panel in zip(axes.ravel(), "abcd"):
        _panel(ax, frame[frame["panel"] == panel], panel)
    fig.suptitle("Fig. 1 — arithmetic complexity of the cutting-plane subproblem: formula curves of "
                 "Table 1 (natural logs; no training).\nBox and CD-norm coincide; polyhedron L_in = N; "
                 "Wasserstein-1 m = 1, n = N + N²; KL with |log ε'|", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    out = Path(path).with_suffix("")
    save_figure(fig, out)
    return [out.with_suffix(".png"), out.with_suffix(".pdf")]


# ---- the two Fig. 1 claims --------------------------------------------------------------------

def growth_exponents(frame: pd.DataFrame | None = None, panel: str = "a") -> pd.Series:
    """Per set, the mean log-log slope of complexity in N over the panel's range:
    log(C(N_max) / C(N_min)) / log(N_max / N_min); largest first."""
    frame = fig1_frame() if frame is None else frame
    sub = frame[frame["panel"] == panel]
    out = {}
    for name, g in sub.groupby("set"):
        lo, hi = g.loc[g["x"].idxmin()], g.loc[g["x"].idxmax()]
        out[name] = math.log(hi["complexity"] / lo["complexity"]) / math.log(hi["x"] / lo["x"])
    return pd.Series(out, name="growth exponent").sort_values(ascending=False)


def fastest_growing_set(frame: pd.DataFrame | None = None) -> str:
    """The set whose complexity grows fastest in N (Fig. 1 (a); the paper: Wasserstein-1)."""
    return str(growth_exponents(frame).index[0])


def cheapest_sets(frame: pd.DataFrame | None = None, N: int = 100, count: int = 2) -> pd.Series:
    """The ``count`` sets of least complexity at N in Fig. 1 (a) (the paper: box and CD-norm),
    as a Series set -> complexity, cheapest first (ties by name)."""
    frame = fig1_frame() if frame is None else frame
    sub = frame[(frame["panel"] == "a") & (frame["x"] == N)]
    if sub.empty:
        raise ValueError(f"cheapest_sets: no panel (a) point at N = {N}")
    sub = sub.sort_values(["complexity", "set"])
    return sub.set_index("set")["complexity"].iloc[:count]


# ---- rendering --------------------------------------------------------------------------------

def render_table1(out, frame: pd.DataFrame | None = None) -> None:
    """Write Table 1 as out.md / .csv / .tex (:func:`~fedrepro.figures.base.write_table`)."""
    frame = table1_frame() if frame is None else frame
    times = [c for c in frame.columns if c.startswith("time N=")]
    write_table(frame.drop(columns="set"), out, TABLE1_CAPTION, formats={c: "{:.3f}" for c in times})


def render_table2(out, frame: pd.DataFrame | None = None) -> None:
    """Write Table 2 (formulas and the evaluated instance) as out.md / .csv / .tex."""
    frame = table2_frame() if frame is None else frame
    inst = ", ".join(f"{k} = {v:g}" for k, v in frame.attrs.get("instance", {}).items())
    caption = ("Table 2 — unified overall arithmetic complexity (formulas as printed; K_1: the gradient "
               "projections (11)-(15)). Evaluated with natural logs and |log ε'| for KL (AMBIG-18), "
               f"K_1 = P·N, polyhedron L_in = N: {inst}")
    write_table(frame.drop(columns="set"), out, caption,
                formats={c: "{:.3e}" for c in ("K_1/ε^6", "⌊T_1/k⌋ C_set", "total")})


def render_table5(out, realised: dict | None = None) -> None:
    """Write Table 5 (paper numbers, realised counts where given) as out.md / .csv / .tex."""
    write_table(table5_frame(realised), out,
                "Table 5 — number of workers and categories (paper), realised workers, classes, samples and d")
