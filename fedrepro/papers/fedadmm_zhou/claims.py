"""Our values for the claims of Zhou & Li, "Federated Learning via Inexact ADMM" (spec 000 Sec. 6).

Every function takes ``(frames, summaries)`` (experiment id -> DataFrame) and returns our value,
or None when the experiments it needs were not run. Medians over instances with the per-setting
step choice of :func:`fedrepro.papers.fedadmm_zhou.analysis.choose_steps`; times are CPU seconds
(``run_cpu_time``).

Round caps. A run stopped by ``max_rounds`` has not reached its target: its CR and time are only
lower bounds, and so is a median over runs some of which hit the cap. A trend between the smallest
and the largest swept value is *decided* when these bounds settle its direction, else *open*.
A trend claim counts the decided pairs that go the paper's way; when the open pairs could flip the
verdict the check returns :class:`NotTestable` naming the cap (the paper runs up to 1000 rounds), so a
verdict never rests on a capped value, while trends the data do settle can still fail.
"""
from __future__ import annotations

import json
import math

import numpy as np

from fedrepro.claims import NotTestable, Outcome
from fedrepro.papers.fedadmm_zhou.analysis import ALGS, LABELS, choose_steps, medians

BASELINES = [a for a in ALGS if a != "fedadmm"]
PAPER_MAX_ROUNDS = 1000        # spec 000 C14: the code's maxit = 1000 k0 iterations
PAPER_FIG5_SECONDS = {"fedadmm": 73.0, "fedavg": 475.0, "fedprox": 728.0, "fedalt": 3834.0, "fedsim": 4711.0}


def remark41_probability(s0: int, frac: float, m: int = 1000) -> float:
    """Remark 4.1: probability that a client is selected at least once in s0 rounds when each round
    selects ceil(frac*m) of m clients uniformly: 1 - prod_s (1 - m0/m)."""
    m0 = math.ceil(frac * m - 1e-12)
    return 1.0 - (1.0 - m0 / m) ** s0


def _s(summaries, exp):
    s = summaries.get(exp)
    return s if s is not None and len(s) else None


def _med(summaries, exp, x):
    s = _s(summaries, exp)
    if s is None or x not in s.columns:
        return None
    return medians(s, x)


def _cap_value(summaries, exps) -> int | None:
    caps = [int(s.loc[s["status"] == "max_rounds", "rounds"].max()) for e in exps
            if (s := _s(summaries, e)) is not None and (s["status"] == "max_rounds").any()]
    return max(caps) if caps else None


def _cap_reason(summaries, exps, n_open, n_all, what, verb="rest on runs that hit"):
    cap = _cap_value(summaries, exps)
    return (f"needs paper scale: {n_open} of {n_all} {what} {verb} the round cap "
            f"max_rounds = {cap} (paper: {PAPER_MAX_ROUNDS}); raise max_rounds in "
            f"workflow/papers/fedadmm_zhou.yaml ({', '.join(exps)})")


# Identical quick runs (sub-second CPU times, two jobs sharing two cores) differ between builds: three
# builds of bit-identical traces measured medians over seeds up to 1.44x apart (fig3_qot FedAlt at
# rho = 0.1: 0.406 and 0.584 CPU-s) and single runs up to 1.45-1.75x apart at the 99th percentile.
TIME_NOISE = 0.5


def trend_pairs(summaries, exps, x, col, direction, algs=ALGS, noise=0.0):
    """Per (experiment, algorithm): medians of ``col`` at the smallest and largest ``x`` and whether
    they show the ``direction`` ('up': larger at the largest x; 'down': smaller): True / False, or
    None when a capped end point (a lower bound) leaves it open (module docstring) or the two
    values differ by less than the relative ``noise`` band."""
    out = []
    for exp in exps:
        med = _med(summaries, exp, x)
        if med is None:
            continue
        for alg in algs:
            d = med[med["algorithm"] == alg].sort_values(x)
            if len(d) < 2:
                continue
            a, b = float(d[col].iloc[0]), float(d[col].iloc[-1])
            ca, cb = d["capped"].iloc[0] > 0, d["capped"].iloc[-1] > 0
            if direction == "up":
                state = (None if ca else True) if b > a else (None if cb else False)
            else:
                state = (None if cb else True) if b < a else (None if ca else False)
            within_noise = noise > 0 and max(a, b) <= (1 + noise) * min(a, b)
            out.append({"exp": exp, "alg": alg, "x0": d[x].iloc[0], "x1": d[x].iloc[-1], "a": a, "b": b,
                        "capped_a": bool(ca), "capped_b": bool(cb), "noise": within_noise and state is not None,
                        "state": None if within_noise else state})
    return out


