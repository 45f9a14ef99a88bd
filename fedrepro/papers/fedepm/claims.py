"""Checks of FedEPM's claims (spec 001 Sec. 6) that need code, on the query layer (:mod:`fedrepro.claims.query`);
the others are readings written as data in claims.yaml (``reading:``, on the view :func:`runs`). Replicates: per
trial (instance) for CR, objectives and SNR, PAIRED by instance (a trial's partition is shared by the algorithms
and every k0 / rho / epsilon); per trial too for CPU times (TCT, LCT: ``summaries["<exp>.timing"]``; the paper's
averages and box plots are over 100 trials, Sec. VII-C 2-4), each run's time the median over the timing pass's
repetitions (which only reduce timer noise within a trial: :func:`fedrepro.claims.query.per_instance`). Ratios
and CPU times are on the log scale; runs that hit the 500-round cap are bounds. A check returns None or
:class:`NotTestable` when its data is absent."""
from __future__ import annotations

import numpy as np
import pandas as pd

from fedrepro.claims import NotTestable, Outcome
from fedrepro.claims.query import (PerSeed, column, extreme, lowest_any, per_instance, select, settings, trends,
                                  value_at_each)
from fedrepro.papers.fedepm.analysis import run_table

BASELINES = ("sfedavg", "sfedprox")
ALGS = ("sfedavg", "sfedprox", "fedepm")
NAMES = {"sfedavg": "SFedAvg", "sfedprox": "SFedProx", "fedepm": "FedEPM"}
FIG2_K0 = (4, 12, 20)


def runs(frames, summaries):
    """The claim's runs (analysis.run_table: CR, capped, f_over_m, SNR): the frame of the readings as data."""
    parts = [run_table(s) for k, s in summaries.items() if not k.endswith(".timing") and s is not None and not s.empty]
    return pd.concat(parts, ignore_index=True) if parts else None


VIEWS = {"runs": runs}


def _table(summaries, exp):
    """The runs of ``exp`` (:func:`runs`), None without any."""
    return runs({}, {exp: summaries.get(exp)})


def _timing(summaries, exp, by, key):
    """``(what the timing pass of exp has, runs)``: per (by..., algorithm, instance) the median of ``key`` over the
    trial's timing repetitions (query.per_instance; ``capped``: the run hit the cap, its time a bound);
    ``(NotTestable, None)`` without a pass."""
    s = summaries.get(f"{exp}.timing")
    if s is None or s.empty:
        return NotTestable(f"no timing pass for {exp} (results/fedepm/{exp}.timing.parquet, written when the "
                           f"experiment sets timing_repeats: scale verify)"), None
    if s["repeat"].nunique() < 2:
        return NotTestable(f"the timing pass of {exp} has {s['repeat'].nunique()} repetition: needs >= 2"), None
    t = run_table(s.assign(objective_per_client=np.nan))      # CR, TCT, LCT and capped of the timed runs
    head = (f"{exp} timing pass: {t['repeat'].nunique()} repetitions of {t['cell'].nunique()} cells "
            f"({t['instance'].nunique()} trials, the replicates)")
    return head, per_instance(t, key, [*by, "algorithm"], capped="capped")


def _tag(setting):
    """``FedEPM m=50``: a setting as shown in a label (algorithms by name)."""
    return " ".join(NAMES[v] if k == "algorithm" else f"{k}={int(v) if float(v).is_integer() else float(v):g}"
                    for k, v in setting.items())


def _q(rows, key, by="instance", how="first", capped="capped", **where):
    """Per trial (or ``by`` repetition): ``how`` of ``key`` over the runs ``where``, capped ones making bounds."""
    return column(select(rows, **where), key, by=by, how=how, capped=capped)


