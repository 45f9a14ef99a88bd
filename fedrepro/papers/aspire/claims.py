"""Checks of the aspire paper's statements (spec 002 §6) from our runs. One claim per dataset where the
paper states it per dataset: each check reads the one experiment of its claim (``table3_scma`` ...),
so a dataset missing offline leaves exactly its own claims "not testable here".

Noise rule (spec §6: "allowing overlaps within one std"): with seed means a, b and seed stds sa, sb
(ddof 0), "a beats b" is a > b; "a ≈ b" is |a - b| <= max(sa, sb, floor); "a is best or near-best" is
a >= best - max(sa, s_best, floor). ``floor`` (0.5 pp of accuracy, 0.005 of loss) keeps a run with
identical seeds from demanding exact equality. Every check returns an :class:`Outcome` whose text
names the numbers it compared.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from fedrepro.claims import NotTestable, Outcome
from fedrepro.papers.aspire.analysis import (METHODS, fig3_frame, finals, frames_of, param,
                                             table3_frame, table4_frame, time_to_target)

FLOOR = {"acc_w": 0.5, "loss_w": 0.005, "success_rate": 0.5}
LOWER_IS_BETTER = {"loss_w", "success_rate", "std"}


def _one(frames, prefix):
    got = frames_of(frames, prefix)
    if len(got) != 1:
        return None, None
    return next(iter(got.items()))


def _rows(table: pd.DataFrame) -> dict:
    return {r["algorithm"]: r for _, r in table.iterrows()}


def _fmt(r, metric):
    sd = r.get(f"{metric}_std", np.nan)
    return f"{METHODS[r['algorithm']]} {r[metric]:.3g}" + ("" if pd.isna(sd) else f" ± {sd:.2g}")


def _near(a, b, metric) -> bool:
    tol = max(np.nan_to_num(a.get(f"{metric}_std", 0.0)), np.nan_to_num(b.get(f"{metric}_std", 0.0)), FLOOR[metric])
    return abs(a[metric] - b[metric]) <= tol


def _better(a, b, metric) -> bool:
    return a[metric] < b[metric] if metric in LOWER_IS_BETTER else a[metric] > b[metric]


def _t3(frames):
    ds, _ = _one(frames, "table3")
    if ds is None:
        return None, None
    return ds, _rows(table3_frame({f"table3_{ds}": frames[f"table3_{ds}"]}))


# ---- Table 3 ------------------------------------------------------------------------------------
def t3_ind_worst(frames, summaries):
    """max{Ind_j} has the worst Acc_w and the largest Std."""
    ds, r = _t3(frames)
    if r is None or "individual" not in r:
        return None
    others = [m for m in r if m != "individual"]
    worst_acc = all(r["individual"]["acc_w"] < r[m]["acc_w"] for m in others)
    top_std = all(r["individual"]["std"] > r[m]["std"] for m in others)
    text = (f"max{{Ind_j}} Acc_w {r['individual']['acc_w']:.2f}, Std {r['individual']['std']:.2f}; others' Acc_w "
            f"{min(r[m]['acc_w'] for m in others):.2f}..{max(r[m]['acc_w'] for m in others):.2f}, Std up to "
            f"{max(r[m]['std'] for m in others):.2f}")
    return Outcome(worst_acc and top_std, why=text, detail=text)


def t3_fedavg_mix_even(frames, summaries):
    """FedAvg ≈ Mix_Even on Acc_w and Loss_w (same objective)."""
    ds, r = _t3(frames)
    if r is None:
        return None
    a, b = r["fedavg_steps"], r["mix_even"]
    ok = _near(a, b, "acc_w") and _near(a, b, "loss_w")
    text = f"{_fmt(a, 'acc_w')} vs {_fmt(b, 'acc_w')}; Loss_w {a['loss_w']:.3f} vs {b['loss_w']:.3f}"
    return Outcome(ok, why=text, detail=text)


def t3_dro_beats_erm(frames, summaries):
    """AFL and DRFA-Prox beat FedAvg and Mix_Even on Acc_w and Loss_w and have a smaller Std."""
    ds, r = _t3(frames)
    if r is None:
        return None
    fails = [f"{METHODS[d]} vs {METHODS[e]} on {k}: {r[d][k]:.3g} vs {r[e][k]:.3g}"
             for d in ("afl", "drfa_prox") for e in ("fedavg_steps", "mix_even") for k in ("acc_w", "loss_w", "std")
             if not _better(r[d], r[e], k)]
    return Outcome(not fails, why="; ".join(fails), detail=f"{12 - len(fails)} of 12 comparisons")


def t3_drfa_ge_afl(frames, summaries):
    """DRFA-Prox >= AFL on Acc_w (within noise)."""
    ds, r = _t3(frames)
    if r is None:
        return None
    a, b = r["drfa_prox"], r["afl"]
    text = f"{_fmt(a, 'acc_w')} vs {_fmt(b, 'acc_w')}"
    return Outcome(a["acc_w"] >= b["acc_w"] or _near(a, b, "acc_w"), why=text, detail=text)


def t3_aspire_best(frames, summaries):
    """ASPIRE-EASE has the best or near-best Acc_w and Loss_w (within one std of the best method)."""
    ds, r = _t3(frames)
    if r is None:
        return None
    a = r["aspire"]
    fails = []
    for k in ("acc_w", "loss_w"):
        cands = [m for m in r if m != "individual"]
        best = min(cands, key=lambda m: r[m][k]) if k in LOWER_IS_BETTER else max(cands, key=lambda m: r[m][k])
        if best != "aspire" and not _near(a, r[best], k):
            fails.append(f"{k}: {_fmt(a, k)} vs best {_fmt(r[best], k)}")
    return Outcome(not fails, why="; ".join(fails), detail=f"Acc_w {a['acc_w']:.2f}, Loss_w {a['loss_w']:.3f}")


def t3_aspire_lowest_std(frames, summaries):
    """ASPIRE-EASE has the lowest Std (spread of the per-worker accuracies) of all methods."""
    ds, r = _t3(frames)
    if r is None:
        return None
    cands = {m: r[m]["std"] for m in r if m != "individual"}
    low = min(cands, key=cands.get)
    text = f"ASPIRE-EASE {cands['aspire']:.2f}; lowest {METHODS[low]} {cands[low]:.2f}"
    return Outcome(low == "aspire", why=text, detail=text)


def t3_per_within_noise(frames, summaries):
    """ASPIRE-EASE_per is within noise of ASPIRE-EASE on Acc_w and Loss_w."""
    ds, r = _t3(frames)
    if r is None:
        return None
    a, b = r["aspire_per"], r["aspire"]
    text = f"{_fmt(a, 'acc_w')} vs {_fmt(b, 'acc_w')}; Loss_w {a['loss_w']:.3f} vs {b['loss_w']:.3f}"
    return Outcome(_near(a, b, "acc_w") and _near(a, b, "loss_w"), why=text, detail=text)


# ---- Table 4 ------------------------------------------------------------------------------------
def _t4(frames):
    ds, _ = _one(frames, "table4")
    if ds is None:
        return None
    return _rows(table4_frame({f"table4_{ds}": frames[f"table4_{ds}"]}))


def _t4_extreme(frames, pick, method: str):
    """Whether ``method`` has the ``pick`` (min or max) success attack rate; every method's rate named."""
    r = _t4(frames)
    if r is None:
        return None
    found = pick(r, key=lambda m: r[m]["success_rate"])
    text = ", ".join(f"{METHODS[m]} {r[m]['success_rate']:.1f}%" for m in r)
    return Outcome(found == method, why=text, detail=text)


