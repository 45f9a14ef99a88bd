"""Deciding a claim across a sweep of a parameter the paper does not state (issue "Verdicts as evidence",
point 3; FIDELITY FR-13, AS-26).

When a verdict depends on a value the paper never gives, the claim is decided at every value of a
declared sweep and the decisions are combined:

* **holds** when it holds at every swept value;
* **fails** when it fails at every swept value;
* **depends** (a verdict of its own, counted apart from undecided) when it holds at some values and
  fails at others and no value leaves it open: "depends on <parameter>" naming the parameters whose
  values disagree, with the per-value table;
* otherwise **undecided**: "undecided at <values>" when some value leaves it open (even if others
  hold and fail: a value still open could go either way); the per-value table is in the detail.

A setting is ``(label, components)`` or ``(label, components, parameter)``: ``components`` are the
check's :class:`~fedrepro.claims.verdicts.Replicates` at that value (a list: all must hold),
``parameter`` names what the setting changes (None: the reference setting, which belongs to every
parameter's one-at-a-time sweep). Each value is decided with the claim's own ``compare``,
``paper_value`` and ``tolerance`` (read from the paper's claims file by check name), at the same
family-wise level as a single decision (the engine's level: 0.025 in a verify look). ``side`` settings are shown beside, not decided on (the
sensitivity to a *stated* parameter).
"""
from __future__ import annotations

import functools

from fedrepro.claims.entries import Depends, NotTestable, Outcome
from fedrepro.experiments.yamlio import paper_file
from fedrepro.claims.verdicts import FAILS, HOLDS, UNDECIDED, decide, level

_DECISION_KEYS = ("paper_value", "compare", "tolerance")


@functools.lru_cache(maxsize=None)
def claims_by_check(paper: str) -> dict:
    """``{check name: claim}`` of ``fedrepro/papers/<paper>/claims.yaml``. Claims sharing a check (one per
    dataset) must share how they are decided (paper_value, compare, tolerance): a mismatch is an error."""
    import yaml

    path = paper_file(paper, "claims")
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    out: dict = {}
    for c in data.get("claims", []):
        if "check" not in c:
            continue
        prev = out.setdefault(c["check"], c)
        if any(prev.get(k) != c.get(k) for k in _DECISION_KEYS):
            raise ValueError(f"{path.name}: claims {prev['id']!r} and {c['id']!r} share check {c['check']!r} but "
                             f"are decided differently ({', '.join(_DECISION_KEYS)}); a sweep needs one rule")
    return out


def decide_as(paper: str, check: str, comps):
    """The decision of ``comps`` under the rule of ``paper``'s claims using ``check``, at the level of the
    evaluation in progress (a verify look decides its sweep values at the look's level)."""
    c = claims_by_check(paper)[check]
    return decide(comps, c.get("paper_value"), c["compare"], c.get("tolerance"), level())


def describe(d) -> str:
    """One decision in a line: the verdict and its component (or the counts and the worst component)."""
    if len(d.components) == 1:
        return f"{d.verdict} {d.components[0].text(note=False)}"
    worst = [c for c in d.components if c.verdict != HOLDS] or list(d.components)
    w = min(worst, key=lambda c: c.estimate) if d.verdict != HOLDS else None
    counts = ", ".join(f"{v} {sum(c.verdict == v for c in d.components)}" for v in (HOLDS, FAILS, UNDECIDED)
                       if any(c.verdict == v for c in d.components))
    return f"{d.verdict} ({counts}" + (f"; e.g. {w.text(note=False)}" if w is not None else "") + ")"


def _norm(setting):
    label, comps, *rest = setting
    return label, comps, (rest[0] if rest else None)


def across(paper: str, check: str, settings, *, name: str, context: str = "", side=()):
    """Decide ``check`` at every setting and combine (module docstring).

    name: what is swept, for the messages ("λ_R", "the unstated ρ1, η_h, α_w, κ1"); a setting's own
    parameter, when given, replaces it in "depends on ...". context: appended to "depends on" (e.g.
    the stated values the sweep runs at). Returns an Outcome (the engine re-decides the first
    setting's components, which reach the same verdict as every other value), a Depends (holds at
    some values, fails at the others, none open), a NotTestable (some value open), or None when no
    setting has components.
    """
    settings = [s for s in map(_norm, settings) if s[1]]
    if not settings:
        return None
    decided = [(lab, comps, par, decide_as(paper, check, comps)) for lab, comps, par in settings]
    table = "; ".join(f"{lab}: {describe(d)}" for lab, _, _, d in decided)
    side_txt = "; ".join(f"{lab}: {describe(decide_as(paper, check, comps))}" for lab, comps, *_ in side if comps)
    detail = table + (f" | beside (stated-parameter sensitivity): {side_txt}" if side_txt else "")
    states = {d.verdict for *_, d in decided}
    if states in ({HOLDS}, {FAILS}):
        every = f"at every swept value of {name} ({len(decided)}): "
        return Outcome(decided[0][1], detail=detail,
                       why=("fails " + every if states == {FAILS} else "holds " + every) + table)
    if states == {HOLDS, FAILS}:
        hold = [lab for lab, *_, d in decided if d.verdict == HOLDS]
        fail = [lab for lab, *_, d in decided if d.verdict == FAILS]
        return Depends(f"depends on {_deciding(decided, name)}: holds at {', '.join(hold)}, fails at "
                       f"{', '.join(fail)}{context}", detail,
                       replicates=min(c.n for *_, d in decided for c in d.components))
    open_ = [lab for lab, *_, d in decided if d.verdict not in (HOLDS, FAILS)]
    need = [d.needed for *_, d in decided if d.needed]
    # what the verify plan reads: the open values' fewest replicates, and the most any of them needs
    # (unbounded when one open value has no bounded need: the sweep is decided only when all are)
    opened = [d for *_, d in decided if d.verdict not in (HOLDS, FAILS)]
    reps = [c.n for d in opened for c in d.components]
    bounded = all(d.needed for d in opened)
    return NotTestable(f"undecided at {', '.join(open_)}" + (f" (about {max(need)} seeds would decide)" if need
                                                            else "") + f" — {detail}",
                       replicates=min(reps) if reps else 0,
                       needed=max(d.needed for d in opened) if opened and bounded else None)


def _deciding(decided, name: str) -> str:
    """The swept parameters whose one-at-a-time values (with the reference setting) both hold and fail."""
    params = [p for p in dict.fromkeys(p for _, _, p, _ in decided) if p is not None]
    if not params:
        return name
    ref = {d.verdict for _, _, p, d in decided if p is None}
    flip = [p for p in params if {HOLDS, FAILS} <= ref | {d.verdict for _, _, q, d in decided if q == p}]
    return "the unstated " + (", ".join(flip) if flip else name)
