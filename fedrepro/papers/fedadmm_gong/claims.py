"""Checks of the FedADMM (Gong et al.) paper's statements (spec 003 §6, §8.3 Q1-Q8) that need code, and the views
of its readings written as data (claims.yaml). Values per seed, paired by seed (:mod:`fedrepro.claims.query`):
*final accuracy* the mean over the last :data:`TAIL` evaluated rounds (%); *rounds to target* the first round >= 1
reaching the model run's target (:mod:`analysis`), T + 1 and a lower bound when never reached; the *best baseline*
of a seed the best in that seed, at the tuned lr (:func:`analysis.runs_of`), FedProx at its best ρ in Table III."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from fedrepro.claims import NotTestable, Outcome, Replicates
from fedrepro.claims.query import (EMPTY, PerSeed, against_paper, explain, extreme, final, mean_of, mean_over,
                                   outcome, outcome_of, reaches, select)
from fedrepro.papers.fedadmm_gong.analysis import (ALG1, DATASETS, EARLY, HEAD, PAPER_TABLE3, PAPER_TABLE4,
                                                   PAPER_TABLE5, PARTITIONS, TABLE3_COLUMNS, best_prox,
                                                   for_variant, layout, runs_of, sub_target, table6_frame, target,
                                                   tidy)

TAIL = 5
PAPER_FEDSGD_SPEEDUP = [29.7, 7.6, 25.1, 20.7, 130.0, 75.7, 26.6, 22.4]   # Table III, FedADMM row
T5_CELLS = ((200, "iid"), (200, "label_shards"), (500, "iid"), (500, "label_shards"))
BOUND_NOTE = " ('+': a lower bound, the run hit its round cap; '-': an upper bound)"
CHECKS: dict = {}


# FedADMM as the early code and, in the ``<exp>_alg1`` twins, as Algorithm 1 as printed (GO-15; :func:`alg1`)
VARIANT_EXPERIMENTS = ("table3", "scaling", "fig10", "table4", "fig6_constant", "fig6_schedule", "table5", "fig9")


class _VariantFrames(dict):
    """The results frames as one FedADMM variant's checks see them (:func:`alg1`)."""

    variant = ALG1


def _df(frames, *exps):
    """The tidy rows of ``exps``; in :data:`VARIANT_EXPERIMENTS` FedADMM as the frames' variant (or the early code)."""
    parts = [tidy(frames[e]) for e in exps if frames.get(e) is not None and not frames[e].empty]
    if not parts:
        return None
    df = pd.concat(parts, ignore_index=True)
    if any(e in VARIANT_EXPERIMENTS or e == "table3_fedsgd" for e in exps):
        have = set(df.loc[df["method"] == "FedADMM", "local_init"])
        variant = getattr(frames, "variant", None) or (EARLY if EARLY in have or not have else sorted(have)[0])
        df = for_variant(df, variant)
    return df


def _alg1_frames(frames) -> _VariantFrames:
    """The frames with FedADMM's runs of each ``<exp>_alg1`` (Algorithm 1 as printed) instead (None: no twin)."""
    out = _VariantFrames(frames)
    for exp in VARIANT_EXPERIMENTS:
        base, twin = frames.get(exp), frames.get(f"{exp}_alg1")
        if base is None:
            continue
        if twin is None or twin.empty:
            out[exp] = None
            continue
        out[exp] = pd.concat([base[base["algorithm"] != "fedadmm_gong"], twin], ignore_index=True, sort=False)
    return out


def alg1(check):
    """``check`` for Algorithm 1 as printed (Option I) instead of the early code (:func:`_alg1_frames`)."""
    def run(frames, summaries, **args):              # args: the claim's args: (claims.yaml)
        return check(_alg1_frames(frames), summaries, **args)
    run.__name__ = f"{check.__name__}_alg1"
    run.__doc__ = f"Algorithm 1 as printed (Option I; ``<exp>_alg1``): {check.__doc__ or check.__name__}"
    return run


