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
        same_values: true                             # optional: nothing the check computes or compares
                                                      # changed (a label such as the variant shown, or a
                                                      # refactor shown to give identical values)

The last revision's fingerprint is the current reading's. The functions here take each paper's checks
as an argument (this layer does not load papers); the command line is :mod:`fedrepro.papers.readings`:
``python -m fedrepro.papers.readings check`` (what the test suite runs), ``register`` (readings that have
no registration yet, i.e. new claims; a registered one is never touched) and ``revise <paper> <claim>
--changed ... --why ...`` (appends the revision entry, taking the old verdict and value from the last
build's ``results/<paper>/claims.parquet``).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import inspect
import json
import subprocess
import sys
import types
from pathlib import Path

# revision_summary and revised_after_verdict (a claim's revisions as claims.md shows them) live with the claim's
# entry, so that the evaluation does not import this module; they are still named here
from fedrepro.claims.entries import check_name, load_claims, revised_after_verdict, revision_summary  # noqa: F401

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


#: the fingerprint's algorithm: 1 followed module-level names only; 2 also follows the functions a check
#: holds in its closure and defaults (checks made by factories, e.g. fedadmm_gong's ``alg1(check)``); 3 also
#: takes the values of the plain-data module constants the code names (targets such as fedadmm_gong's
#: ``MLP_TARGETS``, lists of baselines) and the measure functions of every kind a reading names (the sides of
#: a ``gap`` or ``saved`` are looked up at run time)
FINGERPRINT_VERSION = 3


def _constant(value, depth: int = 0):
    """A canonical text of a plain-data constant (numbers, strings, and lists, tuples, sets and dicts of them),
    or None for anything else (functions, frames, modules)."""
    if depth > 6:
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        parts = [_constant(v, depth + 1) for v in value]
        return None if None in parts else ("[" if isinstance(value, list) else "(") + ", ".join(parts) + ")"
    if isinstance(value, (set, frozenset)):
        parts = [_constant(v, depth + 1) for v in value]
        return None if None in parts else "{" + ", ".join(sorted(parts)) + "}"
    if isinstance(value, dict):
        items = [(_constant(k, depth + 1), _constant(v, depth + 1)) for k, v in value.items()]
        if any(k is None or v is None for k, v in items):
            return None
        return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(items)) + "}"
    return None


def _reached(fn, package: str, version: int = FINGERPRINT_VERSION) -> dict[str, str]:
    """``{qualified name: source}`` of ``fn`` and of every function or class defined under ``package``
    that its code reaches through module-level names and (version 2) through the functions it holds in
    its closure or defaults, transitively."""
    out: dict[str, str] = {}
    todo = [fn]

    def ours(target) -> bool:
        return (inspect.isfunction(target) or inspect.isclass(target)) and \
            str(getattr(target, "__module__", "")).startswith(package)

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
            if version >= 2:
                held = [c.cell_contents for c in (obj.__closure__ or ()) if _filled(c)]
                held += list(obj.__defaults__ or ()) + list((obj.__kwdefaults__ or {}).values())
                for value in held:
                    for item in (value if isinstance(value, (list, tuple)) else (value,)):
                        if ours(item):
                            todo.append(item)
        elif inspect.isclass(obj):
            for member in vars(obj).values():
                member = getattr(member, "__func__", member)
                if inspect.isfunction(member):
                    codes.append(member.__code__)
            glb = vars(sys.modules.get(obj.__module__, types.ModuleType("?")))
        for code in codes:
            for name in _code_names(code):
                target = glb.get(name)
                if ours(target):
                    todo.append(target)
                elif version >= 3 and name in glb and str(glb.get("__name__", "")).startswith(package):
                    text = _constant(target)
                    if text is not None and not name.startswith("__"):
                        out[f"{glb['__name__']}.{name}"] = text
    return dict(sorted(out.items()))


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:          # an empty cell (a name assigned after the closure was made)
        return False
    return True


def reading(claim: dict) -> dict:
    """The claim's entry without its revision history."""
    return {k: v for k, v in claim.items() if k != "revisions"}


