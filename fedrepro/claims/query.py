"""The query layer: the quantities a reading compares, as per-replicate values with bound flags.

A reading selects runs (:func:`select`), reduces each replicate (a seed or instance; for CPU times
the instance too, its timing repetitions reduced by :func:`per_instance`) to one number (:func:`final`,
:func:`value_at`, :func:`mean_over`, :func:`rounds_to`, :func:`column`),
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

import json
from dataclasses import dataclass
from functools import reduce
from typing import Callable, Iterable, Mapping

import numpy as np
import pandas as pd

from fedrepro.claims.entries import NotTestable
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


# ---- readings as data ----------------------------------------------------------------------------------
def _final(rows, spec, by, x):
    return final(rows, spec["final"], int(spec.get("tail", 1)), by, x)


def _at(rows, spec, by, x):
    return value_at(rows, spec["metric"], float(spec["at"]), by, x)


def _mean(rows, spec, by, x):
    return mean_over(rows, spec["mean"], float(spec["from"]), float(spec["to"]), by, x)


def _rounds_to(rows, spec, by, x):
    return rounds_to(rows, spec["metric"], float(spec["rounds_to"]), bool(spec.get("below", False)), by, x)


def _column(rows, spec, by, x):
    return column(rows, spec["column"], by, spec.get("how", "first"), spec.get("capped"))


def _lowest_share(rows, spec, by, x):
    return lowest_share(rows, spec["lowest_share"], spec.get("group", "algorithm"), spec["over"], spec["value"],
                        by, spec.get("capped"), int(spec.get("complete", 1)), spec.get("above"))


def _lowest_margin(rows, spec, by, x):
    return lowest_margin(rows, spec["lowest_margin"], spec.get("group", "algorithm"), spec["value"], by,
                         spec.get("capped"), int(spec.get("complete", 1)), spec.get("over"), spec.get("above"),
                         bool(spec.get("ratio", False)))


def _gap(rows, spec, by, x):
    return informative_gap(rows, spec["gap"], spec["minus"])


def _reaches(rows, spec, by, x):
    start, slack = float(spec.get("start", -np.inf)), float(spec.get("slack", 0.0))
    return reaches(rows, spec["reaches"], spec["level"], start, slack, by, x)


def _percent(rows, spec, by, x):
    return final(rows, spec["percent"], int(spec.get("tail", 1)), by, x).scaled(100)


def _initial(rows, spec, by, x):
    return initial(rows, spec["initial"], int(spec.get("head", 1)), by, x)


def _saved(rows, spec, by, x):
    return saved(rows, spec["saved"], spec["versus"])


def _stays_from(rows, spec, by, x):
    return stays_from(rows, spec["metric"], float(spec["stays_from"]), bool(spec.get("below", False)), by, x)


def _penalised(rows, spec, by, x):
    data, pen = (final(rows, spec[k], int(spec.get("tail", 1)), by, x) for k in ("penalised", "penalty"))
    both = data.v.index.intersection(pen.v.index)
    return PerSeed.exact(data.v.loc[both] + float(spec["lam"]) * pen.v.loc[both])


#: the measure kinds of a reading's side, by key. A compiled reading holds only the functions of the kinds it
#: uses, so its fingerprint covers those and a new kind here changes no other reading.
MEASURE_KINDS = {"final": _final, "at": _at, "mean": _mean, "rounds_to": _rounds_to, "column": _column,
                 "lowest_share": _lowest_share, "lowest_margin": _lowest_margin, "gap": _gap, "reaches": _reaches, "percent": _percent,
                 "initial": _initial, "saved": _saved, "stays_from": _stays_from, "penalised": _penalised}
MEASURES = tuple(MEASURE_KINDS)
OPS = {"minus": "__sub__", "over": "ratio", "reduction": "reduction"}


def measure_kind(spec: Mapping):
    """The function of the one measure kind ``spec`` names (:func:`measure`)."""
    kinds = [k for k in MEASURE_KINDS if k in spec]
    if len(kinds) != 1:
        raise ValueError(f"a measure names exactly one of {MEASURES}, got {dict(spec)!r}")
    return MEASURE_KINDS[kinds[0]]


def measure(rows: pd.DataFrame, spec: Mapping) -> PerSeed:
    """One number per replicate of ``rows`` as the mapping ``spec`` says (one of):

    ``{final: metric, tail: 1}``, ``{at: round, metric: m}``, ``{mean: metric, from: lo, to: hi}``,
    ``{rounds_to: level, metric: m, below: false}``, ``{column: name, how: first, capped: col}``,
    ``{lowest_share: target, group: algorithm, over: col(s), value: col, capped: col, complete: 1, above: x}``
    (:func:`lowest_share`), ``{lowest_margin: target, group: algorithm, value: col, capped: col, complete: 1,
    over: col, above: x, ratio: false}`` (:func:`lowest_margin`: one setting's component of "the target is the
    lowest at every setting"), ``{penalised: data_col, penalty: col, lam: 1.6}`` (the final data part plus lam times
    the final penalty: an objective at one penalty weight for runs that used others), and the kinds of
    :data:`MEASURE_KINDS`;
    ``by`` (default ``seed``) names the replicate column, ``x`` (default ``round``) the time axis."""
    return measure_kind(spec)(rows, spec, spec.get("by", "seed"), spec.get("x", "round"))


def quantity(rows: pd.DataFrame, spec: Mapping, kind=None) -> PerSeed:
    """A side of a reading: ``{where: {...}, <measure>, best: lowest|highest, among: column}``. With ``best``,
    the measure is taken per value of ``among`` (e.g. per algorithm) and the per-replicate extreme kept.
    ``kind``: the measure's function (default: the one ``spec`` names)."""
    kind = kind or measure_kind(spec)
    by, x = spec.get("by", "seed"), spec.get("x", "round")
    sub = select(rows, **dict(spec.get("where") or {}))
    if "best" not in spec:
        return kind(sub, spec, by, x)
    if spec["best"] not in ("lowest", "highest"):
        raise ValueError(f"best={spec['best']!r}; use lowest or highest")
    parts = [kind(g, spec, by, x) for _, g in settings(sub, spec["among"])]
    return extreme([p for p in parts if len(p)], lowest=spec["best"] == "lowest")