# ---- fig3 / fig2: rounds and objectives (fewest CR: readings as data) -----------------------------------
def cr_falls_with_k0(frames, summaries):
    """Per trial, CR at k0 = 20 over CR at k0 = 4 (the ends of Fig. 3's grid), for every algorithm and m: the
    reading first registered (mean CR at k0 = 20 below k0 = 4), paired by trial; a capped run is a bound."""
    t = _table(summaries, "fig3")
    if t is None:
        return None
    lo_k, hi_k = min(t["k0"].unique()), max(t["k0"].unique())
    reps, detail = [], []
    for setting, g in settings(t, ["algorithm", "m"]):
        r = _q(g, "CR", k0=hi_k).ratio(_q(g, "CR", k0=lo_k)).rep(f"CR(k0={hi_k})/CR(k0={lo_k}), {_tag(setting)}", "log")
        if r is not None:
            reps.append(r)
            means = g.groupby("k0")["CR"].mean()
            detail.append(f"{_tag(setting)}: mean CR " + "/".join(f"{means[k]:.1f}" for k in sorted(means.index)))
    ks = "k0 = " + "/".join(str(k) for k in sorted(t["k0"].unique()))
    return Outcome(reps, detail=ks + "; " + "; ".join(detail)) if reps else None


def final_objective_spread(frames, summaries):
    """Per trial and Fig. 2 panel, max - min of the three algorithms' final f/m (each by its own stop rule)."""
    reps, detail = [], []
    for setting, g in settings(select(_table(summaries, "fig3"), k0=list(FIG2_K0)), ["m", "k0"]):
        parts = [_q(g, "f_over_m", how="mean", capped=None, algorithm=a) for a in ALGS]
        if all(len(p) for p in parts):
            spread = extreme(parts, lowest=False) - extreme(parts)
            reps.append(spread.rep(f"spread of final f/m, {_tag(setting)}"))
            detail.append(f"{_tag(setting)}: mean final f/m " + ", ".join(
                f"{NAMES[a]} {p.v.loc[spread.v.index].mean():.4f}" for a, p in zip(ALGS, parts)))
    return Outcome(reps, detail="; ".join(detail)) if reps else None


def fedepm_declines_fastest(frames, summaries):
    """Per trial and Fig. 2 panel: the smaller baseline f/m at the round where FedEPM stopped, minus
    FedEPM's final f/m (positive: FedEPM's curve is below both baselines' there)."""
    tr, t = frames.get("fig3"), _table(summaries, "fig3")
    if tr is None or tr.empty or t is None or "round" not in tr:
        return None
    tr = tr.assign(f_over_m=tr["objective_per_client"] if "objective_per_client" in tr else tr["objective"] / tr["m"])
    reps = []
    for setting, g in settings(select(t, k0=list(FIG2_K0)), ["m", "k0"]):
        stop = _q(g, "CR", capped=None, algorithm="fedepm")
        at = [value_at_each(select(tr, algorithm=b, **setting), "f_over_m", stop, by="instance") for b in BASELINES]
        d = extreme(at) - _q(g, "f_over_m", capped=None, algorithm="fedepm")
        reps.append(d.rep(f"min(baselines) f/m at FedEPM's final round - FedEPM's, {_tag(setting)}"))
    return [r for r in reps if r is not None] or None


def capped_runs(frames, summaries, exp: str = "fig3", every: bool = False):
    """No run of ``exp`` hit the 500-round cap (fig3: with the code stop rules every run stops by its rule), or
    (``every``) every baseline run did (stop_paper: the paper's stopping rules, no stop2); args: in claims.yaml."""
    t = _table(summaries, exp)
    t = select(t, algorithm=list(BASELINES)) if every else t
    if t is None or not len(t):
        return None
    n = int(t["capped"].sum())
    if every:
        return Outcome(n == len(t), why=f"{n} of {len(t)} baseline runs capped")
    return Outcome(n == 0, why=f"{n} of {len(t)} {exp} runs hit the cap" if n else "")


# ---- CPU times: the timing passes (table1, the fig3 grid with the paper's one-client-at-a-time loop, decides the
# CPU times of Table I and Fig. 3: the same runs in the paper) ---------------------------------------------------
def _ratio(stats, key, num, den):
    """Per trial, ``key`` of the run ``num`` over the smallest of the runs of each of ``den`` (paired by trial): a
    capped numerator makes the ratio a lower bound, a capped denominator among ANY of them an upper bound."""
    return _q(stats, key, **num).ratio(lowest_any(_q(stats, key, **d) for d in den))


