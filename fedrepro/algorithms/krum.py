"""Krum (Blanchard et al., NIPS 2017) over uploaded local models (spec 004 sec. 3.4)."""
from __future__ import annotations

from dataclasses import dataclass

from fedrepro.algorithms.ops import aggregators
from fedrepro.algorithms.sgd_mean import RobustAggregationSGD
from fedrepro.core.params import NONNEGATIVE_INT


@dataclass
class Krum(RobustAggregationSGD):
    """w0 <- the uploaded model V_i* with the smallest Krum score; ``f`` = assumed
    number of faulty workers (B = 4, n - f - 2 neighbours)."""

    f: int = 4

    name = "krum"
    constraints = {"f": [NONNEGATIVE_INT]}
    upload_kind = "model"

    def aggregate_rows(self, V, state):
        z, i = aggregators.krum(V, self.f)
        state.metrics["krum_index"] = i
        return z
