"""Checks of the FRPG paper's statements (Sec. V; spec 004 sec. 6), as replicates per seed.

Every check takes ``(frames, summaries)`` and returns Replicates (per seed; two methods PAIRED by seed:
same partition, minibatch and attack streams), a list of them ("on every dataset": all must hold,
Bonferroni), an Outcome around that, a NotTestable, or None without data. An attack's runs are two
experiments (``label_flip`` = MNIST/FMNIST, ``label_flip_usps`` = USPS; likewise ``gaussian``). Values
come from the query layer (:mod:`fedrepro.claims.query`; a difference or ratio of two capped runs is
dropped); readings that need no code are data in claims.yaml, on the views of ``VIEWS`` (an attack's runs;
FRPG's runs beside the silent ones). Checks serving several claims take the attack as ``args``. RSA's unstated
lambda_R is swept over ``RSA_LAMS`` (holds / fails at every value, else undecided: "depends on lambda_R");
1.6, FRPG's lambda, is shown, not decided on (FR-13). The benchmarks' stated step 3/sqrt(k) decides
(a = 3); SGD and GeoMed at a = 0.3 are shown beside with their own verdict (claims.yaml, FIDELITY.md).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from fedrepro.claims import NotTestable, Outcome
from fedrepro.claims.query import (PerSeed, beside, column, final, gaps, informative, listing, memo_frame, per_instance,
                                   read_across, read_beside, rounds_to, select, value_at)
from fedrepro.claims.sweep import across
from fedrepro.papers.frpg.analysis import series_label, with_series

DS = ("usps", "mnist", "fashion_mnist")
DS_NAME = {"usps": "USPS", "mnist": "MNIST", "fashion_mnist": "FMNIST"}
ATTACK_NAME = {"label_flip": "LF", "gaussian": "Gauss"}
A_STATED, A_SENS = 3.0, 0.3          # a in a_k = a/sqrt(k): the paper's "3/sqrt(k)"; sensitivity series
RSA_LAMS = (0.3, 0.1, 0.03, 0.01)    # lambda_R grid the RSA claims are decided over
RSA_SHOWN = (1.6,)                   # run at quick scale and shown, not decided on (RSA diverges)
ACC_LEVEL = 0.71
OURS = ("FRPG", "LFRPG")
TIMED = ("label_flip", "label_flip_usps", "gaussian", "gaussian_usps")
KRUM, GEOMED, SGD = (series_label(alg, {"a": A_STATED}) for alg in ("krum", "geomed", "sgd_mean"))
GEOMED_S, SGD_S = (series_label(alg, {"a": A_SENS}) for alg in ("geomed", "sgd_mean"))
RSA = {lam: series_label("rsa", {"a": A_STATED, "lam": lam}) for lam in RSA_LAMS + RSA_SHOWN}
SHORT = {**{s: s for s in OURS}, KRUM: "Krum", GEOMED: "GeoMed", SGD: "SGD", GEOMED_S: "GeoMed a=0.3",
         SGD_S: "SGD a=0.3",         **{series: f"RSA λ_R={lam:g}" for lam, series in RSA.items()}}


# ---- the runs; deciding across lambda_R, or at a = 3 with a = 0.3 beside -------------------------------
def _df(frames, attack):
    """The attack's runs (``attack`` and ``attack_usps``) with ``series`` / ``ds`` columns, memoised."""
    parts = [p for p in (frames.get(e) for e in (attack, f"{attack}_usps")) if p is not None and not p.empty]
    return memo_frame(parts, with_series) if parts else None


def _vs_silent(frames, attack):
    """FRPG's runs under ``attack`` (``arm`` attack) and with the faulty workers silent (``arm`` silent, the
    attack's minibatch), per dataset up to ``cr``, the last CR of both (the view of the acceptance checks)."""
    df, sil = _df(frames, attack), frames.get("silent")
    if df is None or sil is None or sil.empty:
        return None
    sil = with_series(sil)
    sil = sil[sil["batch"] == (15 if attack == "label_flip" else 10)] if "batch" in sil.columns else sil
    last = pd.concat([d.groupby("ds")["round"].max() for d in (df, sil)], axis=1).min(axis=1, skipna=False)
    both = pd.concat([df.assign(arm="attack"), sil.assign(arm="silent")], ignore_index=True)
    both["cr"] = both["ds"].map(last)
    return both[both["round"] <= both["cr"]]