def _pair_text(p, x, col):
    unit = "CR" if col == "cr" else "CPU s"
    ca, cb = (" (capped)" if c else "" for c in (p["capped_a"], p["capped_b"]))
    return (f"{p['exp']} {LABELS[p['alg']]}: {unit} {p['a']:.3g}{ca} at {x} = {p['x0']:g} -> "
            f"{p['b']:.3g}{cb} at {x} = {p['x1']:g}")


def trend_check(exps, x, col, direction, need, algs=ALGS, note="", noise=None):
    """Check: fraction of (experiment, algorithm) whose median ``col`` moves in ``direction`` from the
    smallest to the largest ``x``. ``need`` is the fraction the claim requires (the yaml's
    paper_value - tolerance; a test keeps them equal). Open pairs (capped end points) count against
    the claim; when counting them for it would change the verdict the claim is not testable here.
    ``note`` (the known cause of a failure) is appended to the explanation when some pair goes against.
    CPU-time trends (``col == 'time'``) smaller than TIME_NOISE are open too (timing noise)."""
    if noise is None:
        noise = TIME_NOISE if col == "time" else 0.0

    def check(frames, summaries):
        pairs = trend_pairs(summaries, exps, x, col, direction, algs, noise)
        if not pairs:
            return None
        n = len(pairs)
        yes = sum(p["state"] is True for p in pairs)
        open_ = [p for p in pairs if p["state"] is None]
        lo, hi = yes / n, (yes + len(open_)) / n
        if open_ and (lo >= need - 1e-9) != (hi >= need - 1e-9):
            capped = [p for p in open_ if not p["noise"]]
            noisy = [p for p in open_ if p["noise"]]
            parts = []
            if capped:
                parts.append(_cap_reason(summaries, exps, len(capped), n, f"{x}-trends") + ": "
                             + "; ".join(_pair_text(p, x, col) for p in capped))
            if noisy:
                parts.append(f"timing noise: {len(noisy)} of {n} CPU-time changes are within a factor {1 + noise:g} "
                             f"(the medians of identical runs differ by up to that much between builds on a shared "
                             f"machine; "
                             "needs paper scale, where run times are seconds to minutes): "
                             + "; ".join(_pair_text(p, x, col) for p in noisy))
            return NotTestable(". ".join(parts))
        value = lo if lo >= need - 1e-9 else hi
        against = [p for p in pairs if p["state"] is False]
        why = "; ".join(_pair_text(p, x, col) for p in against)
        if open_:
            why += (f" ({len(open_)} capped trend(s) counted "
                    f"{'against' if value == lo else 'for'} the claim)")
        if against:
            why = f"{len(against)} of {n} against the paper: {why}" + (f". {note}" if note else "")
        return Outcome(value, why=why)
    check.__doc__ = (f"Fraction of {exps} x {algs} whose median {col} goes {direction} from the smallest to "
                     f"the largest {x} (capped end points handled as lower bounds; need >= {need}).")
    check.need, check.noise = need, noise
    return check


def _best_fraction(summaries, exps, x, col, min_x=None):
    """Fraction of settings (experiment, x) where FedADMM's median ``col`` is the smallest (ties count)."""
    hits = []
    for exp in exps:
        med = _med(summaries, exp, x)
        if med is None:
            continue
        for xv, d in med.groupby(x):
            if min_x is not None and xv < min_x:
                continue
            a = d[d["algorithm"] == "fedadmm"][col]
            b = d[d["algorithm"] != "fedadmm"][col]
            if len(a) and len(b):
                hits.append(float(a.iloc[0]) <= float(b.min()))
    return float(np.mean(hits)) if hits else None


# ---- text-only statements --------------------------------------------------------------------
def remark41(frames, summaries):
    return remark41_probability(5, 0.9)


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
    df = frames.get("fig2_qot")
    if df is None or not len(df):
        return None
    return float(json.loads(df["problem"].iloc[0]).get("lam"))


# ---- Fig. 1 -----------------------------------------------------------------------------------
def _fig1_chosen(summaries):
    s = _s(summaries, "fig2_ls")
    if s is None:
        return None
    return choose_steps(s[s["instance"] == s["instance"].min()], ["k0"])


STALL_PROGRESS = 0.1   # a capped run that closed < 10 % of its gap to the target over its second half
PAPER_STEP_MIN = 2.0 ** -7     # smallest step constant of the paper-scale grid (spec 3.6)


