"""Checks of FedEPM's claims (spec 001 Sec. 6); each returns OUR value as replicates.

``frames``/``summaries`` map experiment id to the tidy trace / per-run summary frames
(:mod:`fedrepro.papers.fedepm.figures` documents the run quantities CR, TCT, LCT, SNR), and
``summaries["<exp>.timing"]`` to the timing pass of an experiment (every cell re-run with the same
seed, one row per cell and repetition ``repeat``).

Replicates:

- round counts, objectives and SNR: one value per trial (instance), PAIRED by instance where the
  claim compares algorithms or settings (a trial's partition is shared by the three algorithms and,
  being seeded by the instance, by every k0 / rho / epsilon of an experiment);
- CPU times (TCT, LCT): one value per timing repetition; within a repetition the cells' times are
  first averaged (Table I, Fig. 3: "the average results") or their median taken (Figs. 4, 5: box
  plots) over the build's trials, so the interval covers the timing noise of that fixed set of
  trials (the trials' own spread is not in it). Ratios and CPU times are on the log scale.

Runs that hit the 500-round cap are bounds (their CR and times are at least the recorded ones);
the flags follow them through differences, means, medians and fitted trends.

Every check returns None (or :class:`NotTestable` naming the missing input) when its data is absent.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from fedrepro.claims import NotTestable, Outcome
from fedrepro.claims.verdicts import Replicates
from fedrepro.papers.fedepm.analysis import run_table

BASELINES = ("sfedavg", "sfedprox")
ALGS = ("sfedavg", "sfedprox", "fedepm")
NAMES = {"sfedavg": "SFedAvg", "sfedprox": "SFedProx", "fedepm": "FedEPM"}
FIG2_K0 = (4, 12, 20)


def _table(summaries, exp):
    s = summaries.get(exp)
    if s is None or s.empty:
        return None
    return run_table(s)


def _timing(summaries, exp):
    """The timing pass of ``exp`` with CR, TCT (CPU s), LCT (client CPU s per round) and ``capped``;
    NotTestable when the build has no timing pass for it."""
    s = summaries.get(f"{exp}.timing")
    if s is None or s.empty:
        return NotTestable(f"no timing pass for {exp} (results/fedepm/{exp}.timing.parquet, written when the "
                           f"experiment sets timing_repeats: scale verify)")
    t = s.copy()
    t["CR"] = t["rounds"].astype(int)
    t["TCT"] = t["run_cpu_time"].astype(float)
    t["LCT"] = t["run_local_cpu_time"].astype(float) / t["CR"].clip(lower=1)
    t["capped"] = t["status"] == "max_rounds"
    if t["repeat"].nunique() < 2:
        return NotTestable(f"the timing pass of {exp} has {t['repeat'].nunique()} repetition: needs >= 2")
    return t


def _key(v):
    return int(v) if float(v).is_integer() else float(v)


def _fmt_setting(names, values):
    values = values if isinstance(values, tuple) else (values,)
    return " ".join(NAMES.get(v, str(v)) if n == "algorithm" else f"{n}={_key(v):g}" for n, v in zip(names, values))


# ---- per-trial (paired) replicates ------------------------------------------------------------------
def _paired_diff(t, by, key, a, others, label, bound_aware=True):
    """One Replicates per setting of ``by``: per instance, ``key`` of algorithm ``a`` minus the smallest
    ``key`` of ``others`` (paired by instance). A capped run's CR is a lower bound: capped ``a`` makes
    the difference a lower bound, a capped minimum of ``others`` an upper bound."""
    reps = []
    for setting, g in t.groupby(list(by)):
        v = g.pivot_table(index="instance", columns="algorithm", values=key, aggfunc="first")
        c = g.pivot_table(index="instance", columns="algorithm", values="capped", aggfunc="first")
        if not all(x in v.columns for x in (a, *others)):
            continue
        ok = v[[a, *others]].notna().all(axis=1)
        v, c = v[ok], c[ok].astype(bool)
        if v.empty:
            continue
        best = v[list(others)].idxmin(axis=1)
        other = v[list(others)].min(axis=1)
        d = v[a] - other
        lo = c[a].to_numpy() if bound_aware else None
        hi = np.array([c.loc[i, b] for i, b in best.items()]) if bound_aware else None
        reps.append(Replicates(d.to_numpy(float), label=f"{label}, {_fmt_setting(by, setting)}",
                               lower_bound=lo, upper_bound=hi))
    return reps


def _fitted_ratio(x, y, capped=None):
    """exp(slope * (max x - min x)) of a least-squares line through (x, log y): the trend's ratio from
    the smallest to the largest x, using every point. Returns (ratio, lower_bound, upper_bound): a
    capped point (y a lower bound) right of the mean x makes the ratio a lower bound, left of it an
    upper bound."""
    x, y = np.asarray(x, float), np.log(np.asarray(y, float))
    xc = x - x.mean()
    b = float((xc * (y - y.mean())).sum() / (xc ** 2).sum())
    lo = hi = False
    if capped is not None:
        capped = np.asarray(capped, bool)
        lo, hi = bool((capped & (xc > 0)).any()), bool((capped & (xc < 0)).any())
    return float(np.exp(b * (x.max() - x.min()))), lo, hi


def _trend_per_trial(t, group, x, key, label):
    """One Replicates per ``group`` setting: per instance, the fitted ratio of ``key`` from the smallest
    to the largest ``x`` (all instances with every x)."""
    reps, detail = [], []
    xs = sorted(t[x].unique())
    for setting, g in t.groupby(list(group)):
        v = g.pivot_table(index="instance", columns=x, values=key, aggfunc="first").dropna()
        c = g.pivot_table(index="instance", columns=x, values="capped", aggfunc="first").reindex(v.index).astype(bool)
        if v.empty or v.shape[1] < 2:
            continue
        fits = [_fitted_ratio(v.columns.to_numpy(float), v.loc[i].to_numpy(float), c.loc[i].to_numpy()) for i in v.index]
        reps.append(Replicates([f[0] for f in fits], label=f"{label}, {_fmt_setting(group, setting)}", scale="log",
                               lower_bound=[f[1] for f in fits], upper_bound=[f[2] for f in fits]))
        means = v.mean()
        detail.append(f"{_fmt_setting(group, setting)}: mean {key} " + "/".join(f"{means[k]:.1f}" for k in xs if k in means))
    return reps, detail


# ---- per-repetition replicates (timing pass) ---------------------------------------------------------
def _per_repeat(tt, by, key, stat="mean"):
    """(by..., algorithm, repeat) -> mean (or median) over the build's trials of ``key``, and whether a
    capped run is among them (then the statistic is a lower bound)."""
    g = tt.groupby(list(by) + ["algorithm", "repeat"])
    val = g[key].mean() if stat == "mean" else g[key].median()
    return val, g["capped"].any()


def _ratio_reps(val, cap, num, den, label):
    """Replicates over repetitions of val[num] / val[den] (index tuples without 'repeat'); ``den`` may be a
    list of alternatives, the smallest per repetition is taken. A capped run among the numerator's trials
    makes the ratio a lower bound, among the denominators' an upper bound."""
    dens = den if isinstance(den, list) else [den]
    a = val.loc[num]
    d = pd.concat([val.loc[x] for x in dens], axis=1).min(axis=1)
    a, d = a.align(d, join="inner")
    lo = cap.loc[num].reindex(a.index).to_numpy(bool)
    hi = pd.concat([cap.loc[x] for x in dens], axis=1).any(axis=1).reindex(a.index).to_numpy(bool)
    return Replicates((a / d).to_numpy(float), label=label, scale="log", lower_bound=lo, upper_bound=hi)


