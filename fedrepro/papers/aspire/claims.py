"""Checks of the aspire paper's statements (spec 002 §6) from our runs, as replicates for the verdict
engine (:mod:`fedrepro.claims.verdicts`). One claim per dataset where the paper states it per dataset:
each check reads the one experiment of its claim (``table3_scma`` ...), so a dataset missing offline
leaves exactly its own claims ``unavailable``.

Every ordering is decided from PAIRED per-seed differences: instance k of every method of an
experiment runs with the same seed, so "a beats b on Acc_w" is the replicate set
{Acc_w(a, seed) - Acc_w(b, seed)} compared ``gt 0`` (strict: a tie is not a win). Each component is
oriented as an *advantage* (positive = the first method is better: higher Acc_w, lower Loss_w, lower
Std, lower success attack rate), so every ordering claim reads ``compare: gt, paper_value: 0``. A
statement about several pairs returns a list (all must hold; the engine applies Bonferroni).

"Within one std" (FedAvg vs Mix_Even, ASPIRE-EASE_per vs ASPIRE-EASE) is read with the std the PAPER
prints next to the compared mean in Table 3 (a constant fixed before any run of ours): the paired
difference is divided by it, so the claim's tolerance is 1 (one printed std).

Figs. 4-5 read each seed's own run: time to target = the first virtual time a method's Loss_w is at
or below that seed's target (the final Loss_w of the seed's worst method, spec aspire/fig4); the
replicates are per-seed time ratios (``scale="log"``).

Table 3/4 statements involving a method of the ASPIRE family (Mix_Even, ASPIRE-EASE, ASPIRE-EASE_per)
are decided ACROSS the sweep of the hyper-parameters the paper does not state (rho_1, eta_h, alpha_w,
kappa_1; experiments ``sweep3_<ds>`` / ``sweep4_<ds>``, FIDELITY AS-26) with
:func:`fedrepro.claims.sweep.across`: at each setting the family's runs of that setting replace the
default ones (the baselines' runs are shared, paired by seed), and the claim holds if it holds at
every setting, fails if it fails at every one, and is otherwise undecided with the per-setting table.

The Fig. 1 statements and the size of the CD-norm set are closed-form (the paper's complexity
formulas; an LP over the set's definition): ``deterministic=True``.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from fedrepro.claims import NotTestable, Outcome, Replicates
from fedrepro.claims.sweep import across
from fedrepro.papers.aspire.analysis import (DATASETS, METHODS, PAPER_TABLE3, finals, frames_of, individual_best,
                                             param)

NAMES = {"acc_w": "Acc_w", "loss_w": "Loss_w", "acc_std": "Std", "attack_success": "success rate"}
LOWER_IS_BETTER = {"loss_w", "acc_std", "attack_success"}
BASELINES = ("mix_even", "fedavg_steps", "afl", "drfa_prox")
# column of PAPER_TABLE3's tuple (acc mean, acc std, loss mean, loss std, Std) holding each metric's std
_PAPER_SD = {"acc_w": 1, "loss_w": 3}


def _one(frames, prefix):
    got = frames_of(frames, prefix)
    if len(got) != 1:
        return None, None
    return next(iter(got.items()))


def _per_seed(fin: pd.DataFrame, alg: str, metric: str) -> pd.Series:
    sub = individual_best(fin) if alg == "individual" else fin[fin["algorithm"] == alg]
    return sub.set_index("seed")[metric].astype(float)


def advantage(fin: pd.DataFrame, a: str, b: str, metric: str, scale: float = 1.0) -> Replicates | None:
    """Per seed, how much better method ``a`` is than ``b`` on ``metric`` (positive = a better),
    divided by ``scale``; paired on the seeds both ran. None when they share no seed."""
    x, y = _per_seed(fin, a, metric), _per_seed(fin, b, metric)
    seeds = sorted(set(x.index) & set(y.index))
    if not seeds:
        return None
    d = (x.loc[seeds] - y.loc[seeds]).to_numpy()
    if metric in LOWER_IS_BETTER:
        d = -d
    unit = "" if scale == 1.0 else f" / {scale:g}"
    return Replicates(d / scale, label=f"{NAMES[metric]}: {METHODS[a]} ahead of {METHODS[b]}{unit}")


def _components(fin, pairs, metrics, scale=None):
    """Advantages for every (a, b) in ``pairs`` and metric; NotTestable when a method did not run."""
    have = set(fin["algorithm"])
    missing = sorted({m for p in pairs for m in p if m not in have})
    if missing:
        return NotTestable(f"no runs of {', '.join(METHODS[m] for m in missing)} in this experiment")
    out = []
    for a, b in pairs:
        for k in metrics:
            rep = advantage(fin, a, b, k, 1.0 if scale is None else scale[k])
            if rep is None:
                return NotTestable(f"{METHODS[a]} and {METHODS[b]} share no seed")
            out.append(rep)
    return out


def _named(fn, name: str, doc: str):
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


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
    fin = finals(df)
    out = [(DEFAULT_LABEL, fin, None)]
    sw = frames.get(f"sweep{table[-1]}_{ds}")
    if sw is None or sw.empty:
        return ds, out
    sfin = finals(sw)
    unknown = sorted(set(sfin["setting"]) - set(SWEEP_LABELS))
    if unknown:
        raise ValueError(f"sweep{table[-1]}_{ds}: settings {unknown} are not in SWEEP_LABELS {sorted(SWEEP_LABELS)}")
    for label, (shown, par) in SWEEP_LABELS.items():
        sub = sfin[sfin["setting"] == label]
        if sub.empty:
            continue
        out.append((shown, pd.concat([fin[~fin["algorithm"].isin(sub["algorithm"].unique())], sub],
                                     ignore_index=True), par))
    return ds, out


def _swept(name, table, components, doc):
    """A check whose components ``components(ds, finals)`` are decided across the sweep settings."""
    def check(frames, summaries):
        ds, settings = sweep_settings(frames, table)
        if not settings:
            return None
        got = [(lab, components(ds, fin), par) for lab, fin, par in settings]
        bad = next((c for _, c, _ in got if isinstance(c, NotTestable)), None)
        if bad is not None:
            return bad
        if len(got) == 1:                       # no sweep runs (e.g. a user config): the default alone
            return Outcome(got[0][1], detail="not swept: no sweep runs in these results")
        return across("aspire", name, got, name=SWEEP_NAME)
    return _named(check, name, doc)


def _ordering(name, prefix, pairs, metrics, doc):
    """A check returning the advantages of every (a, b) in ``pairs`` on every metric, per seed; decided
    across the sweep when a pair involves a swept method."""
    if any(m in SWEPT for p in pairs for m in p):
        return _swept(name, prefix, lambda ds, fin: _components(fin, pairs, metrics), doc)

    def check(frames, summaries):
        ds, df = _one(frames, prefix)
        if df is None:
            return None
        return _components(finals(df), pairs, metrics)
    return _named(check, name, doc)


# ---- Table 3 ------------------------------------------------------------------------------------
t3_ind_worst = _ordering(
    "t3_ind_worst", "table3", [(m, "individual") for m in BASELINES + ("aspire", "aspire_per")], ("acc_w", "acc_std"),
    "max{Ind_j} has the worst robustness: every other method's Acc_w above it and its Std below it, per seed "
    "(max{Ind_j} = that seed's Ind_j run with the largest Acc_w).")
t3_erm_beats_ind = _ordering(
    "t3_erm_beats_ind", "table3", [("fedavg_steps", "individual"), ("mix_even", "individual")], ("acc_w", "acc_std"),
    "FedAvg and Mix_Even perform better than max{Ind_j}: higher Acc_w, lower Std, per seed.")
t3_afl_beats_erm = _ordering(
    "t3_afl_beats_erm", "table3", [("afl", "fedavg_steps"), ("afl", "mix_even")], ("acc_w", "loss_w", "acc_std"),
    "AFL is more robust than FedAvg and Mix_Even: ahead on Acc_w, Loss_w and Std, per seed.")
t3_drfa_beats_afl = _ordering(
    "t3_drfa_beats_afl", "table3", [("drfa_prox", "afl")], ("acc_w",),
    "DRFA-Prox outperforms AFL on Acc_w, per seed (the paper's own Table 3 has AFL ahead on Std on Person Activity "
    "and SC-MA and on Loss_w on Person Activity).")
t3_aspire_beats_baselines = _ordering(
    "t3_aspire_beats_baselines", "table3", [("aspire", b) for b in BASELINES], ("acc_w", "loss_w"),
    "ASPIRE-EASE's robustness: ahead of Mix_Even, FedAvg, AFL and DRFA-Prox on Acc_w and Loss_w, per seed.")
t3_aspire_lowest_std = _ordering(
    "t3_aspire_lowest_std", "table3", [("aspire", b) for b in BASELINES], ("acc_std",),
    "ASPIRE-EASE's Std below every baseline's, per seed.")


def _within_one_paper_std(name: str, a: str, b: str, ref: str | None, doc: str):
    """Per seed (a - b) on Acc_w and Loss_w in units of the std the paper prints for ``ref`` (the
    larger of a's and b's when ref is None) on this dataset; oriented as a's advantage."""
    def components(ds, fin):
        out = []
        for k in ("acc_w", "loss_w"):
            refs = (a, b) if ref is None else (ref,)
            sd = max(PAPER_TABLE3[m][ds][_PAPER_SD[k]] for m in refs)
            got = _components(fin, [(a, b)], (k,), {k: sd})
            if isinstance(got, NotTestable):
                return got
            out += got
        return out
    return _swept(name, "table3", components, doc)