def time_ratio(frames, summaries, exp, key, num, den, label, per=None):
    """Per trial of ``exp``'s timing pass (paired): ``key`` of the run ``num`` (a where-mapping) over the smallest of
    ``den``'s, one component per setting of ``per`` (table1: per (m, k0)); None when one is missing. The claims'
    parameters are their ``args:`` in claims.yaml."""
    head, stats = _timing(summaries, exp, per or ["m", "k0"], key)
    if stats is None:
        return head
    reps = [_ratio(g, key, num, den).rep(label + (f", {_tag(s)}" if s else ""), "log") for s, g in settings(stats, per)]
    return Outcome(reps, detail=head) if reps and None not in reps else None


def _at(*values):
    """The runs ``(m, k0, algorithm)`` or ``(algorithm,)`` as a where-mapping."""
    return dict(zip(("m", "k0", "algorithm")[-len(values):], values))


def lct_m100_over_m50(frames, summaries):
    """Per trial, LCT at m = 100 over LCT at m = 50, for every (k0, algorithm)."""
    head, stats = _timing(summaries, "table1", ["m", "k0"], "LCT")
    if stats is None:
        return head
    ks = sorted(set(select(stats, m=100)["k0"]) & set(select(stats, m=50)["k0"]))
    reps = [_ratio(stats, "LCT", _at(100, k, a), [_at(50, k, a)]).rep(f"{NAMES[a]} LCT m=100 / m=50, k0={k}", "log")
            for k in ks for a in ALGS]
    return Outcome(reps, detail=head) if ks else None


def sfedprox_over_sfedavg_lct_m50(frames, summaries):
    """Per trial, the mean over k0 of LCT(SFedProx)/LCT(SFedAvg) at m = 50 (paper 2.2-2.4)."""
    head, stats = _timing(summaries, "table1", ["m", "k0"], "LCT")
    if stats is None:
        return head
    per = [_ratio(stats, "LCT", _at(50, k, "sfedprox"), [_at(50, k, "sfedavg")])
           for k in sorted(set(select(stats, m=50)["k0"]))]
    if not per:
        return None
    r, c = pd.concat([p.v for p in per], axis=1), pd.concat([p.lb | p.ub for p in per], axis=1).any(axis=1)
    rep = PerSeed(r.mean(axis=1), c, c).rep("mean over k0 of SFedProx/SFedAvg LCT, m=50", "log")
    return Outcome(rep, detail="per k0 " + "/".join(f"{v:.2f}" for v in r.mean(axis=0)) + "; " + head)


def fedepm_lct_growth_k20_over_k4_m50(frames, summaries):
    """Per trial, LCT(k0=20)/LCT(k0=4) of FedEPM at m = 50 (paper 0.0023/0.0011 = 2.09: grows slowly);
    the explanation gives FedEPM's CPU cost per client and local step."""
    out = time_ratio(frames, summaries, "table1", "LCT", _at(50, 20, "fedepm"), [_at(50, 4, "fedepm")],
                     "FedEPM LCT k0=20 / k0=4, m=50")
    if not isinstance(out, Outcome):
        return out
    _, stats = _timing(summaries, "table1", ["m", "k0"], "LCT")
    ks = sorted(set(select(stats, m=50)["k0"]))
    x = {(k, a): _q(stats, "LCT", **_at(50, k, a)).v.mean() for k in ks for a in ("fedepm", "sfedavg")}
    tt = summaries["table1.timing"]
    rho = float(tt["rho"].iloc[0]) if "rho" in tt else 0.5
    per_step = [1e6 * x[k, "fedepm"] / (k * np.ceil(rho * 50)) for k in ks]
    why = (f"FedEPM's mean LCT grows x{x[20, 'fedepm'] / x[4, 'fedepm']:.2f} from k0 = 4 to 20 "
           f"(SFedAvg's x{x[20, 'sfedavg'] / x[4, 'sfedavg']:.2f}; paper x2.09 and x4.00): its client step costs "
           f"{min(per_step):.0f}-{max(per_step):.0f} CPU-us per client and local step at every k0 (a few numpy calls "
           f"on a 14-vector: interpreter overhead), so its LCT is linear in k0; in the paper's MATLAB timings it is "
           f"mostly a per-round constant (about 3 us per added client step)")
    return Outcome(out.value, why=why, detail=out.detail)


