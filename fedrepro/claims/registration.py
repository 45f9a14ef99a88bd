"""Registered readings: a claim's reading is fixed, with its date and commit, before its verdict counts,
and every later change is a visible revision that keeps the old verdict beside the new one.

A claim's *reading* is its entry in ``fedrepro/papers/<paper>/claims.yaml`` (every key except
``revisions``) together with the source code of the check function it names and of every function or
class of the paper's package that this check reaches (transitively, by the global names its code uses).
Its *fingerprint* is the SHA-256 of that, canonically serialised. The engine that turns replicates into
verdicts (:mod:`fedrepro.claims.verdicts`) is not part of a reading: it is the same for every claim
and documented on its own.

``fedrepro/papers/<paper>/readings.yaml`` (generated, never edited by hand) holds, per claim, the
fingerprint it was registered with, the date and the commit::

    readings:
      fig2_fewest_cr: {fingerprint: 3f0c..., registered: '2026-11-28', commit: 143119f}

A reading that differs from its registration must carry a ``revisions:`` list in claims.yaml, one entry
per change, oldest first::

    revisions:
      - date: '2026-11-28'
        changed: "tolerance 0 -> 0.01"                 # what changed in the reading
        why: "..."                                    # why; 'a build read fails' is not a reason
        verdict_before: fails                         # the verdict under the previous reading ...
        value_before: "0.6165 [0.61, 0.62] (3)"       # ... its value and interval, from the build named:
        build_before: "quick build of 6e06c83"
        seen_before: true                             # was a verdict of the previous reading seen first?
        fingerprint: 9a1b...                          # the reading after this change

The last revision's fingerprint is the current reading's. :func:`check_registrations` is what the test
suite runs; ``python -m fedrepro.claims.registration register`` registers readings that have no
registration yet (new claims) and refuses to touch a registered one; ``python -m
fedrepro.claims.registration revise <paper> <claim> --changed ... --why ...`` appends the revision entry,
taking the old verdict and value from the last build's ``results/<paper>/claims.parquet``.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import inspect
import json
import subprocess
import sys
import types
from pathlib import Path

REVISION_KEYS = ("date", "changed", "why", "verdict_before", "value_before", "build_before", "seen_before",
                 "fingerprint")
REGISTRY_NAME = "readings.yaml"


# ---- the fingerprint ----------------------------------------------------------------------------------
def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _reached(fn, package: str) -> dict[str, str]:
    """``{qualified name: source}`` of ``fn`` and of every function or class defined under ``package``
    that its code reaches through module-level names (transitively)."""
    out: dict[str, str] = {}
    todo = [fn]
    while todo:
        obj = inspect.unwrap(todo.pop())
        key = f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"
        if key in out:
            continue
        try:
            out[key] = inspect.getsource(obj)
        except (OSError, TypeError):
            out[key] = repr(obj)
        codes = []
        if inspect.isfunction(obj):
            codes, glb = [obj.__code__], obj.__globals__
        elif inspect.isclass(obj):
            for member in vars(obj).values():
                member = getattr(member, "__func__", member)
                if inspect.isfunction(member):
                    codes.append(member.__code__)
            glb = vars(sys.modules.get(obj.__module__, types.ModuleType("?")))
        for code in codes:
            for name in _code_names(code):
                target = glb.get(name)
                if (inspect.isfunction(target) or inspect.isclass(target)) and \
                        str(getattr(target, "__module__", "")).startswith(package):
                    todo.append(target)
    return dict(sorted(out.items()))


def reading(claim: dict) -> dict:
    """The claim's entry without its revision history."""
    return {k: v for k, v in claim.items() if k != "revisions"}