t3_fedavg_mix_even = _within_one_paper_std(
    "t3_fedavg_mix_even", "fedavg_steps", "mix_even", None,
    "FedAvg ≈ Mix_Even: the per-seed differences of Acc_w and Loss_w in units of the larger std the paper prints "
    "for the two rows on this dataset (compare approx 0 ± 1).")
t3_per_within = _within_one_paper_std(
    "t3_per_within", "aspire_per", "aspire", "aspire",
    "ASPIRE-EASE_per also performs well: its per-seed advantage over ASPIRE-EASE on Acc_w and Loss_w in units of "
    "the std the paper prints for ASPIRE-EASE on this dataset (compare ge 0 - 1: not behind by more than one std).")


# ---- Table 4 ------------------------------------------------------------------------------------
t4_afl_highest = _ordering(
    "t4_afl_highest", "table4", [(b, "afl") for b in ("mix_even", "fedavg_steps", "drfa_prox", "aspire")],
    ("attack_success",), "AFL is attacked most easily: every other method's success rate below AFL's, per seed.")
t4_erm_below_afl = _ordering(
    "t4_erm_below_afl", "table4", [("fedavg_steps", "afl"), ("mix_even", "afl")], ("attack_success",),
    "FedAvg and Mix_Even below AFL, per seed.")