PART_KEYS = {"where", "per", "of", "minus", "over", "reduction", "scale", "multiply", "label", "deterministic",
             "show"}
READING_KEYS = PART_KEYS | {"frame", "components", "detail"}


def _part_kinds(part: Mapping, name: str) -> tuple:
    if "of" not in part:
        raise ValueError(f"{name}: a reading (or each of its components) needs 'of' (the quantity)")
    ops = [k for k in OPS if k in part]
    if len(ops) > 1:
        raise ValueError(f"{name}: at most one of {list(OPS)}, got {ops}")
    return (measure_kind(part["of"]),) + ((measure_kind(part[ops[0]]),) if ops else ())


def _read_part(df: pd.DataFrame, part: Mapping, kinds: tuple, name: str) -> list:
    """``[(shown, PerSeed, Replicates)]`` of one part of a reading: a component per setting of ``per``."""
    ops = [k for k in OPS if k in part]
    label, out = part.get("label", name), []
    for setting, rows in settings(select(df, **dict(part.get("where") or {})), part.get("per")):
        q = quantity(rows, part["of"], kinds[0])
        if ops:
            q = getattr(q, OPS[ops[0]])(quantity(rows, part[ops[0]], kinds[1]))
        q = q.scaled(float(part.get("multiply", 1.0)))
        values, tag = {k: _num(v) for k, v in setting.items()}, label_of(setting)
        text = label.format(**values) if "{" in label else label + (f", {tag}" if tag else "")
        rep = q.rep(text, scale=part.get("scale", "linear"), deterministic=bool(part.get("deterministic", False)))
        if rep is not None:
            out.append((part.get("show", "{setting}").format(setting=tag, **values), q, rep))
    return out


