"""Federated problems: m clients, each with a local objective f_i on R^dim.

The global objective is ``f(w) = sum_i weights[i] * f_i(w)`` (Zhou & Li use
``weights = 1/m``; FedEPM uses ``weights = 1``; FRPG adds a server term).

Subclasses implement the vectorized per-client primitives
:meth:`client_losses` and :meth:`client_grads`, which take either one shared
point ``w`` of shape (dim,) or one point per requested client, ``W`` of shape
(len(clients), dim). Everything else is derived here, so an algorithm never
loops over clients in Python.

What some algorithms need beyond this interface (Lipschitz constants, minibatches, a
Byzantine worker split ...) is declared as capabilities in :mod:`fedrepro.problems.protocols`;
a problem provides one by implementing its members.
"""
from __future__ import annotations

import functools
import re
from abc import ABC, abstractmethod

import numpy as np

from fedrepro.core.params import validate_params


def unknown_names(catalogue, names) -> list[str]:
    """The names in ``names`` that match no entry of ``catalogue`` (``<j>`` in an entry: an index)."""
    pats = [re.compile(re.escape(p).replace(re.escape("<j>"), r"\d+") + r"\Z") for p in catalogue]
    return [n for n in names if not any(p.match(str(n)) for p in pats)]


class FederatedProblem(ABC):
    """Base class. Attributes set by subclasses: ``m`` (clients), ``dim``
    (parameters), ``client_sizes`` (m,), ``weights`` (m,)."""

    m: int
    dim: int
    client_sizes: np.ndarray
    weights: np.ndarray
    name: str = "problem"

    # ---- primitives (vectorized over clients) --------------------------------
    @abstractmethod
    def client_losses(self, W: np.ndarray, clients: np.ndarray | None = None) -> np.ndarray:
        """f_i at the given point(s).

        W : (dim,) shared point or (len(clients), dim) one row per client.
        clients : int array of client ids (None: all m clients, in order).
        Returns (len(clients),).
        """

    @abstractmethod
    def client_grads(self, W: np.ndarray, clients: np.ndarray | None = None) -> np.ndarray:
        """grad f_i at the given point(s); returns (len(clients), dim)."""

    def lipschitz(self) -> np.ndarray:
        """Gradient-Lipschitz constant r_i of every f_i, shape (m,)."""
        raise NotImplementedError(f"{type(self).__name__} does not provide Lipschitz constants")

    # ---- derived quantities ----------------------------------------------------
    def objective(self, w: np.ndarray) -> float:
        """f(w) = sum_i weights_i f_i(w)."""
        return float(self.weights @ self.client_losses(w))

    def gradient(self, w: np.ndarray) -> np.ndarray:
        """grad f(w), shape (dim,). Subclasses may override with a single pass."""
        return self.weights @ self.client_grads(w)

    # ---- evaluation of the global model ------------------------------------------------
    extra_metric_names: tuple = ()      # what extra_metrics returns (instance attribute where it varies)

    # Every metric an instance of the class may evaluate, known without data (``<j>``: a worker
    # index); an instance's :meth:`metric_names` is a subset. Config checks use it at parse time.
    METRIC_CATALOGUE: tuple = ("objective", "grad_norm2")

    @classmethod
    def unknown_metrics(cls, names) -> list[str]:
        """The names in ``names`` that no instance of this class can evaluate."""
        return unknown_names(cls.METRIC_CATALOGUE, names)

    #: the run's adversary's say on what workers report: ``(j, value) -> reported value``, set by an attack
    #: before the run (:class:`fedrepro.sim.attacks.Backdoor`); None: every worker reports what it computed
    loss_reporter = None

    def reported_loss(self, j: int, value: float) -> float:
        """The loss worker ``j`` reports for a computed ``value``: the value, unless the adversary
        (``loss_reporter``) has worker j report another (a malicious worker raising its loss)."""
        return value if self.loss_reporter is None else self.loss_reporter(j, value)

    def metric_names(self) -> tuple:
        """Every metric :meth:`evaluate` can compute for this problem."""
        return ("objective", "grad_norm2", *self.extra_metric_names)

    def default_metrics(self) -> tuple:
        """What a run evaluates when it names no metrics (default: all of :meth:`metric_names`;
        a neural problem leaves out the full-data gradient norm)."""
        return self.metric_names()

    def check_metrics(self, metrics) -> tuple:
        """``metrics`` (None: :meth:`default_metrics`) as a tuple; unknown names are a ValueError
        naming the problem and what it can evaluate."""
        names = self.metric_names()
        if metrics is None:
            return tuple(self.default_metrics())
        metrics = tuple(metrics)
        unknown = [k for k in metrics if k not in names]
        if unknown or not metrics:
            raise ValueError(f"problem {self.name!r} cannot evaluate {unknown or 'nothing'}; "
                             f"its metrics are {list(names)}")
        return metrics

    def evaluate(self, w: np.ndarray, metrics=None) -> dict:
        """Metrics of the global model (``metrics``: names from :meth:`metric_names`, default all):
        objective, squared gradient norm, plus :meth:`extra_metrics` (e.g. test accuracy). A metric
        that is not asked for is not computed (a full-data gradient costs as much as a round)."""
        want = self.check_metrics(metrics)
        out = {}
        if "objective" in want:
            out["objective"] = self.objective(w)
        if "grad_norm2" in want:
            g = self.gradient(w)
            out["grad_norm2"] = float(g @ g)
        if any(k in want for k in self.extra_metric_names):
            out.update((k, v) for k, v in self.extra_metrics(w).items() if k in want)
        return out

    def extra_metrics(self, w: np.ndarray) -> dict:
        """Problem-specific metrics of the global model (default none), named in ``extra_metric_names``."""
        return {}

    def label_counts(self) -> tuple:
        """The clients' training data by class, as the partition left them: ``(labels, counts)``,
        ``counts[i, k]`` the number of client i's samples of class ``labels[k]`` (an (m, k) int array;
        the true labels, not what an attack makes a worker train on). A problem whose samples have no
        class label (least squares) gives ``(None, client_sizes[:, None])``: each client's sample count.
        Saved per partition in ``results/<paper>/partitions.parquet``
        (:mod:`fedrepro.experiments.partitions`)."""
        return None, np.asarray(self.client_sizes, dtype=np.int64).reshape(-1, 1)

    def describe(self) -> dict:
        """Facts recorded with every run (sizes, dataset ...)."""
        return {"problem": self.name, "m": int(self.m), "dim": int(self.dim),
                "n_samples": int(np.sum(self.client_sizes))}

    @staticmethod
    def _clients(clients, m):
        return np.arange(m) if clients is None else np.asarray(clients, dtype=np.int64)