def _timing_claim_detail(tt, exp):
    return f"{exp} timing pass: {tt['repeat'].nunique()} repetitions of {tt['cell'].nunique()} cells"


# ---- fig3 / fig2: rounds and objectives --------------------------------------------------------------
def fewest_cr_every_k0(frames, summaries):
    """Per trial, FedEPM's CR minus the smaller of the baselines' CRs, at every (m, k0) of fig3."""
    t = _table(summaries, "fig3")
    if t is None:
        return None
    return _paired_diff(t, ["m", "k0"], "CR", "fedepm", BASELINES, "FedEPM - min(baselines) CR") or None


def fewest_cr_fig2_panels(frames, summaries):
    """As :func:`fewest_cr_every_k0` on the Fig. 2 panels (m in {50, 100}, k0 in {4, 12, 20})."""
    t = _table(summaries, "fig3")
    if t is None:
        return None
    t = t[t["k0"].isin(FIG2_K0)]
    return _paired_diff(t, ["m", "k0"], "CR", "fedepm", BASELINES, "FedEPM - min(baselines) CR") or None


def sfedprox_fewer_cr_than_sfedavg(frames, summaries):
    """Per trial, SFedProx's CR minus SFedAvg's, at every (m, k0) of fig3."""
    t = _table(summaries, "fig3")
    if t is None:
        return None
    return _paired_diff(t, ["m", "k0"], "CR", "sfedprox", ("sfedavg",), "SFedProx - SFedAvg CR") or None


