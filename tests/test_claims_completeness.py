"""Completeness (issue #43): a claim whose required cells are not all present is ``incomplete``, names
what is missing, and is never decided on a subset."""
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from fedrepro.claims import Replicates, evaluate
from fedrepro.claims.completeness import ExpectedCells, expected_cells, expected_for_paper, missing_cells
from fedrepro.experiments.expansion import all_cells, expand

ROOT = Path(__file__).resolve().parents[1]
BUILD = Path("/work/build-f")            # a quick-scale build of the five papers (c3a5d8d), when present

BLOCK = {"problem": {"name": "linreg_synthetic", "m": 10, "n": 10},
         "algorithms": {"fedadmm": {}, "fedavg": {"step_c": 0.5}},
         "grid": {"k0": [5, 10]}, "rho": 0.5, "seeds": 3, "max_rounds": 5, "stop": {"rule": "none"}}
CLAIM = {"id": "e_lower", "kind": "paper", "source": {"place": "Fig. 1", "quote": "lower"},
         "text": "our reading", "check": "lower", "compare": "lt", "paper_value": 0, "experiments": ["e"]}


def cells():
    return expand("p", "e", BLOCK, "quick")        # the workflow's own expansion: 2 algorithms x 2 k0 x 3 seeds


def frames_of(cs):
    """Synthetic trace and summary frames with one run per cell (two rounds in the trace)."""
    rows = [{"cell": c["cell"], "algorithm": c["algorithm"], "k0": c["columns"]["k0"], "instance": c["instance"],
             "round": r, "objective": (1.0 if c["algorithm"] == "fedadmm" else 2.0) + 0.01 * c["instance"] - 0.1 * r}
            for c in cs for r in (0, 1)]
    trace = pd.DataFrame(rows)
    return trace, trace[trace["round"] == 1].reset_index(drop=True)


class Recorder:
    """A check that records its calls: fedadmm's final objective minus fedavg's, paired by seed."""

    def __init__(self):
        self.calls = 0

    def __call__(self, frames, summaries):
        self.calls += 1
        s = summaries["e"].pivot_table(index=["k0", "instance"], columns="algorithm", values="objective")
        return Replicates((s["fedadmm"] - s["fedavg"]).to_numpy())


def run(cs_present, expected, skipped=None, timing=None):
    check = Recorder()
    trace, summary = frames_of(cs_present)
    summaries = {"e": summary, **({"e.timing": timing} if timing is not None else {})}
    table = evaluate([CLAIM], {"lower": check}, {"e": trace}, summaries, "p", skipped=skipped, expected=expected)
    return table.iloc[0], check


def test_one_missing_seed_makes_the_claim_incomplete_naming_it_and_the_check_is_never_run():
    cs = cells()
    assert len(cs) == 12
    gone = next(c for c in cs if c["algorithm"] == "fedavg" and c["columns"]["k0"] == 10 and c["instance"] == 1)
    row, check = run([c for c in cs if c is not gone], {"e": cs})
    assert row["verdict"] == "incomplete"
    assert check.calls == 0                                    # never decided on the 11 cells present
    assert row["why"] == f"e: 1 of 12 cells missing: algorithm=fedavg k0=10 instance=1 (cell {gone['cell']})"
    assert row["our_value"] == "—"


def test_all_cells_present_the_check_runs():
    cs = cells()
    row, check = run(cs, {"e": cs})
    assert check.calls == 1 and row["verdict"] == "holds"       # fedadmm 1 below fedavg at every seed


def test_a_cell_in_the_trace_but_not_the_summary_is_missing():
    cs = cells()
    check = Recorder()
    trace, summary = frames_of(cs)
    summary = summary[summary["cell"] != cs[0]["cell"]]
    table = evaluate([CLAIM], {"lower": check}, {"e": trace}, {"e": summary}, "p", expected={"e": cs})
    assert table.iloc[0]["verdict"] == "incomplete" and cs[0]["cell"] in table.iloc[0]["why"] and check.calls == 0


def test_many_missing_cells_are_counted_and_the_first_few_named():
    cs = cells()
    row, check = run([c for c in cs if c["algorithm"] == "fedadmm"], {"e": cs})
    assert row["verdict"] == "incomplete" and check.calls == 0
    assert row["why"].startswith("e: 6 of 12 cells missing: algorithm=fedavg") and row["why"].endswith("; ...")
    assert row["why"].count("(cell ") == 3


def test_unavailable_dataset_stays_unavailable():
    cs = cells()
    check = Recorder()
    table = evaluate([CLAIM], {"lower": check}, {}, {}, "p", skipped={"e": ["mnist"]}, expected={"e": cs})
    assert table.iloc[0]["verdict"] == "unavailable" and "mnist" in table.iloc[0]["why"] and check.calls == 0


def test_an_absent_results_file_is_incomplete_with_or_without_expected_cells():
    cs = cells()
    for expected in ({"e": cs}, None):
        check = Recorder()
        row = evaluate([CLAIM], {"lower": check}, {}, {}, "p", expected=expected).iloc[0]
        assert row["verdict"] == "incomplete" and "results missing" in row["why"] and check.calls == 0
    row = evaluate([CLAIM], {"lower": Recorder()}, {}, {}, "p", expected={"e": cs}).iloc[0]
    assert row["why"] == "e: results missing: no e.parquet or e.summary.parquet (all 12 cells missing)"


