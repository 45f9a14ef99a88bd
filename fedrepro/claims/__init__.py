"""Claims: a paper's checkable statements, evaluated against our results.

``workflow/papers/<paper>.claims.yaml`` lists the claims (id, text, paper_value,
check, compare, tolerance, experiments; optionally ``why``, ``testable_at`` +
``untestable_reason``, ``noise``, ``noise_abs``); ``fedrepro/papers/<paper>/claims.py`` exports
``CHECKS = {name: func(frames, summaries) -> our value}``. The verdict is always
computed here from the value the check returns — never written by hand:

- ``holds`` / ``fails``: the value compared with the paper's (``compare``/``tolerance``);
- ``not testable here``, with the reason: a dataset is unavailable, the claim is declared
  ``testable_at: [paper]`` (the quick scale cannot test it: the reason names the knob), or the
  check returned :class:`NotTestable` (e.g. the runs it needs hit a round cap), or the value is
  within its declared measurement ``noise`` of the edge of the accepted range (below).

``noise`` (relative, e.g. 0.25 for a ratio of CPU times that builds of identical traces measure
up to 1.23x apart) makes a numeric verdict robust: the claim holds only if every value
within a factor (1 + noise) of ours is accepted, fails only if none is, and is ``not testable
here`` otherwise — a verdict that the next build's timing noise could flip is not reported.
``noise_abs`` (absolute, in the value's units, e.g. 1.0 pp for a difference of final test
accuracies of single-seed neural runs, which builds differing only in float rounding measure up
to ~1 pp apart) widens the value by ± noise_abs in the same way.

Every row that does not hold carries a ``why``: the check's :class:`Outcome` explanation, the
claim's ``why`` text, or the numbers that were compared.
"""
from __future__ import annotations

import importlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

COMPARES = ("true", "approx", "rel", "le", "ge", "band")
HOLDS, FAILS, NOT_TESTABLE = "holds", "fails", "not testable here"
VERDICTS = (HOLDS, FAILS, NOT_TESTABLE)
COLUMNS = ["paper", "claim", "text", "paper_value", "our_value", "compare", "tolerance", "verdict", "why"]


@dataclass(frozen=True)
class NotTestable:
    """Returned by a check when this build cannot test the claim; ``reason`` says why and which
    knob would make it testable (e.g. "needs paper scale: 5 of 8 baseline runs hit the
    max_rounds = 120 cap (paper: 1000)")."""

    reason: str


@dataclass(frozen=True)
class Outcome:
    """A check's value with the explanation shown when the verdict is not ``holds`` (``why``) and
    context always shown after the value (``detail``: other readings, sensitivity series), e.g.
    ``Outcome(0.76, why="GeoMed learns fast at the stated step", detail="at a=0.3: +5.74 pp")``."""

    value: Any
    why: str = ""
    detail: str = ""


def accepted_range(paper_value, compare: str, tolerance=None) -> tuple[float, float]:
    """The values a numeric ``compare`` accepts, as a closed interval [lo, hi]:
    ``approx`` (|v - p| <= tol), ``rel`` (|v - p| <= tol |p|), ``le`` (v <= p + tol),
    ``ge`` (v >= p - tol), ``band`` (p / tol <= v <= p * tol, tol > 1: a ratio band around the
    paper's value, for quantities that scale with the platform or the run)."""
    if paper_value is None:
        raise ValueError(f"claim with compare={compare!r} needs a numeric paper_value")
    p, tol = float(paper_value), float(tolerance or 0.0)
    if compare == "band":
        if not tol > 1:
            raise ValueError(f"claim with compare='band' needs a ratio tolerance > 1, got {tolerance!r}")
        lo, hi = sorted((p / tol, p * tol))
        return lo, hi
    return {"approx": (p - tol, p + tol), "rel": (p - tol * abs(p), p + tol * abs(p)),
            "le": (-math.inf, p + tol), "ge": (p - tol, math.inf)}[compare]


def noise_range(value: float, noise: float) -> tuple[float, float]:
    """The values within a factor (1 + noise) of ``value``."""
    v, f = float(value), 1.0 + float(noise)
    return tuple(sorted((v / f, v * f)))


def value_range(value: float, noise=None, noise_abs=None) -> tuple[float, float]:
    """The values a build could have measured instead of ``value``: within a factor (1 + noise),
    then ± noise_abs."""
    vlo, vhi = noise_range(value, noise) if noise else (float(value), float(value))
    a = float(noise_abs or 0.0)
    return vlo - a, vhi + a