def cr_falls_with_k0(frames, summaries):
    """Per trial, CR at k0 = 20 over CR at k0 = 4 (the ends of Fig. 3's grid), for every algorithm and m: the
    reading first registered (mean CR at k0 = 20 below k0 = 4), paired by trial; a capped run is a bound."""
    t = _table(summaries, "fig3")
    if t is None:
        return None
    lo_k, hi_k = min(t["k0"].unique()), max(t["k0"].unique())
    reps, detail = [], []
    for setting, g in t.groupby(["algorithm", "m"]):
        v = g.pivot_table(index="instance", columns="k0", values="CR", aggfunc="first")
        c = g.pivot_table(index="instance", columns="k0", values="capped", aggfunc="first").reindex(v.index)
        if lo_k not in v or hi_k not in v:
            continue
        ok = v[[lo_k, hi_k]].notna().all(axis=1)
        v, c = v[ok], c[ok].fillna(False).astype(bool)
        if v.empty:
            continue
        ratio = (v[hi_k] / v[lo_k]).to_numpy(float)
        reps.append(Replicates(ratio, label=f"CR(k0={hi_k})/CR(k0={lo_k}), {_fmt_setting(['algorithm', 'm'], setting)}",
                               scale="log", lower_bound=c[hi_k].to_numpy(), upper_bound=c[lo_k].to_numpy()))
        means = g.groupby("k0")["CR"].mean()
        detail.append(f"{_fmt_setting(['algorithm', 'm'], setting)}: mean CR " + "/".join(f"{means[k]:.1f}" for k in sorted(means.index)))
    return Outcome(reps, detail="k0 = " + "/".join(str(k) for k in sorted(t["k0"].unique())) + "; " + "; ".join(detail)) \
        if reps else None


def final_objective_spread(frames, summaries):
    """Per trial, max - min of the three algorithms' final f/m (each run stopped by its own code stop
    rule), on each Fig. 2 panel (m in {50, 100}, k0 in {4, 12, 20})."""
    t = _table(summaries, "fig3")
    if t is None:
        return None
    t = t[t["k0"].isin(FIG2_K0)]
    reps, detail = [], []
    for (m, k0), g in t.groupby(["m", "k0"]):
        f = g.pivot_table(index="instance", columns="algorithm", values="f_over_m").dropna()
        if f.empty or not all(a in f for a in ALGS):
            continue
        reps.append(Replicates((f.max(axis=1) - f.min(axis=1)).to_numpy(float), label=f"spread of final f/m, m={m} k0={k0}"))
        detail.append(f"m={m} k0={k0}: mean final f/m " + ", ".join(f"{NAMES[a]} {f[a].mean():.4f}" for a in ALGS))
    return Outcome(reps, detail="; ".join(detail)) if reps else None


