"""Stopping rules, checked by the simulation loop after each evaluation.

A rule is an object with ``check(trace, ctx) -> str | None`` where ``trace`` is
the list of per-round records so far (dicts with ``round``, ``objective``,
``grad_norm2`` ...). Returning a string stops the run with that reason. ``needs`` names
the evaluated metrics it reads: a run that does not evaluate them is rejected before it starts.
Both loops make every other stop test (round cap, virtual time budget, wall-time limit) through
:func:`stop_check`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from numbers import Real

import numpy as np

from fedrepro.core.params import NONNEGATIVE, POSITIVE, Anything, Interval, Options, validate_params


def check_stop_needs(stop, metrics) -> None:
    """Reject a run whose stop rule reads metrics the run does not evaluate (before it starts)."""
    missing = [k for k in getattr(stop, "needs", ()) if k not in metrics]
    if missing:
        raise ValueError(f"stop rule {getattr(stop, 'name', type(stop).__name__)!r} reads {missing}, which this "
                         f"run does not evaluate (metrics={list(metrics)}); add them to metrics")


def stop_check(r: int, evaluate, *, max_rounds: int, eval_every: int, clock: float, time_budget: float | None,
               time_limit: float | None, started: float) -> tuple[str, str] | None:
    """The stop tests of the driver under either schedule at the start of round (master iteration) r, before its work:
    ``evaluate()`` (record the round; it returns ``(status, reason)`` when the evaluation ends the run)
    every ``eval_every`` rounds, at ``max_rounds`` and when the virtual ``clock`` has reached
    ``time_budget``; then the round cap, the budget and the wall-time limit (seconds since
    ``started``, a ``time.perf_counter()``). Returns ``(status, reason)`` when the run ends here."""
    out_of_time = time_budget is not None and clock >= time_budget
    if r % eval_every == 0 or r == max_rounds or out_of_time:
        ended = evaluate()
        if ended:
            return ended
    if r == max_rounds:
        return "max_rounds", "max_rounds"
    if out_of_time:
        return "time_budget", "time_budget"
    if time_limit is not None and time.perf_counter() - started > time_limit:
        return "time_limit", "time_limit"
    return None


@dataclass
class GradientTolerance:
    """Stop when ``scale * ||grad f(w)||^2 < tol``.

    With ``relative_to_initial=c`` the tolerance is ``min(c * E(w^0), tol)``:
    FedADMM (Zhou & Li) rule (30) uses c = 0.2 and tol = 5 eps n / (m d),
    with scale = 1/m^2 (authors' code measure, ``code_scaled``) or 1 (literal).
    """

    tol: float
    scale: float = 1.0
    relative_to_initial: float | None = None
    name: str = "gradient"
    needs = ("grad_norm2",)             # the evaluated metrics the rule reads

    def check(self, trace, ctx=None):
        E = self.scale * trace[-1]["grad_norm2"]
        tol = self.tol
        if self.relative_to_initial is not None:
            tol = min(self.relative_to_initial * self.scale * trace[0]["grad_norm2"], tol)
        return self.name if E < tol else None


@dataclass
class ObjectiveTarget:
    """Stop at the first round r > 0 with ``f(w^r) - f_target <= rel * (1 + |f_target|)``
    (Zhou & Li, Sec. 5.3: baselines stop at FedADMM's objective, rel = 2e-4)."""

    target: float
    rel: float = 2e-4
    name: str = "target"
    needs = ("objective",)

    def check(self, trace, ctx=None):
        rec = trace[-1]
        if rec["round"] > 0 and rec["objective"] - self.target <= self.rel * (1 + abs(self.target)):
            return self.name
        return None


@dataclass
class MetricReached:
    """Stop at the first evaluated round r >= 1 with ``trace[metric] >= level - slack`` (a test accuracy
    reaching a target: rounds to target need no rounds after it). ``slack`` is the readings' own
    (:func:`fedrepro.claims.query.rounds_to` is called with the target less 1e-12), so the run stops at the
    round the reading counts."""

    metric: str
    level: float
    slack: float = 1e-12
    name: str = "reached"

    @property
    def needs(self):
        return (self.metric,)

    def check(self, trace, ctx=None):
        rec = trace[-1]
        if rec["round"] >= 1 and rec[self.metric] >= self.level - self.slack:
            return self.name
        return None


@dataclass
class EPMCodeRules:
    """FedEPM authors' rules (spec 001 Sec. 3.5, ``stopping: code``) on F = sum_i f_i.

    stop1: s > 3 and var(F_{s-3..s}, ddof=1) < tol / (1 + F_s)
    stop2: s > 3 and F_s > max(F_{s-3..s-1}) and err_s > max(err_{s-3..s-1})  (code only)
    stop3: err_s < tol, err = ||mean_i grad f_i||^2
    Here s counts evaluations from 1 (= aggregations: use eval_every = 1), ``objective`` is F
    and ``err`` a trace key.
    ``literal=True`` gives the paper's rules: ||sum_i grad f_i||^2 < 1e-6 (``grad_norm2`` with
    weights 1) or var(F_{s-3..s}, ddof=1) <= tol / (1 + |F_s|), no stop2; the paper's tol is
    1e-8 n (the ``_epm`` builder's default for ``variant: paper``), the code's 1e-9 n.
    """

    tol: float
    literal: bool = False
    err_key: str = "err"
    name: str = "epm"

    @property
    def needs(self):
        return ("objective", "grad_norm2") if self.literal else ("objective",)

    def check(self, trace, ctx=None):
        s = len(trace)
        F = np.array([t["objective"] for t in trace[-4:]])
        err = np.array([t[self.err_key] for t in trace[-4:]])
        if self.literal:
            if trace[-1]["grad_norm2"] < 1e-6:
                return "gradient"
            if s > 3 and np.var(F, ddof=1) <= self.tol / (1 + abs(F[-1])):
                return "variance"
            return None
        if s > 3 and np.var(F, ddof=1) < self.tol / (1 + F[-1]):
            return "variance"
        if s > 3 and F[-1] > F[:-1].max() and err[-1] > err[:-1].max():
            return "increase"
        if err[-1] < self.tol:
            return "gradient"
        return None


@dataclass
class AnyOf:
    """Stop when any of ``rules`` fires (the first reason is reported)."""

    rules: tuple

    @property
    def needs(self):
        return tuple(dict.fromkeys(n for rule in self.rules for n in getattr(rule, "needs", ())))

    def check(self, trace, ctx=None):
        for rule in self.rules:
            reason = rule.check(trace, ctx)
            if reason:
                return reason
        return None


# ---- builders: the ``stop`` block of an experiment in config.yaml ----------------

# Authors' final code (Feb 2023, spec 000 table 7.A, C2 and C5), in the code measure ||grad f||^2/m^2:
# tol = 2e-3 n/(m d) for linear regression (changed from 5e-3 in commit d44ba57) and, unchanged,
# 5e-7 n/(m d) for logistic regression.
CODE_FINAL_CONST = {"squared": 2e-3, "logistic": 5e-7}


def _fedadmm30(spec, problem, reference):
    """Zhou & Li rule (30): E(w) < min(0.2 E(0), 5 eps n / (m d)).

    measure: ``code_scaled`` (default; E = ||grad f||^2 / m^2 with the paper's
    constants), ``literal`` (E = ||grad f||^2), ``code_final`` (code measure and the
    final code's constants :data:`CODE_FINAL_CONST`, chosen by the problem's ``loss``:
    2e-3 n/(m d) for linear, 5e-7 n/(m d) for logistic regression; ``final_const`` overrides).
    See FIDELITY ZH-2 (fedrepro/papers/fedadmm_zhou/FIDELITY.md).
    """
    facts = problem.describe()
    n, m, d = facts["dim"], facts["m"], facts["n_samples"]
    measure = spec.get("measure", "code_scaled")
    if measure == "code_final":
        if "final_const" in spec:
            const = float(spec["final_const"])
        else:
            loss = facts.get("loss")
            if loss not in CODE_FINAL_CONST:
                raise ValueError(
                    f"stop.measure='code_final' needs the problem's loss to pick the authors' final-code "
                    f"constant ({CODE_FINAL_CONST}); problem {facts.get('problem')!r} reports loss={loss!r}. "
                    "Give stop.final_const explicitly or use measure code_scaled")
            const = CODE_FINAL_CONST[loss]
        tol, scale = const * n / (m * d), 1.0 / m**2
    elif measure in ("code_scaled", "literal"):
        if "eps" not in spec:
            raise ValueError(f"stop rule fedadmm30 with measure={measure!r} needs eps "
                             "(paper: 1e-3 for Example 5.1, 1e-7 for Example 5.2)")
        tol = 5 * float(spec["eps"]) * n / (m * d)
        scale = 1.0 / m**2 if measure == "code_scaled" else 1.0
    else:
        raise ValueError(f"stop.measure={measure!r} is not allowed; choose code_scaled, literal or code_final")
    return GradientTolerance(tol=tol, scale=scale, relative_to_initial=float(spec.get("initial_factor", 0.2)),
                             name="rule30")


def _target(spec, problem, reference):
    if reference is None:
        raise ValueError("stop rule 'target' needs the reference run's final objective "
                         f"(reference algorithm {spec.get('reference')!r})")
    return ObjectiveTarget(target=float(reference["objective"]), rel=float(spec.get("rel", 2e-4)))


def _gradient(spec, problem, reference):
    return GradientTolerance(tol=float(spec["tol"]), scale=float(spec.get("scale", 1.0)))


def _epm(spec, problem, reference):
    """FedEPM rules (spec 001 Sec. 3.5): variant ``code`` (tol 1e-9 n, stop1-3) or ``paper``
    (variance tol 1e-8 n, gradient ||sum grad||^2 < 1e-6, no stop2); ``tol_per_dim`` overrides."""
    n = problem.describe()["dim"]
    variant = spec.get("variant", "code")
    if variant not in ("code", "paper"):
        raise ValueError(f"stop.variant={variant!r} is not allowed for rule epm; choose 'code' or 'paper'")
    per_dim = float(spec.get("tol_per_dim", 1e-9 if variant == "code" else 1e-8))
    return EPMCodeRules(tol=per_dim * n, literal=variant == "paper", err_key=spec.get("err_key", "err"))


def _reached(spec, problem, reference):
    missing = [k for k in ("metric", "level") if k not in spec]
    if missing:
        raise ValueError(f"stop rule 'reached' needs {missing}: the evaluated metric and the level that ends the run, "
                         "e.g. {rule: reached, metric: test_accuracy, level: 0.97}")
    return MetricReached(metric=str(spec["metric"]), level=float(spec["level"]), slack=float(spec.get("slack", 1e-12)))


STOP_RULES = {
    "none": lambda spec, problem, reference: None,
    "reached": _reached,
    "gradient": _gradient,
    "fedadmm30": _fedadmm30,
    "target": _target,
    "epm": _epm,
}


# the keys each rule's block accepts (besides ``rule``), with their constraints
STOP_KEYS = {
    "none": {},
    "reached": {"metric": [Anything("an evaluated metric's name, e.g. test_accuracy")],
                "level": [Interval(Real, None, None)], "slack": [NONNEGATIVE]},
    "gradient": {"tol": [POSITIVE], "scale": [POSITIVE]},
    "fedadmm30": {"measure": [Options("code_scaled", "literal", "code_final")], "eps": [POSITIVE],
                  "final_const": [POSITIVE], "initial_factor": [POSITIVE]},
    "target": {"reference": [Anything("the reference algorithm's name")], "rel": [NONNEGATIVE]},
    "epm": {"variant": [Options("code", "paper")], "tol_per_dim": [POSITIVE], "err_key": [Anything("a trace key")]},
}


def validate_stop_spec(spec: dict | None) -> None:
    """Check a ``stop`` block's rule, keys and values without building it."""
    if not spec:
        return
    rule = spec.get("rule", "none")
    if rule not in STOP_RULES:
        raise ValueError(f"stop.rule={rule!r} is not allowed; choose one of {sorted(STOP_RULES)}")
    validate_params(f"stop rule {rule!r}", {k: v for k, v in spec.items() if k != "rule"}, STOP_KEYS[rule],
                    noun="key")


def build_stop(spec: dict | None, problem, reference: dict | None = None):
    """Build the rule described by ``spec`` (``{'rule': name, ...}``); ``reference`` is the
    final trace record of the reference run for rules that need one (``target``)."""
    if not spec:
        return None
    validate_stop_spec(spec)
    return STOP_RULES[spec.get("rule", "none")](spec, problem, reference)
