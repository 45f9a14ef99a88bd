"""Checks of the FedADMM (Gong et al.) paper's statements (spec 003 §6, §8.3 Q1-Q8) from our runs.

Every check takes ``(frames, summaries)`` and returns :class:`Replicates` (one value per seed, the
two compared series paired by seed: every method of an experiment shares the seed's partition,
initial model and client-selection stream), a list of them for a statement "in every case" (the
engine applies Bonferroni), an :class:`Outcome` around them, a :class:`NotTestable`, or None when
its experiments are absent.

Per seed:

- *final accuracy*: the mean of the seed's test-accuracy curve over its last :data:`TAIL` evaluated
  rounds, so that one noisy round does not decide an ordering;
- *rounds to target*: the first round >= 1 at which the seed's curve reaches the target of the model
  run (:mod:`analysis`); a run that never reaches it within its T rounds counts T + 1 and is a
  **lower bound** (the true number is at least T + 1). Differences, ratios and reductions of rounds
  carry the bound in the direction it informs (:class:`_B`), so that a capped run never counts as a
  value: a claim that needs the other side stays undecided ("a higher round cap would decide it").

The "best baseline" of a seed is the baseline best in that seed (fewest rounds / highest final
accuracy), FedProx at its best ρ where ρ is swept (Table III at paper scale), baselines at their
tuned learning rate where the lr is swept (paper scale, :func:`analysis.runs_of`).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fedrepro.claims import NotTestable, Outcome, Replicates
from fedrepro.papers.fedadmm_gong.analysis import (ALG1, BASELINES, DATASETS, EARLY, HEAD, PAPER_TABLE3, PAPER_TABLE4,
                                                   PAPER_TABLE5, PARTITIONS, TABLE3_COLUMNS, best_prox, for_variant,
                                                   layout, mean_curve, rounds_to, runs_of, sub_target, table6_frame,
                                                   tidy)

TAIL = 5
PAPER_FEDSGD_SPEEDUP = [29.7, 7.6, 25.1, 20.7, 130.0, 75.7, 26.6, 22.4]   # Table III, FedADMM row
T5_CELLS = ((200, "iid"), (200, "label_shards"), (500, "iid"), (500, "label_shards"))


# Experiments where FedADMM runs as the early code and, in their ``<exp>_alg1`` twins, as Algorithm 1 as
# printed (FIDELITY GO-15): every check of them is reported for both (:func:`alg1`).
VARIANT_EXPERIMENTS = ("table3", "scaling", "fig10")


class _VariantFrames(dict):
    """The results frames as one FedADMM variant's checks see them (:func:`alg1`)."""

    variant = ALG1


def _df(frames, *exps):
    """The tidy rows of ``exps``. Where FedADMM variants compete (:data:`VARIANT_EXPERIMENTS`), FedADMM
    is the frames' variant (Algorithm 1 under :func:`alg1`; else the early code when it ran, or the one
    variant present), every row judged by that variant's targets."""
    parts = [tidy(frames[e]) for e in exps if frames.get(e) is not None and not frames[e].empty]
    if not parts:
        return None
    df = pd.concat(parts, ignore_index=True)
    if any(e in VARIANT_EXPERIMENTS or e == "table3_fedsgd" for e in exps):
        have = set(df.loc[df["method"] == "FedADMM", "local_init"])
        variant = getattr(frames, "variant", None) or (EARLY if EARLY in have or not have else sorted(have)[0])
        df = for_variant(df, variant)
    return df


def alg1(check):
    """``check`` for Algorithm 1 as printed (Option I) instead of the early code: each experiment of
    :data:`VARIANT_EXPERIMENTS` becomes its baselines plus the FedADMM runs of ``<exp>_alg1`` (same
    seeds, so the same partitions, initial models and client selections: paired by seed). None (not
    run) when a twin is absent."""
    def run(frames, summaries):
        out = _VariantFrames(frames)
        for exp in VARIANT_EXPERIMENTS:
            base, twin = frames.get(exp), frames.get(f"{exp}_alg1")
            if base is None:
                continue
            if twin is None or twin.empty:
                out[exp] = None
                continue
            out[exp] = pd.concat([base[base["algorithm"] != "fedadmm_gong"], twin], ignore_index=True, sort=False)
        return check(out, summaries)
    run.__name__ = f"{check.__name__}_alg1"
    run.__doc__ = f"Algorithm 1 as printed (Option I; ``<exp>_alg1``): {check.__doc__ or check.__name__}"
    return run


