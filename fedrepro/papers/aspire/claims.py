"""Checks of the aspire paper's statements (spec 002 §6) that need code, on :mod:`fedrepro.claims.query`; the
other readings are data in claims.yaml, where a check's parameters (pairs of methods, metrics) are its ``args:``.

Orderings are PAIRED per-seed differences oriented as an advantage (positive = the first method better), read
``compare: gt, paper_value: 0``. Table 3/4 statements are decided ACROSS the sweep of the unstated rho_1, eta_h,
alpha_w, kappa_1 (``sweep3_<ds>`` / ``sweep4_<ds>``, FIDELITY AS-26, :func:`fedrepro.claims.sweep.across`): at each
setting the family's runs replace the default ones (baselines shared); so are the Figs. 2-5 statements (Γ steps, trade-off,
times to target, planes, ADP: ``sweep_<figure>``, issue #43 point 4). Fig. 1 and the set's size are closed-form.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from fedrepro.claims import NotTestable, Outcome, Replicates
from fedrepro.claims.query import (MEASURE_KINDS, across_values, advantages, column, compile_reading, decided_across,
                                   fixed, select, swept, times_to_target)
from fedrepro.papers.aspire.analysis import METHODS, PAPER_TABLE3, finals, frames_of, individual_best, param

NAMES = {"acc_w": "Acc_w", "loss_w": "Loss_w", "acc_std": "Std", "attack_success": "success rate"}
LOWER_IS_BETTER = {"loss_w", "acc_std", "attack_success"}
_PAPER_SD = {"acc_w": 1, "loss_w": 3}  # where PAPER_TABLE3's (acc, acc std, loss, loss std, Std) has each std


def _one(frames, prefix):
    """(dataset, trace frame) of the claim's one ``<prefix>_<dataset>`` experiment; (None, None) without one."""
    got = frames_of(frames, prefix)
    return next(iter(got.items())) if len(got) == 1 else (None, None)


