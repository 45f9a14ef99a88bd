"""A problem is one registration: a :class:`ProblemSpec` names its builder (which declares the problem's
constraints and, by its return annotation, its class), its cost model (the workflow's resource requests,
:mod:`fedrepro.problems.cost`), its workers and datasets known without data, and how it loads from a
user's npz (``fedrepro run --problem KIND --data PATH``). Every reader asks the registration:
:func:`fedrepro.problems.build_problem`, :func:`~fedrepro.problems.problem_class`,
:func:`~fedrepro.problems.problem_datasets`, :func:`~fedrepro.problems.problem_workers`, the resource
requests (:mod:`fedrepro.experiments.resources`) and the CLI (:mod:`fedrepro.cli`).

Adding a problem is its module plus one :func:`register` call (below, or in the user's own code before
the run: ``tests/test_problem_registration.py`` adds a toy problem and runs it from a config and from
the CLI).
"""
from __future__ import annotations

import importlib
import typing
from dataclasses import dataclass, field
from typing import Callable

from fedrepro.problems.base import FederatedProblem
from fedrepro.problems.cost import ConvexCost, NeuralCost, WorkerCost, synthetic_bytes


@dataclass(frozen=True)
class UserData:
    """How a problem loads from a user's npz (:mod:`fedrepro.problems.user_data`): ``fedrepro run
    --problem KIND --data PATH`` runs the problem block ``{**block, "data": PATH, **--problem-param}``.

    weights_follow_algorithm : the client weights default to the algorithm's ``objective_weights``
        (``"ones"``, f = sum_i f_i, for fedepm, sfedavg and sfedprox as in their paper) unless the user
        gives ``weights``; otherwise the problem's own default.
    """

    block: dict
    weights_follow_algorithm: bool = False


@dataclass(frozen=True)
class ProblemSpec:
    """Everything the package knows about a problem before it is built.

    name : the ``problem.name`` of a config block.
    builder : ``builder(spec, seed, **kwargs) -> FederatedProblem``, or its ``"module:function"`` (imported
        when first used). It declares its keys (:func:`fedrepro.problems.base.problem_spec`) and its class
        (return annotation).
    cost : its cost model (:mod:`fedrepro.problems.cost`).
    workers : ``(spec key, default)`` of its number of workers when the config says it; None when only the
        data says (:func:`fedrepro.problems.problem_workers`).
    datasets : ``datasets(block) -> [registry keys]`` it reads (a job's data dependencies); None: none.
    user_data : ``{CLI kind: UserData}``: the ``--problem`` names that run it on a user's npz.
    cli_aliases : ``() -> {CLI kind: options}``: further ``--problem`` names standing for this problem with
        options (``--problem mlp1`` = ``neural`` with ``model=mlp1``).
    without_data : ``(options, seed, data_dir) -> problem`` (or its ``"module:function"``): what the CLI
        runs without ``--data``; None: the CLI requires ``--data``.
    """

    name: str
    builder: str | Callable
    cost: object = field(default_factory=ConvexCost)
    workers: tuple[str, int] | None = None
    datasets: Callable[[dict], list] | None = None
    user_data: dict = field(default_factory=dict)
    cli_aliases: Callable[[], dict] | None = None
    without_data: str | Callable | None = None

    def build_function(self) -> Callable:
        return resolve(self.builder)

    @property
    def constraints(self) -> dict | None:
        """The keys of its block and their constraints (:mod:`fedrepro.core.params`), as the builder declares them."""
        return getattr(self.build_function(), "spec_constraints", None)

    @property
    def problem_class(self) -> type[FederatedProblem] | None:
        """The class the builder returns (its return annotation), without building anything; None when it
        declares no concrete subclass of FederatedProblem."""
        cls = typing.get_type_hints(self.build_function()).get("return")
        if isinstance(cls, type) and issubclass(cls, FederatedProblem) and cls is not FederatedProblem:
            return cls
        return None


def resolve(target: str | Callable) -> Callable:
    """``target`` itself, or the function its ``"module:function"`` names (imported now)."""
    if callable(target):
        return target
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)


#: name -> registration, in registration order
PROBLEMS: dict[str, ProblemSpec] = {}


