"""The verify build's second look (fedrepro.claims.plan, scripts/verify.sh; issue #43 point 6)."""

import pandas as pd
import pytest

from fedrepro.claims.plan import combine_looks, plan, seed_costs, spent_cpu_s
from fedrepro.claims.verdicts import Replicates, decide
from fedrepro.experiments.results import computed_cells, write_parquet
from fedrepro.papers.registry import look_alpha


def _table(rows):
    return pd.DataFrame(rows, columns=["claim", "kind", "verdict", "replicates", "replicates_needed"])


def test_plan_spends_the_budget_on_the_cheapest_claims_that_more_replicates_decide():
    tables = {"p": _table([
        ("cheap", "paper", "undecided", 6, 8),      # +2 seeds of e1 (10 CPU-s a seed): 20
        ("shared", "paper", "undecided", 6, 7),     # e1 again: covered by cheap's seeds, costs 0 after it
        ("dear", "paper", "undecided", 6, 20),      # +14 seeds of e2 (100 a seed): 1400, over the budget
        ("never", "paper", "undecided", 6, 0),      # no number of replicates decides it
        ("far", "paper", "undecided", 6, 60),       # more than 4 x its replicates
        ("done", "paper", "holds", 6, 0),
        ("identity", "check", "undecided", 6, 8),   # checks are not planned
    ])}
    claims = {"p": {"cheap": ["e1"], "shared": ["e1"], "dear": ["e2"], "never": ["e1"], "far": ["e1"], "done": ["e1"],
                    "identity": ["e1"]}}
    costs = {"p": {"e1": (6, 10.0), "e2": (6, 100.0)}}
    p = plan(tables, claims, costs, budget_cpu_s=500)
    status = {c.claim: c.status for c in p.claims}
    assert status["cheap"] == status["shared"] == "planned"
    assert status["dear"] == "over budget" and status["never"].startswith("unbounded") and "more than 4" in status["far"]
    assert "done" not in status and "identity" not in status
    assert p.seeds == {("p", "e1"): 8} and p.spent_cpu_s == pytest.approx(20.0)
    assert p.overrides() == {"paper_overrides": {"p": {"e1": {"scales": {"verify": {"seeds": 8}}}}}}
    assert "| p | dear | 6 | 20 | e2 | 1400 | over budget |" in p.markdown()
    # with the budget for it, dear is planned too
    assert plan(tables, claims, costs, budget_cpu_s=2000).seeds == {("p", "e1"): 8, ("p", "e2"): 20}


def test_costs_and_spent_cpu_are_measured_from_look_1(tmp_path):
    (tmp_path / "p").mkdir()
    summ = pd.DataFrame({"cell": list("abcd"), "instance": [0, 1, 0, 1], "run_cpu_time": [1.0, 2.0, 3.0, 4.0]})
    summ.to_parquet(tmp_path / "p" / "e.summary.parquet")
    timing = pd.DataFrame({"cell": list("aabb"), "repeat": [0, 0, 1, 1], "run_cpu_time": [0.5, 0.5, 1.5, 1.5]})
    timing.to_parquet(tmp_path / "p" / "e.timing.parquet")
    assert seed_costs(tmp_path, "p", ["e", "absent"]) == {"e": (2, (10.0 + 2.0) / 2)}
    assert spent_cpu_s(tmp_path) == pytest.approx(12.0)


def test_a_claim_decided_at_look_1_keeps_its_verdict():
    one = pd.DataFrame({"claim": ["a", "b", "c"], "verdict": ["holds", "undecided", "fails"], "why": ["", "open", "x"]})
    two = pd.DataFrame({"claim": ["a", "b", "c"], "verdict": ["undecided", "holds", "fails"], "why": ["?", "", "y"]})
    out = combine_looks(one, two).set_index("claim")
    assert out["verdict"].tolist() == ["holds", "holds", "fails"] and out["look"].tolist() == [1, 2, 1]
    assert out.loc["c", "why"] == "x"