def reach_states(frames, chosen, summary, rel=2e-4):
    """Per baseline run of ``chosen`` (summary rows): True (reached FedADMM's objective), False
    (diverged, or capped after stalling — its gap f - (f_A + rel (1 + |f_A|)) shrank by less than
    STALL_PROGRESS over the second half of its rounds — although the grid of ``summary`` went down
    to the paper's smallest step), or None (capped while still converging, or stalled on a grid
    coarser than the paper's: a smaller step may reach the target, spec 7.C X1)."""
    out = []
    fa = chosen[chosen["algorithm"] == "fedadmm"].set_index("k0")["objective"]
    for r in chosen[chosen["algorithm"] != "fedadmm"].itertuples():
        thr = float(fa[r.k0]) + rel * (1 + abs(float(fa[r.k0])))
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
                if grid_min <= PAPER_STEP_MIN * (1 + 1e-9):
                    state, note = False, note + ", stalled"
                else:
                    note += (f", stalled at c = {r.step_c:g}; the grid here stops at c = {grid_min:g} "
                             f"(paper: {PAPER_STEP_MIN:g})")
        out.append({"alg": r.algorithm, "k0": r.k0, "state": state, "status": r.status, "note": note})
    return out


def fig1_all_reach(frames, summaries):
    """Fraction of (k0, baseline) runs of the Fig. 1 instance that reached FedADMM's objective
    (capped runs that did not stall on the paper's grid are open: the claim is then not testable)."""
    c = _fig1_chosen(summaries)
    if c is None:
        return None
    runs = reach_states(frames["fig2_ls"], c, summaries["fig2_ls"])
    open_ = [r for r in runs if r["state"] is None]
    against = [r for r in runs if r["state"] is False]
    if open_ and not against:
        return NotTestable(_cap_reason(summaries, ["fig2_ls"], len(open_), len(runs), "Fig. 1 baseline runs", "hit")
                           + ", before reaching f_A: " + _runs_text(open_))
    value = sum(r["state"] is True for r in runs) / len(runs)
    return Outcome(value, why=f"{len(against)} of {len(runs)} runs did not reach it: {_runs_text(against)}"
                   if against else "")


def _runs_text(runs):
    return "; ".join(f"{LABELS[r['alg']]} k0 = {r['k0']} ({r['status']}{', ' + r['note'] if r['note'] else ''})"
                     for r in runs)


def fig1_fewest_cr_k0_gt_1(frames, summaries):
    """FedADMM has the fewest CR at every k0 > 1 of the Fig. 1 instance."""
    c = _fig1_chosen(summaries)
    if c is None:
        return None
    ok = []
    for k0, d in c[c["k0"] > 1].groupby("k0"):
        a = d[d["algorithm"] == "fedadmm"]["rounds"]
        b = d[d["algorithm"] != "fedadmm"]["rounds"]
        ok.append(float(a.iloc[0]) <= float(b.min()))
    return bool(ok) and all(ok)


# ---- Figs. 2-5 --------------------------------------------------------------------------------
fig2_ls_fedadmm_cr_falls = trend_check(["fig2_ls"], "k0", "cr", "down", need=1.0, algs=["fedadmm"])


fig2_ls_baselines_cr_rises = trend_check(["fig2_ls"], "k0", "cr", "up", need=0.75, algs=BASELINES)


fig2_qot_cr_falls = trend_check(["fig2_qot"], "k0", "cr", "down", need=0.8)


fig2_time_rises_with_k0 = trend_check(["fig2_ls", "fig2_qot"], "k0", "time", "up", need=0.8)


def fewest_cr_fraction(frames, summaries):
    """Fraction of settings of Figs. 2-4 (k0 > 1 in Fig. 2) where FedADMM has the fewest median CR."""
    vals = [_best_fraction(summaries, ["fig2_ls", "fig2_qot"], "k0", "cr", min_x=2),
            _best_fraction(summaries, ["fig3_ls", "fig3_qot"], "rho", "cr"),
            _best_fraction(summaries, ["fig4_ls", "fig4_qot"], "m", "cr")]
    vals = [v for v in vals if v is not None]
    return float(np.mean(vals)) if vals else None


def least_time_fraction(frames, summaries):
    """Fraction of settings of Figs. 2-5 where FedADMM has the smallest median time."""
    vals = [_best_fraction(summaries, ["fig2_ls", "fig2_qot"], "k0", "time"),
            _best_fraction(summaries, ["fig3_ls", "fig3_qot"], "rho", "time"),
            _best_fraction(summaries, ["fig4_ls", "fig4_qot"], "m", "time"),
            _best_fraction(summaries, ["fig5_ls", "fig5_rls"], "m", "time")]
    vals = [v for v in vals if v is not None]
    return float(np.mean(vals)) if vals else None


