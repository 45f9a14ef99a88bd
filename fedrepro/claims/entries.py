"""A claim's entry and what its check returns: the layer every other claims module builds on.

:func:`load_claims` reads a paper's claims file, :func:`check_name` names the check an entry uses,
:func:`revision_summary` and :func:`revised_after_verdict` read its revisions (as claims.md shows them), and
a check returns :class:`~fedrepro.claims.verdicts.Replicates`, :class:`Outcome`, :class:`NotTestable` or
:class:`Depends` (the engine, :func:`fedrepro.claims.evaluate.evaluate`, turns them into a row).

It imports no other claims module: the query layer (:mod:`fedrepro.claims.query`), sweeps
(:mod:`fedrepro.claims.sweep`), registration (:mod:`fedrepro.claims.registration`) and the evaluation
(:mod:`fedrepro.claims.evaluate`) all import it, so none of them needs another to name these types
(no import circle: ``tests/test_import_graph.py``). :mod:`fedrepro.claims.evaluate` re-exports them, and some
functions of the query layer still import :class:`Outcome` and :class:`NotTestable` from there inside their bodies:
a query function's source is part of every registered reading that reaches it
(:mod:`fedrepro.claims.registration`), so rewriting those lines would change 185 fingerprints for no change of a
reading. That arrow (query -> evaluate) closes no circle: the evaluation imports neither the query layer, sweeps
nor registration.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedrepro.experiments.yamlio import paper_file, read_yaml


def load_claims(paper: str, root: str | Path | None = None) -> list[dict]:
    """The entries of the paper's ``fedrepro/papers/<paper>/claims.yaml`` (``[]`` without one)."""
    path = paper_file(paper, "claims", root)
    if not path.exists():
        return []
    data = read_yaml(path) or []
    return data.get("claims", []) if isinstance(data, dict) else data


def check_name(claim: dict) -> str:
    """The key of the claim's check among a paper's checks: its ``check:`` (a claims.py function) or, for a
    reading written as data (``reading:``, :func:`fedrepro.claims.query.compile_reading`), ``reading:<id>``."""
    return claim["check"] if claim.get("check") else f"reading:{claim['id']}"


@dataclass(frozen=True)
class NotTestable:
    """Returned by a check when this build cannot decide the claim; ``reason`` says why and which
    knob would (e.g. "5 of 8 baseline runs hit the max_rounds = 120 cap: scale verify").

    A sweep left open (:func:`fedrepro.claims.sweep.across`) also gives ``replicates`` (the fewest
    replicates of its open values' components) and ``needed`` (the most replicates any open value needs,
    None when one of them has no bounded need), so the verify plan can add seeds to it."""

    reason: str
    replicates: int = 0
    needed: int | None = None


@dataclass(frozen=True)
class Outcome:
    """A check's value with the explanation shown when the verdict is not ``holds`` (``why``) and
    context always shown after the value (``detail``: other readings, sensitivity series)."""

    value: Any
    why: str = ""
    detail: str = ""


@dataclass(frozen=True)
class Depends:
    """Returned by a check decided across a sweep of a parameter the paper does not state
    (:func:`fedrepro.claims.sweep.across`) when it holds at some swept values and fails at others: the
    verdict ``depends``, counted apart from ``undecided``. ``reason`` names the parameters and the values
    where it holds and fails, ``table`` is the decision at every value (shown as our value and in why),
    ``replicates`` the fewest replicates of any value's components."""

    reason: str
    table: str
    replicates: int = 0


def revision_summary(claim: dict) -> str:
    """One line for claims.md: each revision's date, change and the verdict before it ('' when none)."""
    revs = claim.get("revisions") or []
    return "; ".join(f"revised {r.get('date')}: {r.get('changed')} (before: {r.get('verdict_before')}"
                     f"{', ' + str(r.get('value_before')) if r.get('value_before') else ''}"
                     f"{', seen first' if r.get('seen_before') else ''})" for r in revs)


def revised_after_verdict(claim: dict) -> bool:
    """True when a revision of what the claim's reading computes or compares came after a verdict of the
    previous reading was seen (a ``same_values`` revision does not count)."""
    return any(bool((r or {}).get("seen_before")) and not (r or {}).get("same_values")
               for r in claim.get("revisions") or [])


__all__ = ["load_claims", "check_name", "revision_summary", "revised_after_verdict", "NotTestable", "Outcome", "Depends"]