def t4_aspire_lowest(frames, summaries):
    """ASPIRE-EASE has the lowest success attack rate."""
    return _t4_extreme(frames, min, "aspire")


def t4_afl_highest(frames, summaries):
    """AFL is the most vulnerable (highest success attack rate)."""
    return _t4_extreme(frames, max, "afl")


def t4_drfa_below_erm(frames, summaries):
    """DRFA-Prox's success rate is below FedAvg's and Mix_Even's (its prior down-weights the attacker)."""
    r = _t4(frames)
    if r is None:
        return None
    d = r["drfa_prox"]["success_rate"]
    text = (f"DRFA-Prox {d:.1f}% vs FedAvg {r['fedavg_steps']['success_rate']:.1f}%, Mix_Even "
            f"{r['mix_even']['success_rate']:.1f}%")
    return Outcome(d < r["fedavg_steps"]["success_rate"] and d < r["mix_even"]["success_rate"], why=text, detail=text)


# ---- Fig. 3 -------------------------------------------------------------------------------------
def _f3(frames):
    ds, _ = _one(frames, "fig3")
    if ds is None:
        return None, None
    return ds, fig3_frame({f"fig3_{ds}": frames[f"fig3_{ds}"]})


def f3_robustness_grows(frames, summaries):
    """Acc_w does not decrease and Loss_w does not increase with Gamma (within one std between
    consecutive Gamma values), and the largest Gamma beats Gamma = 0 on Loss_w."""
    ds, t = _f3(frames)
    if t is None or t.empty:
        return None
    bad = []
    rows = [r for _, r in t.iterrows()]
    for a, b in zip(rows, rows[1:]):
        if b["acc_w"] < a["acc_w"] - max(a["acc_w_std"], b["acc_w_std"], FLOOR["acc_w"]):
            bad.append(f"Acc_w drops {a['acc_w']:.2f} -> {b['acc_w']:.2f} at Γ {a['Gamma']:g} -> {b['Gamma']:g}")
        if b["loss_w"] > a["loss_w"] + max(a["loss_w_std"], b["loss_w_std"], FLOOR["loss_w"]):
            bad.append(f"Loss_w rises {a['loss_w']:.3f} -> {b['loss_w']:.3f} at Γ {a['Gamma']:g} -> {b['Gamma']:g}")
    gain = rows[0]["loss_w"] - rows[-1]["loss_w"]
    if not gain > 0:
        bad.append(f"Loss_w at the largest Γ ({rows[-1]['loss_w']:.3f}) is not below Γ = 0 ({rows[0]['loss_w']:.3f})")
    series = "; ".join(f"Γ {r['Gamma']:g}: {r['acc_w']:.1f}% / {r['loss_w']:.3f}" for r in rows)
    return Outcome(not bad, why="; ".join(bad), detail=series)


