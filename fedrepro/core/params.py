"""Declared parameter constraints (in the spirit of scikit-learn's ``_parameter_constraints``).

A component declares, once, what each of its parameters may be::

    constraints = {"step_c": [Interval(Real, 0, None, closed="neither")],
                   "averaging": [Options("all", "selected")],
                   "eta": [None, Interval(Real, 0, None, closed="neither")]}

and :func:`validate_params` checks a parameter dict against it where the input enters (the
algorithm's construction, a problem builder, the run settings), naming the owner, the key, the
value and what is allowed. ``None`` in a list allows None; a value is valid when it satisfies any
entry of its list. Keys outside the declaration are errors.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

__all__ = ["ConfigError", "Interval", "Options", "RegisteredNames", "Boolean", "Anything", "validate_params", "describe",
           "Integral", "Real", "POSITIVE", "NONNEGATIVE", "POSITIVE_INT", "NONNEGATIVE_INT"]


class ConfigError(ValueError):
    """A bad key or value in config.yaml, a paper's files or a merged cell."""


@dataclass(frozen=True)
class Interval:
    """A finite number of ``kind`` (``Integral`` or ``Real``) in [lo, hi] (None: unbounded, and open:
    inf and nan are never in an Interval; a parameter that takes inf declares ``Options(math.inf)``
    beside it); ``closed``: ``"both"``, ``"left"``, ``"right"`` or ``"neither"``. Booleans and
    strings are never numbers here (the config readers turn a plain YAML 1.2 float such as ``5e-1``
    into a float, :data:`fedrepro.experiments.yamlio.YAML12_FLOAT`; a quoted ``'5e-1'`` is text)."""

    kind: type
    lo: float | None
    hi: float | None
    closed: str = "both"

    def accepts(self, value) -> bool:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Integral, Real, np.number)):
            return False
        if self.kind is Integral and not (isinstance(value, (Integral, np.integer))
                                          or (isinstance(value, (float, np.floating)) and float(value).is_integer())):
            return False
        v = float(value)
        if not math.isfinite(v):            # an unbounded side is open: (0, inf) does not hold inf
            return False
        if self.lo is not None and (v < self.lo or (v == self.lo and self.closed in ("right", "neither"))):
            return False
        if self.hi is not None and (v > self.hi or (v == self.hi and self.closed in ("left", "neither"))):
            return False
        return True

    def __str__(self) -> str:
        what = "an integer" if self.kind is Integral else "a number"
        left = "[" if self.closed in ("both", "left") else "("
        right = "]" if self.closed in ("both", "right") else ")"
        lo = "-inf" if self.lo is None else f"{self.lo:g}"
        hi = "inf" if self.hi is None else f"{self.hi:g}"
        return f"{what} in {left}{lo}, {hi}{right}"


class Options:
    """One of the listed values (strings, or any hashable)."""

    def __init__(self, *values):
        self.values = tuple(values)

    def accepts(self, value) -> bool:
        try:
            return value in self.values
        except TypeError:
            return False

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


class RegisteredNames(Options):
    """One of the names in a registry that may still grow (read at every check, e.g. a derived
    table of :mod:`fedrepro.data.registry`), so a later registration is accepted too."""

    def __init__(self, registry):
        self.registry = registry

    @property
    def values(self) -> tuple:
        return tuple(self.registry)


class _Boolean:
    def accepts(self, value) -> bool:
        return isinstance(value, (bool, np.bool_))

    def __str__(self) -> str:
        return "true or false"


class _Anything:
    """Any value (for structured parameters a component validates itself, e.g. arrays)."""

    def __init__(self, what: str = "any value"):
        self.what = what

    def accepts(self, value) -> bool:
        return True

    def __str__(self) -> str:
        return self.what


Boolean = _Boolean()
Anything = _Anything


def describe(allowed: list) -> str:
    return " or ".join("None" if c is None else str(c) for c in allowed)


def _ok(value, allowed: list) -> bool:
    return any((value is None) if c is None else c.accepts(value) for c in allowed)


def validate_params(owner: str, params: dict, constraints: dict, *, ignore=(), noun: str = "parameter") -> None:
    """Raise ValueError naming ``owner`` for unknown keys and values outside their constraints."""
    unknown = sorted(k for k in params if k not in constraints and k not in ignore)
    if unknown:
        raise ValueError(f"{owner}: unknown {noun}(s) {unknown}; allowed: {sorted(constraints)}")
    for key, value in params.items():
        if key in constraints and not _ok(value, constraints[key]):
            raise ValueError(f"{owner}: {key}={value!r} is not allowed; expected {describe(constraints[key])}")


# common shapes
POSITIVE = Interval(Real, 0, None, closed="neither")
NONNEGATIVE = Interval(Real, 0, None, closed="left")
POSITIVE_INT = Interval(Integral, 1, None)
NONNEGATIVE_INT = Interval(Integral, 0, None)
