"""Checks of the FRPG paper's statements (spec 004 sec. 6) computed from our results.

Every check takes ``(frames, summaries)`` (experiment id -> tidy DataFrame) and returns our
value, or None when the data it needs are absent. Main series: "FRPG" (L0 = L), "LFRPG",
"RSA (a=3, λ=1.6)" (the paper's literal benchmark setting); see fedrepro.figures.frpg.
Accuracies are fractions; gains are in percentage points (pp).
"""
from __future__ import annotations

import math

import numpy as np

from ..figures.frpg import curve, with_series

DS = ("usps", "mnist", "fashion_mnist")
RSA = "RSA (a=3, λ=1.6)"
BENCH = (RSA, "Krum", "GeoMed", "SGD (mean)")
ACC_LEVEL = 0.71


def _df(frames, exp):
    if exp not in frames or frames[exp] is None or frames[exp].empty:
        return None
    return with_series(frames[exp])


def _final(df, series, ds, metric="accuracy"):
    c = curve(df, series, ds, metric)
    return None if c.empty else float(c["mean"].iloc[-1])


def _value_at(df, series, ds, metric, rnd):
    c = curve(df, series, ds, metric)
    c = c[c["round"] <= rnd]
    return None if c.empty else float(c["mean"].iloc[-1])


def _first_round(df, series, ds, metric, level, *, below=False, sustained=False):
    """First evaluated CR with metric >= level (<= level with ``below``); inf if never."""
    c = curve(df, series, ds, metric)
    if c.empty:
        return None
    ok = (c["mean"] <= level) if below else (c["mean"] >= level)
    ok = ok.to_numpy()
    if sustained:
        tail_ok = np.flip(np.cumprod(np.flip(ok))).astype(bool)   # ok from here to the end
        idx = np.flatnonzero(tail_ok)
    else:
        idx = np.flatnonzero(ok)
    return float(c["round"].iloc[idx[0]]) if idx.size else math.inf


def _last_round(df):
    return float(df["round"].max())


def _all_or_none(values):
    values = list(values)
    return None if not values or any(v is None for v in values) else values


# ---- fig3 / fig4: loss ----------------------------------------------------------------
def _loss_below_rsa(exp, rsa=RSA):
    def check(frames, summaries):
        df = _df(frames, exp)
        if df is None:
            return None
        ok = []
        for ds in DS:
            vals = _all_or_none(_final(df, s, ds, "loss_F") for s in ("FRPG", "LFRPG", rsa))
            if vals is None:
                return None
            ok.append(max(vals[:2]) < vals[2])
        return all(ok)
    return check


def _lfrpg_le_frpg(exp):
    """Fraction of evaluated CRs r > 0 (all datasets) where F_LFRPG(r) <= F_FRPG(r)."""
    def check(frames, summaries):
        df = _df(frames, exp)
        if df is None:
            return None
        hits = []
        for ds in DS:
            a, b = curve(df, "LFRPG", ds, "loss_F"), curve(df, "FRPG", ds, "loss_F")
            if a.empty or b.empty:
                return None
            m = a.merge(b, on="round", suffixes=("_l", "_f"))
            m = m[m["round"] > 0]
            hits += list(m["mean_l"] <= m["mean_f"])
        return float(np.mean(hits)) if hits else None
    return check


def fmnist_loss_rounds_lfrpg(frames, summaries):
    """c* = first CR with F_LFRPG <= F_FRPG(800) on FMNIST (label flipping); paper ~400."""
    df = _df(frames, "label_flip")
    if df is None or _last_round(df) < 800:
        return None
    ref = _value_at(df, "FRPG", "fashion_mnist", "loss_F", 800)
    if ref is None:
        return None
    return _first_round(df, "LFRPG", "fashion_mnist", "loss_F", ref, below=True)


def fmnist_loss_rounds_ratio(frames, summaries):
    c = fmnist_loss_rounds_lfrpg(frames, summaries)
    return None if c is None else c / 800.0