def f3_gamma0_is_mix_even(frames, summaries):
    """Gamma = 0 is the nominal problem: the Gamma = 0 runs equal Mix_Even's runs of Table 3 with the
    same seeds (the same rule with Gamma = 0: bit-identical final Acc_w and Loss_w)."""
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
    """Beyond the saturation value 2 floor(N/2) (uniform q, ptilde = q: AMBIG-23) a larger Gamma changes
    nothing: the runs at the grid's values >= saturation are identical."""
    ds, t = _f3(frames)
    if t is None or t.empty:
        return None
    N = int(finals(frames[f"fig3_{ds}"])["m"].iloc[0])
    sat = 2 * (N // 2)
    top = t[t["Gamma"] >= sat]
    if len(top) < 2:
        return NotTestable(f"the Γ grid has fewer than two values >= the saturation value {sat}")
    spread = float(top["acc_w"].max() - top["acc_w"].min() + top["loss_w"].max() - top["loss_w"].min())
    return Outcome(spread == 0.0, why=f"Γ >= {sat} runs differ by {spread:.3g}",
                   detail=f"Γ in {sorted(top['Gamma'])} (N = {N}, saturation {sat})")


# ---- Figs. 4-5 ----------------------------------------------------------------------------------
def _f4(frames):
    ds, df = _one(frames, "fig4")
    if df is None:
        return None
    rows = {r["algorithm"]: r for _, r in time_to_target(df, "loss_w").iterrows()}
    first = next(iter(rows.values()))
    if first["target"] >= first["initial"]:
        worst = max(rows, key=lambda m: rows[m]["final"])
        return NotTestable(f"the worst method ({METHODS[worst]}) ends at Loss_w {first['target']:.3f}, not below the "
                           f"initial {first['initial']:.3f}: no common target to time")
    return rows


def _faster(r, a, b):
    ta, tb = r[a]["time_to_target"], r[b]["time_to_target"]
    return (not pd.isna(ta)) and (pd.isna(tb) or ta < tb), f"{METHODS[a]} {ta:.1f} s vs {METHODS[b]} {tb:.1f} s"


def f4_aspire_fastest(frames, summaries):
    """ASPIRE-EASE reaches the target Loss_w first in virtual time."""
    r = _f4(frames)
    if r is None or isinstance(r, NotTestable):
        return r
    times = {m: r[m]["time_to_target"] for m in r}
    reached = {m: t for m, t in times.items() if not pd.isna(t)}
    first = min(reached, key=reached.get) if reached else None
    text = ", ".join(f"{METHODS[m]} {'n/a' if pd.isna(t) else f'{t:.1f} s'}" for m, t in times.items()) + \
        f" (target {next(iter(r.values()))['target']:.3f})"
    return Outcome(first == "aspire" or (first is not None and reached[first] == reached.get("aspire")),
                   why=text, detail=text)


def f4_async_gain(frames, summaries):
    """Asynchrony: ASPIRE-EASE reaches the target before ASPIRE-EASE(-) (S = N)."""
    r = _f4(frames)
    if r is None or isinstance(r, NotTestable):
        return r
    ok, text = _faster(r, "aspire", "aspire_sync")
    return Outcome(ok, why=text, detail=text)


def f4_ease_before_cp(frames, summaries):
    """ASPIRE-EASE reaches the target no later than ASPIRE-CP (fewer planes, less master time)."""
    r = _f4(frames)
    if r is None or isinstance(r, NotTestable):
        return r
    ta, tb = r["aspire"]["time_to_target"], r["aspire_cp"]["time_to_target"]
    text = f"ASPIRE-EASE {ta:.1f} s vs ASPIRE-CP {tb:.1f} s"
    return Outcome((not pd.isna(ta)) and (pd.isna(tb) or ta <= tb), why=text, detail=text)


def f5_ease_fewer_planes(frames, summaries):
    """ASPIRE-EASE keeps fewer cutting planes than ASPIRE-CP (mean |A^t| over the evaluated iterations)."""
    ds, df = _one(frames, "fig4")
    if df is None:
        return None
    means = {m: float(df.loc[df["algorithm"] == m, "n_planes"].mean()) for m in ("aspire", "aspire_cp")}
    text = f"mean |A^t|: ASPIRE-EASE {means['aspire']:.2f}, ASPIRE-CP {means['aspire_cp']:.2f}"
    return Outcome(means["aspire"] < means["aspire_cp"], why=text, detail=text)


# ---- Fig. 2 -------------------------------------------------------------------------------------
def f2_adp_adapts(frames, summaries):
    """ASPIRE-ADP runs synchronously (S = N) while delays are similar, switches to S = s during the
    straggler episode and back to S = N after it."""
    import json

    df = frames["fig2"].sort_values("virtual_time")
    spec = json.loads(df["delays"].iloc[0])
    (_, t0, t1, _), = [(e["worker"], e["start"], e["end"], e["factor"]) for e in spec["schedule"]]
    N = int(df["m"].iloc[0])
    S = df[["virtual_time", "active_workers"]].to_numpy()
    phases = {"before": S[(S[:, 0] > 0.2 * t0) & (S[:, 0] < t0)], "during": S[(S[:, 0] >= t0) & (S[:, 0] < t1)],
              "after": S[S[:, 0] >= t1]}
    if any(len(v) == 0 for v in phases.values()):
        return NotTestable("the run did not cover the three phases of the straggler schedule")
    before = set(phases["before"][:, 1].astype(int))
    during_s = bool((phases["during"][:, 1] < N).any())
    after_n = int(phases["after"][-1, 1]) == N
    text = (f"S before {sorted(before)}, during: min {int(phases['during'][:, 1].min())}, "
            f"at the end {int(phases['after'][-1, 1])} (N = {N})")
    return Outcome(before == {N} and during_s and after_n, why=text, detail=text)


CHECKS = {f.__name__: f for f in (
    t3_ind_worst, t3_fedavg_mix_even, t3_dro_beats_erm, t3_drfa_ge_afl, t3_aspire_best, t3_aspire_lowest_std,
    t3_per_within_noise, t4_aspire_lowest, t4_afl_highest, t4_drfa_below_erm, f3_robustness_grows,
    f3_gamma0_is_mix_even, f3_plateau, f4_aspire_fastest, f4_async_gain, f4_ease_before_cp, f5_ease_fewer_planes,
    f2_adp_adapts)}
