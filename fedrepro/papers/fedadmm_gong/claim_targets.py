"""Claims of fedadmm_gong built alone (:mod:`fedrepro.papers.alone`): the cells each reading needs, no more.

FedADMM's round counts (Table III's FedADMM row, Table IV, Table V's FedADMM row, and their Algorithm 1 twins) are
read from FedADMM's runs only (``check: table3_fedadmm_rounds_paper`` / ``table4_rounds_paper`` /
``table5_fedadmm_rounds_paper``: per seed, the first round reaching the CNN's target accuracy, over the paper's
count, within x1.5). Their targets run FedADMM's cells alone at paper scale, each capped at ``ceil(1.5 x`` the
paper's count for its column ``)`` rounds and stopped once the test accuracy reaches the target
(``stop: {rule: reached}``): a run that reaches the target by then gives its count exactly; one that does not gives
a lower bound past the band's edge (cap + 1 > 1.5 x the paper's count), which is all the reading can say of it.
The experiments' other algorithms (the baselines, FedProx's ρ grid) are no part of these readings. The cells are
new cells (other round cap and stop rule than the paper build's), so they never overwrite its results.
"""
from __future__ import annotations

import math

from fedrepro.papers.alone import ClaimTarget
from fedrepro.core.params import ConfigError
from fedrepro.experiments.spec import RunSpec
from fedrepro.papers.fedadmm_gong.analysis import (PAPER_TABLE3, PAPER_TABLE4, PAPER_TABLE5, TABLE3_COLUMNS,
                                                   _resolved_model, model_family)
from fedrepro.papers.fedadmm_gong.analysis import TARGETS as ACCURACY_TARGETS

#: the claims' band: tolerance x1.5 of ``compare: band`` (claims.yaml); the cap is the band's upper edge
BAND = 1.5
TABLE4_E = (1, 5, 10)
#: Table V's columns (m, partition), as claims.py's T5_CELLS
TABLE5_COLUMNS = ((200, "iid"), (200, "label_shards"), (500, "iid"), (500, "label_shards"))


def paper_rounds(spec: RunSpec) -> int:
    """The paper's FedADMM round count for the column of the run ``spec`` (Table III, IV or V)."""
    exp = spec.experiment.removesuffix("_alg1")
    problem = spec.problem
    ds, part = str(problem.get("dataset")).split("-")[0], problem.get("partition")
    if exp == "table3":
        return PAPER_TABLE3["FedADMM"][TABLE3_COLUMNS.index(spec.columns["setting"])]
    if exp == "table4":
        return PAPER_TABLE4[(ds, part)][TABLE4_E.index(int(spec.algorithm.params["E"]))]
    if exp == "table5":
        return PAPER_TABLE5[(ds, "FedADMM")][TABLE5_COLUMNS.index((int(problem["m"]), part))]
    raise ConfigError(f"fedadmm_gong claim targets: no paper round count for experiment {spec.experiment!r}")


def stop_past_band(spec: RunSpec) -> RunSpec:
    """The run ``spec`` capped at ceil(BAND x the paper's count) rounds and stopped at the CNN's target accuracy
    (a new run: :meth:`RunSpec.replace`)."""
    ds = str(spec.problem.get("dataset")).split("-")[0]
    family = model_family(_resolved_model(spec.problem))
    if family != "cnn":
        raise ConfigError(f"fedadmm_gong {spec.experiment}: the round-count claims are the CNNs' (scale paper); "
                          f"this scale runs {_resolved_model(spec.problem)}: build the claim at scale paper")
    return spec.replace(max_rounds=int(math.ceil(BAND * paper_rounds(spec))),
                        stop={"rule": "reached", "metric": "test_accuracy", "level": ACCURACY_TARGETS["cnn"][ds]})


WHY = ("FedADMM's runs only, each capped at ceil(1.5 x the paper's count) rounds and stopped at the target accuracy "
       "(fedrepro/papers/fedadmm_gong/claim_targets.py).")
_FEDADMM = ["fedadmm_gong"]
TARGETS = {
    "table3_fedadmm_rounds": ClaimTarget({"table3": _FEDADMM}, "paper", stop_past_band, WHY),
    # the twin reads table3_alg1's FedADMM in place of table3's (claims.py alg1): none of table3's rows
    "table3_fedadmm_rounds_alg1": ClaimTarget({"table3": [], "table3_alg1": _FEDADMM}, "paper", stop_past_band, WHY),
    "table4_rounds": ClaimTarget({"table4": _FEDADMM}, "paper", stop_past_band, WHY),
    "table4_rounds_alg1": ClaimTarget({"table4": [], "table4_alg1": _FEDADMM}, "paper", stop_past_band, WHY),
    "table5_fedadmm_rounds": ClaimTarget({"table5": _FEDADMM}, "paper", stop_past_band, WHY),
    "table5_fedadmm_rounds_alg1": ClaimTarget({"table5": [], "table5_alg1": _FEDADMM}, "paper", stop_past_band, WHY),
}