def fig2_k0_1_baseline_fewer_cr(frames, summaries):
    """Spec note: at k0 = 1 a tuned baseline can need fewer CR than FedADMM (Ex. 5.1)."""
    med = _med(summaries, "fig2_ls", "k0")
    if med is None:
        return None
    d = med[med["k0"] == med["k0"].min()]
    a = d[d["algorithm"] == "fedadmm"]["cr"]
    b = d[d["algorithm"] != "fedadmm"]["cr"]
    return bool(len(a) and len(b) and float(b.min()) < float(a.iloc[0]))


fig3_ls_cr_falls_with_rho = trend_check(["fig3_ls"], "rho", "cr", "down", need=0.8)


fig3_ls_time_falls_with_rho = trend_check(["fig3_ls"], "rho", "time", "down", need=0.8)


fig3_qot_time_rises_with_rho = trend_check(
    ["fig3_qot"], "rho", "time", "up", need=0.8,
    note=("Here CR falls steeply with rho (rule (30) in the code measure is loose on qot, see "
          "fig3_qot_fedadmm_cr_flat; FedADMM's targets then stop the baselines early too), and a run's CPU "
          "time is then dominated by its fixed set-up cost (r_i, first evaluation), not by its few rounds, "
          "so fewer rounds outweigh larger ones; in the paper CR stays level and larger rounds make time grow"))


def fig3_qot_fedadmm_cr_spread(frames, summaries):
    """(max - min) / median of FedADMM's median CR over rho (paper: roughly constant)."""
    med = _med(summaries, "fig3_qot", "rho")
    if med is None:
        return None
    d = med[med["algorithm"] == "fedadmm"].sort_values("rho")
    if len(d) < 2:
        return None
    if (d["capped"] > 0).any():
        return NotTestable(_cap_reason(summaries, ["fig3_qot"], int((d["capped"] > 0).sum()), len(d),
                                       "FedADMM medians over rho"))
    cr = d["cr"]
    s = _s(summaries, "fig3_qot")
    fa = s[s["algorithm"] == "fedadmm"].groupby("rho")["objective"].median()
    why = ("FedADMM's median CR " + ", ".join(f"{c:g}" for c in cr) + " at rho = "
           + ", ".join(f"{r:g}" for r in d["rho"]) + " (final f " + ", ".join(f"{fa[r]:.4g}" for r in d["rho"])
           + "): rule (30) in the code measure (5e-7 n/(m d) on ||grad f||^2/m^2) is loose on qot, so with "
           "many clients per round FedADMM stops after a few rounds, while at small rho it needs about "
           "1/rho rounds before every client has uploaded once")
    return Outcome(float((cr.max() - cr.min()) / cr.median()), why=why)


fig4_ls_cr_falls_with_m = trend_check(["fig4_ls"], "m", "cr", "down", need=0.8)


fig4_ls_time_rises_with_m = trend_check(["fig4_ls"], "m", "time", "up", need=0.8)


fig4_qot_fedadmm_cr_falls_with_m = trend_check(["fig4_qot"], "m", "cr", "down", need=1.0, algs=["fedadmm"])


fig5_ls_cr_falls_with_m = trend_check(["fig5_ls"], "m", "cr", "down", need=0.8)


fig5_ls_time_rises_with_m = trend_check(["fig5_ls"], "m", "time", "up", need=0.8)


_fig5_rls_cr = trend_check(["fig5_rls"], "m", "cr", "up", need=0.8)
_fig5_rls_time = trend_check(["fig5_rls"], "m", "time", "up", need=0.8)


def fig5_rls_cr_time_rise_with_m(frames, summaries):
    """Mean of the CR-rises and time-rises fractions of Fig. 5 (rls)."""
    a, b = _fig5_rls_cr(frames, summaries), _fig5_rls_time(frames, summaries)
    for v in (a, b):
        if v is None or isinstance(v, NotTestable):
            return v
    return Outcome((a.value + b.value) / 2, why="; ".join(w for w in (a.why, b.why) if w))


def _fig5_largest(summaries):
    for exp in ("fig5_rls", "fig5_ls"):
        med = _med(summaries, exp, "m")
        if med is not None:
            return med[med["m"] == med["m"].max()]
    return None