def fedepm_declines_fastest(frames, summaries):
    """Per trial and Fig. 2 panel: the smaller baseline f/m at the round where FedEPM stopped, minus
    FedEPM's final f/m (positive: FedEPM's curve is below both baselines' there)."""
    tr = frames.get("fig3")
    t = _table(summaries, "fig3")
    if tr is None or tr.empty or t is None or "round" not in tr:
        return None
    f = tr["objective_per_client"] if "objective_per_client" in tr else tr["objective"] / tr["m"]
    tr = tr.assign(f_over_m=f)
    reps = []
    for (m, k0), g in t[t["k0"].isin(FIG2_K0)].groupby(["m", "k0"]):
        vals = []
        for inst, gi in g.groupby("instance"):
            runs = gi.set_index("algorithm")
            if not all(a in runs.index for a in ALGS):
                continue
            r = int(runs.loc["fedepm", "CR"])
            at = []
            for b in BASELINES:
                tb = tr[tr["cell"] == runs.loc[b, "cell"]]
                tb = tb[tb["round"] <= r].sort_values("round")
                at.append(float(tb["f_over_m"].iloc[-1]))
            vals.append(min(at) - float(runs.loc["fedepm", "f_over_m"]))
        if vals:
            reps.append(Replicates(vals, label=f"min(baselines) f/m at FedEPM's final round - FedEPM's, m={m} k0={k0}"))
    return reps or None


def fedepm_final_objective_m50(frames, summaries):
    """Per trial, FedEPM's final f/m at m = 50 averaged over the trial's k0 runs."""
    t = _table(summaries, "fig3")
    if t is None:
        return None
    x = t[(t["algorithm"] == "fedepm") & (t["m"] == 50)].groupby("instance")["f_over_m"].mean()
    return Replicates(x.to_numpy(float), label="FedEPM final f/m, m=50 (mean over k0 per trial)") if len(x) else None


def capped_runs_fig3(frames, summaries):
    """No fig3 run hit the 500-round cap (a configuration check: with the code stop rules every run
    stops by its rule)."""
    t = _table(summaries, "fig3")
    if t is None:
        return None
    n = int(t["capped"].sum())
    return Outcome(n == 0, why=f"{n} of {len(t)} fig3 runs hit the cap" if n else "")


# ---- fig3 TCT and Table I LCT: timing pass of table1 --------------------------------------------------
# Table I and Fig. 3 are the same runs in the paper (MATLAB, one client at a time); our table1 experiment
# is the fig3 grid with that sequential client loop, so its timing pass decides both figures' CPU times.
def _fig3_tct(summaries):
    tt = _timing(summaries, "table1")
    if isinstance(tt, NotTestable):
        return tt, None, None
    val, cap = _per_repeat(tt, ["m", "k0"], "TCT")
    return tt, val, cap


def lowest_tct_every_k0(frames, summaries):
    """Per timing repetition, FedEPM's mean TCT over the smaller baseline mean TCT, at every (m, k0)."""
    tt, val, cap = _fig3_tct(summaries)
    if val is None:
        return tt
    reps = [_ratio_reps(val, cap, (m, k0, "fedepm"), [(m, k0, b) for b in BASELINES],
                        f"FedEPM / min(baselines) mean TCT, m={m} k0={k0}")
            for m, k0 in sorted({(m, k) for m, k, _, _ in val.index})]
    return Outcome(reps, detail=_timing_claim_detail(tt, "table1"))