def verdict(value, paper_value, compare: str, tolerance=None, noise=None, noise_abs=None) -> str:
    """``holds`` / ``fails`` / ``not testable here`` (no value could be computed, or, with a
    measurement ``noise`` (relative) or ``noise_abs`` (absolute), the values :func:`value_range`
    allows fall on both sides of an edge of the accepted range).

    compare: ``true`` (value is truthy) or a numeric test (:func:`accepted_range`).
    """
    if compare not in COMPARES:
        raise ValueError(f"claim compare={compare!r} is not allowed; choose one of {COMPARES}")
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return NOT_TESTABLE
    if compare == "true":
        return HOLDS if bool(value) else FAILS
    lo, hi = accepted_range(paper_value, compare, tolerance)
    vlo, vhi = value_range(value, noise, noise_abs)
    if lo <= vlo and vhi <= hi:
        return HOLDS
    if vhi < lo or vlo > hi:
        return FAILS
    return NOT_TESTABLE


def _test_text(compare: str, tolerance) -> str:
    tol = _fmt(tolerance)
    if compare == "band":
        return f"within x{tol} of the paper's value"
    return compare + (f" ±{tol}" if tol not in ("—", "0") else "")


def _fmt(x) -> str:
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.4g}"
    if isinstance(x, (dict, list, tuple)):
        return json.dumps(x, default=str)
    return str(x)


def load_results(paper: str, experiments, results_dir: str | Path = "results"):
    """Trace and summary frames of the experiments whose files exist."""
    frames, summaries = {}, {}
    for e in experiments:
        t, s = Path(results_dir, paper, f"{e}.parquet"), Path(results_dir, paper, f"{e}.summary.parquet")
        if t.exists() and s.exists():
            frames[e], summaries[e] = pd.read_parquet(t), pd.read_parquet(s)
    return frames, summaries


def evaluate(claims: list[dict], checks: dict, frames: dict, summaries: dict, paper: str = "",
             skipped: dict | None = None, scale: str | None = None) -> pd.DataFrame:
    """One row per claim: paper value, our value, verdict and, for every row that does not hold, why.

    ``skipped`` maps experiment -> missing datasets. A claim with ``testable_at: [paper]`` (and its
    ``untestable_reason``) is computed and shown but is ``not testable here`` at any other ``scale``;
    a check may also decide so itself by returning :class:`NotTestable`. A failing row without an
    explanation (``why`` from the check's :class:`Outcome` or the claim's ``why``) gets the numbers.
    """
    skipped = skipped or {}
    rows = []
    for claim in claims:
        needed = claim.get("experiments") or []
        missing_data = sorted({d for e in needed for d in skipped.get(e, [])})
        absent = [e for e in needed if e not in frames]
        why, value, detail = "", None, ""
        compare, tolerance = claim.get("compare", "true"), claim.get("tolerance")
        if missing_data:
            state, why = NOT_TESTABLE, f"dataset unavailable here: {', '.join(missing_data)} (see results/skipped.md)"
        elif absent:
            state, why = NOT_TESTABLE, f"results missing: {', '.join(absent)}"
        else:
            name = claim["check"]
            if name not in checks:
                raise ValueError(f"claim {claim['id']!r}: check {name!r} is not defined in fedrepro.papers.{paper}.claims")
            value = checks[name]({e: frames[e] for e in needed}, {e: summaries[e] for e in needed})
            if isinstance(value, Outcome):
                value, why, detail = value.value, value.why, value.detail
            if isinstance(value, NotTestable):
                state, why, value = NOT_TESTABLE, value.reason, None
            else:
                noise, noise_abs = claim.get("noise"), claim.get("noise_abs")
                state = verdict(value, claim.get("paper_value"), compare, tolerance, noise, noise_abs)
                testable_at = claim.get("testable_at")
                if testable_at and scale is not None and scale not in testable_at:
                    state = NOT_TESTABLE
                    why = claim.get("untestable_reason") or f"needs scale {' or '.join(testable_at)}"
                elif state == NOT_TESTABLE and (noise or noise_abs):
                    why = _noise_why(value, claim, compare, tolerance)
                elif state == NOT_TESTABLE and not why:
                    why = "the check found no value in these results"
                elif state == FAILS and not why:
                    why = claim.get("why") or (f"ours {_fmt(value)} vs paper {_fmt(claim.get('paper_value'))} "
                                               f"({_test_text(compare, tolerance)})")
                elif state == HOLDS:
                    why = ""
        rows.append({"paper": paper, "claim": claim["id"], "text": claim.get("text", ""),
                     "paper_value": _fmt(claim.get("paper_value")),
                     "our_value": _fmt(value) + (f" [{detail}]" if detail else ""),
                     "compare": compare, "tolerance": _fmt(tolerance), "verdict": state, "why": why})
    return pd.DataFrame(rows, columns=COLUMNS)