# ---- per-seed values with bounds -------------------------------------------------------------------
@dataclass(frozen=True)
class _B:
    """Per-seed values (index: seed) with flags: ``lb`` the true value is >= the value (a capped run's
    rounds), ``ub`` the true value is <= the value."""

    v: pd.Series
    lb: pd.Series
    ub: pd.Series

    @staticmethod
    def exact(v: pd.Series) -> "_B":
        return _B(v.astype(float), pd.Series(False, index=v.index), pd.Series(False, index=v.index))

    def __len__(self):
        return len(self.v)

    def __sub__(self, other: "_B") -> "_B":
        idx = self.v.index.intersection(other.v.index)
        a, b = self._at(idx), other._at(idx)
        return _B(a.v - b.v, a.lb | b.ub, a.ub | b.lb)

    def _at(self, idx) -> "_B":
        return _B(self.v.loc[idx], self.lb.loc[idx], self.ub.loc[idx])

    def ratio(self, other: "_B") -> "_B":
        """self / other (positive values)."""
        idx = self.v.index.intersection(other.v.index)
        a, b = self._at(idx), other._at(idx)
        return _B(a.v / b.v, a.lb | b.ub, a.ub | b.lb)

    def scaled(self, k: float) -> "_B":
        return _B(self.v * k, self.lb, self.ub) if k > 0 else _B(self.v * k, self.ub, self.lb)

    def rep(self, label: str, scale: str = "linear", paper_value=None) -> Replicates:
        seeds = ", ".join(str(int(s)) for s in self.v.index)
        return Replicates(self.v.to_numpy(float), label=label, scale=scale,
                          lower_bound=self.lb.to_numpy(bool) if self.lb.any() else None,
                          upper_bound=self.ub.to_numpy(bool) if self.ub.any() else None,
                          paper_value=paper_value) if len(self) else None

    def show(self, fmt="{:.1f}") -> str:
        return ", ".join((fmt.format(v) + ("+" if lb else "") + ("-" if ub else ""))
                         for v, lb, ub in zip(self.v, self.lb, self.ub))


def _extreme(parts: list[_B], lowest: bool) -> _B:
    """Per seed min (``lowest``) or max of several series, with the flags that the bounds leave:
    a min may lie below the observed one when any part is an upper bound, above it when every part
    achieving it is a lower bound (mirror for the max). No parts: no seeds."""
    if not parts:
        return _EMPTY
    idx = parts[0].v.index
    for p in parts[1:]:
        idx = idx.intersection(p.v.index)
    V = pd.concat([p.v.loc[idx] for p in parts], axis=1).to_numpy(float)
    L = pd.concat([p.lb.loc[idx] for p in parts], axis=1).to_numpy(bool)
    U = pd.concat([p.ub.loc[idx] for p in parts], axis=1).to_numpy(bool)
    best = V.min(axis=1) if lowest else V.max(axis=1)
    at = np.isclose(V, best[:, None])
    if lowest:
        lb = np.array([L[i, at[i]].all() for i in range(len(idx))], bool)
        ub = U.any(axis=1)
    else:
        ub = np.array([U[i, at[i]].all() for i in range(len(idx))], bool)
        lb = L.any(axis=1)
    return _B(pd.Series(best, index=idx), pd.Series(lb, index=idx), pd.Series(ub, index=idx))


_EMPTY = _B.exact(pd.Series(dtype=float))


def finals(sub: pd.DataFrame) -> _B:
    """Per seed: mean test accuracy over the last TAIL evaluated rounds, in percent."""
    if sub.empty:
        return _EMPTY
    v = sub.sort_values("round").groupby("seed")["acc"].apply(lambda a: float(a.iloc[-TAIL:].mean()))
    return _B.exact(100 * v)


def early(sub: pd.DataFrame, last: int) -> _B:
    """Per seed: mean test accuracy over rounds 1..last, in percent."""
    if sub.empty:
        return _EMPTY
    s = sub[(sub["round"] >= 1) & (sub["round"] <= last)]
    return _B.exact(100 * s.groupby("seed")["acc"].mean())


def seed_rounds(sub: pd.DataFrame) -> _B:
    """Per seed: rounds to the target of the model run; T + 1 and a lower bound when not reached."""
    if sub.empty:
        return _EMPTY
    level = sub_target(sub)
    v, lb = {}, {}
    for seed, s in sub.groupby("seed"):
        r = rounds_to(mean_curve(s), level)
        v[seed] = float(int(s["round"].max()) + 1 if r is None else r)
        lb[seed] = r is None
    v = pd.Series(v, dtype=float)
    return _B(v, pd.Series(lb, dtype=bool), pd.Series(False, index=v.index))


def reduction_b(admm: _B, best: _B) -> _B:
    """Per seed 100 (R_best - R_FedADMM) / R_best; capped FedADMM rounds make it an upper bound,
    capped baseline rounds a lower bound."""
    idx = admm.v.index.intersection(best.v.index)
    a, b = admm._at(idx), best._at(idx)
    return _B(100 * (b.v - a.v) / b.v, b.lb | a.ub, a.lb | b.ub)


def _prox_runs(sub: pd.DataFrame) -> pd.DataFrame:
    """FedProx at the ρ (and lr) with the fewest rounds to target on the seed-mean curve (Table III)."""
    name, r = best_prox(sub)
    if name is None:
        return sub.iloc[0:0]
    g = sub[sub["series"] == name]
    return g[np.isclose(g["lr"], r["lr"])]


def _baseline_runs(sub: pd.DataFrame, prox: str = "fixed") -> dict:
    """method -> runs at its tuned lr; FedProx at ρ = 0.1 (the figures) or its best ρ (``prox='best'``)."""
    out = {m: runs_of(sub, m) for m in ("FedAvg", "SCAFFOLD")}
    out["FedProx"] = _prox_runs(sub) if prox == "best" else runs_of(sub, "FedProx", 0.1)
    return {m: g for m, g in out.items() if not g.empty}