def tct_falls_with_k0(frames, summaries):
    """Per timing repetition, the fitted ratio k0 = 20 vs 4 of the mean TCT (least squares of log mean
    TCT on k0 over the five k0), for every algorithm and m."""
    tt, val, cap = _fig3_tct(summaries)
    if val is None:
        return tt
    reps, detail = [], []
    df = val.rename("TCT").reset_index().merge(cap.rename("capped").reset_index())
    for (alg, m), g in df.groupby(["algorithm", "m"]):
        fits = []
        for _, gr in g.groupby("repeat"):
            gr = gr.sort_values("k0")
            fits.append(_fitted_ratio(gr["k0"], gr["TCT"], gr["capped"]))
        reps.append(Replicates([f[0] for f in fits], label=f"fitted mean TCT(k0=20)/TCT(k0=4), {NAMES[alg]} m={m}",
                               scale="log", lower_bound=[f[1] for f in fits], upper_bound=[f[2] for f in fits]))
        means = g.groupby("k0")["TCT"].mean()
        detail.append(f"{NAMES[alg]} m={m}: mean TCT " + "/".join(f"{v:.3g}" for v in means) + " s")
    return Outcome(reps, detail=_timing_claim_detail(tt, "table1") + "; k0 = 4..20; " + "; ".join(detail))


def _lct(summaries):
    tt = _timing(summaries, "table1")
    if isinstance(tt, NotTestable):
        return tt, None, None
    val, cap = _per_repeat(tt, ["m", "k0"], "LCT")
    return tt, val, cap


def _settings(val):
    return sorted({(m, k) for m, k, _, _ in val.index})


def fedepm_lowest_lct_every_k0(frames, summaries):
    """Per repetition, FedEPM's mean LCT over the smaller baseline mean LCT, at every (m, k0)."""
    tt, val, cap = _lct(summaries)
    if val is None:
        return tt
    return Outcome([_ratio_reps(val, cap, (m, k0, "fedepm"), [(m, k0, b) for b in BASELINES],
                                f"FedEPM / min(baselines) LCT, m={m} k0={k0}") for m, k0 in _settings(val)],
                   detail=_timing_claim_detail(tt, "table1"))


def sfedprox_above_sfedavg_lct(frames, summaries):
    """Per repetition, SFedProx's mean LCT over SFedAvg's, at every (m, k0)."""
    tt, val, cap = _lct(summaries)
    if val is None:
        return tt
    return Outcome([_ratio_reps(val, cap, (m, k0, "sfedprox"), (m, k0, "sfedavg"),
                                f"SFedProx / SFedAvg LCT, m={m} k0={k0}") for m, k0 in _settings(val)],
                   detail=_timing_claim_detail(tt, "table1"))


def lct_m100_over_m50(frames, summaries):
    """Per repetition, LCT at m = 100 over LCT at m = 50, for every (k0, algorithm)."""
    tt, val, cap = _lct(summaries)
    if val is None:
        return tt
    ks = sorted({k for m, k in _settings(val) if m == 100} & {k for m, k in _settings(val) if m == 50})
    return Outcome([_ratio_reps(val, cap, (100, k0, a), (50, k0, a), f"{NAMES[a]} LCT m=100 / m=50, k0={k0}")
                    for k0 in ks for a in ALGS], detail=_timing_claim_detail(tt, "table1")) if ks else None


def _one_ratio(summaries, num, den, label):
    tt, val, cap = _lct(summaries)
    if val is None:
        return tt
    try:
        rep = _ratio_reps(val, cap, num, den, label)
    except KeyError:
        return None
    return Outcome(rep, detail=_timing_claim_detail(tt, "table1"))


def sfedprox_over_sfedavg_lct_m50(frames, summaries):
    """Per repetition, the mean over k0 of LCT(SFedProx)/LCT(SFedAvg) at m = 50 (paper 2.2-2.4)."""
    tt, val, cap = _lct(summaries)
    if val is None:
        return tt
    ks = [k for m, k in _settings(val) if m == 50]
    if not ks:
        return None
    r = pd.concat([val.loc[(50, k, "sfedprox")] / val.loc[(50, k, "sfedavg")] for k in ks], axis=1)
    c = pd.concat([cap.loc[(50, k, "sfedprox")] | cap.loc[(50, k, "sfedavg")] for k in ks], axis=1).any(axis=1)
    per_k = r.mean(axis=0)
    return Outcome(Replicates(r.mean(axis=1).to_numpy(float), label="mean over k0 of SFedProx/SFedAvg LCT, m=50",
                              scale="log", lower_bound=c.to_numpy(bool), upper_bound=c.to_numpy(bool)),
                   detail="per k0 " + "/".join(f"{v:.2f}" for v in per_k) + "; " + _timing_claim_detail(tt, "table1"))