def check(*exps, label: str = "{}", unit: str = " pp", note: str = "", scale: str = "linear"):
    """Registers ``parts(df, ...)`` of the tidy rows of ``exps`` (None when one is absent) in :data:`CHECKS`; a list
    ``[(label, PerSeed)]`` becomes :func:`~fedrepro.claims.query.outcome_of` with ``label``, ``unit``, ``note``."""
    def wrap(parts):
        def run(frames, summaries, **args):          # args: the claim's args: (claims.yaml)
            dfs = [_df(frames, e) for e in exps]
            if any(d is None for d in dfs):
                return None
            out = parts(*dfs, **args)
            return outcome_of(out, label, unit, note, scale) if isinstance(out, list) else out
        run.__name__, run.__doc__ = parts.__name__, parts.__doc__
        CHECKS[run.__name__] = run
        return run
    return wrap


# ---- per-seed values (fedrepro.claims.query) ---------------------------------------------------------
def finals(sub: pd.DataFrame) -> PerSeed:
    """Per seed: mean test accuracy over the last TAIL evaluated rounds, in percent."""
    return final(sub, "acc", TAIL).scaled(100)


def seed_rounds(sub: pd.DataFrame) -> PerSeed:
    """Per seed: the first round >= 1 reaching the model run's target (T + 1, a lower bound, when not reached)."""
    return EMPTY if sub.empty else reaches(sub.assign(target=sub_target(sub)), "acc", "target", 1, 1e-12)


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


def _best_rounds(sub, prox: str = "fixed") -> PerSeed:
    """Per seed: the fewest rounds to target of the baselines (:func:`_baseline_runs`)."""
    return extreme([seed_rounds(g) for g in _baseline_runs(sub, prox).values()], lowest=True)


def _admm_rounds(sub) -> PerSeed:
    return seed_rounds(runs_of(sub, "FedADMM"))


def _gap(sub) -> PerSeed:
    """Per seed: FedADMM's final accuracy minus the best baseline's (pp)."""
    best = extreme([finals(g) for g in _baseline_runs(sub).values()], lowest=False)
    return finals(runs_of(sub, "FedADMM")) - best


# ---- Table III: rounds to target ----------------------------------------------------------------------
def _table3(df):
    """``[(column, rows)]`` of the Table III columns present."""
    present = set(df["setting"].dropna())
    return [(c, df[df["setting"] == c]) for c in TABLE3_COLUMNS if c in present]


@check("table3")
def table3_fedadmm_rounds_paper(df, methods=("FedADMM",)):
    """Our rounds to target of ``methods`` (FedProx at its best ρ) per Table III column, as ratios to the paper's."""
    def rounds(sub, m):
        return _admm_rounds(sub) if m == "FedADMM" else seed_rounds(_baseline_runs(sub, "best").get(m, sub.iloc[0:0]))
    cells = [(s + (f" {m}" if len(methods) > 1 else ""), rounds(sub, m), PAPER_TABLE3[m][TABLE3_COLUMNS.index(s)])
             for m in methods for s, sub in _table3(df)]
    return against_paper(cells, "/".join(methods) + " rounds", BOUND_NOTE)


@check("table3", "table3_fedsgd")
def table3_fedsgd_speedup_paper(df, sgd):
    """FedADMM's speedup over FedSGD (FedSGD's rounds over FedADMM's, per seed) per Table III column with FedSGD
    runs, as ratios to the paper's (29.7× ... 130×)."""
    cells = [(s, seed_rounds(g).ratio(_admm_rounds(sub)), PAPER_FEDSGD_SPEEDUP[TABLE3_COLUMNS.index(s)])
             for s, sub in _table3(df) if not (g := sgd[sgd["setting"] == s]).empty]
    return against_paper(cells, "speedup over FedSGD", BOUND_NOTE)