def compile_reading(spec: Mapping, views: Mapping[str, Callable] | None = None, name: str = "reading"):
    """A check ``(frames, summaries) -> [Replicates] | Outcome | None`` from a claim's ``reading:`` mapping::

        reading:
          frame: trace            # trace (default; the claim's experiments' run frames, concatenated),
                                  # summary, timing, or a view of the paper's claims.py VIEWS
          where: {m: 50}          # rows considered (select())
          per: [k0]               # one component per setting of these columns: all must hold
          of: {where: {algorithm: fedepm}, column: cr}          # the quantity (quantity())
          minus: {where: {algorithm: [sfedavg, sfedprox]}, column: cr, best: lowest, among: algorithm}
                                  # or over: (ratio) or reduction: (100 (b - a) / b), paired by replicate
          multiply: 100           # optional factor
          scale: linear           # or log (ratios); deterministic: true for values without replicate noise
          label: "FedEPM - best baseline CR"   # ", k0=4" appended per setting; or placeholders:
                                               # "FedEPM - best CR at k0 = {k0}" (the setting's values)
          components:             # optional: several parts, each with the keys above (where, per, of, minus,
            - {...}               # label, ...) over the reading's own; their components in this order
          detail: {unit: " rounds", fmt: "{:.1f}", prefix: "per seed ", note: ""}
                                  # optional: every component's per-replicate values shown after the value,
                                  # "<show>: per seed v1, v2+ rounds" ('+' / '-': a bound), show (a part key)
                                  # defaulting to the setting ("k0=4"; placeholders as in label)

    A view may return :class:`~fedrepro.claims.evaluate.NotTestable` (why this build cannot decide), which
    the check returns as it is. The function carries ``reading_views`` (the views it uses) so that the
    registration's fingerprint covers their code."""
    unknown = sorted(set(spec) - READING_KEYS)
    if unknown:
        raise ValueError(f"{name}: unknown reading key(s) {unknown}; allowed: {sorted(READING_KEYS)}")
    base = {k: v for k, v in spec.items() if k in PART_KEYS and k != "where"}   # where: applied once, below
    parts = [dict(base, **c) for c in spec.get("components", [])] or [base]
    for c in spec.get("components", []):
        bad = sorted(set(c) - PART_KEYS)
        if bad:
            raise ValueError(f"{name}: unknown component key(s) {bad}; allowed: {sorted(PART_KEYS)}")
    kinds_of = [_part_kinds(p, name) for p in parts]
    # the measure functions this reading uses, held (not looked up) so that its fingerprint covers just them
    kinds = tuple(k for ks in kinds_of for k in ks)
    frame = spec.get("frame", "trace")
    views = dict(views or {})
    if frame not in ("trace", "summary", "timing") and frame not in views:
        raise ValueError(f"{name}: frame {frame!r} is neither trace, summary, timing nor a view of claims.py "
                         f"VIEWS ({sorted(views)})")
    view = views.get(frame)
    detail = spec.get("detail")
    if detail is not None and (not isinstance(detail, dict) or set(detail) - {"unit", "fmt", "prefix", "note"}):
        raise ValueError(f"{name}: detail must be a mapping of unit, fmt, prefix, note; got {detail!r}")

    def check(frames, summaries):
        if view is not None:
            df = view(frames, summaries)
            if isinstance(df, NotTestable):          # the view says why this build cannot decide
                return df
        else:
            src = frames if frame == "trace" else {k.split(".")[0]: v for k, v in summaries.items()
                                                   if k.endswith(".timing") == (frame == "timing")}
            parts_ = [p for p in src.values() if p is not None and not p.empty]
            df = pd.concat(parts_, ignore_index=True) if parts_ else None
        if df is None or df.empty:
            return None
        df = select(df, **dict(spec.get("where") or {}))
        got, at = [], 0
        for part, ks in zip(parts, kinds_of):
            got += _read_part(df, part, kinds[at:at + len(ks)], name)
            at += len(ks)
        reps = [r for _, _, r in got]
        if not reps or detail is None:
            return reps or None
        text = explain([(shown, q) for shown, q, _ in got], detail.get("unit", ""),
                       detail.get("prefix", "per seed "), detail.get("fmt", "{:.1f}"))
        return outcome(reps, detail=text + detail.get("note", ""))

    check.__name__ = name
    check.reading_views = [view] if view is not None else []
    return check


def _lowest_state(a_val, a_cap, b_vals, b_caps):
    """The target strictly below every other value: True / False when the caps leave it decided, None when
    open (a capped other not above the target, or a capped target)."""
    if a_cap:
        return False if any(bv <= a_val and not bc for bv, bc in zip(b_vals, b_caps)) else None
    if all(a_val < bv for bv in b_vals):
        return True
    return False if any(bv <= a_val and not bc for bv, bc in zip(b_vals, b_caps)) else None


def lowest_share(df, target, among: str, over, value: str, by: str = "seed", capped: str | None = None,
                 complete: int = 1, above: float | None = None) -> PerSeed:
    """Per replicate ``by``: the share of the settings (distinct values of ``over``, a column or a list of
    columns) at which the row of ``among == target`` has a ``value`` strictly below every other row's (a tie
    is not a win). A setting counts when the target ran and at least ``complete`` distinct others did;
    ``above``: only settings whose (single) ``over`` value exceeds it. ``capped`` names a boolean column of
    rows whose value is only a lower bound (a run that hit its cap): such a row decides only when it cannot
    flip the comparison; a setting it leaves open counts as not lowest and makes the share a lower bound.
    Replicates without any counted setting are left out."""
    if df is None or df.empty or value not in df.columns:
        return EMPTY
    df = df.reset_index(drop=True)
    over = [over] if isinstance(over, str) else list(over)
    caps = df[capped].astype(bool) if capped else pd.Series(False, index=df.index)
    vals, lb = {}, {}
    for rep, d in df.groupby(by, sort=True):
        states = []
        for key, e in d.groupby(over if len(over) > 1 else over[0]):
            if above is not None and not key > above:
                continue
            a, b = e[e[among] == target], e[e[among] != target]
            if not len(a) or b[among].nunique() < max(complete, 1):
                continue
            states.append(_lowest_state(float(a[value].iloc[0]), bool(caps[a.index[0]]),
                                        b[value].astype(float).tolist(), caps[b.index].tolist()))
        if states:
            vals[_key(rep)] = sum(s is True for s in states) / len(states)
            lb[_key(rep)] = any(s is None for s in states)
    return PerSeed.bounded(vals, lower=lb)