def _attacks(frames, attack=None):
    """Both attacks' runs (:func:`_df`), each with its ``attack`` (LF, Gauss); None without either."""
    dfs = {name: _df(frames, a) for a, name in ATTACK_NAME.items()}
    return None if any(d is None for d in dfs.values()) else pd.concat(
        [d.assign(attack=name) for name, d in dfs.items()], ignore_index=True)


def _view(attack, runs=_df):
    """A view of ``VIEWS``: ``runs(frames, attack)``, the attack's runs (:func:`_df`) or :func:`_vs_silent`."""
    def view(frames, summaries):
        return runs(frames, attack)
    return view


VIEWS = {**{a: _view(a) for a in ATTACK_NAME}, **{f"{a}_vs_silent": _view(a, _vs_silent) for a in ATTACK_NAME},
         "attacks": _view(None, _attacks)}


def _fin(df, series, ds, metric="accuracy") -> PerSeed:
    return final(select(df, series=series, ds=ds), metric)


def _reach(df, series, ds, level=ACC_LEVEL) -> PerSeed:
    return rounds_to(select(df, series=series, ds=ds), "accuracy", level)


def _some(xs):
    return [x for x in xs if x is not None]


def _on(attack, fn):
    """The check ``fn(df)`` on the attack's runs (None without them)."""
    def check(frames, summaries):
        df = _df(frames, attack)
        return None if df is None else fn(df)
    return check


def _over_lam(check: str, at, side=()):
    """Decide ``check`` at every lambda_R of the grid (``at(lam)``: its [Replicates]) and combine (module
    docstring); ``side`` (a = 0.3) beside."""
    return across("frpg", check, [(f"λ_R={lam:g}", at(lam)) for lam in RSA_LAMS], name="the unstated λ_R",
                  context=" (a = 3)", side=side)


def _beside(attack, check, comps, stated=SGD, sens=SGD_S, detail=None):
    """The check ``check``: ``comps(df, series)`` of the series at the stated a = 3 decides, the one at
    a = 0.3 (``sens``) is shown beside; ``detail(df, d)`` the detail given the sensitivity table ``d``."""
    def run(df):
        out = beside("frpg", check, comps(df, stated), side=[(SHORT[sens], comps(df, sens))])
        return out if out is None or detail is None else Outcome(out.value, detail=detail(df, out.detail), why=out.why)
    return _on(attack, run)


def _read(check, how=read_beside):
    """The check ``check`` as data: ``how`` (:func:`~fedrepro.claims.query.read_beside`, ``read_across``) of
    its ``args`` on ``VIEWS``."""
    def run(frames, summaries, **args):
        return how("frpg", check, frames, summaries, views=VIEWS, **args)
    run.reading_views = list(VIEWS.values())
    return run


# ---- figs 3-4: loss ---------------------------------------------------------------------
def lfrpg_le_frpg(frames, summaries):
    """Per (attack, dataset): the mean over evaluated CRs 0 < r <= last of F_LFRPG(r) - F_FRPG(r),
    per seed (< 0: LFRPG lower at equal CR). Detail: share of (seed, CR) points with F_LFRPG < F_FRPG."""
    comps, hits = [], []
    for attack, df in ((a, _df(frames, a)) for a in ATTACK_NAME):
        if df is None:
            return None
        for ds in DS:
            d = gaps(select(df, series="LFRPG", ds=ds), select(df, series="FRPG", ds=ds), "loss_F")
            d = {k: g[g.index > 0] for k, g in d.items() if not g[g.index > 0].empty}
            hits += [h for g in d.values() for h in g.to_numpy() < 0]
            comps += _some([PerSeed.exact({k: float(g.mean()) for k, g in d.items()})
                            .rep(f"{ATTACK_NAME[attack]} {DS_NAME[ds]} mean F_LFRPG−F_FRPG")])
    if not comps:
        return None
    return Outcome(comps, detail=f"F_LFRPG < F_FRPG at {np.mean(hits):.0%} of the evaluated (seed, CR) points")


