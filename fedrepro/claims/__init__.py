"""Claims: a paper's checkable statements, evaluated against our results.

``workflow/papers/<paper>.claims.yaml`` lists the claims (id, text, paper_value,
check, compare, tolerance, experiments); ``fedrepro/claims/<paper>.py`` exports
``CHECKS = {name: func(frames, summaries) -> our value}``. The verdict is always
computed here from the value the check returns — never written by hand.
"""
from __future__ import annotations

import importlib
import json
import math
from pathlib import Path

import pandas as pd

COMPARES = ("true", "approx", "rel", "le", "ge")


def verdict(value, paper_value, compare: str, tolerance=None) -> str:
    """``holds`` / ``fails`` / ``n/a`` (no value could be computed)."""
    if compare not in COMPARES:
        raise ValueError(f"claim compare={compare!r} is not allowed; choose one of {COMPARES}")
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if compare == "true":
        return "holds" if bool(value) else "fails"
    if paper_value is None:
        raise ValueError(f"claim with compare={compare!r} needs a numeric paper_value")
    v, p = float(value), float(paper_value)
    tol = float(tolerance or 0.0)
    ok = {"approx": abs(v - p) <= tol,
          "rel": abs(v - p) <= tol * abs(p),
          "le": v <= p + tol,
          "ge": v >= p - tol}[compare]
    return "holds" if ok else "fails"


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
             skipped: dict | None = None) -> pd.DataFrame:
    """One row per claim: paper value, our value, verdict, note."""
    skipped = skipped or {}
    rows = []
    for claim in claims:
        needed = claim.get("experiments") or []
        missing_data = sorted({d for e in needed for d in skipped.get(e, [])})
        absent = [e for e in needed if e not in frames]
        note, value = "", None
        if missing_data:
            state, note = "skipped", f"dataset unavailable: {', '.join(missing_data)}"
        elif absent:
            state, note = "n/a", f"results missing: {', '.join(absent)}"
        else:
            name = claim["check"]
            if name not in checks:
                raise ValueError(f"claim {claim['id']!r}: check {name!r} is not defined in fedrepro.claims.{paper}")
            value = checks[name]({e: frames[e] for e in needed}, {e: summaries[e] for e in needed})
            state = verdict(value, claim.get("paper_value"), claim.get("compare", "true"), claim.get("tolerance"))
        rows.append({"paper": paper, "claim": claim["id"], "text": claim.get("text", ""),
                     "paper_value": _fmt(claim.get("paper_value")), "our_value": _fmt(value),
                     "compare": claim.get("compare", "true"), "tolerance": _fmt(claim.get("tolerance")),
                     "verdict": state, "note": note})
    return pd.DataFrame(rows, columns=["paper", "claim", "text", "paper_value", "our_value", "compare",
                                       "tolerance", "verdict", "note"])


def to_markdown(table: pd.DataFrame, title: str) -> str:
    lines = [f"# Claims: {title}", ""]
    if table.empty:
        return "\n".join(lines + ["No claims defined.", ""])
    counts = table["verdict"].value_counts().to_dict()
    lines.append("Verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + "")
    lines += ["", "| claim | statement | paper | ours | test | verdict | note |", "|---|---|---|---|---|---|---|"]
    for r in table.itertuples():
        text = str(r.text).replace("|", "\\|").replace("\n", " ")
        test = r.compare + (f" ±{r.tolerance}" if r.tolerance not in ("—", "0") else "")
        lines.append(f"| {r.claim} | {text} | {r.paper_value} | {r.our_value} | {test} | **{r.verdict}** | {r.note} |")
    return "\n".join(lines + [""])


def evaluate_paper(paper: str, results_dir: str | Path = "results", skipped: dict | None = None,
                   root: str | Path | None = None):
    """Evaluate ``paper``'s claims file; returns (table, markdown)."""
    from ..workflow_support import load_claims

    root = Path(root) if root else Path(__file__).resolve().parents[2]
    claims = load_claims(paper, root)
    checks = getattr(importlib.import_module(f"fedrepro.claims.{paper}"), "CHECKS", {}) if claims else {}
    experiments = sorted({e for c in claims for e in (c.get("experiments") or [])})
    frames, summaries = load_results(paper, experiments, results_dir)
    table = evaluate(claims, checks, frames, summaries, paper, skipped)
    return table, to_markdown(table, paper)