def test_each_look_decides_at_its_own_level():
    assert look_alpha(None) == 0.05 and look_alpha({"verify": {"look": 0}}) == 0.05
    assert look_alpha({"verify": {"look": 2, "alpha_per_look": [0.01, 0.04]}}) == 0.04
    six = Replicates([-1.0] * 6)                       # p = 2/64 = 0.031: decided at 0.05, not at 0.025
    assert decide(six, 0, "lt", alpha=0.05).verdict == "holds"
    assert decide(six, 0, "lt", alpha=0.025).verdict == "undecided"
    assert decide(Replicates([-1.0] * 7), 0, "lt", alpha=0.025).verdict == "holds"


def test_runs_of_an_earlier_job_are_found_by_cell_id(tmp_path):
    folder = tmp_path / "cells" / "p" / "e"
    write_parquet(pd.DataFrame({"cell": ["c1", "c2"], "round": [0, 0]}), folder / "b1.parquet", {"cells": ["c1", "c2"]})
    write_parquet(pd.DataFrame({"cell": ["c3"], "round": [0]}), folder / "c3.parquet", {"cells": ["c3"]})
    found = computed_cells(folder, exclude=folder / "c3.parquet")
    assert set(found) == {"c1", "c2"} and found["c1"].name == "b1.parquet"
    assert computed_cells(tmp_path / "absent") == {}
    assert set(computed_cells(folder)) == {"c1", "c2", "c3"}


def _gong_verify(look: int, leave_out=("table3", "scaling")) -> dict:
    return {"scale": "verify", "seed": 20260101, "papers": ["fedadmm_gong"], "experiments": None,
            "verify": {"look": look, "leave_out": {"fedadmm_gong": list(leave_out)}}}


def test_the_verify_build_leaves_out_what_config_names_and_says_so_in_claims_and_skipped_md():
    """verify.leave_out: in the verify build's looks (scale verify, look 1 or 2) the named experiments have no
    cells, their claims are undecided saying why (never decided on nothing), the figures that need them are
    listed as not built in results/skipped.md; a plain scale=verify build (look 0) and another scale run them."""
    from fedrepro.claims.completeness import expected_for_paper
    from fedrepro.claims.evaluate import evaluate
    from fedrepro.data.plan import DataPlan
    from fedrepro.experiments.expansion import all_cells
    from fedrepro.experiments.report_markdown import skipped_markdown
    from fedrepro.papers.registry import paper_outputs

    look1 = all_cells(_gong_verify(1))
    assert ("fedadmm_gong", "table3") not in look1 and ("fedadmm_gong", "scaling") not in look1
    assert ("fedadmm_gong", "fig6_constant") in look1 and ("fedadmm_gong", "table3_fedsgd") in look1
    assert ("fedadmm_gong", "table3") in all_cells(_gong_verify(0))          # a plain verify-scale build
    assert ("fedadmm_gong", "table3") in all_cells({**_gong_verify(1), "scale": "quick"})
    assert ("fedadmm_gong", "table3") in all_cells(_gong_verify(2, ())), "nothing named, nothing left out"

    expected = expected_for_paper("fedadmm_gong", ["table3", "fig6_constant"], "verify", _gong_verify(2))
    assert expected["table3"].left_out and not expected["table3"].runs_here and expected["fig6_constant"].runs_here
    claim = {"id": "c", "kind": "paper", "experiments": ["table3"], "check": "lower", "compare": "gt", "paper_value": 0}
    calls = []
    row = evaluate([claim], {"lower": lambda *a, **k: calls.append(a) or 1.0}, {}, {}, "fedadmm_gong",
                   scale="verify", expected=expected).iloc[0]
    assert row["verdict"] == "undecided" and not calls
    assert "experiment table3 is left out of the verify build (config verify.leave_out)" in row["why"]
    paper_scale = {**claim, "testable_at": ["paper"], "untestable_reason": "CNN round counts (scale paper)"}
    row = evaluate([paper_scale], {"lower": lambda *a, **k: 1.0}, {}, {}, "fedadmm_gong", scale="verify",
                   expected=expected).iloc[0]
    assert row["why"].startswith("CNN round counts (scale paper); not decided at this scale: experiment table3 is left")

    outputs = paper_outputs(_gong_verify(1), look1, {})
    info = outputs["fedadmm_gong"]
    assert {"fig3", "fig4", "fig5", "table3"} <= set(info["not_built"]) and "fig6" in info["figures"]
    assert "figures/fedadmm_gong/fig3.pdf" not in info["targets"]
    assert "experiment scaling is left out of the verify build" in info["not_built"]["fig3"]
    text = skipped_markdown({}, outputs, DataPlan({"data": {"download": False}}))
    assert "| fedadmm_gong/table3 | experiment table3 is left out of the verify build (config verify.leave_out) |" in text
    assert not paper_outputs(_gong_verify(0), all_cells(_gong_verify(0)), {})["fedadmm_gong"]["not_built"]