def lowest_margin(df, target, among: str, value: str, by: str = "seed", capped: str | None = None,
                  complete: int = 1, over: str | None = None, above: float | None = None,
                  ratio: bool = False) -> PerSeed:
    """Per replicate ``by``, paired: the ``value`` of the row of ``among == target`` minus (``ratio``: over) the
    lowest ``value`` of the other groups of ``among`` in ``df`` (the rows of ONE setting). Negative (below 1):
    the target is strictly the lowest there; a tie gives 0 (1), which a strict ``lt`` does not accept.

    A universal statement ("at every k0 it uses the fewest CR") is read with one component per setting
    (a reading's ``per:``), each this margin: the engine fails the statement on one decided counterexample
    instead of putting an interval on a share of the settings (:func:`lowest_share`, the reading for
    "most" / "almost all"). ``capped`` names a boolean column of rows whose value is a lower bound (a run that
    hit its cap): the flags of :func:`extreme` and of the difference (ratio) follow, so a capped other above
    the target is a decided win, a capped target above an uncapped other a decided loss, and anything else
    a capped run leaves open stays open. The setting gives no replicates when the target or fewer than
    ``complete`` other groups ran, or (``above``) when its ``over`` value is not above ``above``; a replicate
    that one of the groups lacks is left out."""
    if df is None or df.empty or value not in df.columns or among not in df.columns:
        return EMPTY
    if above is not None:
        if over not in df.columns:
            raise ValueError(f"lowest_margin: 'above: {above}' needs 'over:' naming a column of the rows "
                             f"(got over={over!r}; columns: {sorted(df.columns)})")
        df = df[df[over] > above]
    mine = column(df[df[among] == target], value, by, capped=capped)
    others = [column(g, value, by, capped=capped) for _, g in settings(df[df[among] != target], among)]
    others = [p for p in others if len(p)]
    if not len(mine) or len(others) < max(complete, 1):
        return EMPTY
    best = extreme(others, lowest=True)
    return mine.ratio(best) if ratio else mine - best


def ahead(a: PerSeed, b: PerSeed, lower: bool = False) -> PerSeed:
    """How much better ``a`` is than ``b``, paired by replicate: ``a - b``, or ``b - a`` when ``lower``
    is better (a loss, a spread, an error rate); positive = ``a`` better, with the flags of the difference."""
    return b - a if lower else a - b


def initial(df, metric: str, head: int = 1, by: str = "seed", x: str = "round") -> PerSeed:
    """Per replicate: the mean of the metric over its first ``head`` evaluated points (1: the starting
    value); the mirror of :func:`final`."""
    return PerSeed.exact({k: float(y[:head].mean()) for k, (_, y) in curves(df, metric, by, x).items()})


def fixed(value: float, label: str, scale: str = "linear") -> Replicates:
    """A closed-form quantity (a formula of the configuration, an LP's optimum): one value without
    replicate noise, ``deterministic=True`` (its interval is the value itself)."""
    return Replicates([float(value)], label=label, scale=scale, deterministic=True)


def advantages(rows, pairs, metrics, among: str = "algorithm", lower=(), names=None, scale=None,
               by: str = "seed") -> list:
    """For every ``(a, b)`` in ``pairs`` and every metric (in that order): per replicate, how much better the
    rows with ``among == a`` are than those with ``among == b`` (:func:`column` of each, :func:`ahead`;
    ``lower``: the metrics where lower is better), divided by ``scale[metric]`` (default 1), as
    :class:`Replicates` labelled ``"<metric>: <a> ahead of <b>"`` (``names`` maps metrics and values to the
    text shown; ``" / <scale>"`` appended when scaled). A pair without a shared replicate gives None."""
    names, out = dict(names or {}), []
    for a, b in pairs:
        for k in metrics:
            x, y = (column(select(rows, **{among: v}), k, by) for v in (a, b))
            d, unit = ahead(x, y, lower=k in lower), (scale or {}).get(k, 1.0)
            shown = f"{names.get(k, k)}: {names.get(a, a)} ahead of {names.get(b, b)}"
            out.append(PerSeed(d.v / unit, d.lb, d.ub).rep(shown + ("" if unit == 1.0 else f" / {unit:g}")))
    return out


def substitute(base: pd.DataFrame, alt: pd.DataFrame, key: str = "algorithm") -> pd.DataFrame:
    """``alt`` replacing the groups of ``base`` it has: the rows of ``base`` whose ``key`` value ``alt`` lacks,
    then ``alt``'s rows (e.g. a sweep setting's runs of the swept methods, the other methods' runs shared)."""
    return pd.concat([base[~base[key].isin(alt[key].unique())], alt], ignore_index=True)


def decided_across(paper: str, check: str, settings, components: Callable, name: str):
    """A check's value over ``settings`` ``[(label, frame, parameter)]`` (the first the reference setting):
    ``components(frame)`` at each; a NotTestable at any setting is the answer; a reference alone is its
    value, marked "not swept"; otherwise :func:`fedrepro.claims.sweep.across` (``name``: what is swept)."""
    from fedrepro.claims.evaluate import NotTestable, Outcome
    from fedrepro.claims.sweep import across

    got = [(lab, components(frame), par) for lab, frame, par in settings]
    bad = next((c for _, c, _ in got if isinstance(c, NotTestable)), None)
    if bad is not None or not got:
        return bad
    if len(got) == 1:
        return Outcome(got[0][1], detail="not swept: no sweep runs in these results")
    return across(paper, check, got, name=name)