def register(spec: ProblemSpec) -> ProblemSpec:
    """Add a problem; a name or CLI kind another registration holds is an error."""
    if spec.name in PROBLEMS:
        raise ValueError(f"problem {spec.name!r} is registered twice")
    taken = {kind: other.name for other in PROBLEMS.values() for kind in other.user_data}
    for kind in spec.user_data:
        if kind in taken:
            raise ValueError(f"problem {spec.name!r}: --problem {kind!r} already runs problem {taken[kind]!r}")
    PROBLEMS[spec.name] = spec
    return spec


def unregister(name: str) -> ProblemSpec:
    """Remove a registration (a test's or a user's own problem) and return it."""
    return PROBLEMS.pop(name)


def get_problem(name) -> ProblemSpec:
    """The registration of problem ``name``; a ValueError lists the known names."""
    if name not in PROBLEMS:
        raise ValueError(f"unknown problem {name!r}; allowed: {', '.join(sorted(PROBLEMS))}")
    return PROBLEMS[name]


#: the cost model of a cell whose problem is not registered (the convex work model on 1 GB of data)
DEFAULT_COST = ConvexCost()


def problem_cost(name):
    """The cost model of problem ``name`` (:data:`DEFAULT_COST` for a name not registered)."""
    spec = PROBLEMS.get(name)
    return DEFAULT_COST if spec is None else spec.cost


def cli_kinds() -> dict:
    """``{--problem name: (registration, UserData or None, options)}``: every registration's npz kinds,
    then the aliases (in registration order; an alias runs its problem's npz form named like the problem)."""
    direct = {kind: (spec, form, {}) for spec in PROBLEMS.values() for kind, form in spec.user_data.items()}
    aliases = {}
    for spec in PROBLEMS.values():
        for kind, options in (spec.cli_aliases() if spec.cli_aliases else {}).items():
            if kind not in direct:
                aliases.setdefault(kind, (spec, spec.user_data.get(spec.name), options))
    return {**direct, **aliases}


# --------------------------------------------------------------------------- what a block reads

def reads_dataset(default: str | None = None) -> Callable[[dict], list]:
    """``datasets`` of a problem reading the registry dataset its block names (``dataset``, else ``default``)."""
    def datasets(spec: dict) -> list:
        dataset = spec.get("dataset", default)
        return [str(dataset)] if isinstance(dataset, str) and dataset else []
    datasets.__name__ = f"reads_dataset({default!r})"
    return datasets


def _adult_datasets(spec: dict) -> list:
    # dataset: adult_mat reads the authors' .mat files, not a registry key
    return ["adult"] if spec.get("dataset", "adult") == "adult" else []


def _worker_datasets(spec: dict) -> list:
    from fedrepro.data.spec import WORKER_SOURCES

    source = WORKER_SOURCES.get(spec.get("dataset"))
    return [] if source is None else [source]


def _model_aliases() -> dict:
    from fedrepro.nn import MODELS

    return {name: {"model": name} for name in sorted(MODELS)}


# --------------------------------------------------------------------------- the registrations

register(ProblemSpec("linreg_synthetic", "fedrepro.problems.glm:build_linreg_synthetic",
                     cost=ConvexCost(data_bytes=synthetic_bytes), workers=("m", 100)))
register(ProblemSpec("linreg", "fedrepro.problems.glm:build_linreg",
                     user_data={"linreg": UserData({"name": "linreg", "loss": "squared"}, weights_follow_algorithm=True),
                                "logreg": UserData({"name": "linreg", "loss": "logistic"}, weights_follow_algorithm=True)}))
register(ProblemSpec("logreg", "fedrepro.problems.glm:build_logreg", workers=("m", 100), datasets=reads_dataset()))
register(ProblemSpec("softmax", "fedrepro.problems.softmax:build_softmax", workers=("Q", 20),
                     datasets=reads_dataset(), user_data={"softmax": UserData({"name": "softmax"})}))
register(ProblemSpec("adult_logreg", "fedrepro.problems.adult:build_adult_logreg",
                     cost=ConvexCost(default_dataset="adult"), workers=("m", 50), datasets=_adult_datasets))
register(ProblemSpec("neural", "fedrepro.problems.neural:build_neural", cost=NeuralCost(), workers=("m", 100),
                     datasets=reads_dataset("mnist"), user_data={"neural": UserData({"name": "neural"})},
                     cli_aliases=_model_aliases, without_data="fedrepro.problems.neural:neural_from_registry"))
register(ProblemSpec("worker_neural", "fedrepro.problems.worker_neural:build_worker_neural", cost=WorkerCost(),
                     datasets=_worker_datasets))