def fingerprint(claim: dict, checks: dict, paper: str = "", version: int = FINGERPRINT_VERSION) -> str:
    """SHA-256 (hex, 16 characters) of the reading and of the code its check reaches in the check's own
    package (the paper's folder; module docstring), by the algorithm ``version``."""
    fn = checks.get(check_name(claim))
    code = {}
    # a reading written as data is compiled by the query layer; the paper's views it uses are its code
    for root in ([fn] if "reading" not in claim else []) + list(getattr(fn, "reading_views", [])):
        code.update(_reached(root, str(root.__module__).rsplit(".", 1)[0], version))
    code.update(_shared_code(fn, version))
    if version >= 3 and isinstance(claim.get("reading"), dict):
        # the measure kinds the reading names anywhere (a gap's or saved's sides are looked up at run time)
        from fedrepro.claims.query import MEASURE_KINDS

        for kind in sorted(_kind_names(claim["reading"], MEASURE_KINDS)):
            code.update({k: v for k, v in _reached(MEASURE_KINDS[kind], "fedrepro.claims.query", version).items()
                         if ".claims.query." in k})
    blob = json.dumps({"reading": reading(claim), "code": code}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _kind_names(spec, kinds) -> set:
    """The measure-kind keys used anywhere in a reading written as data."""
    out = set()
    if isinstance(spec, dict):
        out |= {k for k in spec if k in kinds}
        for v in spec.values():
            out |= _kind_names(v, kinds)
    elif isinstance(spec, list):
        for v in spec:
            out |= _kind_names(v, kinds)
    return out


def _shared_code(fn, version: int = FINGERPRINT_VERSION) -> dict[str, str]:
    """The shared query layer's functions a check reaches (``fedrepro.claims.query``, when it exists):
    part of a reading, unlike the verdict engine."""
    if fn is None:
        return {}
    return {k: v for k, v in _reached(fn, "fedrepro.claims.query", version).items() if ".claims.query." in k}


# ---- the registry file ----------------------------------------------------------------------------------
def registry_path(paper: str, root: str | Path | None = None) -> Path:
    from fedrepro.experiments.yamlio import paper_file

    return paper_file(paper, "claims", root).with_name(REGISTRY_NAME)


def load_registry(paper: str, root=None) -> dict:
    from fedrepro.experiments.yamlio import read_yaml

    path = registry_path(paper, root)
    if not path.exists():
        return {}
    data = read_yaml(path) or {}
    return dict(data.get("readings") or {})


def registry_version(paper: str, root=None) -> int:
    """The fingerprint algorithm the paper's registrations and revisions use (1 when the file says none)."""
    from fedrepro.experiments.yamlio import read_yaml

    path = registry_path(paper, root)
    return int((read_yaml(path) or {}).get("fingerprint_version", 1)) if path.exists() else FINGERPRINT_VERSION


def _write_registry(paper: str, entries: dict, root=None, version: int = FINGERPRINT_VERSION) -> None:
    import yaml

    path = registry_path(paper, root)
    head = (f"# Registered readings of {paper}/claims.yaml (fedrepro.claims.registration).\n"
            "# Generated by `python -m fedrepro.papers.readings register`; never edit by hand: a changed\n"
            "# reading keeps its registration here and records the change as a `revisions:` entry of its claim.\n")
    body = yaml.safe_dump({"fingerprint_version": int(version), "readings": {k: entries[k] for k in sorted(entries)}},
                          sort_keys=False, width=120)
    path.write_text(head + body)


def _commit(root=None) -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=root or Path(__file__).resolve().parents[2], check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# ---- the checks ----------------------------------------------------------------------------------------
def problems(paper: str, checks: dict, root=None) -> list[str]:
    """Why the paper's readings do not match their registrations (empty when they all do): a claim with no
    registration, a changed reading without a revision, a malformed revision, a registration whose
    claim is gone."""
    claims, reg, version = load_claims(paper, root), load_registry(paper, root), registry_version(paper, root)
    where = f"{paper}/claims.yaml"
    out = []
    if version != FINGERPRINT_VERSION:
        out.append(f"{paper}/{REGISTRY_NAME}: fingerprints of algorithm version {version}, the code's is "
                   f"{FINGERPRINT_VERSION}: `python -m fedrepro.papers.readings migrate {paper}` (allowed only while "
                   "every reading matches under the old version)")
    for claim in claims:
        cid = claim["id"]
        now = fingerprint(claim, checks, paper, version)
        revs = claim.get("revisions") or []
        if cid not in reg:
            out.append(f"{where} claim {cid!r}: not registered; register new claims with `python -m fedrepro."
                       f"papers.readings register {paper}` before any build reads them")
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
                       f"reading is a revision: `python -m fedrepro.papers.readings revise {paper} {cid} "
                       "--changed '...' --why '...'` records it with the verdict under the old reading")
    gone = sorted(set(reg) - {c["id"] for c in claims})
    if gone:
        out.append(f"{paper}/{REGISTRY_NAME}: registered readings {gone} have no claim; a claim "
                   "is not deleted, it is revised (or kept with its reason)")
    return out