def swept(default, sweep, labels: Mapping, default_label: str, where: str = "", groups=None) -> list:
    """``[(label, frame, parameter)]`` of a sweep of unstated parameters: ``default`` (the reference setting),
    then per entry ``label -> (shown, parameter)`` of ``labels`` that ``sweep``'s ``setting`` column holds,
    ``default`` with that setting's runs substituted (:func:`substitute`: the swept methods' runs replace
    theirs, the others are shared, paired by seed). A setting not in ``labels``, or (``groups``) runs of a
    method the sweep does not vary, is an error naming ``where``."""
    out = [(default_label, default, None)]
    if sweep is None or sweep.empty:
        return out
    unknown = sorted(set(sweep["setting"]) - set(labels))
    stray = sorted(set(sweep["algorithm"]) - set(groups)) if groups is not None else []
    if unknown or stray:
        raise ValueError(f"{where}: settings {unknown} not in the sweep's labels {sorted(labels)}" if unknown else
                         f"{where}: runs of {stray}, which it does not sweep ({list(groups)})")
    subs = ((shown, select(sweep, setting=label), par) for label, (shown, par) in labels.items())
    return out + [(shown, substitute(default, sub), par) for shown, sub, par in subs if not sub.empty]


def across_values(paper: str, check: str, settings, value: Callable, name: str):
    """:func:`decided_across` for a check whose value at one setting comes from another check (``value(frame)``:
    Replicates, an Outcome, a NotTestable or None): a setting it cannot decide makes the answer a NotTestable
    naming that setting; a reference alone is its own value, marked "not swept"."""
    from fedrepro.claims.evaluate import NotTestable, Outcome

    if len(settings) == 1:
        out = value(settings[0][1])
        if isinstance(out, Outcome):
            return Outcome(out.value, why=out.why, detail=(out.detail + "; " if out.detail else "") + "not swept")
        return out if out is None or isinstance(out, NotTestable) else Outcome(out, detail="not swept")
    comps = []
    for label, frame, par in settings:
        out = value(frame)
        if isinstance(out, NotTestable):       # a setting this build cannot decide: which one, and why
            return NotTestable(f"at {label}: {out.reason}")
        comps.append((label, out.value if isinstance(out, Outcome) else out, par))
    return decided_across(paper, check, comps, lambda c: c, name)


def times_to_target(df: pd.DataFrame, metric: str, among: str = "algorithm", x: str = "virtual_time",
                    by: str = "seed") -> pd.DataFrame:
    """Per replicate, a common target = the worst final ``metric`` of the groups of ``among`` (the largest:
    lower is better), and per group the first ``x`` at which it is at or below it (:func:`rounds_to`).
    Rows replicates, columns groups; a replicate whose target is not below the groups' worst starting
    value (:func:`initial`: every run already there) is left out."""
    runs = {s[among]: g for s, g in settings(df, among)}
    target, start = (extreme([f(g, metric, by=by, x=x) for g in runs.values()], lowest=False)
                     for f in (final, initial))
    level = target.v[target.v < start.v].to_dict()
    return pd.DataFrame({a: rounds_to(g, metric, level, below=True, by=by, x=x).v for a, g in runs.items()})


# ---- checks written as code: labelled series, their detail and outcome -------------------------------------
def mean_of(parts: Iterable[PerSeed]) -> PerSeed:
    """Per replicate, the mean of several series (paired): a lower (upper) bound when any part is one.
    No parts: no replicates."""
    parts = list(parts)
    if not parts:
        return EMPTY
    common = reduce(lambda idx, p: idx.intersection(p.v.index), parts[1:], parts[0].v.index)
    parts = [p.at(common) for p in parts]
    flags = [pd.concat([getattr(p, f) for p in parts], axis=1).any(axis=1) for f in ("lb", "ub")]
    return PerSeed(sum(p.v for p in parts) / len(parts), *flags)


def explain(parts, unit: str = "", prefix: str = "per seed ", fmt: str = "{:.1f}") -> str:
    """``label: per seed v1, v2+ unit; ...``: labelled series ``[(label, PerSeed)]`` as a check's detail."""
    return "; ".join(f"{lab}: {prefix}{b.show(fmt)}{unit}" for lab, b in parts)


def outcome(reps, detail: str = "", why: str = ""):
    """An :class:`~fedrepro.claims.evaluate.Outcome` around one Replicates or a list of them (None
    components dropped); None without any."""
    from fedrepro.claims.evaluate import Outcome

    if isinstance(reps, list):
        reps = [r for r in reps if r is not None] or None
    return None if reps is None else Outcome(reps, why=why, detail=detail)


def outcome_of(parts, label: str = "{}", unit: str = "", note: str = "", scale: str = "linear"):
    """The outcome of labelled series ``[(label, PerSeed)]``: a component per series with the label
    ``label.format(its label)``, the per-replicate values (:func:`explain` with ``unit``) + ``note`` as
    the detail; None without any value."""
    return outcome([b.rep(label.format(lab), scale) for lab, b in parts], detail=explain(parts, unit) + note)