@check("table3")
def table3_reduction(df, how: str = "mean"):
    """Per seed: the mean (``how: max``: the largest) over Table III's columns of FedADMM's reduction of rounds over
    the best baseline (%)."""
    reds = [(s, _admm_rounds(sub).reduction(_best_rounds(sub, "best"))) for s, sub in _table3(df)]
    if not reds:
        return None
    across = extreme([b for _, b in reds], lowest=False) if how == "max" else mean_of(b for _, b in reds)
    label = "largest reduction over the columns, %" if how == "max" else "mean reduction over the columns, %"
    return outcome(across.rep(label), detail=explain(reds, "%") + BOUND_NOTE)


@check("table3", label="{}: FedProx (best ρ) rounds to target", unit="", note=BOUND_NOTE)
def fedprox_fails_mnist_noniid(df):
    """MNIST non-IID, m = 100 and 1000 (None unless both ran): FedProx's rounds to target at its best ρ, per seed."""
    subs = [(s, df[df["setting"] == s]) for s in ("MNIST-100 non-IID", "MNIST-1000 non-IID")]
    return None if any(sub.empty for _, sub in subs) else [(s, seed_rounds(_prox_runs(sub))) for s, sub in subs]


# ---- Figs. 3-5: populations -----------------------------------------------------------------------------
def _growth(df, ds, part, measure) -> tuple[str, PerSeed] | None:
    d = df[(df["ds"] == ds) & (df["partition"] == part)]
    if d.empty or d["m"].nunique() < 2:
        return None
    lo, hi = int(d["m"].min()), int(d["m"].max())
    g = measure(d[d["m"] == hi]) - measure(d[d["m"] == lo])
    return f"{DATASETS[ds]} {PARTITIONS[part]} m={hi} vs m={lo}", g


@check("scaling")
def grows_with_m(df, what: str = "margin"):
    """Fig. 3 panels: FedADMM's final-accuracy margin over the best baseline (``what: reduction``: Fig. 4 panels, its
    reduction of rounds over the best baseline), largest m minus smallest (pp)."""
    reduction = lambda sub: _admm_rounds(sub).reduction(_best_rounds(sub))  # noqa: E731
    fig, measure = ("fig4", reduction) if what == "reduction" else ("fig3", _gap)
    parts = [g for ds, part in layout()[f"{fig}_partition"].items() if (g := _growth(df, ds, part, measure))]
    return outcome_of(parts, "{}: " + what + " growth, pp", " pp", BOUND_NOTE if what == "reduction" else "")


@check("scaling")
def growth_larger_noniid(df):
    """Per dataset: the margin growth with m (:func:`grows_with_m`), non-IID minus IID (pp)."""
    reps, parts = [], []
    for ds in ("fashion_mnist", "cifar10"):
        a, b = _growth(df, ds, "label_shards", _gap), _growth(df, ds, "iid", _gap)
        if a and b:
            reps.append((a[1] - b[1]).rep(f"{DATASETS[ds]}: non-IID minus IID margin growth, pp"))
            parts += [a, b]
    return outcome(reps, detail=explain(parts, " pp"))


@check("fig10")
def fig10_especially_cifar(df):
    parts = {DATASETS[d]: _gap(df[df["ds"] == d]) for d in ("fashion_mnist", "cifar10") if not df[df["ds"] == d].empty}
    if len(parts) < 2:
        return None
    d = parts["CIFAR-10"] - parts["FMNIST"]
    return outcome(d.rep("margin over the best baseline, CIFAR-10 minus FMNIST, pp"),
                   detail=explain(list(parts.items()), " pp"))