def fingerprint(claim: dict, checks: dict, paper: str) -> str:
    """SHA-256 (hex, 16 characters) of the reading and of the code its check reaches (module docstring)."""
    fn = checks.get(claim.get("check"))
    code = _reached(fn, f"fedrepro.papers.{paper}") if fn is not None else {}
    code.update(_shared_code(fn))
    blob = json.dumps({"reading": reading(claim), "code": code}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _shared_code(fn) -> dict[str, str]:
    """The shared query layer's functions a check reaches (``fedrepro.claims.query``, when it exists):
    part of a reading, unlike the verdict engine."""
    if fn is None:
        return {}
    return {k: v for k, v in _reached(fn, "fedrepro.claims.query").items() if ".claims.query." in k}


# ---- the registry file ----------------------------------------------------------------------------------
def registry_path(paper: str, root: str | Path | None = None) -> Path:
    from fedrepro.experiments.cells import paper_file

    return paper_file(paper, "claims", root).with_name(REGISTRY_NAME)


def load_registry(paper: str, root=None) -> dict:
    from fedrepro.experiments.cells import read_yaml

    path = registry_path(paper, root)
    if not path.exists():
        return {}
    data = read_yaml(path) or {}
    return dict(data.get("readings") or {})


def _write_registry(paper: str, entries: dict, root=None) -> None:
    import yaml

    path = registry_path(paper, root)
    head = (f"# Registered readings of fedrepro/papers/{paper}/claims.yaml (fedrepro.claims.registration).\n"
            "# Generated by `python -m fedrepro.claims.registration register`; never edit by hand: a changed\n"
            "# reading keeps its registration here and records the change as a `revisions:` entry of its claim.\n")
    body = yaml.safe_dump({"readings": {k: entries[k] for k in sorted(entries)}}, sort_keys=False, width=120)
    path.write_text(head + body)


def _commit(root=None) -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=root or Path(__file__).resolve().parents[2], check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# ---- the checks ----------------------------------------------------------------------------------------
def problems(paper: str, root=None) -> list[str]:
    """Why the paper's readings do not match their registrations (empty when they all do): a claim with no
    registration, a changed reading without a revision, a malformed revision, a registration whose
    claim is gone."""
    from fedrepro.claims.evaluate import load_claims
    from fedrepro.papers.registry import checks as paper_checks

    claims, checks, reg = load_claims(paper, root), paper_checks(paper), load_registry(paper, root)
    where = f"fedrepro/papers/{paper}/claims.yaml"
    out = []
    for claim in claims:
        cid = claim["id"]
        now = fingerprint(claim, checks, paper)
        revs = claim.get("revisions") or []
        if cid not in reg:
            out.append(f"{where} claim {cid!r}: not registered; register new claims with `python -m "
                       f"fedrepro.claims.registration register {paper}` before any build reads them")
            continue
        for i, rev in enumerate(revs):
            missing = [k for k in REVISION_KEYS if k not in (rev or {})]
            if missing:
                out.append(f"{where} claim {cid!r}: revision {i + 1} lacks {missing} (each revision states "
                           f"{', '.join(REVISION_KEYS)})")
        expected = revs[-1].get("fingerprint") if revs else reg[cid].get("fingerprint")
        if now != expected:
            out.append(f"{where} claim {cid!r}: its reading (fingerprint {now}) differs from the "
                       f"{'last revision' if revs else 'registration'} ({expected}); a change of a registered "
                       f"reading is a revision: `python -m fedrepro.claims.registration revise {paper} {cid} "
                       "--changed '...' --why '...'` records it with the verdict under the old reading")
    gone = sorted(set(reg) - {c["id"] for c in claims})
    if gone:
        out.append(f"fedrepro/papers/{paper}/{REGISTRY_NAME}: registered readings {gone} have no claim; a claim "
                   "is not deleted, it is revised (or kept with its reason)")
    return out


def check_registrations(papers=None, root=None) -> list[str]:
    from fedrepro.experiments.cells import PAPERS

    return [p for paper in (papers or [p for p in PAPERS if p != "custom"]) for p in problems(paper, root)]


def revision_summary(claim: dict) -> str:
    """One line for claims.md: each revision's date, change and the verdict before it ('' when none)."""
    revs = claim.get("revisions") or []
    return "; ".join(f"revised {r.get('date')}: {r.get('changed')} (before: {r.get('verdict_before')}"
                     f"{', ' + str(r.get('value_before')) if r.get('value_before') else ''}"
                     f"{', seen first' if r.get('seen_before') else ''})" for r in revs)


def revised_after_verdict(claim: dict) -> bool:
    """True when a revision of the claim's reading came after a verdict of the previous reading was seen."""
    return any(bool((r or {}).get("seen_before")) for r in claim.get("revisions") or [])


# ---- the command line -------------------------------------------------------------------------------------
def register(paper: str, root=None, today: str | None = None) -> list[str]:
    """Register the claims that have no registration; returns their ids (a registered one is never touched)."""
    from fedrepro.claims.evaluate import load_claims
    from fedrepro.papers.registry import checks as paper_checks

    claims, checks, reg = load_claims(paper, root), paper_checks(paper), load_registry(paper, root)
    date, commit = today or _dt.date.today().isoformat(), _commit(root)
    added = []
    for claim in claims:
        if claim["id"] not in reg:
            if claim.get("revisions"):
                raise ValueError(f"claim {claim['id']!r} has revisions but no registration; its first "
                                 "reading cannot be registered after the fact by this command")
            reg[claim["id"]] = {"fingerprint": fingerprint(claim, checks, paper), "registered": date,
                                "commit": commit}
            added.append(claim["id"])
    if added:
        _write_registry(paper, reg, root)
    return added


def _old_verdict(paper: str, cid: str, results: str | Path) -> tuple[str, str]:
    import pandas as pd

    path = Path(results, paper, "claims.parquet")
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: build the paper under the old reading first, so that the "
                                "revision keeps its verdict (bash scripts/reproduce.sh <paper>)")
    table = pd.read_parquet(path)
    row = table[table["claim"] == cid]
    if row.empty:
        raise ValueError(f"{path} has no row for claim {cid!r}")
    r = row.iloc[0]
    return str(r["verdict"]), str(r["our_value"])