def sfedavg_over_fedepm_lct_k4_m50(frames, summaries):
    return _one_ratio(summaries, (50, 4, "sfedavg"), (50, 4, "fedepm"), "SFedAvg / FedEPM LCT, m=50 k0=4")


def sfedavg_over_fedepm_lct_k20_m50(frames, summaries):
    return _one_ratio(summaries, (50, 20, "sfedavg"), (50, 20, "fedepm"), "SFedAvg / FedEPM LCT, m=50 k0=20")


def baseline_lct_growth_k20_over_k4_m50(frames, summaries):
    """Per repetition, LCT(k0=20)/LCT(k0=4) of SFedAvg at m = 50 (paper 0.0148/0.0037 = 4.0)."""
    return _one_ratio(summaries, (50, 20, "sfedavg"), (50, 4, "sfedavg"), "SFedAvg LCT k0=20 / k0=4, m=50")


def fedepm_lct_growth_k20_over_k4_m50(frames, summaries):
    """Per repetition, LCT(k0=20)/LCT(k0=4) of FedEPM at m = 50 (paper 0.0023/0.0011 = 2.09: grows slowly);
    the explanation gives FedEPM's CPU cost per client and local step."""
    out = _one_ratio(summaries, (50, 20, "fedepm"), (50, 4, "fedepm"), "FedEPM LCT k0=20 / k0=4, m=50")
    if not isinstance(out, Outcome):
        return out
    tt = _timing(summaries, "table1")
    val, _ = _per_repeat(tt, ["m", "k0"], "LCT")
    lct = val.groupby(level=["m", "k0", "algorithm"]).mean().unstack("algorithm")
    rho = float(tt["rho"].iloc[0]) if "rho" in tt else 0.5
    x = lct.xs(50, level="m")
    per_step = 1e6 * x["fedepm"] / (x.index.to_numpy() * np.ceil(rho * 50))
    avg = float(x.loc[20, "sfedavg"] / x.loc[4, "sfedavg"])
    why = (f"FedEPM's mean LCT grows x{float(x.loc[20, 'fedepm'] / x.loc[4, 'fedepm']):.2f} from k0 = 4 to 20 "
           f"(SFedAvg's x{avg:.2f}; paper x2.09 and x4.00): its client step costs {per_step.min():.0f}-"
           f"{per_step.max():.0f} CPU-us per client and local step at every k0 (a few numpy calls on a 14-vector: "
           f"interpreter overhead), so its LCT is linear in k0; in the paper's MATLAB timings it is mostly a "
           f"per-round constant (about 3 us per added client step)")
    return Outcome(out.value, why=why, detail=out.detail)


# ---- fig4 ---------------------------------------------------------------------------------------------
def cr_falls_with_rho(frames, summaries):
    """Per trial, the fitted CR ratio rho = 1 vs 0.2 (least squares of log CR on rho), every algorithm."""
    t = _table(summaries, "fig4")
    if t is None:
        return None
    reps, detail = _trend_per_trial(t, ["algorithm"], "rho", "CR", "fitted CR(rho=1)/CR(rho=0.2)")
    return Outcome(reps, detail="rho = " + "/".join(f"{r:g}" for r in sorted(t["rho"].unique())) + "; "
                   + "; ".join(detail)) if reps else None


def _median_trend_reps(tt, x, label):
    val, cap = _per_repeat(tt, [x], "TCT", stat="median")
    df = val.rename("TCT").reset_index().merge(cap.rename("capped").reset_index())
    reps, detail = [], []
    for alg, g in df.groupby("algorithm"):
        fits = [_fitted_ratio(gr.sort_values(x)[x], gr.sort_values(x)["TCT"], gr.sort_values(x)["capped"])
                for _, gr in g.groupby("repeat")]
        reps.append(Replicates([f[0] for f in fits], label=f"{label}, {NAMES[alg]}", scale="log",
                               lower_bound=[f[1] for f in fits], upper_bound=[f[2] for f in fits]))
        med = g.groupby(x)["TCT"].mean()
        detail.append(f"{NAMES[alg]}: median TCT " + "/".join(f"{v:.3g}" for v in med) + " s")
    return reps, detail


