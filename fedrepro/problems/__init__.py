"""Problems (losses and models). Each module registers builders in ``PROBLEMS``.

A problem builder takes ``(spec: dict, seed: int, data_dir)`` and returns a
:class:`~fedrepro.problems.base.FederatedProblem`. ``spec`` is the ``problem``
block of an experiment in ``config.yaml``.
"""
from __future__ import annotations

import importlib

from .base import FederatedProblem

# name -> "module:function". Adding a problem is one module plus one line here.
_BUILDERS = {
    "linreg_synthetic": "fedrepro.problems.linear:build_linreg_synthetic",
    "linreg": "fedrepro.problems.linear:build_linreg",
    "logreg": "fedrepro.problems.linear:build_logreg",
    "softmax": "fedrepro.problems.softmax:build_softmax",
    "adult_logreg": "fedrepro.problems.adult:build_adult_logreg",
}


def problem_names() -> list[str]:
    return sorted(_BUILDERS)


def build_problem(spec: dict, seed: int, **kwargs) -> FederatedProblem:
    """Build the problem named ``spec['name']``."""
    name = spec.get("name")
    if name not in _BUILDERS:
        raise ValueError(f"unknown problem {name!r}; allowed: {', '.join(problem_names())}")
    module, func = _BUILDERS[name].split(":")
    return getattr(importlib.import_module(module), func)(spec, seed, **kwargs)


__all__ = ["FederatedProblem", "build_problem", "problem_names"]