def main(argv=None) -> int:
    from fedrepro.experiments.cells import PAPERS

    parser = argparse.ArgumentParser(prog="python -m fedrepro.claims.registration",
                                     description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_reg = sub.add_parser("register", help="register the readings of new claims (never changes a registered one)")
    p_reg.add_argument("papers", nargs="*", help="papers (default: all)")
    p_chk = sub.add_parser("check", help="exit 1 when a reading differs from its registration without a revision")
    p_chk.add_argument("papers", nargs="*")
    p_rev = sub.add_parser("revise", help="record a change of a registered reading as a revision")
    p_rev.add_argument("paper")
    p_rev.add_argument("claim")
    p_rev.add_argument("--changed", required=True, help="what changed in the reading")
    p_rev.add_argument("--why", required=True, help="why the reading changed")
    p_rev.add_argument("--results", default="results", help="the build under the old reading (default: results)")
    p_rev.add_argument("--build", default=None, help="name of that build (default: its claims table's commit)")
    p_rev.add_argument("--not-seen", action="store_true",
                       help="no verdict of the old reading was seen before this change")
    args = parser.parse_args(argv)
    papers = [p for p in PAPERS if p != "custom"]
    if args.command == "register":
        for paper in args.papers or papers:
            added = register(paper)
            print(f"{paper}: registered {len(added)} reading(s)" + (f": {', '.join(added)}" if added else ""))
        return 0
    if args.command == "check":
        found = check_registrations(args.papers or None)
        for line in found:
            print(line, file=sys.stderr)
        return 1 if found else 0
    return _revise(args)


def _revise(args) -> int:
    """Append a revision to the claim in claims.yaml, in place (text edit: comments and layout kept)."""
    from fedrepro.claims.evaluate import load_claims
    from fedrepro.experiments.cells import paper_file
    from fedrepro.papers.registry import checks as paper_checks

    claims = {c["id"]: c for c in load_claims(args.paper)}
    if args.claim not in claims:
        print(f"error: {args.paper} has no claim {args.claim!r}", file=sys.stderr)
        return 2
    claim = claims[args.claim]
    verdict, value = _old_verdict(args.paper, args.claim, args.results)
    build = args.build
    if build is None:
        from fedrepro.experiments.results import read_metadata
        meta = read_metadata(Path(args.results, args.paper, "claims.parquet"))
        build = f"build of {str(meta.get('git_commit', '?'))[:7]} ({str(meta.get('created', '?'))[:10]})"
    entry = {"date": _dt.date.today().isoformat(), "changed": args.changed, "why": args.why,
             "verdict_before": verdict, "value_before": value, "build_before": build,
             "seen_before": not args.not_seen,
             "fingerprint": fingerprint(claim, paper_checks(args.paper), args.paper)}
    path = paper_file(args.paper, "claims")
    text = path.read_text()
    insert_revision(path, text, args.claim, entry, has_revisions=bool(claim.get("revisions")))
    print(f"{args.paper} {args.claim}: revision recorded (before: {verdict}, {value})")
    return 0


def insert_revision(path: Path, text: str, cid: str, entry: dict, has_revisions: bool) -> None:
    """Write ``entry`` as the claim's last revision into the claims file (the claim's block ends where the
    next ``  - id:`` entry or a section comment at the same indent starts)."""
    lines = text.splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if ln.strip() in (f"- id: {cid}", f"- id: '{cid}'", f'- id: "{cid}"'))
    indent = lines[start].index("-")
    end = start + 1
    while end < len(lines) and not (lines[end].strip() and len(lines[end]) - len(lines[end].lstrip()) <= indent):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    pad = " " * (indent + 2)
    item = [f"{pad}  - date: '{entry['date']}'\n"] + [f"{pad}    {k}: {json.dumps(entry[k])}\n"
                                                       for k in REVISION_KEYS if k != "date"]
    block = item if has_revisions else [f"{pad}revisions:\n"] + item
    lines[end:end] = block
    path.write_text("".join(lines))


if __name__ == "__main__":
    sys.exit(main())