def _fig5_ratio(alg):
    def check(frames, summaries):
        d = _fig5_largest(summaries)
        if d is None:
            return None
        d = d.set_index("algorithm")
        if alg not in d.index or "fedadmm" not in d.index:
            return None
        ratio = float(d.loc[alg, "time"] / d.loc["fedadmm", "time"])
        m = int(d["m"].iloc[0])
        if d.loc["fedadmm", "capped"] > 0 or (d.loc[alg, "capped"] > 0 and ratio < 1):
            return NotTestable(f"needs paper scale: at m = {m} the {'FedADMM' if d.loc['fedadmm', 'capped'] > 0 else LABELS[alg]} "
                               f"runs hit the round cap max_rounds = {_cap_value(summaries, ['fig5_ls', 'fig5_rls'])} "
                               f"(paper: {PAPER_MAX_ROUNDS}), so the CPU-time ratio {ratio:.3g} is not a bound")
        bound = " (a lower bound: the baseline runs hit the round cap)" if d.loc[alg, "capped"] > 0 else ""
        return Outcome(ratio, why=f"CPU time {LABELS[alg]} {d.loc[alg, 'time']:.3g} s vs FedADMM "
                                  f"{d.loc['fedadmm', 'time']:.3g} s at m = {m}{bound}")
    check.__doc__ = (f"Our median CPU time of {alg} / FedADMM at the largest m of Fig. 5 (rls if run, else Ex. 5.1); "
                     "a capped baseline gives a lower bound.")
    return check


def fig5_fedadmm_fastest(frames, summaries):
    """FedADMM has the smallest median CPU time at the largest m of Fig. 5 (capped baselines' times
    are lower bounds: one below FedADMM's leaves the claim open)."""
    d = _fig5_largest(summaries)
    if d is None or "fedadmm" not in set(d["algorithm"]):
        return None
    d = d.set_index("algorithm")
    ta = float(d.loc["fedadmm", "time"])
    faster = d[(d.index != "fedadmm") & (d["time"] < ta)]
    times = ", ".join(f"{LABELS[a]} {t:.3g}" for a, t in d["time"].items())
    if len(faster) and (faster["capped"] > 0).all() or d.loc["fedadmm", "capped"] > 0:
        return NotTestable(f"needs paper scale: capped runs at m = {int(d['m'].iloc[0])} leave the ordering open "
                           f"(max_rounds = {_cap_value(summaries, ['fig5_ls', 'fig5_rls'])}, paper: "
                           f"{PAPER_MAX_ROUNDS}); median CPU s: {times}")
    return Outcome(not len(faster), why=f"median CPU s at m = {int(d['m'].iloc[0])}: {times}")


CHECKS = {
    "remark41": remark41,
    "fedadmm_parameters": fedadmm_parameters,
    "personalization_parameters": personalization_parameters,
    "logistic_lambda": logistic_lambda,
    "fig1_all_reach": fig1_all_reach,
    "fig1_fewest_cr_k0_gt_1": fig1_fewest_cr_k0_gt_1,
    "fig2_ls_fedadmm_cr_falls": fig2_ls_fedadmm_cr_falls,
    "fig2_ls_baselines_cr_rises": fig2_ls_baselines_cr_rises,
    "fig2_qot_cr_falls": fig2_qot_cr_falls,
    "fig2_time_rises_with_k0": fig2_time_rises_with_k0,
    "fig2_k0_1_baseline_fewer_cr": fig2_k0_1_baseline_fewer_cr,
    "fewest_cr_fraction": fewest_cr_fraction,
    "least_time_fraction": least_time_fraction,
    "fig3_ls_cr_falls_with_rho": fig3_ls_cr_falls_with_rho,
    "fig3_ls_time_falls_with_rho": fig3_ls_time_falls_with_rho,
    "fig3_qot_time_rises_with_rho": fig3_qot_time_rises_with_rho,
    "fig3_qot_fedadmm_cr_spread": fig3_qot_fedadmm_cr_spread,
    "fig4_ls_cr_falls_with_m": fig4_ls_cr_falls_with_m,
    "fig4_ls_time_rises_with_m": fig4_ls_time_rises_with_m,
    "fig4_qot_fedadmm_cr_falls_with_m": fig4_qot_fedadmm_cr_falls_with_m,
    "fig5_ls_cr_falls_with_m": fig5_ls_cr_falls_with_m,
    "fig5_ls_time_rises_with_m": fig5_ls_time_rises_with_m,
    "fig5_rls_cr_time_rise_with_m": fig5_rls_cr_time_rise_with_m,
    "fig5_fedadmm_fastest": fig5_fedadmm_fastest,
    **{f"fig5_time_ratio_{a}": _fig5_ratio(a) for a in BASELINES},
}