def _fmnist_400_vs_800(df):
    """c* per seed = first CR with F_LFRPG <= F_FRPG(800) (same seed), FMNIST, label flipping."""
    last = df[df["ds"] == "fashion_mnist"]["round"].max()
    if not last >= 800:
        return NotTestable(f"needs max_rounds >= 800 on FMNIST (run: {last})")
    ref = value_at(select(df, series="FRPG", ds="fashion_mnist"), "loss_F", 800)
    c = rounds_to(select(df, series="LFRPG", ds="fashion_mnist"), "loss_F", dict(ref.v), below=True)
    refs = ", ".join(f"{ref.v[s]:.4g}" for s in c.seeds)
    return Outcome(c.rep("c* (CR)"), detail=f"per seed c* = {listing(c)}; F_FRPG(800) = {refs}; "
                                            "paper's ratio c*/800 = 0.5") if len(c) else None


# ---- figs 5-6: accuracy ----------------------------------------------------------------
def _pp(df, a, b, ds, label):
    """Final accuracy of series a minus that of series b on ``ds``, paired by seed, in pp."""
    return (_fin(df, a, ds) - _fin(df, b, ds)).scaled(100.0).rep(label)


def _speed(df, benches, dsets=DS, every=False):
    """[Replicates]: rounds to 90 % of the best mean final accuracy (among ours and ``benches``; ``every``:
    only where all of them ran), ours minus each benchmark's, per seed, on each of ``dsets``."""
    out = []
    for ds in dsets:
        finals = [_fin(df, s, ds) for s in OURS + tuple(benches)]
        means = [np.mean(f.v.to_numpy()) for f in finals if len(f)]
        if means and not (every and len(means) < len(finals)):
            level = 0.9 * max(means)
            out += _some(informative(_reach(df, s, ds, level) - _reach(df, b, ds, level))
                         .rep(f"{DS_NAME[ds]} CR to {level:.3f}: {s}−{SHORT[b]}") for b in benches for s in OURS)
    return out


def faster(frames, summaries, attack):
    """:func:`_speed` on the runs of the claim's ``attack`` (args) for FRPG and LFRPG against Krum, GeoMed and RSA,
    decided across RSA's lambda_R (FR-13); GeoMed at a = 0.3 beside."""
    df = _df(frames, attack)
    return None if df is None else _over_lam("faster", lambda lam: _speed(df, (KRUM, GEOMED, RSA[lam])),
                                             side=[("GeoMed a=0.3", _speed(df, (GEOMED_S,)))])


# ---- USPS round counts (label flipping) --------------------------------------------------
def _usps_geomed_rsa_gt_4000(df):
    """USPS (label flipping) CR to 71 % per seed, GeoMed (a = 3) and RSA (each lambda_R), > 4000."""
    reach = {s: _reach(df, s, "usps") for s in (GEOMED, GEOMED_S, *(RSA[lam] for lam in RSA_LAMS))}
    rep = {s: r.rep(f"{SHORT[s]} CR to 71 % ({listing(r)})") for s, r in reach.items()}
    return None if rep[GEOMED] is None else _over_lam(
        "usps_geomed_rsa_gt_4000", lambda lam: _some([rep[GEOMED], rep[RSA[lam]]]),
        side=[("GeoMed a=0.3", _some([rep[GEOMED_S]]))])


def _speed_mnist_fmnist(df, sgd):
    """MNIST and FMNIST: CR to 90 % of the best of FRPG, LFRPG and SGD (all ran), ours minus SGD's."""
    return _speed(df, (sgd,), ("mnist", "fashion_mnist"), every=True)


def _gain(df, benches):
    """FMNIST, Gaussian: final accuracy FRPG - bench and LFRPG - bench (pp), per seed, for each of ``benches``."""
    return _some(_pp(df, s, b, "fashion_mnist", f"FMNIST {s}−{SHORT[b]} (pp)") for b in benches for s in OURS)