t4_drfa_below_erm = _ordering(
    "t4_drfa_below_erm", "table4", [("drfa_prox", "fedavg_steps"), ("drfa_prox", "mix_even")], ("attack_success",),
    "DRFA-Prox below FedAvg and Mix_Even, per seed.")
t4_aspire_lowest = _ordering(
    "t4_aspire_lowest", "table4", [("aspire", b) for b in ("mix_even", "fedavg_steps", "afl", "drfa_prox")],
    ("attack_success",), "ASPIRE-EASE below every other method, per seed.")
t4_ordering = _ordering(
    "t4_ordering", "table4", [("fedavg_steps", "afl"), ("mix_even", "afl"), ("drfa_prox", "fedavg_steps"),
                              ("drfa_prox", "mix_even"), ("aspire", "drfa_prox")], ("attack_success",),
    "Table 4's ordering on every dataset, AFL > {FedAvg, Mix_Even} > DRFA-Prox > ASPIRE-EASE (FedAvg vs Mix_Even "
    "changes sign across the paper's datasets: not compared), per seed.")



def _malicious_weight(name: str, alg: str, higher: bool, doc: str):
    """Per seed, the malicious worker's final weight (ASPIRE's pi, AFL's and DRFA-Prox's lambda; it is the
    last worker, added by the backdoor attack) against the equal weight 1/N that FedAvg and Mix_Even give
    it (N workers with it): w - 1/N when the paper says higher, 1/N - w when it says lower; > 0."""
    def check(frames, summaries):
        ds, df = _one(frames, "table4")
        if df is None:
            return None
        sub = finals(df)
        sub = sub[sub["algorithm"] == alg]
        col = "pi_last" if alg in SWEPT else "lambda_last"
        if sub.empty or col not in sub or not sub[col].notna().all():
            return None
        w, equal = sub.set_index("seed")[col].astype(float), 1.0 / sub.set_index("seed")["m"].astype(float)
        vals = (w - equal) if higher else (equal - w)
        rel = "above" if higher else "below"
        return Outcome(Replicates(vals.to_numpy(float), label=f"{METHODS[alg]}: malicious worker's weight {rel} 1/N"),
                       detail="per seed weight " + ", ".join(f"{v:.3f}" for v in w) + f" (1/N = {float(equal.iloc[0]):.3f})")
    return _named(check, name, doc)