def against_paper(cells, what: str, note: str = ""):
    """Ours relative to the paper's numbers: per cell ``(label, PerSeed, paper number or None)`` a component
    ours/paper on the log scale labelled ``label: what ours/paper (p)``; every cell in the detail. A
    :class:`~fedrepro.claims.evaluate.NotTestable` when no cell has both our values and a paper number."""
    from fedrepro.claims.evaluate import NotTestable

    reps = [b.scaled(1.0 / p).rep(f"{lab}: {what} ours/paper ({p:g})", scale="log")
            for lab, b, p in cells if p is not None and len(b)]
    if not any(r is not None for r in reps):
        return NotTestable("no cell with both our runs and a number of the paper")
    return outcome(reps, detail="; ".join(f"{lab}: {b.show()} (paper {p})" for lab, b, p in cells) + note)


def trend(parts: Mapping) -> PerSeed:
    """Per replicate (paired across ``parts``, ``{x: PerSeed}``): ``exp(slope * (max x - min x))`` of the
    least-squares line of ``log value`` on ``x`` through every point, the trend's ratio from the smallest to
    the largest ``x`` (> 1: rises). A lower bound right of the mean ``x`` (or an upper bound left of it)
    makes the ratio a lower bound; mirrored, an upper bound. Fewer than two ``x``: no replicates."""
    xs = sorted(parts)
    if len(xs) < 2:
        return EMPTY
    idx = parts[xs[0]].v.index
    for k in xs[1:]:
        idx = idx.intersection(parts[k].v.index)
    x = np.asarray(xs, float)
    xc = x - x.mean()
    vals, lbs, ubs = {}, {}, {}
    for i in idx:
        y = np.log(np.array([parts[k].v.loc[i] for k in xs], float))
        lo = np.array([parts[k].lb.loc[i] for k in xs], bool)
        hi = np.array([parts[k].ub.loc[i] for k in xs], bool)
        b = float((xc * (y - y.mean())).sum() / (xc ** 2).sum())
        vals[i] = float(np.exp(b * (x.max() - x.min())))
        lbs[i] = bool((lo & (xc > 0)).any() or (hi & (xc < 0)).any())
        ubs[i] = bool((lo & (xc < 0)).any() or (hi & (xc > 0)).any())
    return PerSeed.bounded(vals, lower=lbs, upper=ubs)


def value_at_each(df, metric: str, at, by: str = "seed", x: str = "round") -> PerSeed:
    """:func:`value_at` at a point of each replicate's own (``at``: ``{replicate: x}`` or a
    :class:`PerSeed`, e.g. the round at which another run of the replicate stopped); replicates
    without a point ``<= at`` or without an ``at`` are left out."""
    at = at.v.to_dict() if isinstance(at, PerSeed) else dict(at)
    out = {}
    for k, (r, y) in curves(df, metric, by, x).items():
        ok = r <= at[k] if k in at else np.zeros(len(r), bool)
        if ok.any():
            out[k] = float(y[ok][-1])
    return PerSeed.exact(out)


def stats_table(df: pd.DataFrame, col: str, keys, how: str = "mean", capped: str | None = None) -> pd.DataFrame:
    """One row per group of ``keys`` (e.g. setting, algorithm): ``how`` (mean, median, ...)
    of ``col`` over the group's rows, computed by one groupby of the whole frame, and, with ``capped``, whether
    a capped row is among them (the statistic is then a lower bound; read back with ``column(..., capped=)``)."""
    g = df.groupby(list(keys))
    parts = [getattr(g[col], how)()] + ([g[capped].any()] if capped else [])
    return pd.concat(parts, axis=1).reset_index()


REDUCE_REPEATS = ("median", "mean", "min")


def per_instance(timing: pd.DataFrame, value, keys, instance: str = "instance", repeat: str = "repeat",
                 reduce_repeats: str = "median", capped: str | None = None) -> pd.DataFrame:
    """A timing pass (every timed cell re-run R times) as one row per run: per (``keys``..., ``instance``), each
    ``value`` column reduced over the instance's timing repetitions (``reduce_repeats``: median by default; the
    repetitions only reduce timer noise within an instance), ``capped`` (a boolean column: the run hit its cap,
    its time a lower bound) any over them, and ``repeats`` the number reduced.

    The replicate of a CPU-time claim is the instance, as the paper's averages are over instances: read the
    result per ``instance`` (e.g. ``column(rows, value, by=instance, capped=capped)``), paired by instance for a
    ratio of two methods, never per repetition (a repetition re-times the same fixed instances, so the variation
    between instances would not be in the interval). Raises ValueError naming the column when ``timing`` lacks
    one, and when a (keys, instance) has two rows in one repetition (``keys`` do not identify a run)."""
    values = [value] if isinstance(value, str) else list(value)
    keys = [keys] if isinstance(keys, str) else list(keys or ())
    if reduce_repeats not in REDUCE_REPEATS:
        raise ValueError(f"reduce_repeats={reduce_repeats!r}; use one of {REDUCE_REPEATS}")
    need = [*keys, instance, repeat, *values] + ([capped] if capped else [])
    missing = [c for c in need if c not in timing.columns]
    if missing:
        raise ValueError(f"per_instance: the timing frame has no column(s) {missing} (has {sorted(timing.columns)}); "
                         f"a timing pass has one row per cell and repetition with '{repeat}' and '{instance}'")
    dup = timing.duplicated([*keys, instance, repeat])
    if dup.any():
        row = timing.loc[dup, [*keys, instance, repeat]].iloc[0].to_dict()
        raise ValueError(f"per_instance: two rows of one run in one repetition ({row}): the keys {keys} do not "
                         "identify a run; add the column that tells them apart (e.g. the algorithm or step)")
    g = timing.groupby([*keys, instance], sort=True, dropna=False)
    parts = [getattr(g[v], reduce_repeats)() for v in values] + [g[repeat].nunique().rename("repeats")]
    if capped:
        parts.append(g[capped].any())
    return pd.concat(parts, axis=1).reset_index()