# ---- Fig. 4, Fig. 5: CR trends over rho and epsilon, SNR steps ------------------------------------------
def fitted_trend(frames, summaries, exp, x, label, key="CR", group=("algorithm",), unit="", by=None, head=False):
    """Per trial, the fitted ratio (query.trend: least squares of log ``key`` on ``x``) of ``key`` from the smallest to
    the largest ``x``, per setting of ``group``, with its mean at each ``x`` (over trials) in the detail: ``CR`` of
    ``exp``'s runs (``head``: the grid first; None without a fit), or ``TCT`` of its timing pass (timing keys ``by``,
    default ``[x]``; ``unit`` after the pass's description); the claims' parameters are their ``args:`` in claims.yaml."""
    if key == "TCT":
        first, t = _timing(summaries, exp, by or [x], key)
        if t is None:
            return first
    else:
        t = _table(summaries, exp)
    fits = [] if t is None else trends(t, x, list(group), lambda rows: _q(rows, key))
    fmt, end = ("{:.3g}", " s") if key == "TCT" else ("{:.1f}", "")
    detail = [f"{_tag(s)}: mean {key} " + "/".join(fmt.format(v) for v in means) + end for s, _, means in fits]
    grid = [f"{x} = " + "/".join(f"{v:g}" for v in sorted(t[x].unique()))] if head and fits else []
    out = Outcome([fit.rep(f"{label}, {_tag(s)}", "log") for s, fit, _ in fits],
                  detail="; ".join(([first + unit] if key == "TCT" else grid) + detail))
    return out if fits or key == "TCT" else None


def snr_increases_with_epsilon(frames, summaries):
    """Per trial, SNR at each epsilon minus SNR at the next smaller one, for every algorithm."""
    t = _table(summaries, "fig5")
    eps = [] if t is None else sorted(t["epsilon"].unique())
    reps = []
    for setting, g in settings(t, "algorithm") if eps else []:
        snr = {e: _q(g, "SNR", capped=None, epsilon=e) for e in eps}
        trials = extreme(snr.values()).v.index          # the trials with an SNR at every epsilon
        reps += [(snr[b] - snr[a]).at(trials).rep(f"{NAMES[setting['algorithm']]} SNR eps {a:g} -> {b:g}")
                 for a, b in zip(eps[:-1], eps[1:])]
    return [r for r in reps if r is not None] or None


# ---- variants (fidelity checks of spec 7-A9; 7-A4 and 7-A13 are readings as data) ------------------------
def noise_falls_with_epsilon(frames, summaries):
    """Eq. (39) as we run it: the Laplace scale nu_i = 2 ||g_i||_1 / (eps mu) of the same clients' state strictly
    decreases along Fig. 5's epsilon grid (a fact of the formula, 1 / eps: a check, not a finding)."""
    from fedrepro.sim.privacy import LaplaceEPM

    info = {"grad_l1": np.array([0.5, 4.0]), "gap_norm2": np.array([0.0, 2.0])}
    nu = [LaplaceEPM(epsilon=e).scales(info, 2, r=3, k0=12) for e in (0.1, 0.3, 0.5, 0.7, 0.9)]
    return bool(all((a > b).all() for a, b in zip(nu, nu[1:])))


CHECKS = {f.__name__: f for f in [
    cr_falls_with_k0, final_objective_spread, fedepm_declines_fastest, capped_runs, lct_m100_over_m50,
    sfedprox_over_sfedavg_lct_m50, fedepm_lct_growth_k20_over_k4_m50, snr_increases_with_epsilon,
    noise_falls_with_epsilon,
]}
# parametrised checks (args: in claims.yaml) under one name per rule of decision (fedrepro.claims.sweep.claims_by_check)
CHECKS.update(dict.fromkeys(["fedepm_lowest_time", "sfedprox_above_sfedavg_lct", "sfedavg_over_fedepm_lct_k4_m50",
                             "sfedavg_over_fedepm_lct_k20_m50", "baseline_lct_growth_k20_over_k4_m50"], time_ratio))
CHECKS.update(dict.fromkeys(["tct_falls_with_k0", "tct_rises_with_rho", "tct_trend_over_epsilon", "cr_falls_with_rho",
                             "cr_trend_over_epsilon"], fitted_trend))