# ---- fig5 / fig6: accuracy ------------------------------------------------------------
def _acc_margin(exp, bench=BENCH):
    """min over datasets of [min(FRPG, LFRPG) - max(benchmarks)] final accuracy, in pp."""
    def check(frames, summaries):
        df = _df(frames, exp)
        if df is None:
            return None
        margins = []
        for ds in DS:
            ours = _all_or_none(_final(df, s, ds) for s in ("FRPG", "LFRPG"))
            theirs = [v for v in (_final(df, s, ds) for s in bench) if v is not None]
            if ours is None or not theirs:
                return None
            margins.append(100 * (min(ours) - max(theirs)))
        return min(margins)
    return check


def _faster(exp, bench=BENCH):
    """FRPG and LFRPG reach 90% of the best final accuracy no later than every benchmark, all datasets."""
    def check(frames, summaries):
        df = _df(frames, exp)
        if df is None:
            return None
        ok = []
        for ds in DS:
            finals = [v for v in (_final(df, s, ds) for s in ("FRPG", "LFRPG") + bench) if v is not None]
            if not finals:
                return None
            level = 0.9 * max(finals)
            ours = [_first_round(df, s, ds, "accuracy", level) for s in ("FRPG", "LFRPG")]
            theirs = [_first_round(df, s, ds, "accuracy", level) for s in bench]
            if any(v is None for v in ours):
                return None
            ok.append(max(ours) <= min(v for v in theirs if v is not None))
        return all(ok)
    return check


def krum_max_final_acc(frames, summaries):
    """Largest final Krum accuracy over datasets and both attacks (paper: Krum fails, ~10%)."""
    vals = []
    for exp in ("label_flip", "gaussian"):
        df = _df(frames, exp)
        if df is None:
            return None
        vals += [v for v in (_final(df, "Krum", ds) for ds in DS) if v is not None]
    return max(vals) if vals else None


def _usps_rounds(series, sustained=False):
    def check(frames, summaries):
        df = _df(frames, "label_flip")
        return None if df is None else _first_round(df, series, "usps", "accuracy", ACC_LEVEL, sustained=sustained)
    return check


def usps_geomed_rsa_never_reach(frames, summaries):
    """GeoMed and RSA never reach 71% on USPS within the run (paper: > 4000 CRs)."""
    df = _df(frames, "label_flip")
    if df is None:
        return None
    r = [_first_round(df, s, "usps", "accuracy", ACC_LEVEL) for s in ("GeoMed", RSA)]
    return None if any(v is None for v in r) else all(math.isinf(v) for v in r)


def _comm_reduction(series):
    """1 - r(series)/r(SGD) at the 71% USPS level; r(SGD) = run length when SGD never gets there."""
    def check(frames, summaries):
        df = _df(frames, "label_flip")
        if df is None:
            return None
        r, r_sgd = (_first_round(df, s, "usps", "accuracy", ACC_LEVEL) for s in (series, "SGD (mean)"))
        if r is None or r_sgd is None or math.isinf(r):
            return None
        r_sgd = _last_round(df) if math.isinf(r_sgd) else r_sgd
        return 1.0 - r / max(r_sgd, 1.0)
    return check


def sgd_gaussian_max_final_acc(frames, summaries):
    """Largest final accuracy of SGD (mean) under the Gaussian attack over the datasets."""
    df = _df(frames, "gaussian")
    if df is None:
        return None
    vals = [v for v in (_final(df, "SGD (mean)", ds) for ds in DS) if v is not None]
    return max(vals) if vals else None


def _fmnist_gain(bench, relative=False):
    """Mean final accuracy of FRPG and LFRPG minus ``bench`` on FMNIST (Gaussian): pp or relative %."""
    def check(frames, summaries):
        df = _df(frames, "gaussian")
        if df is None:
            return None
        ours = _all_or_none(_final(df, s, "fashion_mnist") for s in ("FRPG", "LFRPG"))
        theirs = _final(df, bench, "fashion_mnist")
        if ours is None or theirs is None:
            return None
        o = float(np.mean(ours))
        return 100 * (o - theirs) / theirs if relative else 100 * (o - theirs)
    return check


