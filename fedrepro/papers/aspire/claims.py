"""Checks of the aspire paper's statements (spec 002 §6) that need code, on the query layer
(:mod:`fedrepro.claims.query`); the other readings are data in claims.yaml. One claim per dataset where
the paper states it per dataset: each check reads the one experiment of its claim (``table3_scma`` ...).

Orderings are PAIRED per-seed differences (instance k of every method runs with seed k), oriented as an
advantage (positive = the first method better: higher Acc_w, lower Loss_w, Std, success attack rate),
read ``compare: gt, paper_value: 0``; several pairs give a list (all must hold; Bonferroni). "Within one
std" divides the paired difference by the std the PAPER prints in Table 3 (tolerance 1). Figs. 4-5: time
to target = the first virtual time a method's Loss_w is at or below its seed's target (the final Loss_w
of the seed's worst method, spec aspire/fig4), as per-seed time ratios (``scale="log"``).

Table 3/4 statements about a method of the ASPIRE family (Mix_Even, ASPIRE-EASE, ASPIRE-EASE_per) are
decided ACROSS the sweep of the unstated rho_1, eta_h, alpha_w, kappa_1 (``sweep3_<ds>`` /
``sweep4_<ds>``, FIDELITY AS-26) by :func:`fedrepro.claims.sweep.across`: at each setting the family's
runs replace the default ones (baselines shared, paired by seed). Fig. 1 and the CD-norm set's size are
closed-form (``deterministic=True``).
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from fedrepro.claims import NotTestable, Outcome, Replicates
from fedrepro.claims.query import advantages, column, decided_across, fixed, select, substitute, times_to_target
from fedrepro.papers.aspire.analysis import METHODS, PAPER_TABLE3, finals, frames_of, individual_best, param

NAMES = {"acc_w": "Acc_w", "loss_w": "Loss_w", "acc_std": "Std", "attack_success": "success rate"}
LOWER_IS_BETTER = {"loss_w", "acc_std", "attack_success"}
BASELINES = ("mix_even", "fedavg_steps", "afl", "drfa_prox")
# column of PAPER_TABLE3's tuple (acc mean, acc std, loss mean, loss std, Std) holding each metric's std
_PAPER_SD = {"acc_w": 1, "loss_w": 3}


def _one(frames, prefix):
    got = frames_of(frames, prefix)
    return next(iter(got.items())) if len(got) == 1 else (None, None)


def _named(fn, name: str, doc: str):
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _components(fin, pairs, metrics, scale=None):
    """Per seed advantages (positive = a better) for every (a, b) in ``pairs`` and metric
    (:func:`fedrepro.claims.query.advantages`; max{Ind_j} = each seed's Ind_j run with the largest Acc_w);
    NotTestable when a method did not run or a pair shares no seed."""
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
    """(dataset, [(label, finals frame, parameter)]) for a Table 3/4 experiment prefix (``table3``):
    the table's own runs (the default setting), then one frame per setting of ``sweep<3|4>_<ds>`` in
    which the swept methods' runs of that setting replace the default ones (baselines shared)."""
    ds, df = _one(frames, table)
    if df is None:
        return None, []
    fin, sw = finals(df), frames.get(f"sweep{table[-1]}_{ds}")
    out = [(DEFAULT_LABEL, fin, None)]
    if sw is None or sw.empty:
        return ds, out
    sfin = finals(sw)
    unknown = sorted(set(sfin["setting"]) - set(SWEEP_LABELS))
    if unknown:
        raise ValueError(f"sweep{table[-1]}_{ds}: settings {unknown} are not in SWEEP_LABELS {sorted(SWEEP_LABELS)}")
    for label, (shown, par) in SWEEP_LABELS.items():
        sub = select(sfin, setting=label)
        if not sub.empty:
            out.append((shown, substitute(fin, sub), par))
    return ds, out


def _swept(name, table, components, doc):
    """A check whose components ``components(ds, finals)`` are decided across the sweep settings."""
    def check(frames, summaries):
        ds, got = sweep_settings(frames, table)
        return decided_across("aspire", name, got, lambda fin: components(ds, fin), SWEEP_NAME) if got else None
    return _named(check, name, doc)


def _ordering(name, table, pairs, metrics, doc):
    """The advantages of every (a, b) in ``pairs`` on every metric, per seed, decided across the sweep."""
    return _swept(name, table, lambda ds, fin: _components(fin, pairs, metrics), doc)


def _within_one_paper_std(name: str, a: str, b: str, ref: str | None, doc: str):
    """Per seed (a - b) on Acc_w and Loss_w in units of the std the paper prints for ``ref`` (the
    larger of a's and b's when ref is None) on this dataset; oriented as a's advantage."""
    def components(ds, fin):
        sd = {k: max(PAPER_TABLE3[m][ds][i] for m in ((a, b) if ref is None else (ref,))) for k, i in _PAPER_SD.items()}
        return _components(fin, [(a, b)], ("acc_w", "loss_w"), sd)
    return _swept(name, "table3", components, doc)


# ---- Tables 3 and 4 -------------------------------------------------------------------------------
CHECKS = {f.__name__: f for f in (
    _ordering("t3_ind_worst", "table3", [(m, "individual") for m in BASELINES + ("aspire", "aspire_per")],
              ("acc_w", "acc_std"), "max{Ind_j} has the worst robustness: every other method's Acc_w above it and "
              "its Std below it, per seed (max{Ind_j} = that seed's Ind_j run with the largest Acc_w)."),
    _ordering("t3_erm_beats_ind", "table3", [("fedavg_steps", "individual"), ("mix_even", "individual")],
              ("acc_w", "acc_std"), "FedAvg and Mix_Even perform better than max{Ind_j}: higher Acc_w, lower Std."),
    _ordering("t3_afl_beats_erm", "table3", [("afl", "fedavg_steps"), ("afl", "mix_even")],
              ("acc_w", "loss_w", "acc_std"), "AFL is more robust than FedAvg and Mix_Even: ahead on Acc_w, "
              "Loss_w and Std, per seed."),
    _ordering("t3_aspire_beats_baselines", "table3", [("aspire", b) for b in BASELINES], ("acc_w", "loss_w"),
              "ASPIRE-EASE's robustness: ahead of Mix_Even, FedAvg, AFL and DRFA-Prox on Acc_w and Loss_w."),
    _ordering("t3_aspire_lowest_std", "table3", [("aspire", b) for b in BASELINES], ("acc_std",),
              "ASPIRE-EASE's Std below every baseline's, per seed."),
    _within_one_paper_std("t3_fedavg_mix_even", "fedavg_steps", "mix_even", None,
                          "FedAvg ≈ Mix_Even: the per-seed differences of Acc_w and Loss_w in units of the larger "
                          "std the paper prints for the two rows on this dataset (compare approx 0 ± 1)."),
    _within_one_paper_std("t3_per_within", "aspire_per", "aspire", "aspire",
                          "ASPIRE-EASE_per also performs well: its per-seed advantage over ASPIRE-EASE on Acc_w and "
                          "Loss_w in units of the std the paper prints for ASPIRE-EASE (compare ge 0 - 1)."),
    _ordering("t4_afl_highest", "table4", [(b, "afl") for b in ("mix_even", "fedavg_steps", "drfa_prox", "aspire")],
              ("attack_success",), "AFL is attacked most easily: every other method's success rate below AFL's."),
    _ordering("t4_erm_below_afl", "table4", [("fedavg_steps", "afl"), ("mix_even", "afl")], ("attack_success",),
              "FedAvg and Mix_Even below AFL, per seed."),
    _ordering("t4_drfa_below_erm", "table4", [("drfa_prox", "fedavg_steps"), ("drfa_prox", "mix_even")],
              ("attack_success",), "DRFA-Prox below FedAvg and Mix_Even, per seed."),
    _ordering("t4_aspire_lowest", "table4", [("aspire", b) for b in ("mix_even", "fedavg_steps", "afl", "drfa_prox")],
              ("attack_success",), "ASPIRE-EASE below every other method, per seed."),
    _ordering("t4_ordering", "table4", [("fedavg_steps", "afl"), ("mix_even", "afl"), ("drfa_prox", "fedavg_steps"),
                                        ("drfa_prox", "mix_even"), ("aspire", "drfa_prox")], ("attack_success",),
              "Table 4's ordering, AFL > {FedAvg, Mix_Even} > DRFA-Prox > ASPIRE-EASE (FedAvg vs Mix_Even changes "
              "sign across the paper's datasets: not compared), per seed."))}


def _malicious_weight(name: str, alg: str, higher: bool, doc: str):
    """Per seed, the malicious worker's final weight (ASPIRE's pi, AFL's and DRFA-Prox's lambda; it is the
    last worker, added by the backdoor attack) against the equal weight 1/N that FedAvg and Mix_Even give
    it (N workers with it): w - 1/N when the paper says higher, 1/N - w when it says lower; > 0."""
    def check(frames, summaries):
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
    return _named(check, name, doc)


CHECKS.update((f.__name__, f) for f in (
    _malicious_weight("t4_afl_weights_malicious_higher", "afl", True,
                      "AFL's final weight on the malicious worker above 1/N, per seed."),
    _malicious_weight("t4_drfa_weights_malicious_lower", "drfa_prox", False,
                      "DRFA-Prox's final weight on the malicious worker below 1/N, per seed."),
    _malicious_weight("t4_aspire_weights_malicious_lower", "aspire", False,
                      "ASPIRE-EASE's final weight on the malicious worker below 1/N, per seed.")))


# ---- Fig. 3 -------------------------------------------------------------------------------------
def _f3(frames):
    """The Fig. 3 experiment's final records with their Γ, and N (None, None without one)."""
    ds, df = _one(frames, "fig3")
    if df is None:
        return None, None
    fin = finals(df)
    return fin.assign(Gamma=param(fin, "Gamma").astype(float)), int(fin["m"].iloc[0])


def _gamma_steps(fin, steps):
    """Per seed, the advantage of Γ = hi over Γ = lo on Acc_w and on Loss_w, for every (lo, hi) in ``steps``."""
    names = {**NAMES, **{g: f"Γ = {g:g}" for g in fin["Gamma"].unique()}}
    return advantages(fin, [(hi, lo) for lo, hi in steps], ("acc_w", "loss_w"), among="Gamma",
                      lower=LOWER_IS_BETTER, names=names)


def f3_enhanced(frames, summaries):
    """Robustness at the largest Γ <= N of the grid against Γ = 0: per seed Acc_w gain and Loss_w
    reduction (gt 0)."""
    fin, N = _f3(frames)
    if fin is None:
        return None
    grid = sorted(g for g in fin["Gamma"].unique() if g <= N)
    if len(grid) < 2 or grid[0] != 0:
        return NotTestable(f"the Γ grid {grid} needs 0 and a positive value <= N = {N}")
    return _gamma_steps(fin, [(0.0, grid[-1])])


def f3_gradual(frames, summaries):
    """"Gradually enhanced": every step between consecutive grid values up to the saturation
    2 floor(N/2) (where the set still grows, AMBIG-23) gains Acc_w and reduces Loss_w, per seed."""
    fin, N = _f3(frames)
    if fin is None:
        return None
    sat = 2 * (N // 2)
    grid = sorted(g for g in fin["Gamma"].unique() if g <= sat)
    if len(grid) < 3:
        return NotTestable(f"the Γ grid has {len(grid)} values in [0, {sat}]; a gradual trend needs >= 3")
    return _gamma_steps(fin, list(zip(grid, grid[1:])))


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
    """max f.p over the CD-norm set (16) with uniform q, ptilde = s q and p >= 0 (P ⊆ R^N_+), solved as
    an LP over (p, t) with t_j >= |p_j - q_j|, t_j <= ptilde_j, sum_j t_j / ptilde_j <= Γ, 1ᵀp = 1
    (HiGHS; independent of our CD-norm solver)."""
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


#: the paper's four worker counts (SHL, Person Activity, SC-MA, Fashion-MNIST) and p̃ = s q scales swept
SET_SIZE_N = (6, 5, 15, 3)
SET_SIZE_S = (0.5, 1.0, 2.0)


def f3_set_grows(frames, summaries):
    """"The size of the uncertainty set will increase with Γ (when Γ <= N)": for each of the paper's
    N and each p̃ = s q (p̃ is not given: swept), the smallest growth of the set's support function
    max_p f.p (largest over three seeded generic directions f) over consecutive Γ in a 0.25 grid of
    [0, N]. Deterministic (an LP per point); growth below 1e-9 counts as none (solver tolerance)."""
    rng = np.random.default_rng(0)
    out, rows = [], []
    for N in SET_SIZE_N:
        dirs = [rng.standard_normal(N) for _ in range(3)]
        grid = np.arange(0.0, N + 1e-9, 0.25)
        for s in SET_SIZE_S:
            sup = np.array([[cdnorm_support(N, s, g, f) for g in grid] for f in dirs])
            growth = np.diff(sup, axis=1).max(axis=0)
            growth = np.where(growth < 1e-9, 0.0, growth)
            flat = grid[1:][growth == 0]
            shape = f"constant from Γ = {flat[0] - 0.25:g}" if flat.size else "grows to N"
            rows.append(f"N={N}, p̃={s:g}q: " + shape)
            out.append(fixed(growth.min(), f"N = {N}, p̃ = {s:g} q: least growth per ΔΓ = 0.25"))
    return Outcome(out, detail="; ".join(rows))


# ---- Figs. 4-5 ----------------------------------------------------------------------------------
def _time_ratios(frames, pairs):
    """Per seed, the time-to-target ratio slow / fast of every (slow, fast) in ``pairs`` (log scale)."""
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


def f4_aspire_fastest(frames, summaries):
    """ASPIRE-EASE reaches each seed's target first: time ratio of every other method over it > 1."""
    return _time_ratios(frames, [(b, "aspire") for b in ("aspire_cp", "aspire_sync", "afl", "drfa_prox")])


def f4_async_gain(frames, summaries):
    """The speed mainly comes from asynchrony: ASPIRE-EASE(-) (S = N) slower than ASPIRE-EASE, and
    slower than ASPIRE-CP (the other variant), per seed."""
    return _time_ratios(frames, [("aspire_sync", "aspire"), ("aspire_sync", "aspire_cp")])


def f4_ease_before_cp(frames, summaries):
    """ASPIRE-EASE reaches the target before ASPIRE-CP: time ratio CP / EASE > 1, per seed."""
    return _time_ratios(frames, [("aspire_cp", "aspire")])


# ---- Fig. 2 -------------------------------------------------------------------------------------
def f2_adp_adapts(frames, summaries):
    """ASPIRE-ADP adjusts S to the straggler (text rule, AMBIG-4): per seed, the mean S before the
    episode minus the mean S during it, and the S at the end of the run minus the mean S during it
    (gt 0: S = N with similar delays, fewer active workers while worker 3 straggles)."""
    df = frames["fig2"]
    (t0, t1), = [(e["start"], e["end"]) for e in json.loads(df["delays"].iloc[0])["schedule"]]
    before, back = [], []
    for seed, run in df.sort_values("virtual_time").groupby("seed"):
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


def f1_four_sets_grow(frames, summaries):
    """KL, ellipsoid, polyhedron and W1 grow significantly with N: each one's growth exponent minus
    box / CD-norm's (n log n) (gt 0)."""
    static, f = _fig1()
    g = static.growth_exponents(f)
    ref = max(g["box"], g["cdnorm"])
    return [fixed(g[s] - ref, f"growth exponent {s} minus box/CD-norm's")
            for s in ("kl", "ellipsoid", "polyhedron", "wasserstein1")]


def f1_ellipsoid_m(frames, summaries):
    """The ellipsoid set's complexity increases with the number of constraints m: the ratio between
    consecutive m of Fig. 1 (b) at its smallest over N (gt 1, log scale)."""
    b = _fig1()[1].pipe(select, panel="b").pivot(index="x", columns="m", values="complexity")
    ms = sorted(b.columns)
    return [fixed((b[hi] / b[lo]).min(), f"ellipsoid complexity m = {hi} / m = {lo}, smallest over N", "log")
            for lo, hi in zip(ms, ms[1:])]


def f1_eps_grows(frames, summaries):
    """KL, ellipsoid, polyhedron and W1 complexities increase when eps' decreases: complexity at
    eps' = 1e-10 over eps' = 1e-1 in Fig. 1 (c) (N = 10) and (d) (N = 100) (gt 1, log scale)."""
    f = _fig1()[1]
    out = []
    for panel in "cd":
        for s in ("kl", "ellipsoid", "polyhedron", "wasserstein1"):
            g = select(f, panel=panel, set=s).sort_values("x")
            out.append(fixed(g["complexity"].iloc[0] / g["complexity"].iloc[-1],
                             f"{s}, N = {int(g['N'].iloc[0])}: eps' 1e-10 over 1e-1", "log"))
    return out


def f1_box_cdnorm_cheapest(frames, summaries):
    """Box and CD-norm are the most efficient, especially for large N: at N = 100 every other set's
    complexity over theirs (gt 1), and that ratio at N = 100 over the ratio at N = 10 (gt 1)."""
    a = _fig1()[1].pipe(select, panel="a").pivot(index="x", columns="set", values="complexity")
    others = [s for s in a.columns if s not in ("box", "cdnorm")]
    ratio = a[others].min(axis=1) / a[["box", "cdnorm"]].max(axis=1)
    return [fixed(ratio.loc[100], "cheapest other set over box/CD-norm at N = 100", "log"),
            fixed(ratio.loc[100] / ratio.loc[10], "that ratio at N = 100 over N = 10", "log")]


# ---- parameter echoes (kind: check) -------------------------------------------------------------
def s_is_one(frames, summaries):
    """Parameter echo: every ASPIRE-EASE run of the experiment has S = 1."""
    ds, df = _one(frames, "table3")
    if df is None:
        return None
    S = param(select(finals(df), algorithm="aspire"), "S", 1)
    return Outcome(bool((S == 1).all()) and len(S) > 0, why=f"S values {sorted(set(S))}")


CHECKS.update((f.__name__, f) for f in (
    f3_enhanced, f3_gradual, f3_gamma0_is_mix_even, f3_plateau, f3_set_grows, f4_aspire_fastest, f4_async_gain,
    f4_ease_before_cp, f2_adp_adapts, f1_w1_fastest, f1_four_sets_grow, f1_ellipsoid_m, f1_eps_grows,
    f1_box_cdnorm_cheapest, s_is_one))
