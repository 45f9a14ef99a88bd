"""Problems (losses and models). Each module registers builders in ``_BUILDERS``.

A problem builder takes ``(spec: dict, seed: int, data_dir)`` and returns a
:class:`~fedrepro.problems.base.FederatedProblem`; it declares the spec keys it accepts with
:func:`~fedrepro.problems.base.problem_spec` (unknown keys are errors). ``spec`` is the ``problem``
block of an experiment in ``config.yaml``. The builder's return annotation names the
problem class it builds: :func:`problem_class` reads it, so what a problem provides
(:mod:`fedrepro.problems.protocols`) is known before any data is loaded.
"""
from __future__ import annotations

import importlib
import typing

from fedrepro.problems.base import FederatedProblem, check_spec

# name -> "module:function". Adding a problem is one module plus one line here.
_BUILDERS = {
    "linreg_synthetic": "fedrepro.problems.glm:build_linreg_synthetic",
    "linreg": "fedrepro.problems.glm:build_linreg",
    "logreg": "fedrepro.problems.glm:build_logreg",
    "softmax": "fedrepro.problems.softmax:build_softmax",
    "adult_logreg": "fedrepro.problems.adult:build_adult_logreg",
    "neural": "fedrepro.problems.neural:build_neural",
    "worker_neural": "fedrepro.problems.worker_neural:build_worker_neural",
}


def problem_names() -> list[str]:
    return sorted(_BUILDERS)


def _builder(name: str):
    if name not in _BUILDERS:
        raise ValueError(f"unknown problem {name!r}; allowed: {', '.join(problem_names())}")
    module, func = _BUILDERS[name].split(":")
    return getattr(importlib.import_module(module), func)


def problem_class(name: str) -> type[FederatedProblem] | None:
    """The class that the builder ``name`` returns (its return annotation), without building
    anything; None when the builder declares no concrete subclass of FederatedProblem."""
    hints = typing.get_type_hints(_builder(name))
    cls = hints.get("return")
    if isinstance(cls, type) and issubclass(cls, FederatedProblem) and cls is not FederatedProblem:
        return cls
    return None


def validate_problem_spec(spec: dict) -> None:
    """Check a ``problem`` block (name, keys, values) without building it; a ValueError names the
    problem, the key, the value and what is allowed."""
    check_spec(_builder(spec.get("name")), spec)


def problem_datasets(spec: dict) -> list[str]:
    """The processed datasets (registry keys, ``name`` or ``name-variant``) that the problem block
    ``spec`` reads: what a cell's job needs before it runs. Problems on synthetic data or on the user's
    own npz (``data:``) read none; an unknown problem reads none here (the cell check names it)."""
    name = spec.get("name")
    if name not in _BUILDERS or "data" in spec or name in ("linreg_synthetic", "linreg"):
        return []
    if name == "worker_neural":
        from fedrepro.data.registry import WORKER_SOURCES

        source = WORKER_SOURCES.get(spec.get("dataset"))
        return [] if source is None else [source]
    if name == "adult_logreg":            # dataset: adult_mat reads the authors' .mat files, not a registry key
        return ["adult"] if spec.get("dataset", "adult") == "adult" else []
    default = {"neural": "mnist"}.get(name)
    dataset = spec.get("dataset", default)
    return [str(dataset)] if isinstance(dataset, str) and dataset else []


#: problem -> (the spec key of its number of workers, its default); problems absent here learn it from data
WORKER_COUNT = {"linreg_synthetic": ("m", 100), "logreg": ("m", 100), "adult_logreg": ("m", 50),
                "softmax": ("Q", 20), "neural": ("m", 100)}


def problem_workers(spec: dict) -> tuple[int, str] | None:
    """``(number of workers, how the config spells it)`` of a problem block, known without data; None
    when only the data says (the user's npz, the worker datasets)."""
    name = spec.get("name")
    if name not in WORKER_COUNT or "data" in spec:
        return None
    key, default = WORKER_COUNT[name]
    value = spec.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value, f"workers (problem.{key} = {value})"


def build_problem(spec: dict, seed: int, **kwargs) -> FederatedProblem:
    """Build the problem named ``spec['name']``."""
    return _builder(spec.get("name"))(spec, seed, **kwargs)


__all__ = ["FederatedProblem", "build_problem", "problem_class", "problem_datasets", "problem_workers", "problem_names", "validate_problem_spec"]