def _noise_why(value, claim: dict, compare: str, tolerance) -> str:
    """The reason of a verdict the claim's measurement noise leaves open, with the numbers."""
    noise, noise_abs = claim.get("noise"), claim.get("noise_abs")
    lo, hi = accepted_range(claim.get("paper_value"), compare, tolerance)
    vlo, vhi = value_range(value, noise, noise_abs)
    spread = " and ".join(([f"a factor {1 + noise:g} either way"] if noise else [])
                          + ([f"± {noise_abs:g}"] if noise_abs else []))
    needs = ("less noisy timings: the paper scale's trials and run lengths, or an idle machine" if noise
             else "more seeds or the paper scale's runs")
    return (f"within measurement noise: ours {_fmt(float(value))}, and {_fmt(vlo)} to {_fmt(vhi)} ({spread}, "
            f"what builds of the same runs may measure) straddles the accepted range [{_fmt(lo)}, {_fmt(hi)}] "
            f"({_test_text(compare, tolerance)}); this build cannot decide it (needs {needs})")


def validate_claims(claims: list[dict], paper: str = "") -> None:
    """Reject malformed claim entries (unknown keys, bad compare, duplicate ids) before evaluation."""
    allowed = {"id", "text", "paper_value", "check", "compare", "tolerance", "experiments", "testable_at",
               "untestable_reason", "why", "noise", "noise_abs"}
    seen = set()
    for c in claims:
        where = f"{paper} claim {c.get('id')!r}"
        unknown = sorted(set(c) - allowed)
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")
        if c.get("id") in seen:
            raise ValueError(f"{where}: duplicate claim id")
        seen.add(c.get("id"))
        if c.get("compare", "true") not in COMPARES:
            raise ValueError(f"{where}: compare={c.get('compare')!r} is not allowed; choose one of {COMPARES}")
        for key, top, what in (("noise", 1.0, "a relative measurement noise in (0, 1)"),
                               ("noise_abs", math.inf, "a positive absolute measurement noise (in the value's units)")):
            v = c.get(key)
            if key in c and (c.get("compare", "true") == "true" or isinstance(v, bool)
                             or not isinstance(v, (int, float)) or not 0 < v < top):
                raise ValueError(f"{where}: {key}={v!r} must be {what} on a numeric compare (approx, rel, le, ge, band)")
        if c.get("testable_at") and not c.get("untestable_reason"):
            raise ValueError(f"{where}: testable_at needs an untestable_reason naming the knob")


def to_markdown(table: pd.DataFrame, title: str) -> str:
    lines = [f"# Claims: {title}", ""]
    if table.empty:
        return "\n".join(lines + ["No claims defined.", ""])
    counts = table["verdict"].value_counts().to_dict()
    lines.append("Verdicts: " + ", ".join(f"{k} {counts[k]}" for k in VERDICTS if k in counts))
    lines += ["", "| claim | statement | paper | ours | test | verdict | why (when it does not hold) |",
              "|---|---|---|---|---|---|---|"]
    for r in table.itertuples():
        def cell(x):
            return str(x).replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {r.claim} | {cell(r.text)} | {cell(r.paper_value)} | {cell(r.our_value)} | "
                     f"{_test_text(r.compare, r.tolerance)} | **{r.verdict}** | {cell(r.why)} |")
    return "\n".join(lines + [""])


def evaluate_paper(paper: str, results_dir: str | Path = "results", skipped: dict | None = None,
                   root: str | Path = ".", scale: str | None = None):
    """Evaluate ``paper``'s claims file (``<root>/workflow/papers/<paper>.claims.yaml``; the
    workflow passes its root); returns (table, markdown)."""
    from fedrepro.experiments.workflow_plan import load_claims

    claims = load_claims(paper, root)
    validate_claims(claims, paper)
    checks = getattr(importlib.import_module(f"fedrepro.papers.{paper}.claims"), "CHECKS", {}) if claims else {}
    experiments = sorted({e for c in claims for e in (c.get("experiments") or [])})
    frames, summaries = load_results(paper, experiments, results_dir)
    table = evaluate(claims, checks, frames, summaries, paper, skipped, scale)
    return table, to_markdown(table, paper)


def status_table(results_dir: str | Path = "results", papers=None) -> pd.DataFrame:
    """Verdict counts per paper from ``results/<paper>/claims.parquet`` (the README's status table
    and FIDELITY.md's counts are generated from this: ``python -m fedrepro.claims.status``)."""
    rows = []
    for path in sorted(Path(results_dir).glob("*/claims.parquet")):
        paper = path.parent.name
        if papers is not None and paper not in papers:
            continue
        counts = pd.read_parquet(path)["verdict"].value_counts()
        rows.append({"paper": paper, **{v: int(counts.get(v, 0)) for v in VERDICTS},
                     "total": int(counts.sum())})
    return pd.DataFrame(rows, columns=["paper", *VERDICTS, "total"])
