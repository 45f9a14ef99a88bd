"""Problems (losses and models). Each problem is one registration (:mod:`fedrepro.problems.registry`).

A problem builder takes ``(spec: dict, seed: int, data_dir)`` and returns a
:class:`~fedrepro.problems.base.FederatedProblem`; it declares the spec keys it accepts with
:func:`~fedrepro.problems.base.problem_spec` (unknown keys are errors). ``spec`` is the ``problem``
block of an experiment in ``config.yaml``. The builder's return annotation names the
problem class it builds: :func:`problem_class` reads it, so what a problem provides
(:mod:`fedrepro.problems.protocols`) is known before any data is loaded. The registration adds the
problem's cost model, its workers and datasets known without data, and how it loads from a user's npz.
"""
from __future__ import annotations

from fedrepro.problems.base import FederatedProblem, check_spec
from fedrepro.problems.registry import PROBLEMS, ProblemSpec, get_problem, register


def problem_names() -> list[str]:
    return sorted(PROBLEMS)


def _builder(name: str):
    return get_problem(name).build_function()


def problem_class(name: str) -> type[FederatedProblem] | None:
    """The class that the builder ``name`` returns (its return annotation), without building
    anything; None when the builder declares no concrete subclass of FederatedProblem."""
    return get_problem(name).problem_class


def validate_problem_spec(spec: dict) -> None:
    """Check a ``problem`` block (name, keys, values) without building it; a ValueError names the
    problem, the key, the value and what is allowed."""
    check_spec(_builder(spec.get("name")), spec)


def problem_datasets(spec: dict) -> list[str]:
    """The processed datasets (registry keys, ``name`` or ``name-variant``) that the problem block
    ``spec`` reads: what a cell's job needs before it runs (its registration's ``datasets``). Problems on
    synthetic data or on the user's own npz (``data:``) read none; an unknown problem reads none here
    (the cell check names it)."""
    registration = PROBLEMS.get(spec.get("name"))
    if registration is None or "data" in spec or registration.datasets is None:
        return []
    return registration.datasets(spec)


def problem_workers(spec: dict) -> tuple[int, str] | None:
    """``(number of workers, how the config spells it)`` of a problem block, known without data (its
    registration's ``workers``); None when only the data says (the user's npz, the worker datasets)."""
    registration = PROBLEMS.get(spec.get("name"))
    if registration is None or registration.workers is None or "data" in spec:
        return None
    key, default = registration.workers
    value = spec.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value, f"workers (problem.{key} = {value})"


def build_problem(spec: dict, seed: int, **kwargs) -> FederatedProblem:
    """Build the problem named ``spec['name']``."""
    return _builder(spec.get("name"))(spec, seed, **kwargs)


__all__ = ["FederatedProblem", "PROBLEMS", "ProblemSpec", "build_problem", "get_problem", "register", "problem_class", "problem_datasets", "problem_workers", "problem_names", "validate_problem_spec"]