def _none_if_empty(reps):
    reps = [r for r in reps if r is not None]
    return reps or None


def _outcome(reps, detail: str = "", why: str = ""):
    """Outcome of one Replicates or a list of them (empty components dropped); None without any."""
    if isinstance(reps, list):
        reps = _none_if_empty(reps)
    if reps is None:
        return None
    return Outcome(reps, why=why, detail=detail)


def _explain(parts: list[tuple[str, _B]], unit: str = "") -> str:
    return "; ".join(f"{lab}: per seed {b.show()}{unit}" for lab, b in parts)


BOUND_NOTE = " ('+': a lower bound, the run hit its round cap; '-': an upper bound)"


# ---- Table III: rounds to target ----------------------------------------------------------------------
def _table3_columns(df):
    return [c for c in TABLE3_COLUMNS if c in set(df["setting"].dropna())]


def table3_fedadmm_fewest(frames, summaries):
    """Per Table III column: FedADMM's rounds minus the best baseline's (per seed), < 0 everywhere."""
    df = _df(frames, "table3")
    if df is None:
        return None
    reps, parts = [], []
    for s in _table3_columns(df):
        sub = df[df["setting"] == s]
        base = _baseline_runs(sub, prox="best")
        d = seed_rounds(runs_of(sub, "FedADMM")) - _extreme([seed_rounds(g) for g in base.values()], lowest=True)
        reps.append(d.rep(f"{s}: FedADMM − best baseline rounds"))
        parts.append((s, d))
    reps = _none_if_empty(reps)
    return _outcome(reps, detail=_explain(parts, " rounds") + BOUND_NOTE)


def table3_fedsgd_speedup(frames, summaries):
    """Per Table III column: FedSGD's rounds over FedADMM's (FedADMM's speedup relative to FedSGD), > 1."""
    df, sgd = _df(frames, "table3"), _df(frames, "table3_fedsgd")
    if df is None or sgd is None:
        return None
    reps, parts = [], []
    for s in _table3_columns(df):
        g = sgd[sgd["setting"] == s]
        if g.empty:
            continue
        sp = seed_rounds(g).ratio(seed_rounds(runs_of(df[df["setting"] == s], "FedADMM")))
        reps.append(sp.rep(f"{s}: FedSGD / FedADMM rounds", scale="log"))
        parts.append((s, sp))
    reps = _none_if_empty(reps)
    return _outcome(reps, detail=_explain(parts, "×") + BOUND_NOTE)


def _paper_ratio(parts: list[tuple[str, _B, float | None]], what: str):
    """Components ours/paper (log scale) for the cells the paper reports a number for."""
    reps = [(b.scaled(1.0 / p)).rep(f"{lab}: {what} ours/paper ({p:g})", scale="log")
            for lab, b, p in parts if p is not None and len(b)]
    reps = _none_if_empty(reps)
    if not reps:
        return NotTestable("no cell with both our runs and a number of the paper")
    return _outcome(reps, detail="; ".join(f"{lab}: {b.show()} (paper {p})" for lab, b, p in parts) + BOUND_NOTE)


def table3_fedadmm_rounds_paper(frames, summaries):
    """Our FedADMM rounds to target per Table III column, as ratios to the paper's."""
    df = _df(frames, "table3")
    if df is None:
        return None
    return _paper_ratio([(s, seed_rounds(runs_of(df[df["setting"] == s], "FedADMM")),
                          PAPER_TABLE3["FedADMM"][TABLE3_COLUMNS.index(s)]) for s in _table3_columns(df)],
                        "FedADMM rounds")


def table3_fedsgd_speedup_paper(frames, summaries):
    """FedADMM's speedup over FedSGD per Table III column, as ratios to the paper's (29.7× ... 130×)."""
    df, sgd = _df(frames, "table3"), _df(frames, "table3_fedsgd")
    if df is None or sgd is None:
        return None
    parts = []
    for s in _table3_columns(df):
        g = sgd[sgd["setting"] == s]
        if not g.empty:
            parts.append((s, seed_rounds(g).ratio(seed_rounds(runs_of(df[df["setting"] == s], "FedADMM"))),
                          PAPER_FEDSGD_SPEEDUP[TABLE3_COLUMNS.index(s)]))
    return _paper_ratio(parts, "speedup over FedSGD")


def _table3_reductions(df) -> list[tuple[str, _B]]:
    out = []
    for s in _table3_columns(df):
        sub = df[df["setting"] == s]
        best = _extreme([seed_rounds(g) for g in _baseline_runs(sub, prox="best").values()], lowest=True)
        out.append((s, reduction_b(seed_rounds(runs_of(sub, "FedADMM")), best)))
    return out