def check_registrations(checks_of, papers, root=None) -> list[str]:
    """Every problem of ``papers`` (``checks_of(paper)``: the paper's checks)."""
    return [p for paper in papers for p in problems(paper, checks_of(paper), root)]


# ---- the command line -------------------------------------------------------------------------------------
def register(paper: str, checks: dict, root=None, today: str | None = None) -> list[str]:
    """Register the claims that have no registration; returns their ids (a registered one is never touched)."""
    claims, reg = load_claims(paper, root), load_registry(paper, root)
    if reg and registry_version(paper, root) != FINGERPRINT_VERSION:
        raise ValueError(f"{paper}: its registrations use fingerprint version {registry_version(paper, root)}; "
                         "migrate them first")
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


def revise(paper: str, cid: str, checks: dict, changed: str, why: str, results="results", build=None,
           seen: bool = True, same_values: bool = False, root=None) -> dict:
    """Append a revision to the claim in its claims file, in place (text edit: comments and layout kept),
    with the verdict and value under the old reading from ``results/<paper>/claims.parquet``."""
    from fedrepro.experiments.yamlio import paper_file

    claims = {c["id"]: c for c in load_claims(paper, root)}
    if cid not in claims:
        raise ValueError(f"{paper} has no claim {cid!r}")
    claim = claims[cid]
    verdict, value = _old_verdict(paper, cid, results)
    if build is None:
        from fedrepro.experiments.results import read_metadata
        meta = read_metadata(Path(results, paper, "claims.parquet"))
        build = f"build of {str(meta.get('git_commit', '?'))[:7]} ({str(meta.get('created', '?'))[:10]})"
    entry = {"date": _dt.date.today().isoformat(), "changed": changed, "why": why, "verdict_before": verdict,
             "value_before": value, "build_before": build, "seen_before": bool(seen),
             "fingerprint": fingerprint(claim, checks, paper, registry_version(paper, root)),
             **({"same_values": True} if same_values else {})}
    path = paper_file(paper, "claims", root)
    insert_revision(path, path.read_text(), cid, entry, has_revisions=bool(claim.get("revisions")))
    return entry


def migrate(paper: str, checks: dict, root=None) -> int:
    """Move the paper's current fingerprints to :data:`FINGERPRINT_VERSION`: allowed only while every
    reading matches its registration or last revision under the file's version (so no change rides along);
    the registration's (or the last revision's) fingerprint is recomputed, the older revisions keep theirs.
    Returns the number of fingerprints rewritten."""
    from fedrepro.experiments.yamlio import paper_file

    old = registry_version(paper, root)
    if old == FINGERPRINT_VERSION:
        return 0
    found = [p for p in problems(paper, checks, root) if "fingerprint_version" not in p and "algorithm version" not in p]
    if found:
        raise ValueError(f"{paper}: readings differ from their registrations under version {old}; record them "
                         "as revisions before migrating:\n" + "\n".join(found))
    reg, path = load_registry(paper, root), paper_file(paper, "claims", root)
    text, n = path.read_text(), 0
    for claim in load_claims(paper, root):
        cid, revs = claim["id"], claim.get("revisions") or []
        new = fingerprint(claim, checks, paper, FINGERPRINT_VERSION)
        if revs:
            oldfp = revs[-1]["fingerprint"]
            if oldfp != new:
                start = text.index(f"- id: {cid}\n")
                end = text.find("\n  - id: ", start + 5)
                end = len(text) if end < 0 else end
                at = text.rindex(f'fingerprint: "{oldfp}"', start, end)
                text = text[:at] + f'fingerprint: "{new}"' + text[at + len(f'fingerprint: "{oldfp}"'):]
                n += 1
        elif reg[cid]["fingerprint"] != new:
            reg[cid] = {**reg[cid], "fingerprint": new}
            n += 1
    path.write_text(text)
    _write_registry(paper, reg, root, FINGERPRINT_VERSION)
    return n


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
                                                       for k in (*REVISION_KEYS, "same_values")
                                                       if k != "date" and k in entry]
    block = item if has_revisions else [f"{pad}revisions:\n"] + item
    lines[end:end] = block
    path.write_text("".join(lines))