def fmnist_frpg_lfrpg_gap(frames, summaries):
    """|FRPG - LFRPG| final accuracy on FMNIST under the Gaussian attack, pp."""
    df = _df(frames, "gaussian")
    if df is None:
        return None
    v = _all_or_none(_final(df, s, "fashion_mnist") for s in ("FRPG", "LFRPG"))
    return None if v is None else 100 * abs(v[0] - v[1])


# ---- acceptance: MNIST Gaussian and FRPG under attack vs silent ----------------------
def mnist_sgd_gaussian_acc(frames, summaries):
    df = _df(frames, "gaussian")
    return None if df is None else _final(df, "SGD (mean)", "mnist")


def mnist_frpg_lfrpg_gaussian_min_acc(frames, summaries):
    df = _df(frames, "gaussian")
    if df is None:
        return None
    v = _all_or_none(_final(df, s, "mnist") for s in ("FRPG", "LFRPG"))
    return None if v is None else min(v)


def _frpg_vs_silent(exp):
    """max over datasets of |acc_FRPG(attack) - acc_FRPG(silent, same minibatch)| in pp."""
    def check(frames, summaries):
        df, sil = _df(frames, exp), _df(frames, "silent")
        if df is None or sil is None:
            return None
        batch = 15 if exp == "label_flip" else 10
        if "batch" in sil.columns:
            sil = sil[sil["batch"] == batch]
        gaps = []
        for ds in DS:
            a, b = _final(df, "FRPG", ds), _final(sil, "FRPG", ds)
            if a is None or b is None:
                return None
            gaps.append(100 * abs(a - b))
        return max(gaps)
    return check


CHECKS = {
    "lf_loss_below_rsa": _loss_below_rsa("label_flip"),
    "lf_loss_below_rsa_tuned": _loss_below_rsa("label_flip", "RSA tuned"),
    "lf_lfrpg_le_frpg": _lfrpg_le_frpg("label_flip"),
    "fmnist_loss_rounds_lfrpg": fmnist_loss_rounds_lfrpg,
    "fmnist_loss_rounds_ratio": fmnist_loss_rounds_ratio,
    "g_loss_below_rsa": _loss_below_rsa("gaussian"),
    "g_lfrpg_le_frpg": _lfrpg_le_frpg("gaussian"),
    "lf_acc_margin": _acc_margin("label_flip"),
    "lf_faster": _faster("label_flip"),
    "krum_max_final_acc": krum_max_final_acc,
    "usps_rounds_frpg": _usps_rounds("FRPG"),
    "usps_rounds_frpg_sustained": _usps_rounds("FRPG", sustained=True),
    "usps_rounds_lfrpg": _usps_rounds("LFRPG"),
    "usps_rounds_sgd": _usps_rounds("SGD (mean)"),
    "usps_geomed_rsa_never_reach": usps_geomed_rsa_never_reach,
    "comm_reduction_frpg": _comm_reduction("FRPG"),
    "comm_reduction_lfrpg": _comm_reduction("LFRPG"),
    "sgd_gaussian_max_final_acc": sgd_gaussian_max_final_acc,
    "g_acc_margin": _acc_margin("gaussian", (RSA, "Krum", "GeoMed")),
    "g_faster": _faster("gaussian", (RSA, "Krum", "GeoMed")),
    "fmnist_gain_geomed_pp": _fmnist_gain("GeoMed"),
    "fmnist_gain_rsa_pp": _fmnist_gain(RSA),
    "fmnist_gain_geomed_rel": _fmnist_gain("GeoMed", relative=True),
    "fmnist_gain_rsa_rel": _fmnist_gain(RSA, relative=True),
    "fmnist_frpg_lfrpg_gap": fmnist_frpg_lfrpg_gap,
    "mnist_sgd_gaussian_acc": mnist_sgd_gaussian_acc,
    "mnist_frpg_lfrpg_gaussian_min_acc": mnist_frpg_lfrpg_gaussian_min_acc,
    "frpg_label_flip_vs_silent": _frpg_vs_silent("label_flip"),
    "frpg_gaussian_vs_silent": _frpg_vs_silent("gaussian"),
}