t4_afl_weights_malicious_higher = _malicious_weight(
    "t4_afl_weights_malicious_higher", "afl", True, "AFL's final weight on the malicious worker above 1/N, per seed.")
t4_drfa_weights_malicious_lower = _malicious_weight(
    "t4_drfa_weights_malicious_lower", "drfa_prox", False,
    "DRFA-Prox's final weight on the malicious worker below 1/N, per seed.")
t4_aspire_weights_malicious_lower = _malicious_weight(
    "t4_aspire_weights_malicious_lower", "aspire", False,
    "ASPIRE-EASE's final weight on the malicious worker below 1/N, per seed.")

# ---- Fig. 3 -------------------------------------------------------------------------------------
def _f3(frames):
    ds, df = _one(frames, "fig3")
    if df is None:
        return None, None, None
    fin = finals(df)
    fin = fin.assign(Gamma=param(fin, "Gamma").astype(float))
    return ds, fin, int(fin["m"].iloc[0])


def _gamma_adv(fin, g_hi, g_lo, metric):
    x = fin[fin["Gamma"] == g_hi].set_index("seed")[metric]
    y = fin[fin["Gamma"] == g_lo].set_index("seed")[metric]
    seeds = sorted(set(x.index) & set(y.index))
    d = (x.loc[seeds] - y.loc[seeds]).to_numpy(dtype=float)
    if metric in LOWER_IS_BETTER:
        d = -d
    return Replicates(d, label=f"{NAMES[metric]}: Γ = {g_hi:g} ahead of Γ = {g_lo:g}")


def f3_enhanced(frames, summaries):
    """Robustness at the largest Γ <= N of the grid against Γ = 0: per seed Acc_w gain and Loss_w
    reduction (gt 0)."""
    ds, fin, N = _f3(frames)
    if fin is None:
        return None
    grid = sorted(g for g in fin["Gamma"].unique() if g <= N)
    if len(grid) < 2 or grid[0] != 0:
        return NotTestable(f"the Γ grid {grid} needs 0 and a positive value <= N = {N}")
    return [_gamma_adv(fin, grid[-1], 0.0, k) for k in ("acc_w", "loss_w")]