def _relative_geomed(df, detail) -> str:
    """The detail, then the gain over GeoMed as a relative reading (% of GeoMed's mean final accuracy)."""
    ours = [np.mean(_fin(df, s, "fashion_mnist").v.to_numpy()) for s in OURS]
    theirs = _fin(df, GEOMED, "fashion_mnist").v.to_numpy()
    t = float(np.mean(theirs)) if len(theirs) and not any(np.isnan(ours)) else None
    rel = None if t is None else f"relative reading {SHORT[GEOMED]}: " + ", ".join(
        f"{s} {100 * (o - t) / t:+.1f} %" for s, o in zip(OURS, ours))
    return "; ".join(_some([detail or None, rel]))


# ---- local computation (CPU time) --------------------------------------------------------
def lfrpg_local_cost_ratio(frames, summaries):
    """Local CPU time per CR, LFRPG / FRPG, per (attack, dataset). Replicates: the seeds, paired by seed; with
    a timing pass (``<exp>.timing``) each run's value is the median over its repetitions (query.per_instance:
    they only reduce timer noise within a seed), else the seed's single run. scale log."""
    comps, source = [], set()
    for exp in TIMED:
        timed = summaries.get(f"{exp}.timing") is not None and not summaries[f"{exp}.timing"].empty
        t = summaries.get(f"{exp}.timing" if timed else exp)
        if t is None or t.empty or "run_local_cpu_time" not in t.columns:
            continue
        source.add("seeds (each the median over its timing repetitions)" if timed else "seeds (one run each)")
        t = select(with_series(t), run_local_cpu_time=lambda x: x > 0)
        t = t.assign(per_cr=t["run_local_cpu_time"] / t["rounds"].clip(lower=1.0))
        if timed:
            t = per_instance(t, "per_cr", ["series", "ds", "cell"], instance="seed")
        for ds in DS:
            fr, lf = (column(select(t, series=s, ds=ds), "per_cr", "seed") for s in OURS)
            label = f"{ATTACK_NAME[exp.replace('_usps', '')]} {DS_NAME[ds]} local CPU/CR LFRPG÷FRPG"
            comps += _some([lf.ratio(fr).rep(label, scale="log")])
    return Outcome(comps, detail="replicates: " + ", ".join(sorted(source))) if comps else None


def lfrpg_local_steps_ratio(frames, summaries):
    """(check) local slots per CR (iterations / rounds), LFRPG / FRPG: T = 10 by construction (deterministic)."""
    vals = []
    for s in (summaries.get(exp) for exp in TIMED):
        if s is not None and not s.empty and "iterations" in s.columns:
            per = {n: float((g["iterations"] / g["rounds"].clip(lower=1)).mean())
                   for n, g in with_series(s).groupby("series") if n in OURS}
            vals += [per["LFRPG"] / per["FRPG"]] if len(per) == 2 and per["FRPG"] > 0 else []
    return PerSeed.exact(dict(enumerate(vals))).rep("local slots per CR LFRPG÷FRPG", deterministic=True)


CHECKS = {
    "lfrpg_le_frpg": lfrpg_le_frpg,
    "fmnist_400_vs_800": _on("label_flip", _fmnist_400_vs_800),
    "faster": faster,
    "lfrpg_local_cost_ratio": lfrpg_local_cost_ratio,
    "usps_geomed_rsa_gt_4000": _on("label_flip", _usps_geomed_rsa_gt_4000),
    "comm_reduction_mnist_fmnist": _beside("label_flip", "comm_reduction_mnist_fmnist", _speed_mnist_fmnist),
    "fmnist_gain_geomed": _beside("gaussian", "fmnist_gain_geomed", lambda df, s: _gain(df, (s,)), GEOMED, GEOMED_S,
                                  detail=_relative_geomed),
    "lfrpg_local_steps_ratio": lfrpg_local_steps_ratio,
}
# the checks written as data (their readings are their args: in claims.yaml), decided at a = 3 with a = 0.3 beside
# (read_beside) or across RSA's lambda_R (read_across)
CHECKS.update({name: _read(name) for name in ("usps_rounds_frpg", "usps_rounds_lfrpg", "usps_rounds_sgd",
                                              "sgd_lf_limited", "sgd_gaussian_final_acc", "comm_reduction_frpg",
                                              "comm_reduction_lfrpg")})
CHECKS.update({name: _read(name, read_across) for name in ("loss_below_rsa", "acc_margin", "fmnist_gain_rsa")})