def _across_columns(reds: list[tuple[str, _B]], how: str) -> _B:
    """Per seed mean or max over the columns of the per-seed reductions (bounds carried)."""
    if how == "max":
        return _extreme([b for _, b in reds], lowest=False)
    idx = reds[0][1].v.index
    for _, b in reds[1:]:
        idx = idx.intersection(b.v.index)
    v = sum(b.v.loc[idx] for _, b in reds) / len(reds)
    lb = pd.concat([b.lb.loc[idx] for _, b in reds], axis=1).any(axis=1)
    ub = pd.concat([b.ub.loc[idx] for _, b in reds], axis=1).any(axis=1)
    return _B(v, lb, ub)


def _reduction_over_columns(frames, how: str, label: str):
    """Per seed: FedADMM's reduction of rounds over the best baseline (%), reduced over Table III's
    columns by ``how`` ("mean" or "max")."""
    df = _df(frames, "table3")
    if df is None:
        return None
    reds = _table3_reductions(df)
    if not reds:
        return None
    return _outcome(_across_columns(reds, how).rep(label), detail=_explain(reds, "%") + BOUND_NOTE)


def table3_mean_reduction(frames, summaries):
    """Per seed: the mean over Table III's columns of FedADMM's reduction of rounds over the best baseline (%)."""
    return _reduction_over_columns(frames, "mean", "mean reduction over the columns, %")


def table3_max_reduction(frames, summaries):
    """Per seed: the largest over Table III's columns of FedADMM's reduction over the best baseline (%)."""
    return _reduction_over_columns(frames, "max", "largest reduction over the columns, %")


def _not_reached(frames, settings, pick, who):
    df = _df(frames, "table3")
    if df is None:
        return None
    reps, parts = [], []
    for s in settings:
        sub = df[df["setting"] == s]
        if sub.empty:
            return None
        r = seed_rounds(pick(sub))
        reps.append(r.rep(f"{s}: {who} rounds to target"))
        parts.append((s, r))
    return _outcome(reps, detail=_explain(parts) + BOUND_NOTE)


def fedprox_fails_mnist_noniid(frames, summaries):
    return _not_reached(frames, ["MNIST-100 non-IID", "MNIST-1000 non-IID"], _prox_runs, "FedProx (best ρ)")


def scaffold_fails_cifar_noniid(frames, summaries):
    return _not_reached(frames, ["CIFAR-1000 non-IID"], lambda sub: runs_of(sub, "SCAFFOLD"), "SCAFFOLD")


# ---- Figs. 3-5: populations -----------------------------------------------------------------------------
def _best_baseline_final(sub) -> _B:
    return _extreme([finals(g) for g in _baseline_runs(sub).values()], lowest=False)


def _gap(sub) -> _B:
    """Per seed: FedADMM's final accuracy minus the best baseline's (pp)."""
    return finals(runs_of(sub, "FedADMM")) - _best_baseline_final(sub)


def _rounds_reduction(sub) -> _B:
    best = _extreme([seed_rounds(g) for g in _baseline_runs(sub).values()], lowest=True)
    return reduction_b(seed_rounds(runs_of(sub, "FedADMM")), best)


def _growth(df, ds, part, measure) -> tuple[str, _B] | None:
    d = df[(df["ds"] == ds) & (df["partition"] == part)]
    if d.empty or d["m"].nunique() < 2:
        return None
    lo, hi = int(d["m"].min()), int(d["m"].max())
    g = measure(d[d["m"] == hi]) - measure(d[d["m"] == lo])
    return f"{DATASETS[ds]} {PARTITIONS[part]} m={hi} vs m={lo}", g


def reduction_grows_with_m(frames, summaries):
    """Fig. 4 panels: per seed, FedADMM's reduction of rounds over the best baseline at the largest m
    minus at the smallest (pp of reduction), > 0."""
    df = _df(frames, "scaling")
    if df is None:
        return None
    parts = [g for ds, part in layout()["fig4_partition"].items() if (g := _growth(df, ds, part, _rounds_reduction))]
    if not parts:
        return None
    return _outcome([b.rep(f"{lab}: reduction growth, pp") for lab, b in parts], detail=_explain(parts, " pp") + BOUND_NOTE)


def gap_grows_with_m(frames, summaries):
    """Fig. 3 panels: per seed, FedADMM's final-accuracy margin over the best baseline at the largest m
    minus at the smallest (pp), > 0."""
    df = _df(frames, "scaling")
    if df is None:
        return None
    parts = [g for ds, part in layout()["fig3_partition"].items() if (g := _growth(df, ds, part, _gap))]
    if not parts:
        return None
    return _outcome([b.rep(f"{lab}: margin growth, pp") for lab, b in parts], detail=_explain(parts, " pp"))


def growth_larger_noniid(frames, summaries):
    """Per dataset: the margin growth with m (as :func:`gap_grows_with_m`) in the non-IID split minus
    in the IID split (pp), > 0."""
    df = _df(frames, "scaling")
    if df is None:
        return None
    reps, parts = [], []
    for ds in ("fashion_mnist", "cifar10"):
        a, b = _growth(df, ds, "label_shards", _gap), _growth(df, ds, "iid", _gap)
        if a and b:
            d = a[1] - b[1]
            reps.append(d.rep(f"{DATASETS[ds]}: non-IID minus IID margin growth, pp"))
            parts += [a, b]
    reps = _none_if_empty(reps)
    return _outcome(reps, detail=_explain(parts, " pp"))