def tct_rises_with_rho(frames, summaries):
    """Per timing repetition of fig4, the fitted ratio rho = 1 vs 0.2 of the median TCT over trials."""
    tt = _timing(summaries, "fig4")
    if isinstance(tt, NotTestable):
        return tt
    reps, detail = _median_trend_reps(tt, "rho", "fitted median TCT(rho=1)/TCT(rho=0.2)")
    return Outcome(reps, detail=_timing_claim_detail(tt, "fig4") + "; " + "; ".join(detail))


def fedepm_lowest_cr_rho(frames, summaries):
    """Per trial, FedEPM's CR minus the smaller baseline CR, at every rho of fig4."""
    t = _table(summaries, "fig4")
    return None if t is None else (_paired_diff(t, ["rho"], "CR", "fedepm", BASELINES, "FedEPM - min(baselines) CR")
                                   or None)


def _lowest_median_tct(summaries, exp, x):
    tt = _timing(summaries, exp)
    if isinstance(tt, NotTestable):
        return tt
    val, cap = _per_repeat(tt, [x], "TCT", stat="median")
    xs = sorted({v for v, _, _ in val.index})
    return Outcome([_ratio_reps(val, cap, (v, "fedepm"), [(v, b) for b in BASELINES],
                                f"FedEPM / min(baselines) median TCT, {x}={v:g}") for v in xs],
                   detail=_timing_claim_detail(tt, exp))


def fedepm_lowest_tct_rho(frames, summaries):
    """Per timing repetition of fig4, FedEPM's median TCT over the smaller baseline median, every rho."""
    return _lowest_median_tct(summaries, "fig4", "rho")


# ---- fig5 ---------------------------------------------------------------------------------------------
def snr_increases_with_epsilon(frames, summaries):
    """Per trial, SNR at each epsilon minus SNR at the next smaller one, for every algorithm."""
    t = _table(summaries, "fig5")
    if t is None:
        return None
    eps = sorted(t["epsilon"].unique())
    reps = []
    for alg, g in t.groupby("algorithm"):
        v = g.pivot_table(index="instance", columns="epsilon", values="SNR", aggfunc="first").dropna()
        for a, b in zip(eps[:-1], eps[1:]):
            reps.append(Replicates((v[b] - v[a]).to_numpy(float), label=f"{NAMES[alg]} SNR eps {a:g} -> {b:g}"))
    return reps or None


def fedepm_smallest_snr(frames, summaries):
    """Per trial, FedEPM's SNR minus the smaller baseline SNR, at every epsilon."""
    t = _table(summaries, "fig5")
    return None if t is None else (_paired_diff(t, ["epsilon"], "SNR", "fedepm", BASELINES,
                                                "FedEPM - min(baselines) SNR", bound_aware=False) or None)


def fedepm_lowest_cr_epsilon(frames, summaries):
    """Per trial, FedEPM's CR minus the smaller baseline CR, at every epsilon."""
    t = _table(summaries, "fig5")
    return None if t is None else (_paired_diff(t, ["epsilon"], "CR", "fedepm", BASELINES,
                                                "FedEPM - min(baselines) CR") or None)


def fedepm_lowest_tct_epsilon(frames, summaries):
    """Per timing repetition of fig5, FedEPM's median TCT over the smaller baseline median, every epsilon."""
    return _lowest_median_tct(summaries, "fig5", "epsilon")


def cr_trend_over_epsilon(frames, summaries):
    """Per trial, the fitted CR ratio epsilon = 0.9 vs 0.1 (least squares of log CR on epsilon)."""
    t = _table(summaries, "fig5")
    if t is None:
        return None
    reps, detail = _trend_per_trial(t, ["algorithm"], "epsilon", "CR", "fitted CR(eps=0.9)/CR(eps=0.1)")
    return Outcome(reps, detail="; ".join(detail)) if reps else None