def f3_gradual(frames, summaries):
    """"Gradually enhanced": every step between consecutive grid values up to the saturation
    2 floor(N/2) (where the set still grows, AMBIG-23) gains Acc_w and reduces Loss_w, per seed."""
    ds, fin, N = _f3(frames)
    if fin is None:
        return None
    sat = 2 * (N // 2)
    grid = sorted(g for g in fin["Gamma"].unique() if g <= sat)
    if len(grid) < 3:
        return NotTestable(f"the Γ grid has {len(grid)} values in [0, {sat}]; a gradual trend needs >= 3")
    return [_gamma_adv(fin, hi, lo, k) for lo, hi in zip(grid, grid[1:]) for k in ("acc_w", "loss_w")]


def f3_gamma0_is_mix_even(frames, summaries):
    """Identity of our code: Γ = 0 runs equal Mix_Even's Table 3 runs of the same seeds (the same
    rule with Γ = 0): bit-identical final Acc_w and Loss_w."""
    ds, _ = _one(frames, "fig3")
    t3 = frames.get(f"table3_{ds}") if ds else None
    if ds is None or t3 is None:
        return None
    f3 = finals(frames[f"fig3_{ds}"])
    g0 = f3[param(f3, "Gamma") == 0].set_index("seed")
    me = finals(t3)
    me = me[me["algorithm"] == "mix_even"].set_index("seed")
    common = sorted(set(g0.index) & set(me.index))
    if not common:
        return NotTestable("no seed is shared by the Γ = 0 runs and Mix_Even's runs")
    diff = max(max(abs(g0.loc[s, "acc_w"] - me.loc[s, "acc_w"]), abs(g0.loc[s, "loss_w"] - me.loc[s, "loss_w"]))
               for s in common)
    return Outcome(diff == 0.0, why=f"largest difference {diff:.3g} over {len(common)} seeds",
                   detail=f"{len(common)} seeds, largest difference {diff:.3g}")


def f3_plateau(frames, summaries):
    """Identity of our code: beyond the saturation value 2 floor(N/2) (uniform q, ptilde = q:
    AMBIG-23) a larger Γ changes nothing: the runs at the grid's values >= saturation are identical."""
    ds, fin, N = _f3(frames)
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
            rows.append(f"N={N}, p̃={s:g}q: " + (f"constant from Γ = {flat[0] - 0.25:g}" if flat.size else "grows to N"))
            out.append(Replicates([float(growth.min())], label=f"N = {N}, p̃ = {s:g} q: least growth per ΔΓ = 0.25",
                                  deterministic=True))
    return Outcome(out, detail="; ".join(rows))


# ---- Figs. 4-5 ----------------------------------------------------------------------------------
def seed_times_to_target(df: pd.DataFrame, metric: str = "loss_w") -> pd.DataFrame:
    """Per seed: target = the final ``metric`` of that seed's worst method; per method the first
    virtual time its run is at or below the target. Rows seed, columns methods; a seed whose target
    is not below the methods' common start (every run at time 0 already there) is dropped."""
    rows = {}
    for seed, sub in df.groupby("seed"):
        runs = {a: r.sort_values("virtual_time") for a, r in sub.groupby("algorithm")}
        target = max(float(r[metric].iloc[-1]) for r in runs.values())
        start = max(float(r[metric].iloc[0]) for r in runs.values())
        if not target < start:
            continue
        rows[seed] = {a: float(r.loc[r[metric] <= target, "virtual_time"].iloc[0]) for a, r in runs.items()}
    return pd.DataFrame.from_dict(rows, orient="index")


def _time_ratios(frames, pairs):
    ds, df = _one(frames, "fig4")
    if df is None:
        return None
    t = seed_times_to_target(df)
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


def f5_ease_fewer_planes(frames, summaries):
    """ASPIRE-EASE keeps fewer cutting planes than ASPIRE-CP: per seed, mean |A^t| over the evaluated
    iterations, CP minus EASE (gt 0)."""
    ds, df = _one(frames, "fig4")
    if df is None:
        return None
    m = df[df["algorithm"].isin(["aspire", "aspire_cp"])].groupby(["seed", "algorithm"])["n_planes"].mean().unstack()
    if set(m.columns) != {"aspire", "aspire_cp"}:
        return NotTestable("ASPIRE-EASE or ASPIRE-CP did not run")
    m = m.dropna()
    return Replicates((m["aspire_cp"] - m["aspire"]).to_numpy(), label="mean |A^t|: ASPIRE-CP minus ASPIRE-EASE")


# ---- Fig. 2 -------------------------------------------------------------------------------------
def f2_adp_adapts(frames, summaries):
    """ASPIRE-ADP adjusts S to the straggler (text rule, AMBIG-4): per seed, the mean S before the
    episode minus the mean S during it, and the S at the end of the run minus the mean S during it
    (gt 0: S = N with similar delays, fewer active workers while worker 3 straggles)."""
    df = frames["fig2"]
    spec = json.loads(df["delays"].iloc[0])
    (t0, t1), = [(e["start"], e["end"]) for e in spec["schedule"]]
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
    return Outcome(Replicates([g["wasserstein1"] - other.max()], deterministic=True,
                              label=f"growth exponent W1 minus {other.idxmax()}"),
                   detail=", ".join(f"{k} {v:.2f}" for k, v in g.items()))


def f1_four_sets_grow(frames, summaries):
    """KL, ellipsoid, polyhedron and W1 grow significantly with N: each one's growth exponent minus
    box / CD-norm's (n log n) (gt 0)."""
    static, f = _fig1()
    g = static.growth_exponents(f)
    ref = max(g["box"], g["cdnorm"])
    return [Replicates([g[s] - ref], deterministic=True, label=f"growth exponent {s} minus box/CD-norm's")
            for s in ("kl", "ellipsoid", "polyhedron", "wasserstein1")]


def f1_ellipsoid_m(frames, summaries):
    """The ellipsoid set's complexity increases with the number of constraints m: the ratio between
    consecutive m of Fig. 1 (b) at its smallest over N (gt 1, log scale)."""
    static, f = _fig1()
    b = f[f["panel"] == "b"].pivot(index="x", columns="m", values="complexity")
    ms = sorted(b.columns)
    return [Replicates([float((b[hi] / b[lo]).min())], scale="log", deterministic=True,
                       label=f"ellipsoid complexity m = {hi} / m = {lo}, smallest over N") for lo, hi in zip(ms, ms[1:])]


def f1_eps_grows(frames, summaries):
    """KL, ellipsoid, polyhedron and W1 complexities increase when eps' decreases: complexity at
    eps' = 1e-10 over eps' = 1e-1 in Fig. 1 (c) (N = 10) and (d) (N = 100) (gt 1, log scale)."""
    static, f = _fig1()
    out = []
    for panel in "cd":
        sub = f[f["panel"] == panel]
        for s in ("kl", "ellipsoid", "polyhedron", "wasserstein1"):
            g = sub[sub["set"] == s].sort_values("x")
            out.append(Replicates([float(g["complexity"].iloc[0] / g["complexity"].iloc[-1])], scale="log",
                                  deterministic=True, label=f"{s}, N = {int(g['N'].iloc[0])}: eps' 1e-10 over 1e-1"))
    return out


def f1_box_cdnorm_cheapest(frames, summaries):
    """Box and CD-norm are the most efficient, especially for large N: at N = 100 every other set's
    complexity over theirs (gt 1), and that ratio at N = 100 over the ratio at N = 10 (gt 1)."""
    static, f = _fig1()
    a = f[f["panel"] == "a"].pivot(index="x", columns="set", values="complexity")
    cheap = a[["box", "cdnorm"]].max(axis=1)
    others = [s for s in a.columns if s not in ("box", "cdnorm")]
    ratio = a[others].min(axis=1) / cheap
    return [Replicates([float(ratio.loc[100])], scale="log", deterministic=True,
                       label="cheapest other set over box/CD-norm at N = 100"),
            Replicates([float(ratio.loc[100] / ratio.loc[10])], scale="log", deterministic=True,
                       label="that ratio at N = 100 over N = 10")]


# ---- parameter echoes (kind: check) -------------------------------------------------------------
def s_is_one(frames, summaries):
    """Parameter echo: every ASPIRE-EASE run of the experiment has S = 1."""
    ds, df = _one(frames, "table3")
    if df is None:
        return None
    fin = finals(df)
    S = param(fin[fin["algorithm"] == "aspire"], "S", 1)
    return Outcome(bool((S == 1).all()) and len(S) > 0, why=f"S values {sorted(set(S))}")


CHECKS = {f.__name__: f for f in (
    t3_ind_worst, t3_erm_beats_ind, t3_afl_beats_erm, t3_drfa_beats_afl, t3_aspire_beats_baselines,
    t3_aspire_lowest_std, t3_fedavg_mix_even, t3_per_within, t4_afl_highest, t4_erm_below_afl, t4_drfa_below_erm,
    t4_aspire_lowest, t4_ordering, t4_afl_weights_malicious_higher, t4_drfa_weights_malicious_lower,
    t4_aspire_weights_malicious_lower, f3_enhanced, f3_gradual, f3_gamma0_is_mix_even, f3_plateau, f3_set_grows,
    f4_aspire_fastest, f4_async_gain, f4_ease_before_cp, f5_ease_fewer_planes, f2_adp_adapts, f1_w1_fastest,
    f1_four_sets_grow, f1_ellipsoid_m, f1_eps_grows, f1_box_cdnorm_cheapest, s_is_one)}