def fig5_fedadmm_best(frames, summaries):
    """Fig. 5 (m = 200): per panel FedADMM's final accuracy minus the best baseline's (pp), > 0."""
    df = _df(frames, "scaling")
    if df is None:
        return None
    df = df[df["m"] == 200]
    parts = [(f"{DATASETS[d]} {PARTITIONS[p]}", _gap(df[(df["ds"] == d) & (df["partition"] == p)]))
             for d in ("fashion_mnist", "cifar10") for p in ("iid", "label_shards")
             if not df[(df["ds"] == d) & (df["partition"] == p)].empty]
    if not parts:
        return None
    return _outcome([b.rep(f"{lab}: FedADMM − best baseline, pp") for lab, b in parts], detail=_explain(parts, " pp"))


def _fig10_gaps(df):
    return [(DATASETS[d], _gap(df[df["ds"] == d])) for d in ("fashion_mnist", "cifar10") if not df[df["ds"] == d].empty]


def fig10_fedadmm_best(frames, summaries):
    df = _df(frames, "fig10")
    if df is None:
        return None
    parts = _fig10_gaps(df)
    return _outcome([b.rep(f"{lab}: FedADMM − best baseline, pp") for lab, b in parts],
                             detail=_explain(parts, " pp"))


def fig10_especially_cifar(frames, summaries):
    df = _df(frames, "fig10")
    if df is None:
        return None
    parts = dict(_fig10_gaps(df))
    if len(parts) < 2:
        return None
    d = parts["CIFAR-10"] - parts["FMNIST"]
    return _outcome(d.rep("margin over the best baseline, CIFAR-10 minus FMNIST, pp"),
                   detail=_explain(list(parts.items()), " pp"))


# ---- Fig. 6: server step --------------------------------------------------------------------------------
def _eta(sub, eta):
    return sub[np.isclose(sub["eta"], eta)]


def eta15_worse_noniid(frames, summaries):
    df = _df(frames, "fig6_constant")
    if df is None:
        return None
    parts = [(panel, finals(_eta(sub, 1.0)) - finals(_eta(sub, 1.5)))
             for panel, sub in df[df["partition"] == "label_shards"].groupby("setting")]
    return _outcome([b.rep(f"{lab}: η=1 − η=1.5, pp") for lab, b in parts], detail=_explain(parts, " pp"))


def eta1_never_worst(frames, summaries):
    """Every Fig. 6 row-1 panel (IID and non-IID): per seed, η = 1's final accuracy minus the worse of
    η = 0.5's and η = 1.5's (pp), > 0: the nominal value is not the worst choice in any case."""
    df = _df(frames, "fig6_constant")
    if df is None:
        return None
    parts = [(panel, finals(_eta(sub, 1.0)) - _extreme([finals(_eta(sub, e)) for e in (0.5, 1.5)], lowest=True))
             for panel, sub in df.groupby("setting")]
    return _outcome([b.rep(f"{lab}: η=1 − worse of η=0.5, 1.5, pp") for lab, b in parts], detail=_explain(parts, " pp"))


