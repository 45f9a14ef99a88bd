"""Claims files: validated entries, evaluated against our results into a verdict table.

A claims file (``fedrepro/papers/<paper>/claims.yaml``) lists entries::

    - id: fig3_fewest_cr
      kind: paper                    # paper: a statement of the paper (counted in its score)
                                     # check: an acceptance check or identity (reported apart)
                                     # twin: a statement read for another variant of the method than the
                                     # one its counted claim judges (twin_of: that claim; shown beside,
                                     # not counted: a sentence is counted once)
      source:
        place: "Sec. V-B, Fig. 3"
        quote: "FedEPM uses the fewest CR ..."   # verbatim from the paper (a test checks it)
      text: "our reading: mean CR of FedEPM below both baselines' at every (m, k0), paired by seed"
      check: fewest_cr_every_k0      # fedrepro/papers/<paper>/claims.py CHECKS name (called with args:, a
                                     # mapping of keyword arguments, when given), or instead
                                     # reading: {...}                 # the reading as data (fedrepro.claims.query)
      compare: lt                    # lt gt le ge approx rel band (true: kind check only)
      paper_value: 0
      tolerance: ...                 # with tolerance_why: why this band, fixed before our value
      experiments: [fig3]
      testable_at: [verify, paper]   # + untestable_reason: scales where the claim is decided
      variant: "authors' early code" # the variant of the method the claim judges (shown in claims.md)

The check returns :class:`~fedrepro.claims.verdicts.Replicates` (or a list of them),
``Outcome(value, why, detail)`` around that, :class:`NotTestable`, :class:`Depends` (decided across a
sweep of an unstated parameter, holding at some values and failing at others: verdict ``depends``), or
None; the verdict is computed by :func:`~fedrepro.claims.verdicts.decide` (or
:func:`fedrepro.claims.sweep.across`), never written by hand.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from fedrepro.claims.entries import (Depends, NotTestable, Outcome, check_name, load_claims, revised_after_verdict,
                                     revision_summary)
from fedrepro.experiments.expansion import why_no_cells
from fedrepro.experiments.yamlio import paper_file, read_yaml
from fedrepro.claims.verdicts import (ALPHA, at_level, COMPARES, DEPENDS, FAILS, HOLDS, INCOMPLETE, UNAVAILABLE, UNDECIDED, VERDICTS,
                                      Decision,
                                      Replicates, accepted_range, decide)

KINDS = ("paper", "check", "twin")
COLUMNS = ["paper", "claim", "kind", "twin_of", "variant", "place", "quote", "text", "paper_value", "our_value", "compare", "tolerance",
           "verdict", "why", "interval_lo", "interval_hi", "replicates", "replicates_needed", "p_value", "revisions",
           "revised_after_verdict"]
ALLOWED_KEYS = {"id", "kind", "twin_of", "source", "text", "paper_value", "check", "args", "reading", "compare", "tolerance",
                "tolerance_why", "experiments", "testable_at", "untestable_reason", "why", "revisions", "variant"}


def validate_claims(claims, paper: str = "", checks: dict | None = None, experiments=None,
                    scales=None) -> None:
    """Reject a malformed claims file before any evaluation: unknown keys, duplicate or missing ids,
    a missing ``kind`` / ``source`` (place and quote) / ``text`` / ``check``, a compare the kind does
    not allow, a tolerance without its reason, ``testable_at`` without ``untestable_reason``, and,
    when given, a check name not in ``checks`` or an experiment not in ``experiments``."""
    where_file = f"fedrepro/papers/{paper}/claims.yaml"
    if not isinstance(claims, list):
        raise ValueError(f"{where_file}: 'claims' must be a list of entries, got {type(claims).__name__}")
    seen = set()
    for i, c in enumerate(claims):
        if not isinstance(c, dict):
            raise ValueError(f"{where_file}: entry {i} is {type(c).__name__}, not a mapping")
        cid = c.get("id")
        where = f"{where_file} claim {cid!r}"
        if not isinstance(cid, str) or not cid:
            raise ValueError(f"{where_file}: entry {i} has no 'id'")
        unknown = sorted(set(c) - ALLOWED_KEYS)
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(ALLOWED_KEYS)}")
        if cid in seen:
            raise ValueError(f"{where}: duplicate claim id")
        seen.add(cid)
        kind = c.get("kind")
        if kind not in KINDS:
            raise ValueError(f"{where}: kind={kind!r}; use 'paper' (a statement of the paper), 'check' "
                             "(an acceptance check or identity of our code, reported apart) or 'twin' (the "
                             "statement of twin_of read for another variant, shown beside, not counted)")
        if (kind == "twin") != ("twin_of" in c):
            raise ValueError(f"{where}: a twin (kind: twin) names the counted claim it repeats (twin_of), and "
                             "only a twin does")
        if kind == "twin" and not str(c.get("variant", "")).strip():
            raise ValueError(f"{where}: a twin says which variant it judges (variant)")
        src = c.get("source")
        if not isinstance(src, dict) or set(src) != {"place", "quote"} or not all(
                isinstance(src[k], str) and src[k].strip() for k in ("place", "quote")):
            raise ValueError(f"{where}: source must be {{place: <section, figure or table>, quote: <the sentence "
                             f"quoted from the paper>}}, got {src!r}")
        if not isinstance(c.get("text"), str) or not c["text"].strip():
            raise ValueError(f"{where}: 'text' is required (a non-empty string)")
        if ("check" in c) == ("reading" in c):
            raise ValueError(f"{where}: give exactly one of 'check' (a claims.py function) and 'reading' (the "
                             "reading as data, fedrepro.claims.query.compile_reading)")
        if "check" in c and (not isinstance(c["check"], str) or not c["check"].strip()):
            raise ValueError(f"{where}: 'check' must name a function of claims.py CHECKS")
        if "args" in c and ("check" not in c or not isinstance(c["args"], dict)):
            raise ValueError(f"{where}: 'args' is a mapping of keyword arguments for the claims.py check it names")
        if "reading" in c and not isinstance(c["reading"], dict):
            raise ValueError(f"{where}: 'reading' must be a mapping (fedrepro.claims.query.compile_reading)")
        compare = c.get("compare")
        if compare not in COMPARES:
            raise ValueError(f"{where}: compare={compare!r} is not allowed; choose one of {COMPARES}")
        if compare == "true" and kind in ("paper", "twin"):
            raise ValueError(f"{where}: a paper statement is decided from an interval: use a numeric compare "
                             f"({', '.join(COMPARES[:-1])}), not 'true'")
        if compare != "true":
            try:
                accepted_range(c.get("paper_value"), compare, c.get("tolerance"))
            except (TypeError, ValueError) as err:
                raise ValueError(f"{where}: {err}") from None
            tol = c.get("tolerance")
            if tol is not None and (isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol)
                                    or tol < 0):
                raise ValueError(f"{where}: tolerance={tol!r} must be a finite number >= 0")
            if kind in ("paper", "twin") and (tol or compare in ("approx", "rel", "band")) and \
                    not str(c.get("tolerance_why", "")).strip():
                raise ValueError(f"{where}: tolerance {tol!r} needs tolerance_why: why this band, fixed before "
                                 "looking at our value")
        exps = c.get("experiments", [])
        if not isinstance(exps, list) or not all(isinstance(e, str) for e in exps):
            raise ValueError(f"{where}: experiments must be a list of experiment ids, got {exps!r}")
        if experiments is not None:
            bad = [e for e in exps if e not in experiments]
            if bad:
                raise ValueError(f"{where}: experiment(s) {bad} are not defined in fedrepro/papers/{paper}/experiments.yaml; "
                                 f"defined: {sorted(experiments)}")
        if checks is not None and check_name(c) not in checks:
            raise ValueError(f"{where}: check {check_name(c)!r} is not defined in fedrepro/papers/{paper}/claims.py "
                             f"CHECKS")
        if kind == "twin":
            target = next((d for d in claims if isinstance(d, dict) and d.get("id") == c["twin_of"]), None)
            if target is None or target.get("kind") != "paper":
                raise ValueError(f"{where}: twin_of={c['twin_of']!r} is not a paper statement of this file")
        ta = c.get("testable_at")
        if ta is not None:
            if not isinstance(ta, list) or not ta or not all(isinstance(s, str) for s in ta):
                raise ValueError(f"{where}: testable_at must be a non-empty list of scales, got {ta!r}")
            if scales is not None and not set(ta) <= set(scales):
                raise ValueError(f"{where}: testable_at {ta} names unknown scales; use {list(scales)}")
            if not str(c.get("untestable_reason", "")).strip():
                raise ValueError(f"{where}: testable_at needs an untestable_reason naming the knob")


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


def test_text(compare: str, tolerance) -> str:
    tol = _fmt(tolerance)
    if compare == "band":
        return f"within x{tol} of the paper's value"
    names = {"lt": "<", "gt": ">", "le": "<=", "ge": ">=", "approx": "≈", "rel": "≈ (relative)", "true": "true"}
    return names.get(compare, compare) + (f" ±{tol}" if tol not in ("—", "0") else "")


def load_results(paper: str, experiments, results_dir: str | Path = "results"):
    """Trace, summary and (when written) timing frames of the experiments whose files exist.
    Timing frames appear under ``<experiment>.timing`` in the summaries mapping."""
    frames, summaries = {}, {}
    for e in experiments:
        t, s = Path(results_dir, paper, f"{e}.parquet"), Path(results_dir, paper, f"{e}.summary.parquet")
        if t.exists() and s.exists():
            frames[e], summaries[e] = pd.read_parquet(t), pd.read_parquet(s)
        timing = Path(results_dir, paper, f"{e}.timing.parquet")
        if timing.exists():
            summaries[f"{e}.timing"] = pd.read_parquet(timing)
    return frames, summaries


def _row(paper, claim, value="—", verdict=UNDECIDED, why="", decision: Decision | None = None):
    src = claim.get("source") or {}
    comps = decision.components if decision else ()
    one = comps[0] if len(comps) == 1 else None
    return {"paper": paper, "claim": claim["id"], "kind": claim.get("kind", ""), "twin_of": claim.get("twin_of", ""),
            "variant": claim.get("variant", ""),
            "place": src.get("place", ""),
            "quote": src.get("quote", ""), "text": claim.get("text", ""),
            "paper_value": _fmt(claim.get("paper_value")), "our_value": value,
            "compare": claim.get("compare", "true"), "tolerance": _fmt(claim.get("tolerance")),
            "verdict": verdict, "why": why,
            "interval_lo": one.interval[0] if one else math.nan, "interval_hi": one.interval[1] if one else math.nan,
            "replicates": min(c.n for c in comps) if comps else 0,
            "replicates_needed": (decision.needed if decision and decision.needed is not None else 0),
            # the smallest level at which the verdict is reached (fedrepro.claims.verdicts): NaN when not computed
            "p_value": decision.p_value if decision is not None and decision.components else math.nan,
            # the reading's revisions (fedrepro.claims.registration): each with the verdict before it
            "revisions": revision_summary(claim), "revised_after_verdict": revised_after_verdict(claim)}


def evaluate(claims: list[dict], checks: dict, frames: dict, summaries: dict, paper: str = "",
             skipped: dict | None = None, scale: str | None = None, expected: dict | None = None,
             alpha: float = ALPHA) -> pd.DataFrame:
    """One row per claim: the source, our value (estimate and interval), the verdict and, for every
    row that does not hold, why (the intervals, the replicates that would decide, the missing data).

    ``skipped`` maps experiment -> missing datasets (verdict ``unavailable``). A claim declared
    ``testable_at`` other scales is computed and shown but ``undecided`` at this ``scale``.

    Completeness: a claim whose required cells are not all present is ``incomplete``, its ``why``
    names what is missing, and its check is not run (never decided on a subset). ``expected`` maps
    experiment -> its cells at this scale (:class:`fedrepro.claims.completeness.ExpectedCells`, or a
    list of cell mappings; :func:`~fedrepro.claims.completeness.expected_for_paper` gives them); every
    experiment a claim names must be in it. Without ``expected``, only an experiment whose result
    files are absent makes a claim incomplete."""
    from fedrepro.claims.completeness import missing_for_claim
    skipped = skipped or {}
    rows, family, redo = [], {}, {}
    for claim in claims:
        needed = claim.get("experiments") or []
        missing_data = sorted({d for e in needed for d in skipped.get(e, [])})
        absent = [e for e in needed if e not in frames]
        compare, tolerance = claim.get("compare"), claim.get("tolerance")
        if missing_data:
            rows.append(_row(paper, claim, verdict=UNAVAILABLE,
                             why=f"dataset unavailable here: {', '.join(missing_data)} (see results/skipped.md)"))
            continue
        elsewhere = [expected[e] for e in needed if expected is not None and e in expected
                     and not getattr(expected[e], "runs_here", True)]
        if elsewhere:       # an experiment whose run_at leaves this scale out: nothing to decide on here
            why = "not decided at this scale: " + "; ".join(_elsewhere(x) for x in elsewhere)
            testable_at = claim.get("testable_at")
            if any(getattr(x, "left_out", False) for x in elsewhere) and testable_at and scale is not None and scale not in testable_at:
                # left out of the verify build, and decided only at another scale anyway: that reason first
                why = (claim.get("untestable_reason") or f"decided at scale {' or '.join(testable_at)}") + f"; {why}"
            rows.append(_row(paper, claim, why=why))
            continue
        if expected is not None:
            lacking = missing_for_claim(needed, expected, frames, summaries)
            if lacking:
                rows.append(_row(paper, claim, verdict=INCOMPLETE, why="; ".join(m.describe() for m in lacking)))
                continue
        elif absent:
            rows.append(_row(paper, claim, verdict=INCOMPLETE, why=f"results missing: {', '.join(absent)}"))
            continue
        name = check_name(claim)
        if name not in checks:
            raise ValueError(f"claim {claim['id']!r}: check {name!r} is not defined in fedrepro/papers/{paper}/claims.py")
        with at_level(alpha):   # a check deciding inside itself (a sweep) decides at this level
            value = checks[name]({e: frames[e] for e in needed},
                                 {k: v for k, v in summaries.items() if k.split(".")[0] in needed}, **(claim.get("args") or {}))
        why, detail = "", ""
        if isinstance(value, Outcome):
            value, why, detail = value.value, value.why, value.detail
        if isinstance(value, Depends):
            testable_at = claim.get("testable_at")
            if testable_at and scale is not None and scale not in testable_at:
                row = _row(paper, claim, value.table, UNDECIDED,
                           claim.get("untestable_reason") or f"decided at scale {' or '.join(testable_at)}")
            else:
                row = _row(paper, claim, value.table, DEPENDS, f"{value.reason} — {value.table}")
            rows.append({**row, "replicates": value.replicates})
            continue
        if isinstance(value, NotTestable) or value is None:
            reason = value.reason if isinstance(value, NotTestable) else "the check found no value in these results"
            row = _row(paper, claim, why=reason)
            if isinstance(value, NotTestable) and value.replicates:
                row.update(replicates=value.replicates, replicates_needed=value.needed or 0)
            rows.append(row)
            continue
        decision = decide(value, claim.get("paper_value"), compare, tolerance, alpha)
        shown = (decision.summary() if decision.components else _fmt(value)) + (f" [{detail}]" if detail else "")
        state = decision.verdict
        testable_at = claim.get("testable_at")
        if testable_at and scale is not None and scale not in testable_at:
            state = UNDECIDED
            why = claim.get("untestable_reason") or f"decided at scale {' or '.join(testable_at)}"
        elif state == HOLDS:
            why = ""
        else:
            reason = decision.reason() if decision.components else (
                f"ours {_fmt(value)} ({test_text(compare, tolerance)})")
            extra = why or claim.get("why") or ""
            why = reason + (f"; {extra}" if extra else "")
        rows.append(_row(paper, claim, shown, state, why, decision))
        if not (testable_at and scale is not None and scale not in testable_at) and decision.components:
            family.setdefault(claim.get("kind"), []).append(len(rows) - 1)
            redo[len(rows) - 1] = (value, claim.get("paper_value"), compare, tolerance)
    _control_false_discoveries(rows, family, alpha, redo)
    return pd.DataFrame(rows, columns=COLUMNS)


def _elsewhere(x) -> str:
    """Why an experiment has no cells here: the verify build leaves it out, or its ``run_at``."""
    left_out = getattr(x, "left_out", False)
    why = f"experiment {x.experiment} {why_no_cells(tuple(x.run_at), left_out)}"
    return why + ("; the claim's own target runs it (claims.md: its command and bill)" if left_out else "")


FDR_Q = 0.05


def _control_false_discoveries(rows: list[dict], family: dict, q: float = FDR_Q, redo: dict | None = None) -> None:
    """A paper's statements (and, apart, its twins) decided at their own 95% level keep their verdict only
    under Benjamini-Hochberg at false discovery rate :data:`FDR_Q` over the statements the build tested
    (decided or undecided; docs/verdicts.md). Checks of our code are identities, not tested here.

    A statement the control leaves undecided names the replicates that would keep it: its check's value
    (``redo``: row -> the arguments of :func:`~fedrepro.claims.verdicts.decide`) decided again at level
    ``q / m`` (``m`` the statements tested), at or below which Benjamini-Hochberg keeps a verdict whatever
    the others' p-values; the replicates that would reach that level are its ``replicates_needed``, so
    the verify plan can add them (fedrepro.claims.plan)."""
    from fedrepro.claims.verdicts import decide, fdr_control

    for kind in ("paper", "twin"):
        idx = family.get(kind, [])
        if not idx:
            continue
        ps = [rows[i]["p_value"] if rows[i]["verdict"] in (HOLDS, FAILS) else 1.0 for i in idx]
        kept = fdr_control(ps, q)
        for i, p, ok in zip(idx, ps, kept):
            if rows[i]["verdict"] in (HOLDS, FAILS) and not ok:
                r = rows[i]
                need = None
                if redo and i in redo:
                    again = decide(*redo[i], alpha=q / len(idx))
                    need = again.needed if again.verdict == UNDECIDED else None
                kept_at = (f"; about {need} replicates at the measured spread would reach p <= {q / len(idx):.2g} "
                           f"(q / {len(idx)}), which the control keeps" if need else "")
                r["why"] = (f"{r['verdict']} at its own 95% level (p = {p:.3g}) but not under the false discovery "
                            f"control over this paper's {len(idx)} tested {'statements' if kind == 'paper' else 'twins'} "
                            f"(Benjamini-Hochberg, q = {q:g}){kept_at}" + (f"; {r['why']}" if r["why"] else ""))
                r["verdict"] = UNDECIDED
                r["replicates_needed"] = need or 0


def to_markdown(table: pd.DataFrame, title: str, alone: dict | None = None) -> str:
    """``alone``: ``{claim id: (command, bill)}`` of undecided claims, listed after the tables
    (:func:`fedrepro.papers.alone.undecided_bills`)."""
    lines = [f"# Claims: {title}", ""]
    if table.empty:
        return "\n".join(lines + ["No claims defined.", ""])

    def cell(x):
        return str(x).replace("|", "\\|").replace("\n", " ")

    for kind, heading in (("paper", "Paper statements"),
                          ("twin", "The same statements read for another variant of the method (not counted)"),
                          ("check", "Checks of our implementation (not counted)")):
        part = table[table["kind"] == kind]
        if part.empty:
            continue
        counts = part["verdict"].value_counts().to_dict()
        revised = int(part["revised_after_verdict"].sum()) if "revised_after_verdict" in part else 0
        lines += [f"## {heading}", "",
                  "Verdicts: " + ", ".join(f"{k} {counts[k]}" for k in VERDICTS
                                           if k in counts)
                  + (f"; {revised} of them rest on a reading revised after a verdict of it was seen (the verdict "
                     "before each revision is shown with the claim)" if revised else ""), ""]
        lines += ["| claim | where | the paper says | our reading | paper | ours (estimate [interval] (n)) | test | "
                  "verdict | why (when it does not hold) |", "|---|---|---|---|---|---|---|---|---|"]
        for r in part.itertuples():
            name = r.claim + (f" (twin of {r.twin_of})" if getattr(r, "twin_of", "") else "")
            lines.append(f"| {name} | {cell(r.place)} | {cell(r.quote)} | {_variant(r)}{cell(r.text)} | {cell(r.paper_value)} | "
                         f"{cell(r.our_value)} | {test_text(r.compare, r.tolerance)} | **{r.verdict}**{_revised(r)} | {cell(r.why)} |")
        lines.append("")
    if alone:                  # each undecided claim built alone: its command and its CPU bill
        lines += ["## Undecided claims built alone", "", "Each runs only the cells its reading needs, at the scale "
                  "that decides it (fedrepro.papers.alone; `python -m fedrepro.papers.bill <paper> <claim>`).", "",
                  "| claim | command | bill |", "|---|---|---|"]
        lines += [f"| {c} | `{cmd}` | {cell(b)} |" for c, (cmd, b) in alone.items()] + [""]
    return "\n".join(lines)


def _variant(row) -> str:
    v = getattr(row, "variant", "") or ""
    return f"**variant: {str(v).replace('|', '/')}** — " if v else ""


def _revised(row) -> str:
    text = getattr(row, "revisions", "") or ""
    return f" ({text.replace('|', '/')})" if text else ""


STATUS_COLUMNS = ["paper", *VERDICTS, "statements", "revised after a verdict",
                  "checks passed", "checks failed", "checks not run"]


def status_table(results_dir: str | Path = "results", papers=None) -> pd.DataFrame:
    """Per paper: the paper statements by verdict and the ``kind: check`` results apart, from
    ``results/<paper>/claims.parquet`` (README's status block is generated from this)."""
    rows = []
    for path in sorted(Path(results_dir).glob("*/claims.parquet")):
        paper = path.parent.name
        if papers is not None and paper not in papers:
            continue
        t = pd.read_parquet(path)
        kind = t["kind"] if "kind" in t else pd.Series("paper", index=t.index)
        stm, chk = t[kind == "paper"]["verdict"].value_counts(), t[kind == "check"]["verdict"].value_counts()
        revised = t["revised_after_verdict"] if "revised_after_verdict" in t else pd.Series(False, index=t.index)
        rows.append({"paper": paper, **{v: int(stm.get(v, 0)) for v in VERDICTS},
                     "statements": int(stm.sum()),
                     "revised after a verdict": int(revised[kind == "paper"].astype(bool).sum()), "checks passed": int(chk.get(HOLDS, 0)),
                     "checks failed": int(chk.get(FAILS, 0)),
                     "checks not run": int(chk.sum() - chk.get(HOLDS, 0) - chk.get(FAILS, 0))})
    return pd.DataFrame(rows, columns=STATUS_COLUMNS)


__all__ = ["check_name", "Depends", "NotTestable", "Outcome", "Replicates", "validate_claims", "evaluate", "load_claims", "to_markdown",
           "status_table", "load_results", "KINDS", "COLUMNS", "STATUS_COLUMNS", "test_text", "FAILS"]