def test_the_timing_pass_needs_every_cell_at_every_repetition():
    cs = cells()
    exp = {"e": ExpectedCells("e", tuple(cs), timing_repeats=3)}
    timing = pd.DataFrame([{"cell": c["cell"], "repeat": r} for c in cs for r in range(3)])
    row, check = run(cs, exp, timing=timing)
    assert row["verdict"] == "holds" and check.calls == 1
    short = timing[~((timing["cell"] == cs[4]["cell"]) & (timing["repeat"] == 2))]
    row, check = run(cs, exp, timing=short)
    assert row["verdict"] == "incomplete" and check.calls == 0
    assert "timing pass: 1 of 12 cells without all 3 repetitions" in row["why"] and cs[4]["cell"] in row["why"]
    row, check = run(cs, exp)                                  # no timing file at all
    assert row["verdict"] == "incomplete" and "no e.timing.parquet" in row["why"] and check.calls == 0


def test_an_experiment_without_expected_cells_or_a_frame_without_cell_ids_is_an_error():
    cs = cells()
    trace, summary = frames_of(cs)
    with pytest.raises(ValueError, match="no expected cells given for experiment 'e'"):
        evaluate([CLAIM], {"lower": Recorder()}, {"e": trace}, {"e": summary}, "p", expected={"other": cs})
    with pytest.raises(ValueError, match="has no 'cell' column"):
        missing_cells(ExpectedCells("e", tuple(cs)), trace.drop(columns="cell"), summary)


def test_expected_cells_are_the_workflows_cells_with_overrides():
    config = {"scale": "quick", "seed": 7, "papers": ["fedepm"],
              "paper_overrides": {"fedepm": {"variants": {"scales": {"quick": {"seeds": 1}}}}}}
    ours = expected_cells("fedepm", "variants", "quick", config, ROOT)
    theirs = all_cells(config, ROOT)[("fedepm", "variants")]
    assert ours.ids == [c["cell"] for c in theirs] and ours.timing_repeats is None
    plain = expected_cells("fedepm", "variants", "quick", {**config, "paper_overrides": {}}, ROOT)
    assert len(ours.cells) < len(plain.cells)                  # the override's seeds are the build's
    assert expected_cells("fedepm", "table1", "verify", config, ROOT).timing_repeats == 2    # 7 trials x 2
    with pytest.raises(ValueError, match="not defined"):
        expected_cells("fedepm", "nope", "quick", config, ROOT)


needs_build = pytest.mark.skipif(not (BUILD / "results/fedepm/variants.summary.parquet").exists(),
                                 reason="the quick build's results are not on this machine")


def _build_config():
    return yaml.safe_load((BUILD / "config.yaml").read_text())


@needs_build
def test_the_quick_build_has_every_cell_of_fedepm_and_frpg():
    config = _build_config()
    for paper, experiments in (("fedepm", ["fig3", "variants", "stop_paper"]), ("frpg", None)):
        if experiments is None:
            experiments = sorted(p.name[:-len(".summary.parquet")]
                                 for p in (BUILD / "results" / paper).glob("*.summary.parquet"))
        for e, exp in expected_for_paper(paper, experiments, "quick", config, ROOT).items():
            trace = pd.read_parquet(BUILD / f"results/{paper}/{e}.parquet", columns=["cell"])
            summary = pd.read_parquet(BUILD / f"results/{paper}/{e}.summary.parquet", columns=["cell"])
            assert not missing_cells(exp, trace, summary), (paper, e)


@needs_build
def test_a_cell_removed_from_a_copy_of_the_build_names_it(tmp_path):
    from fedrepro.papers.registry import evaluate_paper
    config = _build_config()
    results = tmp_path / "results"
    shutil.copytree(BUILD / "results/fedepm", results / "fedepm")
    complete, _ = evaluate_paper("fedepm", results, root=ROOT, scale="quick", config=config)
    assert not (complete["verdict"] == "incomplete").any()
    gone = expected_cells("fedepm", "fig3", "quick", config, ROOT).cells[37]
    for name in ("fig3.parquet", "fig3.summary.parquet"):
        df = pd.read_parquet(results / "fedepm" / name)
        df[df["cell"] != gone["cell"]].to_parquet(results / "fedepm" / name)
    table, markdown = evaluate_paper("fedepm", results, root=ROOT, scale="quick", config=config)
    hit = table[table["verdict"] == "incomplete"]
    uses_fig3 = {c["id"] for c in yaml.safe_load((ROOT / "fedrepro/papers/fedepm/claims.yaml").read_text())["claims"]
                 if "fig3" in (c.get("experiments") or [])}
    assert set(hit["claim"]) == uses_fig3
    assert hit["why"].str.startswith(f"fig3: 1 of 150 cells missing: algorithm={gone['algorithm']}").all()
    assert gone["cell"] in markdown


def test_an_experiment_not_run_at_this_scale_leaves_its_claims_undecided_saying_so(tmp_path):
    """run_at: [verify, paper] -> no cells at quick (all_cells), its claims undecided with the reason and their
    check never run; at verify the experiment expands as before. A scale not in the list is refused."""
    from fedrepro.experiments.config import validate_experiment

    block = {**BLOCK, "run_at": ["verify", "paper"]}
    config = {"scale": "quick", "papers": [], "experiments": {"e": block, "f": BLOCK}}
    assert set(all_cells(config)) == {("custom", "f")}
    assert len(all_cells({**config, "scale": "verify"})[("custom", "e")]) == len(expand("custom", "e", BLOCK, "verify"))
    expected = {"e": ExpectedCells("e", runs_here=False, run_at=("verify", "paper"))}
    rec = Recorder()
    row = evaluate([CLAIM], {"lower": rec}, {}, {}, "p", scale="quick", expected=expected).iloc[0]
    assert row["verdict"] == "undecided" and not rec.calls
    assert row["why"] == "not decided at this scale: experiment e runs at scale verify and paper only (run_at)"
    validate_experiment(block, "experiment custom/e")
    with pytest.raises(Exception, match="run_at"):
        validate_experiment({**BLOCK, "run_at": ["fast"]}, "experiment custom/e")