def _early_rounds(sub) -> int:
    return max(1, int(sub["round"].max()) // 4)


def eta05_slower_early_iid(frames, summaries):
    df = _df(frames, "fig6_constant")
    if df is None:
        return None
    sub = df[df["partition"] == "iid"]
    if sub.empty:
        return None
    k = _early_rounds(sub)
    d = early(_eta(sub, 1.0), k) - early(_eta(sub, 0.5), k)
    return _outcome(d.rep(f"mean accuracy over rounds 1-{k}, η=1 − η=0.5, pp"), detail=f"per seed {d.show()} pp")


def eta_iid_similar(frames, summaries):
    """IID panel: final accuracy of η = 0.5 and η = 1.5 minus η = 1 (pp), each within the tolerance."""
    df = _df(frames, "fig6_constant")
    if df is None:
        return None
    sub = df[df["partition"] == "iid"]
    if sub.empty:
        return None
    parts = [(f"η={e:g} − η=1", finals(_eta(sub, e)) - finals(_eta(sub, 1.0))) for e in (0.5, 1.5)]
    return _outcome([b.rep(f"{lab}, pp") for lab, b in parts], detail=_explain(parts, " pp"))


def eta_switch_helps(frames, summaries):
    """Fig. 6 row 2: per panel and starting η, the schedule η -> 0.5 minus constant η (final accuracy, pp)."""
    const, sched = _df(frames, "fig6_constant"), _df(frames, "fig6_schedule")
    if const is None or sched is None:
        return None
    parts = []
    for panel, sub in sched.groupby("setting"):
        c = const[const["setting"] == panel]
        for eta in sorted(sub["eta"].unique()):
            if not _eta(c, eta).empty:
                parts.append((f"{panel}: η={eta:g}→{float(sub['eta_2'].dropna().iloc[0]):g} − constant η={eta:g}",
                               finals(_eta(sub, eta)) - finals(_eta(c, eta))))
    return _outcome([b.rep(f"{lab}, pp") for lab, b in parts], detail=_explain(parts, " pp"))


# ---- Table IV / Fig. 7: local epochs --------------------------------------------------------------------
def _rows(df):
    return [(f"{DATASETS[ds]} {PARTITIONS[part]}", sub) for (ds, part), sub in df.groupby(["ds", "partition"])]


def _e_ends(frames, measure, larger_first: bool, rep_suffix: str, unit: str, note: str = ""):
    """Per Table IV row: ``measure`` (per seed) at one end of the E grid minus at the other (the larger E
    first when ``larger_first``)."""
    df = _df(frames, "table4")
    if df is None:
        return None
    parts = []
    for lab, sub in _rows(df):
        Es = sorted(sub["E"].unique())
        a, b = (Es[-1], Es[0]) if larger_first else (Es[0], Es[-1])
        parts.append((f"{lab}: E={a} − E={b}", measure(sub[sub["E"] == a]) - measure(sub[sub["E"] == b])))
    return _outcome([b.rep(f"{lab}{rep_suffix}") for lab, b in parts], detail=_explain(parts, unit) + note)


def table4_rounds_fall_with_e(frames, summaries):
    """Per Table IV row: rounds to target at the smallest E minus at the largest (per seed), > 0."""
    return _e_ends(frames, seed_rounds, False, " rounds", " rounds", BOUND_NOTE)


def fig7_final_grows_with_e(frames, summaries):
    """Per Table IV row: final accuracy at the largest E minus at the smallest (per seed, pp), > 0."""
    return _e_ends(frames, finals, True, ", pp", " pp")


def table4_rounds_paper(frames, summaries):
    """Table IV's FedADMM rounds (E = 1, 5, 10), per cell as ratios of ours to the paper's."""
    df = _df(frames, "table4")
    if df is None:
        return None
    parts = []
    for (ds, part), sub in df.groupby(["ds", "partition"]):
        for E, paper in zip((1, 5, 10), PAPER_TABLE4.get((ds, part), [None] * 3)):
            g = sub[sub["E"] == E]
            if not g.empty:
                parts.append((f"{DATASETS[ds]} {PARTITIONS[part]} E={E}", seed_rounds(g), paper))
    return _paper_ratio(parts, "rounds")


# ---- Fig. 8: Option I vs II -----------------------------------------------------------------------------
def option1_ge_option2(frames, summaries):
    df = _df(frames, "fig8")
    if df is None:
        return None
    parts = [(f"{DATASETS[ds]} {PARTITIONS[part]} η={eta:g}",
              finals(sub[sub["local_init"] == "local"]) - finals(sub[sub["local_init"] == "global"]))
             for (ds, part, eta), sub in df.groupby(["ds", "partition", "eta"])]
    return _outcome([b.rep(f"{lab}: Option I − Option II, pp") for lab, b in parts],
                             detail=_explain(parts, " pp"))


def early_code_ge_option2(frames, summaries):
    """Fig. 8 against the algorithm the paper ran (GO-15): per panel and η, the early code's final
    accuracy (``fig8_sequential``) minus Option II's (``fig8``, the authors' HEAD code), > 0."""
    df, seq = _df(frames, "fig8"), _df(frames, "fig8_sequential")
    if df is None or seq is None:
        return None
    parts = []
    for (ds, part, eta), sub in df[df["local_init"] == HEAD].groupby(["ds", "partition", "eta"]):
        early_runs = seq[(seq["ds"] == ds) & (seq["partition"] == part) & np.isclose(seq["eta"], eta)]
        if not early_runs.empty:
            parts.append((f"{DATASETS[ds]} {PARTITIONS[part]} η={eta:g}", finals(early_runs) - finals(sub)))
    if not parts:
        return None
    return _outcome([b.rep(f"{lab}: early code − Option II, pp") for lab, b in parts], detail=_explain(parts, " pp"))


# ---- Table V: FedProx's ρ -------------------------------------------------------------------------------
def _t5(df, ds, m, part):
    return df[(df["ds"] == ds) & (df["m"] == m) & (df["partition"] == part)]


def _prox(sub, rho):
    return sub[(sub["method"] == "FedProx") & np.isclose(sub["prox_rho"], rho)]


def _cell(ds, m, part):
    return f"{DATASETS[ds]} m={m} {PARTITIONS[part]}"


def table5_fedadmm_best(frames, summaries):
    """Per Table V cell: FedADMM's rounds minus the best FedProx ρ's (per seed), < 0."""
    df = _df(frames, "table5")
    if df is None:
        return None
    parts = []
    for ds in ("mnist", "fashion_mnist"):
        for m, part in T5_CELLS:
            sub = _t5(df, ds, m, part)
            if sub.empty:
                continue
            prox = [seed_rounds(_prox(sub, r)) for r in sorted(sub["prox_rho"].dropna().unique())]
            parts.append((_cell(ds, m, part), seed_rounds(sub[sub["method"] == "FedADMM"]) - _extreme(prox, lowest=True)))
    return _outcome([b.rep(f"{lab}: FedADMM − best FedProx rounds") for lab, b in parts],
                             detail=_explain(parts, " rounds") + BOUND_NOTE)


def _table5_rounds(frames, parts_of):
    """A Table V claim on rounds to the target: ``parts_of(table5 frame)`` -> [(label, per-seed _B)]."""
    df = _df(frames, "table5")
    if df is None:
        return None
    parts = parts_of(df)
    return _outcome([b.rep(lab) for lab, b in parts], detail=_explain(parts, " rounds") + BOUND_NOTE)


def table5_best_rho_flips(frames, summaries):
    """m = 200: FedProx ρ = 0.01 is the best ρ on FMNIST and the worst on MNIST in Table V's quantity, rounds
    to the target (per seed; a seed that never reaches counts as a bound): FMNIST components the fewer of
    ρ = 0.1, 1's rounds minus ρ = 0.01's; MNIST components ρ = 0.01's rounds minus the more of ρ = 0.1, 1's;
    all > 0."""
    def parts_of(df):
        parts = []
        for ds in ("fashion_mnist", "mnist"):
            for part in ("iid", "label_shards"):
                sub = _t5(df, ds, 200, part)
                if sub.empty:
                    continue
                small, others = seed_rounds(_prox(sub, 0.01)), [seed_rounds(_prox(sub, r)) for r in (0.1, 1.0)]
                if ds == "fashion_mnist":
                    parts.append((f"{_cell(ds, 200, part)}: fewest rounds of other ρ − ρ=0.01's",
                                  _extreme(others, lowest=True) - small))
                else:
                    parts.append((f"{_cell(ds, 200, part)}: ρ=0.01's rounds − most of other ρ",
                                  small - _extreme(others, lowest=False)))
        return parts
    return _table5_rounds(frames, parts_of)


def table5_prox_not_monotone(frames, summaries):
    """MNIST, m = 200 (Table V's non-monotone cells): FedProx ρ = 0.1 needs fewer rounds to the target than
    both ρ = 0.01 and ρ = 1 (per seed, the fewer of their rounds minus ρ = 0.1's), > 0."""
    return _table5_rounds(frames, lambda df: [
        (f"{_cell('mnist', 200, part)}: fewest rounds of ρ=0.01, 1 − ρ=0.1's",
         _extreme([seed_rounds(_prox(sub, r)) for r in (0.01, 1.0)], lowest=True) - seed_rounds(_prox(sub, 0.1)))
        for part in ("iid", "label_shards") for sub in [_t5(df, "mnist", 200, part)] if not sub.empty])


def table5_fedadmm_noniid_improves_with_m(frames, summaries):
    """Table V's FedADMM non-IID rows: rounds to the target at m = 200 minus at m = 500 (per seed), > 0."""
    def parts_of(df):
        parts = []
        for ds in ("mnist", "fashion_mnist"):
            a, b = _t5(df, ds, 200, "label_shards"), _t5(df, ds, 500, "label_shards")
            a, b = a[a["method"] == "FedADMM"], b[b["method"] == "FedADMM"]
            if not a.empty and not b.empty:
                parts.append((f"{DATASETS[ds]} non-IID: rounds m=200 − m=500", seed_rounds(a) - seed_rounds(b)))
        return parts
    return _table5_rounds(frames, parts_of)


def table5_fedadmm_rounds_paper(frames, summaries):
    """Table V's FedADMM row (3/29/5/14 MNIST, 2/13/2/9 FMNIST), per cell ours/paper."""
    df = _df(frames, "table5")
    if df is None:
        return None
    parts = []
    for ds in ("mnist", "fashion_mnist"):
        paper = PAPER_TABLE5.get((ds, "FedADMM"), [None] * 4)
        for k, (m, part) in enumerate(T5_CELLS):
            sub = _t5(df, ds, m, part)
            sub = sub[sub["method"] == "FedADMM"]
            if not sub.empty:
                parts.append((_cell(ds, m, part), seed_rounds(sub), paper[k]))
    return _paper_ratio(parts, "FedADMM rounds")


# ---- Fig. 9: ρ schedule ---------------------------------------------------------------------------------
def rho_increase_helps(frames, summaries):
    """Per panel and raised value ρ_2 (the paper does not say which: every tested one), final accuracy of
    ρ = 0.01 -> ρ_2 minus constant ρ = 0.01 (pp), > 0."""
    df = _df(frames, "fig9")
    if df is None:
        return None
    parts = []
    for ds, sub in df.groupby("ds"):
        r2 = sub["rho_2"].astype(float)
        const = finals(sub[np.isclose(r2, 0.01)])
        for v in sorted(set(r2)):
            if not np.isclose(v, 0.01):
                parts.append((f"{DATASETS[ds]} ρ 0.01→{v:g} − constant 0.01", finals(sub[np.isclose(r2, v)]) - const))
    return _outcome([b.rep(f"{lab}, pp") for lab, b in parts], detail=_explain(parts, " pp"))


# ---- checks of our configuration (kind: check) ------------------------------------------------------------
def table3_local_computation(frames, summaries):
    """FedADMM's local computation relative to FedAvg's, per Table III column and seed: per-sample
    gradients (trace ``local_samples``) of FedADMM over FedAvg's. FedADMM draws E_i ~ U{1..E}, FedAvg
    runs E: with equal client sizes the expected ratio is (E+1)/(2E) (0.6 at E = 5, 0.525 at E = 20;
    the paper rounds it to "50% less"); FedADMM with fixed E (the early code) must do exactly FedAvg's. Passes when every column's ratio lies within 4 standard errors
    of (E+1)/(2E), the standard error being that of the mean of the N = rounds x |S| draws of E_i
    (var (E^2 - 1)/12): a test of our configuration, not of the paper."""
    df = _df(frames, "table3")
    if df is None or "local_samples" not in df.columns:
        return None
    rows, ok = [], True
    for s in _table3_columns(df):
        sub = df[df["setting"] == s]
        last = {m: sub[sub["method"] == m].sort_values("round").groupby("seed").tail(1) for m in ("FedADMM", "FedAvg")}
        if any(g.empty for g in last.values()):
            continue
        E = int(last["FedAvg"]["E"].iloc[0])
        a, b = last["FedADMM"].set_index("seed"), last["FedAvg"].set_index("seed")
        idx = a.index.intersection(b.index)
        ratio = float(a.loc[idx, "local_samples"].sum() / b.loc[idx, "local_samples"].sum())
        m = int(sub["m"].iloc[0])
        draws = int(a.loc[idx, "round"].sum()) * max(int(math.floor(0.1 * m)), 1)
        if not json.loads(last["FedADMM"]["params"].iloc[0]).get("random_epochs", True):
            ok &= bool(np.isclose(ratio, 1.0))            # fixed E (the early code's --fixed 1): FedAvg's work exactly
            rows.append(f"{s}: {ratio:.3f} (FedADMM with fixed E: expected 1 exactly)")
            continue
        expected, se = (E + 1) / (2 * E), math.sqrt((E * E - 1) / 12 / draws) / E
        z = (ratio - expected) / se
        ok &= abs(z) <= 4
        rows.append(f"{s}: {ratio:.3f} (expected {expected:.3f}, z = {z:+.1f}, {draws} draws)")
    if not rows:
        return None
    return Outcome(bool(ok), why="; ".join(rows), detail="; ".join(rows) + "; the paper: 0.5 ('50% less')")


def table2_counts(frames, summaries):
    from fedrepro.nn import build_model

    return Outcome(build_model("cnn1").n_params == 1663370 and build_model("cnn2").n_params == 1105098,
                   detail=f"CNN 1 {build_model('cnn1').n_params:,}, CNN 2 {build_model('cnn2').n_params:,}")


def _table6(frames, ds):
    """Sample std of the client sizes of the imbalanced split of the full training set. The sizes are
    fixed by the partition rule (group g's two members get g shards each, the last group the rest),
    whatever the random shard assignment: a deterministic quantity."""
    if frames.get("fig10") is None:
        return None
    t = table6_frame(frames)
    row = t[t["dataset"] == DATASETS[ds]]
    if row.empty:
        return None
    r = row.iloc[0]
    return Outcome(Replicates([round(float(r["stdev"]), 3)], label="client-size stdev", deterministic=True),
                   detail=f"{int(r['clients'])} clients, {int(r['samples']):,} samples, "
                          f"mean {r['mean']:.2f}, sizes {int(r['min'])}-{int(r['max'])}")


def table6_fmnist_std(frames, summaries):
    return _table6(frames, "fashion_mnist")


def table6_cifar_std(frames, summaries):
    return _table6(frames, "cifar10")


CHECKS = {f.__name__: f for f in (
    table3_fedadmm_fewest, table3_fedsgd_speedup, table3_fedadmm_rounds_paper, table3_fedsgd_speedup_paper,
    table3_mean_reduction, table3_max_reduction, fedprox_fails_mnist_noniid, scaffold_fails_cifar_noniid,
    reduction_grows_with_m, gap_grows_with_m, growth_larger_noniid, fig5_fedadmm_best, fig10_fedadmm_best,
    fig10_especially_cifar, eta15_worse_noniid, eta1_never_worst, eta05_slower_early_iid, eta_iid_similar, eta_switch_helps,
    table4_rounds_fall_with_e, fig7_final_grows_with_e, table4_rounds_paper, option1_ge_option2,
    table5_fedadmm_best, table5_best_rho_flips, table5_prox_not_monotone, table5_fedadmm_noniid_improves_with_m,
    table5_fedadmm_rounds_paper, rho_increase_helps, table3_local_computation, table2_counts, table6_fmnist_std,
    table6_cifar_std, early_code_ge_option2)}
# the checks of Table III, Figs. 3-5 and Fig. 10 once more for Algorithm 1 as printed (GO-15)
ALG1_CHECKS = ("table3_fedadmm_fewest", "table3_fedsgd_speedup", "table3_fedadmm_rounds_paper",
               "table3_fedsgd_speedup_paper", "table3_mean_reduction", "table3_max_reduction", "reduction_grows_with_m",
               "gap_grows_with_m", "growth_larger_noniid", "fig5_fedadmm_best", "fig10_fedadmm_best",
               "fig10_especially_cifar", "table3_local_computation")
CHECKS.update({f"{name}_alg1": alg1(CHECKS[name]) for name in ALG1_CHECKS})