def tct_trend_over_epsilon(frames, summaries):
    """Per timing repetition of fig5, the fitted ratio epsilon = 0.9 vs 0.1 of the median TCT."""
    tt = _timing(summaries, "fig5")
    if isinstance(tt, NotTestable):
        return tt
    reps, detail = _median_trend_reps(tt, "epsilon", "fitted median TCT(eps=0.9)/TCT(eps=0.1)")
    return Outcome(reps, detail=_timing_claim_detail(tt, "fig5") + "; " + "; ".join(detail))


# ---- variants (fidelity checks of spec 7-A4 / 7-A9 / 7-A13) ---------------------------------------------
def _variant_runs(summaries, exp, alg, **settings):
    t = _table(summaries, exp)
    if t is None:
        return None
    t = t[t["algorithm"] == alg]
    for k, v in settings.items():
        if k not in t:
            return None
        t = t[t[k] == v]
    return t if len(t) else None


def mu_paper_final_objective(frames, summaries):
    """Per trial, FedEPM's final f/m with the paper-literal mu scaling (corrected ENS)."""
    t = _variant_runs(summaries, "variants", "fedepm", mu_scaling="paper", ens_sign="corrected")
    return None if t is None else Replicates(t.sort_values("instance")["f_over_m"].to_numpy(float),
                                             label="FedEPM final f/m, mu_scaling paper")


def aggregate_new_cr_ratio(frames, summaries):
    """Per trial, SFedAvg's CR with literal eq. (34) (``new``) over the default (``previous``)."""
    new = _variant_runs(summaries, "variants", "sfedavg", aggregate_over="new")
    prev = _variant_runs(summaries, "variants", "sfedavg", aggregate_over="previous")
    if new is None or prev is None:
        return None
    a, b = new.set_index("instance"), prev.set_index("instance")
    idx = a.index.intersection(b.index)
    return Replicates((a.loc[idx, "CR"] / b.loc[idx, "CR"]).to_numpy(float), label="SFedAvg CR new / previous",
                      scale="log", lower_bound=a.loc[idx, "capped"].to_numpy(bool),
                      upper_bound=b.loc[idx, "capped"].to_numpy(bool))


def paper_stop_baselines_capped(frames, summaries):
    """Every baseline run hit the 500-round cap under the paper's stopping rules (no stop2)."""
    t = _table(summaries, "stop_paper")
    if t is None:
        return None
    t = t[t["algorithm"].isin(BASELINES)]
    if not len(t):
        return None
    return Outcome(bool(t["capped"].all()), why=f"{int(t['capped'].sum())} of {len(t)} baseline runs capped")


CHECKS = {f.__name__: f for f in [
    fewest_cr_every_k0, fewest_cr_fig2_panels, sfedprox_fewer_cr_than_sfedavg, cr_falls_with_k0,
    final_objective_spread, fedepm_declines_fastest, fedepm_final_objective_m50, capped_runs_fig3,
    lowest_tct_every_k0, tct_falls_with_k0,
    fedepm_lowest_lct_every_k0, sfedprox_above_sfedavg_lct, lct_m100_over_m50, sfedprox_over_sfedavg_lct_m50,
    sfedavg_over_fedepm_lct_k4_m50, sfedavg_over_fedepm_lct_k20_m50, baseline_lct_growth_k20_over_k4_m50,
    fedepm_lct_growth_k20_over_k4_m50,
    cr_falls_with_rho, tct_rises_with_rho, fedepm_lowest_cr_rho, fedepm_lowest_tct_rho,
    snr_increases_with_epsilon, fedepm_smallest_snr, fedepm_lowest_cr_epsilon, fedepm_lowest_tct_epsilon,
    cr_trend_over_epsilon, tct_trend_over_epsilon,
    mu_paper_final_objective, aggregate_new_cr_ratio, paper_stop_baselines_capped,
]}
