"""Our values for the claims of Zhou & Li, "Federated Learning via Inexact ADMM" (spec 000 Sec. 6):
the readings that need code, on the query layer (:mod:`fedrepro.claims.query`); the others are data
(``reading:`` in ``claims.yaml``, on :data:`VIEWS`). Each check takes ``(frames, summaries)``
(``"<exp>.timing"``: the timing pass's repetitions) and returns Replicates (a list for "every algorithm" /
"both examples"), :class:`Outcome`, :class:`NotTestable`, or None when its experiments were not run.

CR: one value per instance, paired by instance index; each baseline at the step_c chosen per swept value
(:func:`fedrepro.papers.fedadmm_zhou.analysis.choose_steps`). CPU time: one value per timing repetition
(every cell re-run R times, interleaved: a ratio within a repetition cancels the machine load), the median
over instances of the chosen runs, compared as ratios on the log scale; a single run is never a time value.
A run stopped by ``max_rounds`` gives lower bounds (CR, time, and a median over runs some of which hit the
cap); a difference or ratio inherits them as ``lower_bound`` / ``upper_bound`` flags, never as values.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from fedrepro.claims import NotTestable, Outcome, Replicates
from fedrepro.claims.query import column, lowest_share, select
from fedrepro.papers.fedadmm_zhou.analysis import ALGS, LABELS, choose_steps

BASELINES = [a for a in ALGS if a != "fedadmm"]
PAPER_MAX_ROUNDS = 1000        # spec 000 C14: the code's maxit = 1000 k0 iterations
EXAMPLE = {"fig2_ls": "Ex. 5.1", "fig3_ls": "Ex. 5.1", "fig4_ls": "Ex. 5.1", "fig5_ls": "Ex. 5.1 (n = 1000)",
           "fig2_qot": "Ex. 5.2 qot", "fig3_qot": "Ex. 5.2 qot", "fig4_qot": "Ex. 5.2 qot", "fig5_rls": "Ex. 5.2 rls"}
YAML = "fedrepro/papers/fedadmm_zhou/experiments.yaml"
OVERALL = {"fig2_ls": "k0", "fig2_qot": "k0", "fig3_ls": "rho", "fig3_qot": "rho", "fig4_ls": "m", "fig4_qot": "m",
           "fig5_ls": "m"}
# per quantity: the summary column, the replicate, the baselines a setting needs, the name in labels
CR = {"value": "rounds", "by": "instance", "complete": len(BASELINES), "name": "CR"}
TIME = {"value": "time", "by": "repeat", "complete": 1, "name": "CPU time"}


def remark41_probability(s0: int, frac: float, m: int = 1000) -> float:
    """Remark 4.1: probability that a client is selected at least once in s0 rounds when each round
    selects ceil(frac*m) of m clients uniformly: 1 - prod_s (1 - m0/m)."""
    m0 = math.ceil(frac * m - 1e-12)
    return 1.0 - (1.0 - m0 / m) ** s0


def _s(summaries, exp):
    s = summaries.get(exp)
    return s if s is not None and len(s) else None


def _fmt(x) -> str:
    return f"{x:g}" if isinstance(x, (int, float, np.integer, np.floating)) else str(x)


def chosen_runs(summaries, exp, x) -> pd.DataFrame | None:
    """The runs of ``exp`` that the figures show: FedADMM's, and each baseline's at the step_c chosen
    per (algorithm, ``x``); one row per (algorithm, x, instance), with ``capped`` (hit the cap)."""
    s = _s(summaries, exp)
    if s is None or x not in s.columns:
        return None
    c = choose_steps(s, [x]).copy()
    c["capped"] = c["status"] == "max_rounds"
    return c


def chosen_view(frames, summaries) -> pd.DataFrame | None:
    """VIEWS['chosen']: the chosen runs of every experiment of OVERALL that ran, in one frame with
    ``experiment`` and ``x`` (the value of the experiment's swept variable)."""
    return _pooled([(e, c) for e, x in OVERALL.items() if (c := chosen_runs(summaries, e, x)) is not None])


def _pooled(parts) -> pd.DataFrame | None:
    """[(experiment, frame)] as one frame with ``experiment`` and ``x`` (its OVERALL variable)."""
    return pd.concat([t.assign(experiment=e, x=t[OVERALL[e]]) for e, t in parts], ignore_index=True) if parts else None


def _cap_note(summaries, exps) -> str:
    caps = sorted({int(s.loc[s["status"] == "max_rounds", "rounds"].max()) for e in exps
                   if (s := _s(summaries, e)) is not None and (s["status"] == "max_rounds").any()})
    return (f"round cap max_rounds = {'/'.join(map(str, caps))} in {YAML} ({', '.join(exps)}; paper: "
            f"{PAPER_MAX_ROUNDS})") if caps else ""


# ---- per instance (CR) or per timing repetition (time), capped runs as lower bounds ----------------------
def _at(tab, q, x, alg, xv):
    """CR of ``alg`` at ``x = xv`` per instance (chosen runs), or its median time per repetition."""
    return column(select(tab, algorithm=alg, **{x: xv}), q["value"], by=q["by"], capped="capped")


def timing_medians(summaries, exp, x) -> pd.DataFrame | None | NotTestable:
    """Per (algorithm, x, repeat): median over instances of the chosen runs' ``run_cpu_time`` in the
    timing pass, with ``capped`` (some chosen run hit the cap: the median is a lower bound)."""
    c = chosen_runs(summaries, exp, x)
    if c is None:
        return None
    t = summaries.get(f"{exp}.timing")
    if t is None or not len(t):
        return NotTestable(f"needs the timing pass: no results/fedadmm_zhou/{exp}.timing.parquet (set "
                           f"timing_repeats for {exp} in {YAML}); CPU-time claims are decided from repeated, "
                           "interleaved runs, not from one build's single run")
    t = t[t["cell"].isin(set(c["cell"]))][["cell", "repeat", "run_cpu_time"]]
    t = t.merge(c[["cell", "algorithm", x, "instance", "capped"]], on="cell")
    return (t.groupby(["algorithm", x, "repeat"])
            .agg(time=("run_cpu_time", "median"), capped=("capped", "any"), n=("instance", "nunique"))
            .reset_index())


def _tables(summaries, exps, x, q):
    """[(experiment, chosen runs or timing medians)] of the experiments of ``exps`` that ran, or the first
    NotTestable (an experiment without its timing pass)."""
    out = []
    for exp in exps:
        tab = timing_medians(summaries, exp, x) if q is TIME else chosen_runs(summaries, exp, x)
        if isinstance(tab, NotTestable):
            return tab
        if tab is not None:
            out.append((exp, tab))
    return out


def trend(exps, x, q, algs=ALGS):
    """Check: per (experiment, algorithm), the value at the largest ``x`` against the smallest: CR
    difference per instance (``CR``), CPU-time ratio per timing repetition (``TIME``, log scale)."""
    def check(frames, summaries):
        timed = _tables(summaries, exps, x, q)
        if isinstance(timed, NotTestable):
            return timed
        out = []
        for exp, tab in timed:
            xs = sorted(tab[x].unique())
            for alg in algs if len(xs) > 1 else []:
                lo, hi = _at(tab, q, x, alg, xs[0]), _at(tab, q, x, alg, xs[-1])
                what, sep = ("CR", "-") if q is CR else ("time", "/")
                out.append((hi - lo if q is CR else hi.ratio(lo)).rep(
                    f"{EXAMPLE.get(exp, exp)} {LABELS[alg]} {what}({x}={_fmt(xs[-1])}) {sep} {what}({x}={_fmt(xs[0])})",
                    scale="linear" if q is CR else "log"))
        return [r for r in out if r is not None] or None
    check.__doc__ = f"Per {exps} x {algs}: {q['name']} at the largest {x} against the smallest (capped runs as bounds)."
    return check


# ---- "FedADMM best" shares of settings -----------------------------------------------------------------
def _lowest(tab, q, over):
    """Per replicate: the share of the settings ``over`` at which FedADMM's value is strictly the lowest."""
    return lowest_share(tab, "fedadmm", "algorithm", over, q["value"], by=q["by"], capped="capped",
                        complete=q["complete"])


def best_share(exps, x, q):
    """Check: per replicate, the share of the swept values of ``x`` at which FedADMM's value is strictly
    below every baseline's (capped runs decide only when they cannot flip it; open settings make the share
    a lower bound); one Replicates per experiment."""
    def check(frames, summaries):
        timed = _tables(summaries, exps, x, q)
        if isinstance(timed, NotTestable):
            return timed
        out = [_lowest(tab, q, x).rep(f"{EXAMPLE.get(exp, exp)}: share of {x} with FedADMM's {q['name']} lowest")
               for exp, tab in timed]
        return [r for r in out if r is not None] or None
    check.__doc__ = f"Per replicate: share of the {x} of {exps} at which FedADMM's {q['name']} is the lowest."
    return check


def fewest_cr_overall(frames, summaries):
    """Per instance, the share of every setting of OVERALL run for it (experiments with fewer instances,
    e.g. Fig. 5, contribute to the low indices only) at which FedADMM's CR is strictly the lowest."""
    r = _lowest(chosen_view(frames, summaries), CR, ["experiment", "x"])
    r = r.rep("share of all settings with FedADMM's CR lowest")
    return [r] if r is not None else None


def _time_share_pooled(summaries):
    """Per timing repetition: the share of all settings of OVERALL (every experiment with a timing pass)
    at which FedADMM's median CPU time is strictly the lowest; NotTestable without the timing passes."""
    timed = {e: timing_medians(summaries, e, x) for e, x in OVERALL.items()}
    missing = [e for e, tm in timed.items() if tm is None or isinstance(tm, NotTestable)]
    if missing:
        return NotTestable(f"the time half needs the timing pass of every experiment it spans; missing: "
                           f"{', '.join(missing)} (set timing_repeats in {YAML})")
    return _lowest(_pooled(list(timed.items())), TIME, ["experiment", "x"]).rep(
        "share of all settings with FedADMM's CPU time lowest")


def fewest_cr_and_fastest(frames, summaries):
    """Both halves of contribution d): per instance, the share of all settings with FedADMM's CR lowest, and
    per timing repetition, the share with its CPU time lowest; the claim needs both (never one half alone)."""
    cr = fewest_cr_overall(frames, summaries)
    tm = _time_share_pooled(summaries)
    if isinstance(tm, NotTestable):
        halves = ", ".join(f"{r.label} {np.mean(r.values):.3g} (n={len(r.values)})" for r in cr or [])
        shown = "; CR half: " + halves if cr else ""
        return NotTestable(tm.reason + shown)
    return (cr or []) + [tm] if cr else None


# ---- text-only statements and identities -------------------------------------------------------------
def remark41(frames, summaries):
    """Closed form of Remark 4.1; ``deterministic``: a formula of the configuration, no replicate noise."""
    return Replicates([remark41_probability(5, 0.9)], label="p_i (s0 = 5, |Omega| = 0.9 m)", deterministic=True)


def _params(frames, exp, alg):
    df = frames.get(exp)
    if df is None or not len(df):
        return None
    d = df[df["algorithm"] == alg]
    return json.loads(d["params"].iloc[0]) if len(d) else None


def fedadmm_parameters(frames, summaries):
    """True when the FedADMM runs use the paper's Sec. 5.2 values (r0 = 0.2, nu = 0.95, eps0 = k0^2)."""
    for exp in ("fig2_ls", "fig2_qot"):
        p = _params(frames, exp, "fedadmm")
        if p is not None:
            return bool(p["r0"] == 0.2 and p["nu"] == 0.95 and p["eps0"] is None and p["r0_rule"] == "paper")
    return None


def personalization_parameters(frames, summaries):
    """True when FedAlt and FedSim use alpha = 0.5, mu = 0.001 (Sec. 5.3)."""
    ps = [_params(frames, "fig2_ls", a) for a in ("fedalt", "fedsim")]
    if any(p is None for p in ps):
        return None
    return all(p["alpha"] == 0.5 and p["mu"] == 1e-3 for p in ps)


def logistic_lambda(frames, summaries):
    """True when the qot runs use lambda = 0.001."""
    df = frames.get("fig2_qot")
    if df is None or not len(df):
        return None
    lam = float(json.loads(df["problem"].iloc[0]).get("lam"))
    return Outcome(lam == 1e-3, why=f"lambda = {lam:g}")


def _table1(exp, n, d):
    def check(frames, summaries):
        s = _s(summaries, exp)
        if s is None:
            return None
        dim, ns = int(s["dim"].iloc[0]), int(s["n_samples"].iloc[0])
        return Outcome(dim == n and ns == d, why=f"ours n = {dim}, d = {ns}")
    check.__doc__ = f"Our {exp} dataset has n = {n} features and d = {d} samples (Table 1)."
    return check


# ---- Fig. 1 -----------------------------------------------------------------------------------------
STALL_PROGRESS = 0.1   # a capped run that closed < 10 % of its gap to the target over its second half
PAPER_STEP_MIN = 2.0 ** -7     # smallest step constant of the paper-scale grid (spec 3.6)


def reach_states(frames, chosen, summary, rel=2e-4):
    """Per baseline run of ``chosen`` (summary rows): True (reached FedADMM's objective), False
    (diverged, or capped after stalling: its gap f - (f_A + rel (1 + |f_A|)) shrank by less than
    STALL_PROGRESS over the second half of its rounds), or None (capped while still converging: it may
    "eventually" reach). A stalled run counts against the claim whatever the step grid (the reading
    registered on 2026-11-24 in 1076f1b; the exception for grids coarser than the paper's, added after
    the fail, is withdrawn: see the claim's revisions); the note names the grid's smallest step."""
    out = []
    fa = chosen[chosen["algorithm"] == "fedadmm"].set_index(["instance", "k0"])["objective"]
    for r in chosen[chosen["algorithm"] != "fedadmm"].itertuples():
        f_a = float(fa[(r.instance, r.k0)])
        thr = f_a + rel * (1 + abs(f_a))
        state, note = bool(r.reached), ""
        if not r.reached and r.status == "max_rounds":
            tr = frames[frames["cell"] == r.cell].sort_values("round")
            f = tr.set_index("round")["objective"]
            gap_mid = float(f[f.index <= r.rounds // 2].iloc[-1]) - thr
            gap_end = float(f.iloc[-1]) - thr
            note = f"gap {gap_mid:.2g} -> {gap_end:.2g} over rounds {r.rounds // 2}-{r.rounds}"
            state = None
            if gap_end > (1 - STALL_PROGRESS) * gap_mid:
                grid_min = float(summary.loc[summary["algorithm"] == r.algorithm, "step_c"].min())
                state, note = False, note + (f", stalled at c = {r.step_c:g} (the grid here stops at c = {grid_min:g}; "
                                             f"paper: {PAPER_STEP_MIN:g})")
        out.append({"alg": r.algorithm, "k0": r.k0, "instance": r.instance, "state": state, "status": r.status,
                    "note": note})
    return out


def _runs_text(runs):
    return "; ".join(f"instance {r['instance']} {LABELS[r['alg']]} k0 = {r['k0']} "
                     f"({r['status']}{', ' + r['note'] if r['note'] else ''})" for r in runs)


def fig1_all_reach(frames, summaries):
    """Per instance of Fig. 1's setting (fig2_ls): share of the (k0, baseline) runs (chosen steps)
    that reached FedADMM's objective; open runs (capped while converging) count as not reached and make
    the share a lower bound; a stalled run has not reached."""
    s = _s(summaries, "fig2_ls")
    if s is None or "fig2_ls" not in frames:
        return None
    runs = reach_states(frames["fig2_ls"], choose_steps(s, ["k0"]), s)
    insts = sorted({r["instance"] for r in runs})
    if not insts:
        return None
    states = [[r["state"] for r in runs if r["instance"] == i] for i in insts]
    vals = [sum(x is True for x in st) / len(st) for st in states]
    bad = [r for r in runs if r["state"] is not True]
    why = (f"{len(bad)} of {len(runs)} runs did not reach f_A: {_runs_text(bad)}"
           + (f" ({_cap_note(summaries, ['fig2_ls'])})" if any(r["state"] is None for r in bad) else "")) if bad else ""
    return Outcome(Replicates(vals, label="share of Fig. 1 baseline runs reaching f_A",
                              lower_bound=[any(x is None for x in st) for st in states]), why=why)


# ---- Figs. 3-5: readings that need code -------------------------------------------------------------------
def fig3_qot_fedadmm_cr_spread(frames, summaries):
    """Per instance: (max - min) / median of FedADMM's CR over the swept rho (a constant level: 0), the
    reading first registered (2026-11-21). A capped run makes the value a lower bound."""
    c = chosen_runs(summaries, "fig3_qot", "rho")
    if c is None:
        return None
    vals, lo, rows = [], [], []
    for inst, d in c[c["algorithm"] == "fedadmm"].groupby("instance"):
        if d["rho"].nunique() < 2:
            continue
        d = d.sort_values("rho")
        cr = d["rounds"].to_numpy(float)
        vals.append(float((cr.max() - cr.min()) / max(float(np.median(cr)), 1.0)))
        lo.append(bool(d["capped"].any()))
        rows.append(f"instance {inst}: CR " + ", ".join(str(int(v)) for v in d["rounds"]) + " at rho = "
                    + ", ".join(f"{v:g}" for v in d["rho"]))
    if not vals:
        return None
    why = ("; ".join(rows) + ". Rule (30) in the code measure (5e-7 n/(m d) on ||grad f||^2/m^2) is loose on "
           "qot, so with many clients per round FedADMM stops after a few rounds, while at small rho it needs "
           "about 1/rho rounds before every client has uploaded once")
    return Outcome(Replicates(vals, label="FedADMM (max - min)/median CR over rho", lower_bound=lo), why=why)


def fig4_qot_baselines_cr_dip(frames, summaries):
    """Per baseline (qot): CR(100) - CR(50) (paper: below 0) and -(CR(largest m) - CR(100)) (paper:
    ascending, so below 0 after the sign flip), paired by instance index."""
    c = chosen_runs(summaries, "fig4_qot", "m")
    if c is None:
        return None
    xs = sorted(c["m"].unique())
    if not {50, 100} <= set(xs) or xs[-1] <= 100:
        return NotTestable(f"needs m in {{50, 100}} and an m above 100 in fig4_qot (have {xs}; {YAML})")
    out = []
    for alg in BASELINES:
        cr = {m: _at(c, CR, "m", alg, m) for m in (50, 100, xs[-1])}
        out += [(cr[100] - cr[50]).rep(f"{LABELS[alg]} CR(m=100) - CR(m=50)"),
                (cr[xs[-1]] - cr[100]).scaled(-1.0).rep(f"{LABELS[alg]} -(CR(m={xs[-1]}) - CR(m=100))")]
    return [r for r in out if r is not None] or None


def _fig5_ratios(pairs):
    def check(frames, summaries):
        tm = timing_medians(summaries, "fig5_ls", "m")
        if tm is None or isinstance(tm, NotTestable):
            return tm
        m = tm["m"].max()
        out = [_at(tm, TIME, "m", a, m).ratio(_at(tm, TIME, "m", b, m)).rep(
            f"time {LABELS[a]} / {LABELS[b]} at m = {m}", scale="log") for a, b in pairs]
        out = [r for r in out if r is not None]
        return (out if len(out) > 1 else out[0]) if out else None
    check.__doc__ = ("CPU-time ratios " + ", ".join(f"{a}/{b}" for a, b in pairs)
                     + " at the largest m of fig5_ls, one per timing repetition (medians over instances).")
    return check


CHECKS = {
    "remark41": remark41,
    "fedadmm_parameters": fedadmm_parameters,
    "personalization_parameters": personalization_parameters,
    "logistic_lambda": logistic_lambda,
    "table1_qot": _table1("table1_qot", 1024, 8992),
    "table1_rls": _table1("table1_rls", 20958, 72309),
    "fig1_all_reach": fig1_all_reach,
    "fedadmm_cr_falls_with_k0": trend(["fig2_ls", "fig2_qot"], "k0", CR, algs=["fedadmm"]),
    "fig2_ls_fedadmm_cr_falls": trend(["fig2_ls"], "k0", CR, algs=["fedadmm"]),
    "fig2_ls_baselines_cr_rises": trend(["fig2_ls"], "k0", CR, algs=BASELINES),
    "fig2_qot_cr_falls": trend(["fig2_qot"], "k0", CR),
    "fig2_time_rises_with_k0": trend(["fig2_ls", "fig2_qot"], "k0", TIME),
    "fig2_fewest_cr": best_share(["fig2_ls", "fig2_qot"], "k0", CR),
    "fig2_fastest": best_share(["fig2_ls", "fig2_qot"], "k0", TIME),
    "fig3_ls_cr_falls_with_rho": trend(["fig3_ls"], "rho", CR),
    "fig3_ls_time_falls_with_rho": trend(["fig3_ls"], "rho", TIME),
    "fig3_qot_fedadmm_cr_spread": fig3_qot_fedadmm_cr_spread,
    "fig3_qot_time_rises_with_rho": trend(["fig3_qot"], "rho", TIME),
    "fig3_fewest_cr": best_share(["fig3_ls", "fig3_qot"], "rho", CR),
    "fig4_ls_cr_falls_with_m": trend(["fig4_ls"], "m", CR),
    "fig4_ls_time_rises_with_m": trend(["fig4_ls"], "m", TIME),
    "fig4_qot_fedadmm_cr_falls_with_m": trend(["fig4_qot"], "m", CR, algs=["fedadmm"]),
    "fig4_qot_baselines_cr_dip": fig4_qot_baselines_cr_dip,
    "fig4_fewest_cr": best_share(["fig4_ls", "fig4_qot"], "m", CR),
    "fig4_fastest": best_share(["fig4_ls", "fig4_qot"], "m", TIME),
    "fig5_ls_cr_falls_with_m": trend(["fig5_ls"], "m", CR),
    "fig5_ls_time_rises_with_m": trend(["fig5_ls"], "m", TIME),
    "fig5_rls_cr_rises_with_m": trend(["fig5_rls"], "m", CR),
    "fig5_rls_time_rises_with_m": trend(["fig5_rls"], "m", TIME),
    "fig5_fedadmm_faster": _fig5_ratios([(b, "fedadmm") for b in BASELINES]),
    "fig5_time_ordering": _fig5_ratios([("fedprox", "fedavg"), ("fedalt", "fedprox"), ("fedsim", "fedalt")]),
    **{f"fig5_time_ratio_{a}": _fig5_ratios([(a, "fedadmm")]) for a in BASELINES},
    "fewest_cr_and_fastest": fewest_cr_and_fastest,
}

VIEWS = {"chosen": chosen_view}