def _components(fin, pairs, metrics, scale=None):
    """Per seed advantages of a over b for every (a, b) in ``pairs`` and metric (max{Ind_j}: each seed's Ind_j run
    with the largest Acc_w); NotTestable when a method did not run or a pair shares no seed."""
    missing = sorted({m for p in pairs for m in p} - set(fin["algorithm"]))
    if missing:
        return NotTestable(f"no runs of {', '.join(METHODS[m] for m in missing)} in this experiment")
    best = individual_best(fin)
    fin = pd.concat([fin[fin["algorithm"] != "individual"], best], ignore_index=True) if len(best) else fin
    out = advantages(fin, pairs, metrics, lower=LOWER_IS_BETTER, names={**NAMES, **METHODS}, scale=scale)
    if None in out:
        a, b = pairs[out.index(None) // len(metrics)]
        return NotTestable(f"{METHODS[a]} and {METHODS[b]} share no seed")
    return out


# ---- the sweep of the unstated hyper-parameters (FIDELITY AS-26) ----------------------------------
#: the methods whose runs a sweep setting replaces (they use rho_1, eta_h, alpha_w, kappa_1)
SWEPT = ("mix_even", "aspire", "aspire_per")
#: the reference setting (spec §3.1's values) and each sweep label -> (shown as, the parameter it changes)
DEFAULT_LABEL = "default (ρ1 0.5, η_h 0.01, α_w N·lr, κ1α_w 0.5)"
SWEEP_LABELS = {"rho1=2": ("ρ1 = 2", "ρ1"), "eta_h=0.05": ("η_h = 0.05", "η_h"),
                "alpha_w=N/2 lr": ("α_w = N/2·lr", "α_w"), "kappa1 alpha_w=0.1": ("κ1α_w = 0.1", "κ1")}
SWEEP_NAME = "the unstated ρ1, η_h, α_w, κ1"


def sweep_settings(frames, table: str):
    """(dataset, [(label, finals, parameter)]) of ``table3``/``table4``: the table's runs (the default), then per
    setting of ``sweep<3|4>_<ds>`` its swept methods' runs replacing the default ones (baselines shared)."""
    ds, df = _one(frames, table)
    if df is None:
        return None, []
    sw = frames.get(f"sweep{table[-1]}_{ds}")
    return ds, swept(finals(df), None if sw is None or sw.empty else finals(sw), SWEEP_LABELS, DEFAULT_LABEL,
                     f"sweep{table[-1]}_{ds}")


def _advantages(rule: str):
    """The check ``rule`` (claims.yaml ``args``: table, pairs, metrics[, std_of]) decided across the sweep."""
    def check(frames, summaries, table: str, pairs, metrics, std_of=None):
        """:func:`_components`, with ``std_of`` in units of the largest std Table 3 prints for those methods."""
        ds, got = sweep_settings(frames, table)
        if not got:
            return None
        sd = None if std_of is None else {k: max(PAPER_TABLE3[m][ds][i] for m in std_of) for k, i in _PAPER_SD.items()}
        return decided_across("aspire", rule, got, lambda fin: _components(fin, pairs, metrics, sd), SWEEP_NAME)
    check.__name__ = check.__qualname__ = rule
    return check


#: the Table 3/4 orderings (compare gt 0) and the two "within one printed std" readings (approx, ge)
CHECKS = {rule: _advantages(rule) for rule in ("ahead", "within_paper_std", "not_behind_paper_std")}


# ---- Figs. 2-5 across the same sweep (issue #43 point 4) ----------------------------------------
#: per figure, the methods of its experiment that use rho_1, eta_h, alpha_w, kappa_1: a setting of
#: ``sweep_<figure>[_<ds>]`` replaces their runs, the others' (Fig. 4's AFL and DRFA-Prox) are shared
FIG_SWEPT = {"fig2": ("aspire_adp",), "fig3": ("aspire",), "fig4": ("aspire", "aspire_cp", "aspire_sync")}


def fig_settings(frames, figure: str):
    """(experiment id, [(label, {experiment id: trace frame}, parameter)]) of ``figure`` (fig2, fig3, fig4):
    the figure's runs (the default), then per setting of ``sweep_<experiment id>`` its runs replacing the
    swept methods' ones (paired by seed)."""
    if figure not in FIG_SWEPT:
        raise ValueError(f"figure {figure!r}: the figures swept are {sorted(FIG_SWEPT)}")
    if figure == "fig2":
        exp, df = "fig2", frames.get("fig2")
    else:
        ds, df = _one(frames, figure)
        exp = f"{figure}_{ds}"
    if df is None or df.empty:
        return None, []
    got = swept(df, frames.get(f"sweep_{exp}"), SWEEP_LABELS, DEFAULT_LABEL, f"sweep_{exp}", FIG_SWEPT[figure])
    return exp, [(label, {exp: f}, par) for label, f, par in got]


def _across_fig(rule: str, inner, uses=()):
    """The check ``rule``: ``inner(frames, summaries, **args)`` at the figure's default runs and at every setting
    of its sweep (:func:`fig_settings`), decided across them (:func:`~fedrepro.claims.query.across_values`).
    ``uses``: the query functions ``inner`` calls, held as a default so that the fingerprint covers them."""
    def check(frames, summaries, figure: str, _uses=tuple(uses), **args):
        exp, got = fig_settings(frames, figure)
        return across_values("aspire", rule, got, lambda fr: inner(fr, summaries, **args), SWEEP_NAME) if got \
            else None
    check.__name__ = check.__qualname__ = rule
    return check


def _reading(frames, summaries, reading, name: str = "reading"):
    """A claim's reading written as data (:func:`~fedrepro.claims.query.compile_reading`) on ``frames``."""
    return compile_reading(reading, VIEWS, name)(frames, summaries)


def malicious_weight(frames, summaries, alg: str, higher: bool):
    """Per seed, the malicious (last) worker's final weight (ASPIRE's pi, AFL's and DRFA-Prox's lambda) against the
    equal 1/N of FedAvg and Mix_Even: w - 1/N when the paper says higher, 1/N - w when it says lower."""
    ds, df = _one(frames, "table4")
    sub = select(finals(df), algorithm=alg) if df is not None else None
    col = "pi_last" if alg in SWEPT else "lambda_last"
    if sub is None or sub.empty or col not in sub or not sub[col].notna().all():
        return None
    w, equal = sub[col].astype(float), 1.0 / sub["m"].astype(float)
    vals, rel = ((w - equal), "above") if higher else ((equal - w), "below")
    return Outcome(Replicates(vals.to_numpy(float), label=f"{METHODS[alg]}: malicious worker's weight {rel} 1/N"),
                   detail="per seed weight " + ", ".join(f"{v:.3f}" for v in w)
                   + f" (1/N = {float(equal.iloc[0]):.3f})")


# ---- Fig. 3 -------------------------------------------------------------------------------------
def _f3(frames):
    """The Fig. 3 experiment's final records with their Γ, and N (None, None without one)."""
    ds, df = _one(frames, "fig3")
    if df is None:
        return None, None
    fin = finals(df)
    return fin.assign(Gamma=param(fin, "Gamma").astype(float)), int(fin["m"].iloc[0])


def gamma_steps(frames, summaries, gradual: bool = False):
    """Per seed Acc_w gain and Loss_w reduction from Γ = 0 to the largest grid Γ <= N, or (``gradual``) of every
    step between consecutive grid values up to the saturation 2 floor(N/2) (the set still grows, AMBIG-23)."""
    fin, N = _f3(frames)
    if fin is None:
        return None
    top = 2 * (N // 2) if gradual else N
    grid = sorted(g for g in fin["Gamma"].unique() if g <= top)
    if gradual and len(grid) < 3:
        return NotTestable(f"the Γ grid has {len(grid)} values in [0, {top}]; a gradual trend needs >= 3")
    if not gradual and (len(grid) < 2 or grid[0] != 0):
        return NotTestable(f"the Γ grid {grid} needs 0 and a positive value <= N = {N}")
    steps = list(zip(grid, grid[1:])) if gradual else [(0.0, grid[-1])]
    names = {**NAMES, **{g: f"Γ = {g:g}" for g in fin["Gamma"].unique()}}
    return advantages(fin, [(hi, lo) for lo, hi in steps], ("acc_w", "loss_w"), among="Gamma",
                      lower=LOWER_IS_BETTER, names=names)


def f3_gamma0_is_mix_even(frames, summaries):
    """Identity of our code: Γ = 0 runs equal Mix_Even's Table 3 runs of the same seeds (the same
    rule with Γ = 0): bit-identical final Acc_w and Loss_w."""
    ds, _ = _one(frames, "fig3")
    t3 = frames.get(f"table3_{ds}") if ds else None
    if t3 is None:
        return None
    g0, me = select(_f3(frames)[0], Gamma=0.0), select(finals(t3), algorithm="mix_even")
    d = [column(g0, k) - column(me, k) for k in ("acc_w", "loss_w")]
    if not len(d[0]):
        return NotTestable("no seed is shared by the Γ = 0 runs and Mix_Even's runs")
    diff = max(np.abs(x.v.to_numpy()).max() for x in d)
    return Outcome(diff == 0.0, why=f"largest difference {diff:.3g} over {len(d[0])} seeds",
                   detail=f"{len(d[0])} seeds, largest difference {diff:.3g}")


def f3_plateau(frames, summaries):
    """Identity of our code: beyond the saturation value 2 floor(N/2) (uniform q, ptilde = q:
    AMBIG-23) a larger Γ changes nothing: the runs at the grid's values >= saturation are identical."""
    fin, N = _f3(frames)
    if fin is None:
        return None
    sat = 2 * (N // 2)
    top = fin[fin["Gamma"] >= sat]
    if top["Gamma"].nunique() < 2:
        return NotTestable(f"the Γ grid has fewer than two values >= the saturation value {sat}")
    spread = float(top.groupby("seed")[["acc_w", "loss_w"]].agg(lambda v: v.max() - v.min()).to_numpy().max())
    return Outcome(spread == 0.0, why=f"Γ >= {sat} runs differ by {spread:.3g}",
                   detail=f"Γ in {[float(g) for g in sorted(top['Gamma'].unique())]} (N = {N}, saturation {sat})")


def cdnorm_support(N: int, s: float, Gamma: float, f: np.ndarray) -> float:
    """max f.p over the CD-norm set (16), uniform q, ptilde = s q, p >= 0: an LP over (p, t), t_j >= |p_j - q_j|,
    t_j <= ptilde_j, sum_j t_j / ptilde_j <= Γ, 1ᵀp = 1 (HiGHS; independent of our CD-norm solver)."""
    from scipy.optimize import linprog

    q = np.full(N, 1.0 / N)
    pt = s * q
    eye = np.eye(N)
    A_ub = np.vstack([np.hstack([eye, -eye]), np.hstack([-eye, -eye]),
                      np.hstack([np.zeros(N), 1.0 / pt])[None, :]])
    b_ub = np.concatenate([q, -q, [Gamma]])
    A_eq = np.hstack([np.ones(N), np.zeros(N)])[None, :]
    bounds = [(0, None)] * N + [(0, float(p)) for p in pt]
    res = linprog(np.concatenate([-f, np.zeros(N)]), A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=[1.0], bounds=bounds,
                  method="highs", options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    if res.status != 0:
        raise RuntimeError(f"CD-norm support LP failed (N={N}, s={s}, Γ={Gamma}): {res.message}")
    return float(-res.fun)


def f3_set_grows(frames, summaries, workers, scales):
    """Per N of ``workers`` and p̃ = s q (s of ``scales``; p̃ is not given), the least growth of the set's support
    function max_p f.p (the largest over three seeded directions f) between consecutive Γ of a 0.25 grid of [0, N]."""
    rng = np.random.default_rng(0)
    out, rows = [], []
    for N in workers:
        dirs = [rng.standard_normal(N) for _ in range(3)]
        grid = np.arange(0.0, N + 1e-9, 0.25)
        for s in scales:
            sup = np.array([[cdnorm_support(N, s, g, f) for g in grid] for f in dirs])
            growth = np.diff(sup, axis=1).max(axis=0)
            growth = np.where(growth < 1e-9, 0.0, growth)
            flat = grid[1:][growth == 0]
            shape = f"constant from Γ = {flat[0] - 0.25:g}" if flat.size else "grows to N"
            rows.append(f"N={N}, p̃={s:g}q: " + shape)
            out.append(fixed(growth.min(), f"N = {N}, p̃ = {s:g} q: least growth per ΔΓ = 0.25"))
    return Outcome(out, detail="; ".join(rows))


def time_ratios(frames, summaries, pairs):
    """Figs. 4-5: per seed, the time-to-target ratio slow / fast of every (slow, fast) in ``pairs`` (log scale)."""
    ds, df = _one(frames, "fig4")
    if df is None:
        return None
    t = times_to_target(df, "loss_w")
    if t.empty:
        return NotTestable("in no seed is the worst method's final Loss_w below the common start: no target to time")
    out = []
    for slow, fast in pairs:
        if (t[fast] <= 0).any():
            return NotTestable(f"{METHODS[fast]} starts at the target in some seed (time 0): no ratio")
        out.append(Replicates((t[slow] / t[fast]).to_numpy(), scale="log",
                              label=f"time to target {METHODS[slow]} / {METHODS[fast]}"))
    times = "; ".join(f"{METHODS[a]} {t[a].median():.1f} s" for a in t.columns)
    return Outcome(out, detail=f"median time to target over {len(t)} seeds: {times}")


def f2_adp_adapts(frames, summaries):
    """ASPIRE-ADP adjusts S to the straggler (AMBIG-4): per seed, the mean S before the episode, and the S at the
    end of the run, minus the mean S during it."""
    (t0, t1), = [(e["start"], e["end"]) for e in json.loads(frames["fig2"]["delays"].iloc[0])["schedule"]]
    before, back = [], []
    for seed, run in frames["fig2"].sort_values("virtual_time").groupby("seed"):
        S = run[["virtual_time", "active_workers"]].to_numpy(dtype=float)
        pre, during = S[(S[:, 0] > 0.2 * t0) & (S[:, 0] < t0)], S[(S[:, 0] >= t0) & (S[:, 0] < t1)]
        if len(pre) == 0 or len(during) == 0 or S[-1, 0] < t1:
            return NotTestable(f"seed {seed}: the run did not cover the three phases of the straggler schedule")
        before.append(pre[:, 1].mean() - during[:, 1].mean())
        back.append(S[-1, 1] - during[:, 1].mean())
    return [Replicates(before, label="mean S before minus during the straggler episode"),
            Replicates(back, label="S at the end minus mean S during the episode")]


# ---- Fig. 1 (the paper's complexity formulas, Table 1) -------------------------------------------
def _fig1():
    """The module of Fig. 1's formulas (imported when needed) and its curves."""
    from fedrepro.papers.aspire import static

    return static, static.fig1_frame()


def f1_w1_fastest(frames, summaries):
    """Wasserstein-1's complexity grows fastest in N: its log-log growth exponent over Fig. 1 (a)'s
    N range minus the largest other set's (gt 0)."""
    static, f = _fig1()
    g = static.growth_exponents(f)
    other = g.drop("wasserstein1")
    return Outcome(fixed(g["wasserstein1"] - other.max(), f"growth exponent W1 minus {other.idxmax()}"),
                   detail=", ".join(f"{k} {v:.2f}" for k, v in g.items()))


def f1_ellipsoid_m(frames, summaries):
    """The ellipsoid set's complexity increases with the number of constraints m: the ratio between
    consecutive m of Fig. 1 (b) at its smallest over N (gt 1, log scale)."""
    b = _fig1()[1].pipe(select, panel="b").pivot(index="x", columns="m", values="complexity")
    ms = sorted(b.columns)
    return [fixed((b[hi] / b[lo]).min(), f"ellipsoid complexity m = {hi} / m = {lo}, smallest over N", "log")
            for lo, hi in zip(ms, ms[1:])]


def s_is_one(frames, summaries):
    """Parameter echo: every ASPIRE-EASE run of the experiment has S = 1."""
    ds, df = _one(frames, "table3")
    if df is None:
        return None
    S = param(select(finals(df), algorithm="aspire"), "S", 1)
    return Outcome(bool((S == 1).all()) and len(S) > 0, why=f"S values {sorted(set(S))}")


def _fig1_view(frames, summaries):
    """Fig. 1's curves (:func:`~fedrepro.papers.aspire.static.fig1_frame`) as one replicate, for readings as data."""
    return _fig1()[1].assign(seed=0)


def _growth_view(frames, summaries):
    """Fig. 1 (a)'s growth exponent of every set (``set``, ``exponent``) as one replicate."""
    static, f = _fig1()
    return static.growth_exponents(f).rename_axis("set").reset_index(name="exponent").assign(seed=0)


def _cheapest_view(frames, summaries):
    """Fig. 1 (a): per N (``x``) the cheapest other set's complexity over box's and CD-norm's (``ratio``)."""
    a = _fig1()[1].pipe(select, panel="a").pivot(index="x", columns="set", values="complexity")
    ratio = a.drop(columns=["box", "cdnorm"]).min(axis=1) / a[["box", "cdnorm"]].max(axis=1)
    return ratio.rename("ratio").reset_index().assign(seed=0)


VIEWS = {"fig1": _fig1_view, "fig1_growth": _growth_view, "fig1_cheapest": _cheapest_view}
CHECKS.update((f.__name__, f) for f in (
    malicious_weight, f3_gamma0_is_mix_even, f3_plateau, f3_set_grows, f1_w1_fastest, f1_ellipsoid_m, s_is_one))
#: the Figs. 2-5 statements decided across the sweep of the unstated rho_1, eta_h, alpha_w, kappa_1 (FIDELITY AS-26;
#: one name per rule of decision: gt 0 for the Γ steps, the trade-off, the planes and ADP, gt 1 for time ratios)
CHECKS.update((name, _across_fig(name, inner, uses)) for name, inner, uses in (
    ("gamma_steps_across", gamma_steps, (advantages,)), ("time_ratios_across", time_ratios, (times_to_target,)),
    ("f2_adp_adapts_across", f2_adp_adapts, ()),
    ("reading_across", _reading, (compile_reading, *MEASURE_KINDS.values()))))