def lowest_any(parts: Iterable[PerSeed]) -> PerSeed:
    """Per replicate, the smallest of ``parts`` (paired) with conservative flags: a lower bound when ANY part is
    one at that replicate (not only the smallest, as :func:`extreme` has it)."""
    parts = list(parts)
    low = extreme(parts)
    lb = pd.concat([p.lb.loc[low.v.index] for p in parts], axis=1).any(axis=1) if parts else low.lb
    return PerSeed(low.v, lb, low.ub)


def trends(rows: pd.DataFrame, x: str, per, quantity: Callable) -> list:
    """``[(setting, fit, means)]`` per setting of ``per``: ``fit`` the :func:`trend` over ``x`` of
    ``quantity(rows at one x)`` (a :class:`PerSeed`), ``means`` its mean at each ``x`` over the replicates of
    the fit (settings without a fit are left out)."""
    out = []
    for setting, g in settings(rows, per):
        parts = {v: quantity(select(g, **{x: v})) for v in sorted(g[x].unique())}
        fit = trend(parts)
        if len(fit):
            out.append((setting, fit, [p.v.loc[fit.v.index].mean() for p in parts.values()]))
    return out


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


def informative_gap(rows, a: Mapping, b: Mapping) -> PerSeed:
    """``a - b`` of two quantities of ``rows`` (:func:`quantity` specs, e.g. two methods' rounds to a level),
    paired by replicate, keeping the :func:`informative` replicates (two capped runs: dropped). As a
    reading's measure kind: ``{gap: {quantity a}, minus: {quantity b}}``."""
    return informative(quantity(rows, a) - quantity(rows, b))


def reaches(df, metric: str, level: str, start: float = -np.inf, slack: float = 0.0, by: str = "seed",
            x: str = "round") -> PerSeed:
    """Per replicate: the first ``x >= start`` at which the replicate's metric (the mean of its rows at that ``x``)
    reaches the level of the run, the column ``level`` of its first row (e.g. the target of the model run), less
    ``slack``: :func:`rounds_to`, a run that never gets there a lower bound. The measure kind
    ``{reaches: metric, level: column, start: 1, slack: 1e-12}``; ``{percent: metric, tail: 5}`` is
    :func:`final` in percent."""
    if df is None or df.empty:
        return EMPTY
    curve = df[df[x] >= start].groupby([by, x], as_index=False)[metric].mean()
    return rounds_to(curve, metric, float(df[level].iloc[0]) - slack, by=by, x=x)


def saved(rows, a: Mapping, b: Mapping) -> PerSeed:
    """``1 - a / b`` of two quantities of ``rows`` (:func:`quantity` specs, e.g. the rounds to a level of a method
    and of a baseline), paired by replicate, ``b`` clipped at 1, keeping the :func:`informative` replicates: the
    share ``a`` saves (a capped ``a``: an upper bound; a capped ``b``: a lower bound). The measure kind
    ``{saved: {quantity a}, versus: {quantity b}}``; ``{stays_from: level, metric: m, below: false}`` is
    :func:`stays_from`."""
    qb = quantity(rows, b)
    q = informative(quantity(rows, a).ratio(PerSeed(qb.v.clip(lower=1.0), qb.lb, qb.ub)))
    return PerSeed(1.0 - q.v, q.ub, q.lb)


def filled(spec, values: Mapping | None = None):
    """``spec`` (a reading's mapping, nested) with each ``{name}`` of ``values`` in its strings replaced by the
    value (a float as ``{:g}``); other braces (a label's ``{setting}``) are kept: one reading, several settings."""
    if isinstance(spec, Mapping):
        return {k: filled(v, values) for k, v in spec.items()}
    if isinstance(spec, list):
        return [filled(v, values) for v in spec]
    if isinstance(spec, str):
        for k, v in (values or {}).items():
            spec = spec.replace("{" + k + "}", format(v, "g") if isinstance(v, float) else str(v))
    return spec