def test_a_leave_out_that_names_no_experiment_or_paper_is_refused_before_any_job():
    from fedrepro.core.params import ConfigError
    from fedrepro.experiments.expansion import load_experiments

    with pytest.raises(ConfigError, match=r"verify.leave_out.fedadmm_gong: \['tabel3'\] are not experiments"):
        load_experiments(_gong_verify(1, ["tabel3"]))
    with pytest.raises(ConfigError, match=r"verify.leave_out: \['gong'\] are not paper keys"):
        load_experiments({**_gong_verify(1), "verify": {"look": 1, "leave_out": {"gong": ["table3"]}}})


def test_config_yaml_leaves_out_experiments_whose_own_targets_can_decide():
    """The shipped leave_out (config.yaml) names experiments whose verify scale runs the 7 seeds with which a look at
    0.025 decides anything (docs/verdicts.md), so that a claim they feed, built alone, can be decided."""
    import yaml

    from fedrepro.experiments.config import resolve_scale
    from fedrepro.experiments.expansion import load_experiments
    from fedrepro.papers.alone import claim_build

    config = yaml.safe_load(open("config.yaml"))
    left = config["verify"]["leave_out"]
    blocks = load_experiments({**config, "scale": "verify", "verify": {**config["verify"], "look": 1}})
    for paper, exps in left.items():
        for e in exps:
            assert resolve_scale(blocks[paper][e], "verify").get("seeds", 1) >= 7, (paper, e)
    build = claim_build("fedadmm_gong", "q2_reduction_grows_with_m")       # reads scaling, left out above
    assert build.scale == "verify" and {c["instance"] for cs in build.cells.values() for c in cs} == set(range(7))


def test_why_an_experiment_has_no_cells_is_one_text_for_figures_and_claims():
    """One reason (expansion.why_not_in_build) for both the figures' ``not_built`` and the claims' ``why``:
    None when the experiment runs; the leave-out only in a look of the verify build; else its run_at."""
    from fedrepro.experiments.expansion import why_not_in_build
    from fedrepro.claims.completeness import ExpectedCells
    from fedrepro.claims.evaluate import _elsewhere

    look = {"scale": "verify", "verify": {"look": 1, "leave_out": {"p": ["e"]}}}
    assert why_not_in_build("p", "e", {}, {**look, "verify": {"look": 0, "leave_out": {"p": ["e"]}}}) is None
    assert why_not_in_build("p", "e", {}, look) == "is left out of the verify build (config verify.leave_out)"
    assert why_not_in_build("p", "f", {}, look) is None
    assert why_not_in_build("p", "f", {"run_at": ["paper"]}, look) == "runs at scale paper only (run_at)"
    assert _elsewhere(ExpectedCells("f", runs_here=False, run_at=("paper",))) == \
        "experiment f " + why_not_in_build("p", "f", {"run_at": ["paper"]}, look)
    assert _elsewhere(ExpectedCells("e", runs_here=False, left_out=True)).startswith(
        "experiment e " + why_not_in_build("p", "e", {}, look) + "; the claim's own target runs it")
