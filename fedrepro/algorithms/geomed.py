"""GeoMed: geometric median of the uploaded local models (Chen, Su, Xu 2017; spec 004 sec. 3.5).

Weiszfeld iteration started from the coordinate-wise median (``init``), tolerance
``tol`` relative to max(1, ||z||), at most ``max_iter`` iterations, distance floor ``eps``.
"""
from __future__ import annotations

from dataclasses import dataclass

from fedrepro.algorithms.ops import aggregators
from fedrepro.algorithms.sgd_mean import RobustAggregationSGD
from fedrepro.core.params import POSITIVE, POSITIVE_INT, Options


@dataclass
class GeoMed(RobustAggregationSGD):
    tol: float = 1e-7
    max_iter: int = 1000
    eps: float = 1e-8
    init_rule: str = "coord_median"

    name = "geomed"
    upload_kind = "model"
    constraints = {"tol": [POSITIVE], "max_iter": [POSITIVE_INT], "eps": [POSITIVE],
                   "init_rule": [Options("coord_median", "mean")]}

    def aggregate_rows(self, V, state):
        z, it = aggregators.geometric_median(V, tol=self.tol, max_iter=self.max_iter, eps=self.eps,
                                             init=self.init_rule)
        state.metrics["weiszfeld_iters"] = it
        return z