def read_filled(spec: Mapping, frames, summaries, values: Mapping | None = None, views=None):
    """The components (a list, empty without any) of the reading ``spec`` (:func:`compile_reading`) filled with
    ``values`` (:func:`filled`), on ``frames`` / ``summaries``; a :class:`NotTestable` as it is."""
    got = compile_reading(filled(spec, values), views)(frames, summaries)
    return got if isinstance(got, NotTestable) else list(getattr(got, "value", got) or [])


def notes(df, parts, sep: str = "; ") -> str:
    """The per-replicate values of quantities of ``df`` as a check's explanation: ``parts`` is ``[{text, fmt,
    capped, <quantity>}]`` (:func:`quantity`, :func:`listing`), each shown as ``text v1, ≥v2``; empty ones are
    left out."""
    got = [(p, quantity(df, {k: v for k, v in p.items() if k not in ("text", "fmt", "capped")})) for p in parts]
    return sep.join(p.get("text", "") + listing(q, p.get("fmt", "{:.0f}"), capped=p.get("capped"))
                    for p, q in got if len(q))


def read_beside(paper: str, check: str, frames, summaries, reading: Mapping, values: Mapping | None = None,
                side=(), views=None, why=(), sep: str = "; ", note: str = "", why_in_detail: bool = False):
    """A check as data (the parameters of a claim's ``args:``), decided at the stated setting with the
    sensitivity beside (:func:`beside`): the reading ``reading`` filled with ``values`` (:func:`read_filled`)
    decides; each of ``side`` (``{label, values}``) is it filled with those values, shown beside. ``why``:
    :func:`notes` of the reading's frame (``sep``, then ``note``), also before the detail with ``why_in_detail``."""
    comps = read_filled(reading, frames, summaries, values, views)
    if isinstance(comps, NotTestable):
        return comps
    if not comps:
        return None
    sides = [(s["label"], read_filled(reading, frames, summaries, s.get("values"), views)) for s in side]
    frame = reading.get("frame", "trace")
    text = notes(views[frame](frames, summaries), why, sep) + note if why else ""
    out = beside(paper, check, comps, side=sides, why=text)
    if not why_in_detail:
        return out
    from fedrepro.claims.evaluate import Outcome

    return Outcome(out.value, detail=text + (f" | {out.detail}" if out.detail else ""), why=out.why)


def read_across(paper: str, check: str, frames, summaries, reading: Mapping, sweep: Mapping, label: str,
                side=(), views=None, name: str = "", context: str = ""):
    """A check as data (the parameters of a claim's ``args:``), decided across a swept unstated parameter
    (:func:`fedrepro.claims.sweep.across`): ``sweep`` is ``{placeholder: [values]}``, the reading ``reading``
    filled with each value (:func:`read_filled`) is decided there, labelled ``label`` filled likewise; each of
    ``side`` (``{label, values, reading}``: the reading, or its own, filled with ``values``) is shown beside."""
    from fedrepro.claims.sweep import across

    (key, values), = sweep.items()
    got = [(filled(label, {key: v}), read_filled(reading, frames, summaries, {key: v}, views)) for v in values]
    sides = [(s["label"], read_filled(s.get("reading", reading), frames, summaries, s.get("values"), views))
             for s in side]
    bad = next((c for _, c in got + sides if isinstance(c, NotTestable)), None)
    return bad or across(paper, check, got, name=name, context=context, side=sides)


def both_halves(first, second, show: Callable = lambda r: f"{r.label} {r.estimate:.3g} (n={r.n})", sep: str = "; ",
                name: str = "CR half"):
    """The components of a statement about two quantities (e.g. "the fewest CR and the shortest time"), never
    decided on one alone: ``first + second`` (lists of components) when both have some, None when either has
    none; a :class:`NotTestable` ``second`` (e.g. no timing pass) stays one, its reason followed by ``first``'s
    components (each ``show(r)``, joined by ``sep``, after ``name``) so that the half this build has is seen."""
    if isinstance(second, NotTestable):
        return NotTestable(second.reason + (f"; {name}: " + sep.join(show(r) for r in first) if first else ""))
    return first + second if first and second else None

def params_of(df, column: str = "params", **where) -> dict | None:
    """The JSON mapping in ``column`` (a run's parameters; ``problem``: its problem) of the first row of ``df``
    matching ``where`` (:func:`select`): what a run was configured with; None without such a row."""
    rows = select(df, **where)
    return json.loads(rows[column].iloc[0]) if len(rows) and column in rows.columns else None

__all__ = ["PerSeed", "EMPTY", "extreme", "select", "settings", "label_of", "curves", "final", "value_at",
           "mean_over", "rounds_to", "column", "measure", "quantity", "compile_reading",
           "lowest_share", "lowest_margin", "ahead", "initial", "fixed", "advantages", "substitute", "decided_across", "swept", "across_values",
           "times_to_target", "mean_of", "explain", "outcome", "outcome_of", "against_paper",
           "trend", "value_at_each", "stats_table", "per_instance", "lowest_any", "trends", "informative", "gaps",
           "stays_from",
           "memo_frame", "beside", "listing", "informative_gap", "reaches", "saved", "filled", "read_filled",
           "notes", "read_beside", "read_across", "both_halves", "params_of"]
