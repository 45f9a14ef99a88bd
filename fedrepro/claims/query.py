"""The query layer: the quantities a reading compares, as per-replicate values with bound flags.

A reading selects runs (:func:`select`), reduces each replicate (a seed, or a timing repetition) to
one number (:func:`final`, :func:`value_at`, :func:`mean_over`, :func:`rounds_to`, :func:`column`),
combines two quantities paired by replicate (``a - b``, :meth:`PerSeed.ratio`,
:meth:`PerSeed.reduction`, :func:`extreme` over several series) and returns
:class:`~fedrepro.claims.verdicts.Replicates` (:meth:`PerSeed.rep`), one per setting of the
statement (:func:`per_setting`). Most readings are data: a claim's ``reading:`` mapping in
``claims.yaml`` is compiled by :func:`compile_reading` into a check with the same contract as a
``claims.py`` function; the mapping is documented there.

Rounds to a level: the first evaluated round at which the metric reaches it. A run that never gets
there is a bound, not a value: ``last round + 1`` flagged ``lb`` (the true value is larger). The flags
travel through the arithmetic: in ``a - b`` a lower bound of ``a`` or an upper bound of ``b`` makes a
lower bound; a ratio of positive values likewise; a replicate at which both sides are bounds the
same way is still reported (the engine opens the interval on the side the bound leaves open).

This module is part of every reading that uses it: the registration's fingerprint includes the source
of the functions a check reaches here (:mod:`fedrepro.claims.registration`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

import numpy as np
import pandas as pd

from fedrepro.claims.verdicts import Replicates


# ---- per-replicate values with bounds -----------------------------------------------------------------
@dataclass(frozen=True)
class PerSeed:
    """Values per replicate (index: seed or repetition) with flags: ``lb`` the true value is >= the value
    (a capped run's rounds), ``ub`` the true value is <= the value."""

    v: pd.Series
    lb: pd.Series
    ub: pd.Series

    @staticmethod
    def exact(values) -> "PerSeed":
        v = pd.Series(values, dtype=float) if isinstance(values, Mapping) else pd.Series(values).astype(float)
        v = v.sort_index()
        return PerSeed(v, pd.Series(False, index=v.index), pd.Series(False, index=v.index))

    @staticmethod
    def bounded(values: Mapping, lower: Mapping | None = None, upper: Mapping | None = None) -> "PerSeed":
        v = pd.Series(values, dtype=float).sort_index()
        flag = lambda m: pd.Series({k: bool((m or {}).get(k, False)) for k in v.index}, dtype=bool)  # noqa: E731
        return PerSeed(v, flag(lower), flag(upper))

    def __len__(self) -> int:
        return len(self.v)

    @property
    def seeds(self) -> list:
        return list(self.v.index)

    def at(self, idx) -> "PerSeed":
        return PerSeed(self.v.loc[idx], self.lb.loc[idx], self.ub.loc[idx])

    def _pair(self, other: "PerSeed"):
        idx = self.v.index.intersection(other.v.index)
        return self.at(idx), other.at(idx)

    def __sub__(self, other: "PerSeed") -> "PerSeed":
        a, b = self._pair(other)
        return PerSeed(a.v - b.v, a.lb | b.ub, a.ub | b.lb)

    def ratio(self, other: "PerSeed") -> "PerSeed":
        """self / other, paired (positive values)."""
        a, b = self._pair(other)
        return PerSeed(a.v / b.v, a.lb | b.ub, a.ub | b.lb)

    def reduction(self, other: "PerSeed", percent: float = 100.0) -> "PerSeed":
        """``percent * (other - self) / other``, paired: how much smaller self is than other (positive
        values); a lower bound of self makes an upper bound and vice versa."""
        a, b = self._pair(other)
        return PerSeed(percent * (b.v - a.v) / b.v, b.lb | a.ub, a.lb | b.ub)

    def scaled(self, k: float) -> "PerSeed":
        return PerSeed(self.v * k, self.lb, self.ub) if k >= 0 else PerSeed(self.v * k, self.ub, self.lb)

    def exact_only(self) -> "PerSeed":
        """The replicates that are values, not bounds."""
        return self.at(self.v.index[~(self.lb | self.ub).to_numpy(bool)])

    def rep(self, label: str, scale: str = "linear", paper_value=None, deterministic: bool = False):
        """The :class:`Replicates` of these values (None without any)."""
        if not len(self):
            return None
        return Replicates(self.v.to_numpy(float), label=label, scale=scale,
                          lower_bound=self.lb.to_numpy(bool) if self.lb.any() else None,
                          upper_bound=self.ub.to_numpy(bool) if self.ub.any() else None,
                          paper_value=paper_value, deterministic=deterministic)

    def show(self, fmt: str = "{:.1f}") -> str:
        """``v1, v2+, v3-``: '+' a lower bound, '-' an upper bound."""
        return ", ".join((fmt.format(v) + ("+" if lb else "") + ("-" if ub else ""))
                         for v, lb, ub in zip(self.v, self.lb, self.ub))


EMPTY = PerSeed.exact({})


def extreme(parts: Iterable[PerSeed], lowest: bool = True) -> PerSeed:
    """Per replicate, the min (``lowest``) or max of several series (paired), with the flags the bounds
    leave: a min may lie below the observed one when any part is an upper bound, above it when every
    part achieving it is a lower bound (mirrored for the max). No parts: no replicates."""
    parts = list(parts)
    if not parts:
        return EMPTY
    idx = parts[0].v.index
    for p in parts[1:]:
        idx = idx.intersection(p.v.index)
    V = pd.concat([p.v.loc[idx] for p in parts], axis=1).to_numpy(float)
    L = pd.concat([p.lb.loc[idx] for p in parts], axis=1).to_numpy(bool)
    U = pd.concat([p.ub.loc[idx] for p in parts], axis=1).to_numpy(bool)
    best = V.min(axis=1) if lowest else V.max(axis=1)
    hit = np.isclose(V, best[:, None])
    if lowest:
        lb, ub = np.array([L[i, hit[i]].all() for i in range(len(idx))], bool), U.any(axis=1)
    else:
        lb, ub = L.any(axis=1), np.array([U[i, hit[i]].all() for i in range(len(idx))], bool)
    return PerSeed(pd.Series(best, index=idx), pd.Series(lb, index=idx), pd.Series(ub, index=idx))


# ---- selecting runs ------------------------------------------------------------------------------------
def select(df: pd.DataFrame | None, **where) -> pd.DataFrame:
    """Rows of ``df`` matching every ``column=value``: a list or tuple matches any of its values, a float
    matches within ``np.isclose``, None matches a missing value, a callable is a row predicate on the
    column. A column the frame lacks matches nothing."""
    if df is None:
        return pd.DataFrame()
    mask = np.ones(len(df), bool)
    for col, want in where.items():
        if col not in df.columns:
            return df.iloc[0:0]
        s = df[col]
        if callable(want):
            mask &= s.map(want).to_numpy(bool)
        elif want is None:
            mask &= s.isna().to_numpy()
        elif isinstance(want, (list, tuple, set)):
            mask &= s.isin(list(want)).to_numpy()
        elif isinstance(want, float) and pd.api.types.is_numeric_dtype(s):
            mask &= np.isclose(s.to_numpy(float), want)
        else:
            mask &= (s == want).to_numpy()
    return df[mask]


def settings(df: pd.DataFrame, keys) -> list[tuple[dict, pd.DataFrame]]:
    """``[(setting, rows)]`` of the distinct values of ``keys`` (sorted); ``keys`` empty: one setting."""
    keys = [keys] if isinstance(keys, str) else list(keys or ())
    if not keys:
        return [({}, df)]
    if df.empty or any(k not in df.columns for k in keys):
        return []
    return [(dict(zip(keys, k if isinstance(k, tuple) else (k,))), g)
            for k, g in df.groupby(keys if len(keys) > 1 else keys[0], sort=True, dropna=False)]


def label_of(setting: Mapping) -> str:
    """``m=50 k0=4``: a setting as shown in a verdict."""
    return " ".join(f"{k}={_num(v)}" for k, v in setting.items())


def _num(v) -> str:
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


# ---- one number per replicate ----------------------------------------------------------------------------
def curves(df: pd.DataFrame, metric: str, by: str = "seed", x: str = "round") -> dict:
    """``{replicate: (x, y)}`` sorted by ``x``, evaluated points only (``metric`` not NaN)."""
    if df is None or df.empty or metric not in df.columns:
        return {}
    out = {}
    for key, g in df[[by, x, metric]].dropna(subset=[metric]).groupby(by, sort=True):
        g = g.sort_values(x)
        out[_key(key)] = (g[x].to_numpy(float), g[metric].to_numpy(float))
    return out


def _key(k):
    k = k[0] if isinstance(k, tuple) and len(k) == 1 else k
    return int(k) if isinstance(k, (np.integer, float)) and float(k).is_integer() else k


def final(df, metric: str, tail: int = 1, by: str = "seed", x: str = "round") -> PerSeed:
    """Per replicate: the mean of the metric over its last ``tail`` evaluated points (1: the final value)."""
    return PerSeed.exact({k: float(y[-tail:].mean()) for k, (_, y) in curves(df, metric, by, x).items()})


def value_at(df, metric: str, at: float, by: str = "seed", x: str = "round") -> PerSeed:
    """Per replicate: the metric at the last evaluated point with ``x <= at`` (replicates without one are
    left out)."""
    out = {}
    for k, (r, y) in curves(df, metric, by, x).items():
        ok = r <= at
        if ok.any():
            out[k] = float(y[ok][-1])
    return PerSeed.exact(out)


def mean_over(df, metric: str, lo: float, hi: float, by: str = "seed", x: str = "round") -> PerSeed:
    """Per replicate: the mean of the metric over the evaluated points with ``lo <= x <= hi``."""
    out = {}
    for k, (r, y) in curves(df, metric, by, x).items():
        ok = (r >= lo) & (r <= hi)
        if ok.any():
            out[k] = float(y[ok].mean())
    return PerSeed.exact(out)


def rounds_to(df, metric: str, level, below: bool = False, by: str = "seed", x: str = "round",
              cap: Callable | None = None) -> PerSeed:
    """Per replicate: the first evaluated ``x`` with metric >= level (<= with ``below``). ``level`` is a
    number or ``{replicate: level}``. A run that never gets there gives ``last x + 1`` (or ``cap(last x)``)
    flagged as a lower bound."""
    vals, lb = {}, {}
    for k, (r, y) in curves(df, metric, by, x).items():
        lv = level.get(k) if isinstance(level, Mapping) else level
        if lv is None:
            continue
        idx = np.flatnonzero(y <= lv if below else y >= lv)
        vals[k], lb[k] = (float(r[idx[0]]), False) if idx.size else (
            float(cap(r[-1]) if cap else r[-1] + 1.0), True)
    return PerSeed.bounded(vals, lower=lb)


def column(df, col: str, by: str = "seed", how: str = "first", capped: str | None = None) -> PerSeed:
    """Per replicate: a summary column (``how``: first, mean, median, max, min over the replicate's rows).
    ``capped``: a boolean column marking rows whose value is a lower bound (a run that hit its cap)."""
    if df is None or df.empty or col not in df.columns:
        return EMPTY
    g = df.dropna(subset=[col]).groupby(by, sort=True)
    v = getattr(g[col], how)().astype(float)
    v.index = [_key(k) for k in v.index]
    if capped is None or capped not in df.columns:
        return PerSeed.exact(v)
    lb = g[capped].any()
    return PerSeed(v, pd.Series(lb.to_numpy(bool), index=v.index), pd.Series(False, index=v.index))


def fitted_ratio(x, y) -> float:
    """``exp(slope * (max x - min x))`` of the least-squares line of ``log y`` on ``x``: the trend's
    ratio between the ends of the grid (> 1: rises)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    slope = np.polyfit(x, np.log(y), 1)[0]
    return float(np.exp(slope * (x.max() - x.min())))


# ---- readings as data ----------------------------------------------------------------------------------
MEASURES = ("final", "at", "mean", "rounds_to", "column")
OPS = {"minus": "__sub__", "over": "ratio", "reduction": "reduction"}


def measure(rows: pd.DataFrame, spec: Mapping) -> PerSeed:
    """One number per replicate of ``rows`` as the mapping ``spec`` says (one of):

    ``{final: metric, tail: 1}``, ``{at: round, metric: m}``, ``{mean: metric, from: lo, to: hi}``,
    ``{rounds_to: level, metric: m, below: false}``, ``{column: name, how: first, capped: col}``;
    ``by`` (default ``seed``) names the replicate column, ``x`` (default ``round``) the time axis."""
    by, x = spec.get("by", "seed"), spec.get("x", "round")
    kinds = [k for k in MEASURES if k in spec]
    if len(kinds) != 1:
        raise ValueError(f"a measure names exactly one of {MEASURES}, got {dict(spec)!r}")
    kind = kinds[0]
    if kind == "final":
        return final(rows, spec["final"], int(spec.get("tail", 1)), by, x)
    if kind == "at":
        return value_at(rows, spec["metric"], float(spec["at"]), by, x)
    if kind == "mean":
        return mean_over(rows, spec["mean"], float(spec["from"]), float(spec["to"]), by, x)
    if kind == "rounds_to":
        return rounds_to(rows, spec["metric"], float(spec["rounds_to"]), bool(spec.get("below", False)), by, x)
    return column(rows, spec["column"], by, spec.get("how", "first"), spec.get("capped"))


def quantity(rows: pd.DataFrame, spec: Mapping) -> PerSeed:
    """A side of a reading: ``{where: {...}, <measure>, best: lowest|highest, among: column}``. With ``best``,
    the measure is taken per value of ``among`` (e.g. per algorithm) and the per-replicate extreme kept."""
    sub = select(rows, **dict(spec.get("where") or {}))
    m = {k: v for k, v in spec.items() if k not in ("where", "best", "among")}
    if "best" not in spec:
        return measure(sub, m)
    if spec["best"] not in ("lowest", "highest"):
        raise ValueError(f"best={spec['best']!r}; use lowest or highest")
    parts = [measure(g, m) for _, g in settings(sub, spec["among"])]
    return extreme([p for p in parts if len(p)], lowest=spec["best"] == "lowest")


READING_KEYS = {"frame", "where", "per", "of", "minus", "over", "reduction", "scale", "multiply", "label"}


def compile_reading(spec: Mapping, views: Mapping[str, Callable] | None = None, name: str = "reading"):
    """A check ``(frames, summaries) -> [Replicates] | None`` from a claim's ``reading:`` mapping::

        reading:
          frame: trace            # trace (default; the claim's experiments' run frames, concatenated),
                                  # summary, timing, or a view of the paper's claims.py VIEWS
          where: {m: 50}          # rows considered (select())
          per: [k0]               # one component per setting of these columns: all must hold
          of: {where: {algorithm: fedepm}, column: cr}          # the quantity (quantity())
          minus: {where: {algorithm: [sfedavg, sfedprox]}, column: cr, best: lowest, among: algorithm}
                                  # or over: (ratio) or reduction: (100 (b - a) / b), paired by replicate
          multiply: 100           # optional factor
          scale: linear           # or log (ratios)
          label: "FedEPM - best baseline CR"

    The function carries ``reading_views`` (the views it uses) so that the registration's fingerprint
    covers their code."""
    unknown = sorted(set(spec) - READING_KEYS)
    if unknown:
        raise ValueError(f"{name}: unknown reading key(s) {unknown}; allowed: {sorted(READING_KEYS)}")
    if "of" not in spec:
        raise ValueError(f"{name}: a reading needs 'of' (the quantity)")
    ops = [k for k in OPS if k in spec]
    if len(ops) > 1:
        raise ValueError(f"{name}: at most one of {list(OPS)}, got {ops}")
    frame = spec.get("frame", "trace")
    views = dict(views or {})
    if frame not in ("trace", "summary", "timing") and frame not in views:
        raise ValueError(f"{name}: frame {frame!r} is neither trace, summary, timing nor a view of claims.py "
                         f"VIEWS ({sorted(views)})")
    view = views.get(frame)
    label = spec.get("label", name)

    def check(frames, summaries):
        if view is not None:
            df = view(frames, summaries)
        else:
            src = frames if frame == "trace" else {k.split(".")[0]: v for k, v in summaries.items()
                                                   if k.endswith(".timing") == (frame == "timing")}
            parts = [p for p in src.values() if p is not None and not p.empty]
            df = pd.concat(parts, ignore_index=True) if parts else None
        if df is None or df.empty:
            return None
        df = select(df, **dict(spec.get("where") or {}))
        out = []
        for setting, rows in settings(df, spec.get("per")):
            q = quantity(rows, spec["of"])
            if ops:
                q = getattr(q, OPS[ops[0]])(quantity(rows, spec[ops[0]]))
            q = q.scaled(float(spec.get("multiply", 1.0)))
            tag = label_of(setting)
            r = q.rep(label + (f", {tag}" if tag else ""), scale=spec.get("scale", "linear"))
            if r is not None:
                out.append(r)
        return out or None

    check.__name__ = name
    check.reading_views = [view] if view is not None else []
    return check


def informative(p: PerSeed) -> PerSeed:
    """The replicates that say something: those not flagged as bounds on both sides (e.g. ``a - b`` of two
    runs that both hit their cap: the difference is then unknown in both directions)."""
    return p.at(p.v.index[~(p.lb & p.ub).to_numpy(bool)])


def gaps(a_rows, b_rows, metric: str, by: str = "seed", x: str = "round") -> dict:
    """``{replicate: Series}`` of ``a - b`` over the ``x`` at which both curves are evaluated (indexed by
    ``x``), for the replicates both frames have (sorted): two curves compared point by point."""
    a, b = curves(a_rows, metric, by, x), curves(b_rows, metric, by, x)
    return {k: (pd.Series(a[k][1], index=a[k][0]) - pd.Series(b[k][1], index=b[k][0])).dropna()
            for k in sorted(set(a) & set(b))}


def stays_from(df, metric: str, level: float, below: bool = False, by: str = "seed", x: str = "round") -> PerSeed:
    """Per replicate: the first evaluated ``x`` from which the metric stays >= level (<= with ``below``) up
    to the last evaluated point. A run that ends on the wrong side gives ``last x + 1`` flagged ``lb``."""
    vals, lb = {}, {}
    for k, (r, y) in curves(df, metric, by, x).items():
        ok = np.flip(np.cumprod(np.flip(y <= level if below else y >= level))).astype(bool)
        vals[k], lb[k] = (float(r[np.flatnonzero(ok)[0]]), False) if ok.any() else (float(r[-1]) + 1.0, True)
    return PerSeed.bounded(vals, lower=lb)


_MEMO: list = []          # [(parts, build, frame)]: the parts are kept alive, so their ids stay unique


def memo_frame(parts, build: Callable, size: int = 8):
    """``build`` of the frames ``parts`` concatenated (a paper's tidy view of several experiments), memoised
    by the identity of the parts and of ``build``: every check of a build asks for the same view once. The
    last ``size`` results are kept."""
    parts = list(parts)
    for cached, fn, df in _MEMO:
        if fn is build and len(cached) == len(parts) and all(a is b for a, b in zip(cached, parts)):
            return df
    _MEMO.append((parts, build, build(pd.concat(parts, ignore_index=True))))
    del _MEMO[:-size]
    return _MEMO[-1][2]


def beside(paper: str, check: str, comps, side=(), why: str = ""):
    """A claim decided at its stated parameters (``comps``: its Replicates) with the sensitivity to a stated
    parameter shown beside, not decided on: ``side`` is ``[(label, components)]``, each decided under the
    claim's rule (:func:`fedrepro.claims.sweep.decide_as`) and described in the Outcome's detail and why.
    None without ``comps``."""
    from fedrepro.claims.evaluate import Outcome
    from fedrepro.claims.sweep import decide_as, describe

    if not comps:
        return None
    side_txt = "; ".join(f"{lab}: {describe(decide_as(paper, check, c))}" for lab, c in side if c)
    return Outcome(comps, detail=f"beside (not the verdict): {side_txt}" if side_txt else "",
                   why=why + (f"; beside: {side_txt}" if side_txt else ""))


def listing(p: PerSeed, fmt: str = "{:.0f}", lower: str = "≥", capped: str | None = None) -> str:
    """``v1, ≥v2, v3``: the values in replicate order, a lower bound prefixed with ``lower`` (with ``capped``:
    shown as that word instead, e.g. ``never`` for a run that never gets there)."""
    return ", ".join(capped if lb and capped is not None else (lower if lb else "") + fmt.format(v)
                     for v, lb in zip(p.v, p.lb))


__all__ = ["PerSeed", "EMPTY", "extreme", "select", "settings", "label_of", "curves", "final", "value_at",
           "mean_over", "rounds_to", "column", "fitted_ratio", "measure", "quantity", "compile_reading",
           "informative", "gaps", "stays_from", "memo_frame", "beside",
           "listing"]