# ---- Fig. 6: server step --------------------------------------------------------------------------------
@check("fig6_constant")
def eta05_slower_early_iid(df):
    """IID panel: mean accuracy over the first quarter of the rounds, η = 1 minus η = 0.5 (pp)."""
    sub = df[df["partition"] == "iid"]
    if sub.empty:
        return None
    k = max(1, int(sub["round"].max()) // 4)
    d = mean_over(select(sub, eta=1.0), "acc", 1, k).scaled(100) - mean_over(select(sub, eta=0.5), "acc", 1,
                                                                             k).scaled(100)
    return outcome(d.rep(f"mean accuracy over rounds 1-{k}, η=1 − η=0.5, pp"), detail=f"per seed {d.show()} pp")



# ---- Table IV / Fig. 7: local epochs --------------------------------------------------------------------
@check("table4")
def table4_rounds_paper(df):
    """Table IV's FedADMM rounds (E = 1, 5, 10), per cell as ratios of ours to the paper's."""
    cells = []
    for (ds, part), sub in df.groupby(["ds", "partition"]):
        for E, paper in zip((1, 5, 10), PAPER_TABLE4.get((ds, part), [None] * 3)):
            g = sub[sub["E"] == E]
            if not g.empty:
                cells.append((f"{DATASETS[ds]} {PARTITIONS[part]} E={E}", seed_rounds(g), paper))
    return against_paper(cells, "rounds", BOUND_NOTE)


# ---- Table V: FedProx's ρ -------------------------------------------------------------------------------
@check("table5")
def table5_fedadmm_rounds_paper(df):
    """Table V's FedADMM row (3/29/5/14 MNIST, 2/13/2/9 FMNIST), per cell ours/paper."""
    cells = [(f"{DATASETS[ds]} m={m} {PARTITIONS[part]}", seed_rounds(g), PAPER_TABLE5.get((ds, "FedADMM"))[k])
             for ds in ("mnist", "fashion_mnist") for k, (m, part) in enumerate(T5_CELLS)
             if not (g := df[(df["ds"] == ds) & (df["m"] == m) & (df["partition"] == part)
                             & (df["method"] == "FedADMM")]).empty]
    return against_paper(cells, "FedADMM rounds", BOUND_NOTE)


# ---- Fig. 9: ρ schedule ---------------------------------------------------------------------------------
@check("fig9", label="{}", unit="", scale="log")
def rho_increase_helps(df):
    """Per panel and (every tested) raised ρ_2: the mean ``client_drift`` (||w_i - θ^t||² over the round's clients)
    over the rounds from the switch on, ρ = 0.01 -> ρ_2 over constant ρ = 0.01 (per seed ratio)."""
    if "client_drift" not in df.columns:
        return NotTestable("these fig9 runs record no client_drift (results written before 2026-11-28): rebuild fig9")
    switch = float(json.loads(df["params"].iloc[0]).get("rho_switch") or 0)
    parts = []
    for ds, sub in df.groupby("ds"):
        r2 = sub["rho_2"].astype(float)
        const = mean_over(sub[np.isclose(r2, 0.01)], "client_drift", switch, np.inf)
        for v in sorted(set(r2)):
            if not np.isclose(v, 0.01):
                parts.append((f"{DATASETS[ds]} ρ 0.01→{v:g} / constant 0.01, client drift",
                              mean_over(sub[np.isclose(r2, v)], "client_drift", switch, np.inf).ratio(const)))
    return parts


# ---- checks of our configuration (kind: check) ------------------------------------------------------------
@check("table3")
def table3_local_computation(df):
    """Per Table III column, FedADMM's per-sample gradients (``local_samples``) over FedAvg's: within 4 standard
    errors of (E+1)/(2E) (E_i ~ U{1..E}; N = rounds x |S| draws, var (E^2 - 1)/12), exactly 1 with fixed E."""
    if "local_samples" not in df.columns:
        return None
    rows, ok = [], True
    for s, sub in _table3(df):
        last = {m: sub[sub["method"] == m].sort_values("round").groupby("seed").tail(1) for m in ("FedADMM", "FedAvg")}
        if any(g.empty for g in last.values()):
            continue
        E = int(last["FedAvg"]["E"].iloc[0])
        a, b = last["FedADMM"].set_index("seed"), last["FedAvg"].set_index("seed")
        idx = a.index.intersection(b.index)
        ratio = float(a.loc[idx, "local_samples"].sum() / b.loc[idx, "local_samples"].sum())
        draws = int(a.loc[idx, "round"].sum()) * max(int(math.floor(0.1 * int(sub["m"].iloc[0]))), 1)
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


def table6_std(frames, summaries, ds: str):
    """Sample std of the client sizes of the imbalanced split of ``ds`` (args) of the full training set. The sizes
    are fixed by the partition rule (group g's two members get g shards each, the last group the rest),
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


CHECKS.update({f.__name__: f for f in (table2_counts, table6_std)})
# the checks of Table III, Figs. 3-5 and Fig. 10 once more for Algorithm 1 as printed (GO-15)
ALG1_CHECKS = ("table3_fedadmm_rounds_paper", "table3_fedsgd_speedup_paper", "table3_reduction",
               "grows_with_m", "growth_larger_noniid",
               "fig10_especially_cifar", "table3_local_computation", "eta05_slower_early_iid", "table4_rounds_paper",
               "table5_fedadmm_rounds_paper", "rho_increase_helps")
CHECKS.update({f"{name}_alg1": alg1(CHECKS[name]) for name in ALG1_CHECKS})


# ---- views of the readings written as data (claims.yaml ``reading: {frame: <view>}``) ---------------------------
TUNED = {"table3": ("setting", "best"), "scaling": (["ds", "partition", "m"], "fixed"), "fig10": ("ds", "fixed")}


def _tuned(df, exp):
    """Per Table III column (Fig. 5 panel, Fig. 10 dataset): FedADMM and the baselines at their tuned lr."""
    keys, prox = TUNED[exp]
    parts = [g for _, sub in df.groupby(keys) for g in (runs_of(sub, "FedADMM"), *_baseline_runs(sub, prox).values())]
    return pd.concat(parts, ignore_index=True) if parts else df.iloc[0:0]


def _e_ends(df):
    """Table IV's rows with the ends of their row's E grid (``E_lo``, ``E_hi``) and whether they run there."""
    g = df.groupby(["ds", "partition"])["E"]
    lo, hi = g.transform("min"), g.transform("max")
    return df.assign(E_lo=lo, E_hi=hi, at_lo=df["E"] == lo, at_hi=df["E"] == hi)


def _switch(df):
    """Fig. 6's rows with ``switched`` (a run of the schedule η -> η_2) and ``to`` (η_2 of the panel's schedule)."""
    switched = df["exp"] == "fig6_schedule"
    to = df[switched].groupby("panel")["eta_2"].first().astype(float)
    return df.assign(switched=switched, to=df["panel"].map(to))


def _view(*exps, variant: bool = False, then=None):
    """The view of the tidy rows of ``exps`` (:func:`_df`; :data:`TUNED` ones at their tuned runs; Algorithm 1's with
    ``variant``) with ``dataset``, ``split`` (as shown), ``panel`` (the setting), ``target`` (the model run's)."""
    def view(frames, summaries):
        frames = _alg1_frames(frames) if variant else frames
        dfs = [_df(frames, e) for e in exps]
        if any(d is None for d in dfs):
            return None
        df = pd.concat([(_tuned(d, e) if e in TUNED else d).assign(exp=e) for d, e in zip(dfs, exps)],
                       ignore_index=True)
        df = df.assign(dataset=df["ds"].map(DATASETS), split=df["partition"].map(PARTITIONS), panel=df["setting"],
                       target=[target(*k) for k in zip(df["ds"], df["family"], df["tvariant"])])
        return then(df) if then else df
    return view


VIEWS = {n + sfx: _view(*exps, variant=bool(sfx), then=then) for sfx in ("", "_alg1") for n, (exps, then) in {
    "table3": (("table3",), None), "table3_fedsgd": (("table3", "table3_fedsgd"), None), "scaling": (("scaling",), None),
    "fig10": (("fig10",), None), "fig6_constant": (("fig6_constant",), None), "table5": (("table5",), None),
    "table4": (("table4",), _e_ends), "fig6": (("fig6_constant", "fig6_schedule"), _switch)}.items()}
VIEWS.update(fig8=_view("fig8"), fig8_sequential=_view("fig8", "fig8_sequential"))
