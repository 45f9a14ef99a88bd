"""Server aggregators of the client-to-server channel (:mod:`fedrepro.sim.channel`), usable by every
algorithm whose server step averages the round's uploads (``server_rule = "mean"``: FedAvg, FedProx,
fedavg_sgd, FedSGD, FedADMM's z average, FedADMM-Gong's Delta average, SFedAvg ...).

An aggregator reads the round's model updates d_i (rows of D, the uploads mapped by the algorithm's
declared upload kind) and returns one update; the channel hands that update to the algorithm as the
upload of every client of the round, so the algorithm's own (weighted) mean of equal rows is the
aggregator's output. Algorithms that average stale uploads too (Zhou & Li's FedAvg, eq. (18);
FedADMM's eq. (4)) keep the stale rows of the clients not in the round.

``{name: mean}`` (weights ``algorithm``, the default) is the algorithm's own mean: no stage at all.
``weights: unweighted | data_size`` replaces it by the plain or the sample-count weighted mean.

Robust rules (the math in :mod:`fedrepro.algorithms.ops.aggregators`):

* ``krum`` (Blanchard et al. 2017), ``multi_krum`` (El Mhamdi et al. 2018; ``m`` rows averaged),
* ``geometric_median`` (Weiszfeld from the coordinate-wise median), ``coordinate_median``,
* ``trimmed_mean`` (Yin et al. 2018; ``f`` largest and smallest per coordinate dropped),
* ``centered_clipping`` (Karimireddy, He & Jaggi 2021; centre: the previous round's aggregate, 0 at
  the first round; ``tau`` radius, ``iters`` iterations).

``f`` (Krum, multi-Krum, trimmed mean): an integer, or ``round`` (default): the number of the round's
clients that the run's attack made faulty (the oracle value the papers assume known).
"""
from __future__ import annotations

import numpy as np

from fedrepro.algorithms.ops import aggregators as ops
from fedrepro.core.params import NONNEGATIVE_INT, POSITIVE, POSITIVE_INT, Options, validate_params

_F = [Options("round"), NONNEGATIVE_INT]


class Aggregator:
    name = "aggregator"
    constraints: dict = {}
    defaults: dict = {}

    def __init__(self, spec: dict | None = None):
        self.spec = {k: v for k, v in (spec or {}).items() if k != "name"}
        validate_params(f"aggregator {self.name!r}", self.spec, self.constraints, noun="key")
        self.params = {**self.defaults, **self.spec}

    @property
    def is_identity(self) -> bool:
        """True when the stage leaves the algorithm's own mean in place (nothing to do)."""
        return False

    def prepare(self, problem, ctx) -> None:
        self._problem = problem
        self._center = None

    def _f(self, n_faulty: int) -> int:
        f = self.params.get("f", "round")
        return int(n_faulty) if f == "round" else int(f)

    def __call__(self, D: np.ndarray, clients: np.ndarray, n_faulty: int) -> np.ndarray:
        raise NotImplementedError


class Mean(Aggregator):
    name = "mean"
    constraints = {"weights": [Options("algorithm", "unweighted", "data_size")]}
    defaults = {"weights": "algorithm"}

    @property
    def is_identity(self):
        return self.params["weights"] == "algorithm"

    def __call__(self, D, clients, n_faulty):
        if self.params["weights"] == "data_size":
            return ops.weighted_mean(D, np.asarray(self._problem.client_sizes, dtype=np.float64)[clients])
        return ops.mean(D)


class Krum(Aggregator):
    name = "krum"
    constraints = {"f": _F}

    def __call__(self, D, clients, n_faulty):
        return ops.krum(D, self._f(n_faulty))[0]


class MultiKrum(Aggregator):
    name = "multi_krum"
    constraints = {"f": _F, "m": [POSITIVE_INT]}

    def __call__(self, D, clients, n_faulty):
        f = self._f(n_faulty)
        m_sel = int(self.params.get("m", max(len(D) - f, 1)))
        return ops.multi_krum(D, f, min(m_sel, len(D)))[0]


class GeometricMedian(Aggregator):
    name = "geometric_median"
    constraints = {"tol": [POSITIVE], "max_iter": [POSITIVE_INT]}
    defaults = {"tol": 1e-7, "max_iter": 1000}

    def __call__(self, D, clients, n_faulty):
        return ops.geometric_median(D, tol=float(self.params["tol"]), max_iter=int(self.params["max_iter"]))[0]


class CoordinateMedian(Aggregator):
    name = "coordinate_median"

    def __call__(self, D, clients, n_faulty):
        return ops.coordinate_median(D)


class TrimmedMean(Aggregator):
    name = "trimmed_mean"
    constraints = {"f": _F}

    def __call__(self, D, clients, n_faulty):
        return ops.trimmed_mean(D, self._f(n_faulty))


class CenteredClipping(Aggregator):
    name = "centered_clipping"
    constraints = {"tau": [POSITIVE], "iters": [POSITIVE_INT]}
    defaults = {"tau": 10.0, "iters": 1}

    def __call__(self, D, clients, n_faulty):
        center = np.zeros(D.shape[1]) if self._center is None else self._center
        v = ops.centered_clipping(D, center, float(self.params["tau"]), int(self.params["iters"]))
        self._center = v
        return v


AGGREGATORS = {cls.name: cls for cls in (Mean, Krum, MultiKrum, GeometricMedian, CoordinateMedian, TrimmedMean,
                                         CenteredClipping)}


def build_aggregator(spec: dict | None) -> Aggregator | None:
    """The aggregator of an ``aggregator`` block (None, ``{}``, ``{name: mean}``: the algorithm's own mean,
    no stage)."""
    if not spec:
        return None
    if not isinstance(spec, dict):
        raise ValueError(f"aggregator must be a mapping such as {{name: krum, f: 2}}, got {spec!r}")
    name = spec.get("name", "mean")
    if name not in AGGREGATORS:
        raise ValueError(f"unknown aggregator {name!r}: aggregator.name must be one of {sorted(AGGREGATORS)}")
    agg = AGGREGATORS[name](spec)
    return None if agg.is_identity else agg


__all__ = ["AGGREGATORS", "Aggregator", "build_aggregator"]