def client_class_counts(y, parts, n_classes: int) -> tuple:
    """``(labels 0..n_classes-1, counts (m, n_classes))`` of integer labels ``y`` split by the index
    arrays ``parts`` (:meth:`FederatedProblem.label_counts` of the classification problems)."""
    y = np.asarray(y, dtype=np.int64)
    sizes = np.array([len(p) for p in parts], dtype=np.int64)
    rows = np.concatenate([np.asarray(p, dtype=np.int64) for p in parts]) if len(parts) else np.zeros(0, np.int64)
    owner = np.repeat(np.arange(len(parts)), sizes)
    c = int(n_classes)
    counts = np.bincount(owner * c + y[rows], minlength=len(parts) * c).reshape(len(parts), c)
    return np.arange(c, dtype=np.int64), counts.astype(np.int64)


def problem_spec(check=None, **constraints):
    """Declare the ``problem`` block a builder accepts: every key (besides ``name``) with its
    constraints (:mod:`fedrepro.core.params`), and optionally ``check(spec)``, a further validation
    of keys that depend on each other (raises ValueError). The decorated builder rejects unknown
    keys and bad values before it loads or builds anything;
    :func:`fedrepro.problems.validate_problem_spec` runs the same checks when the config is parsed."""
    def deco(builder):
        @functools.wraps(builder)
        def build(spec: dict, seed: int, **kwargs):
            check_spec(build, spec)
            return builder(spec, seed, **kwargs)
        build.spec_constraints = constraints
        build.spec_check = check
        return build
    return deco


def check_spec(builder, spec: dict) -> None:
    """Validate a problem block against the builder's declared constraints (if it declares them)."""
    constraints = getattr(builder, "spec_constraints", None)
    if constraints is not None:
        validate_params(f"problem {spec.get('name', builder.__name__)!r}",
                        {k: v for k, v in spec.items() if k != "name"}, constraints, noun="key")
    check = getattr(builder, "spec_check", None)
    if check is not None:
        check(spec)
