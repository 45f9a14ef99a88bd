"""Claims built alone (issue #43, fedrepro.papers.alone): a claim's target runs only its cells at the scale that
decides it (dry runs of the workflow's DAG), its bill is the sum of its cells' estimates, fedadmm_gong's FedADMM
round-count claims run FedADMM alone capped at the band's edge and stopped at the target, and claims.md gives
each undecided claim's command and bill."""
from __future__ import annotations

import math
import os
import re
import subprocess
from pathlib import Path

import pytest

from fedrepro.papers.alone import (ClaimTarget, bill, bill_text, cell_cost, claim_build, claim_scale, command, runs,
                                   undecided_bills)
from fedrepro.core.params import ConfigError
from fedrepro.experiments.resources import (cell_memory_mb, cell_runtime_min, cost_kind_id, load_measured_bill,
                                            measured_cpu_s, modelled_cell_seconds)
from tests.test_workflow import SNAKEMAKE

ROOT = Path(__file__).resolve().parents[1]
GONG_ROUNDS = ("table3_fedadmm_rounds", "table3_fedadmm_rounds_alg1", "table4_rounds", "table5_fedadmm_rounds")


def claim_dry_run(tmp_path, *config, env=None, configfile=None):
    """A dry run of a claim target in an empty working directory (every job of its DAG is listed)."""
    env = {k: v for k, v in {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}.items()}
    files = ["--configfile", str(configfile)] if configfile else []
    return subprocess.run([SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "-d", str(tmp_path / "w"), "-n", "-j", "1",
                           *files, "--config", *config], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def jobs(stdout: str) -> list[dict]:
    """The jobs of a dry run's listing: rule, output and resources."""
    out = []
    for block in re.split(r"\n(?=rule \w+:)", stdout):
        m = re.match(r"rule (\w+):", block)
        if not m:
            continue
        outputs = re.search(r"^\s+output: (.+)$", block, re.M)
        res = re.search(r"^\s+resources: (.+)$", block, re.M)
        out.append({"rule": m.group(1), "output": outputs.group(1).split(", ") if outputs else [],
                    "resources": dict(kv.split("=", 1) for kv in res.group(1).split(", ")) if res else {}})
    return out


# ---- the DAG of a claim target -------------------------------------------------------------------------
@pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed in this environment")
def test_claim_dag_holds_only_its_cells(tmp_path):
    # synthetic data (no dataset needed); one cell per job so that a job's output names its cell
    one = tmp_path / "one_cell_per_job.yaml"
    one.write_text("cells_per_job: {quick: 1, verify: 1, reduced: 1, paper: 1}\n")
    res = claim_dry_run(tmp_path, "claim=fedadmm_zhou/fig4_ls_cr_falls_with_m", configfile=one)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    build = claim_build("fedadmm_zhou", "fig4_ls_cr_falls_with_m")
    assert build.scale == "verify"                  # no testable_at: the default scale
    listed = jobs(res.stdout)
    ran = {o for j in listed if j["rule"] == "run_cells" for o in j["output"]}
    assert ran == {f"results/cells/fedadmm_zhou/fig4_ls/{c['cell']}.parquet" for c in runs(build.cells)}
    rules = {j["rule"] for j in listed}
    assert rules == {"run_cells", "claim_aggregate", "claim_alone", "all"}, rules
    outputs = {o for j in listed for o in j["output"]}
    assert "results/fedadmm_zhou/claims/fig4_ls_cr_falls_with_m.md" in outputs
    assert "results/fedadmm_zhou/claims/fig4_ls_cr_falls_with_m/fig4_ls.parquet" in outputs
    # the normal build's aggregates, claims table and figures are no part of it
    assert not any(re.fullmatch(r"results/fedadmm_zhou/[a-z0-9_]+\.(parquet|md)", o) for o in outputs)
    assert not any(o.startswith("figures/") for o in outputs)


@pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed in this environment")
def test_gong_round_count_dag_runs_fedadmm_alone_with_the_cells_requests(mirror, tmp_path):
    res = claim_dry_run(tmp_path, "claim=fedadmm_gong/table4_rounds", env={"FEDREPRO_DATA_MIRROR": str(mirror)})
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    build = claim_build("fedadmm_gong", "table4_rounds")
    cells = {f"results/cells/fedadmm_gong/table4/{c['cell']}.parquet": c for c in runs(build.cells)}
    listed = [j for j in jobs(res.stdout) if j["rule"] == "run_cells"]
    assert {j["output"][0] for j in listed} == set(cells) and len(cells) == 60
    for j in listed:              # the SLURM profile's requests: the rule's resources, from the measured bill
        cell = cells[j["output"][0]]
        assert int(j["resources"]["runtime"]) == cell_runtime_min(cell, "paper")
        assert int(j["resources"]["mem_mb"]) == cell_memory_mb(cell)


@pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed in this environment")
def test_unknown_claim_is_an_error_naming_the_ids(tmp_path):
    res = claim_dry_run(tmp_path, "claim=fedadmm_zhou/no_such_claim")
    assert res.returncode != 0
    said = res.stdout + res.stderr
    assert "has no claim 'no_such_claim'" in said and "fig4_ls_cr_falls_with_m" in said


def test_claim_name_and_scale():
    with pytest.raises(ConfigError, match="<paper>/<claim id>"):
        from fedrepro.papers.alone import split_name
        split_name("fedadmm_gong")
    assert claim_scale({"testable_at": ["verify", "paper"]}) == "verify"
    assert claim_scale({"testable_at": ["paper"]}) == "paper"
    assert claim_scale({}) == "verify"
    assert claim_scale({"testable_at": ["paper"]}, given="quick") == "quick"
    assert claim_scale({"testable_at": ["verify"]}, ClaimTarget(scale="paper")) == "paper"


# ---- the bill ------------------------------------------------------------------------------------------
def test_bill_is_the_sum_of_its_cells_estimates():
    build = claim_build("fedadmm_gong", "table4_rounds")
    entries = load_measured_bill()
    expected = sum(measured_cpu_s(c, entries[cost_kind_id(c)]) for c in runs(build.cells))
    b = bill(build)
    assert b["runs"] == 60 and b["by"] == {"measured": 60}
    assert b["cpu_s"] == pytest.approx(expected) and b["cpu_h"] == pytest.approx(expected / 3600)
    assert b["requested_h"] == pytest.approx(sum(cell_runtime_min(c, "paper") for c in runs(build.cells)) / 60)
    # without a measured bill: the work model, cell by cell
    none = bill(build, entries={})
    assert none["by"] == {"work model": 60}
    assert none["cpu_s"] == pytest.approx(sum(modelled_cell_seconds(c) for c in runs(build.cells)))
    assert f"{b['cpu_h']:,.2f} CPU-hours, 60 runs at scale paper" in bill_text(b)


def test_bill_counts_a_copied_run_once():
    build = claim_build("fedadmm_zhou", "fewest_cr_and_fastest_overall")
    every = [c for cs in build.cells.values() for c in cs]
    ran = runs(build.cells)
    assert len(ran) <= len(every)
    assert bill(build)["cpu_s"] == pytest.approx(sum(cell_cost(c)[0] for c in ran))


def test_bill_command_line(capsys):
    from fedrepro.papers.bill import main

    assert main(["fedadmm_gong", "table5_fedadmm_rounds"]) == 0
    out = capsys.readouterr().out
    b = bill(claim_build("fedadmm_gong", "table5_fedadmm_rounds"))
    assert f"{b['cpu_h']:,.2f} CPU-hours" in out
    assert "snakemake --profile workflow/profiles/slurm --config claim=fedadmm_gong/table5_fedadmm_rounds" in out
    assert main(["fedadmm_gong", "nope"]) == 2


# ---- fedadmm_gong's FedADMM round counts ---------------------------------------------------------------
def test_gong_round_counts_run_fedadmm_alone_capped_at_the_band_edge():
    from fedrepro.papers.fedadmm_gong.analysis import PAPER_TABLE3, PAPER_TABLE4, PAPER_TABLE5, TABLE3_COLUMNS
    from fedrepro.papers.fedadmm_gong.claim_targets import TABLE5_COLUMNS

    level = {"mnist": 0.97, "fashion_mnist": 0.80, "cifar10": 0.45}
    sizes = {"table3_fedadmm_rounds": 40, "table3_fedadmm_rounds_alg1": 40, "table4_rounds": 60,
             "table5_fedadmm_rounds": 40}
    for claim_id in GONG_ROUNDS:
        build = claim_build("fedadmm_gong", claim_id)
        assert build.scale == "paper"
        cells = runs(build.cells)
        assert len(cells) == sizes[claim_id]
        assert {c["algorithm"] for c in cells} == {"fedadmm_gong"}
        for c in cells:
            ds, part = c["problem"]["dataset"], c["problem"]["partition"]
            if c["experiment"].startswith("table3"):
                paper = PAPER_TABLE3["FedADMM"][TABLE3_COLUMNS.index(c["columns"]["setting"])]
            elif c["experiment"] == "table4":
                paper = PAPER_TABLE4[(ds, part)][(1, 5, 10).index(c["params"]["E"])]
            else:
                paper = PAPER_TABLE5[(ds, "FedADMM")][TABLE5_COLUMNS.index((c["problem"]["m"], part))]
            assert c["max_rounds"] == math.ceil(1.5 * paper)
            assert c["stop"] == {"rule": "reached", "metric": "test_accuracy", "level": level[ds]}
    twin = claim_build("fedadmm_gong", "table3_fedadmm_rounds_alg1")
    assert twin.cells[("fedadmm_gong", "table3")] == []           # Algorithm 1's runs replace table3's FedADMM
    assert {c["params"]["local_init"] for c in runs(twin.cells)} == {"local"}
    assert twin.experiments_with_cells() == ["table3_alg1"]


def test_gong_round_count_targets_are_the_cnns():
    with pytest.raises(ConfigError, match="build the claim at scale paper"):
        claim_build("fedadmm_gong", "table4_rounds", scale="verify")


def test_adjusted_cells_are_new_cells():
    from fedrepro.experiments.expansion import all_cells
    from fedrepro.experiments.yamlio import read_yaml

    build = claim_build("fedadmm_gong", "table5_fedadmm_rounds")
    config = {**read_yaml(ROOT / "config.yaml"), "scale": "paper", "papers": ["fedadmm_gong"], "experiments": {}}
    paper_ids = {c["cell"] for (p, e), cs in all_cells(config, ROOT).items() if e == "table5" for c in cs}
    assert not {c["cell"] for c in runs(build.cells)} & paper_ids


def test_reached_stop_rule():
    from fedrepro.sim.stopping import build_stop, check_stop_needs, validate_stop_spec

    rule = build_stop({"rule": "reached", "metric": "test_accuracy", "level": 0.97}, problem=None)
    assert rule.check([{"round": 0, "test_accuracy": 0.99}]) is None        # round 0 is no round
    assert rule.check([{"round": 4, "test_accuracy": 0.9699}]) is None
    assert rule.check([{"round": 5, "test_accuracy": 0.97 - 1e-13}]) == "reached"  # the readings' slack
    with pytest.raises(ValueError, match="reads \\['test_accuracy'\\]"):
        check_stop_needs(rule, ["objective"])
    with pytest.raises(ValueError, match="needs \\['level'\\]"):
        build_stop({"rule": "reached", "metric": "test_accuracy"}, problem=None)
    with pytest.raises(ValueError, match="level='high' is not allowed"):
        validate_stop_spec({"rule": "reached", "metric": "test_accuracy", "level": "high"})


# ---- claims.md -----------------------------------------------------------------------------------------
def test_claims_md_gives_command_and_bill_of_an_undecided_claim():
    from fedrepro.claims.evaluate import evaluate, load_claims, to_markdown
    from fedrepro.papers.registry import checks, undecided_alone

    claims = [c for c in load_claims("fedadmm_gong") if c["id"] in ("table4_rounds", "table2_param_counts")]
    table = evaluate(claims, checks("fedadmm_gong"), {}, {}, "fedadmm_gong", scale="quick")
    assert dict(zip(table["claim"], table["verdict"]))["table4_rounds"] == "incomplete"   # no results: incomplete, built alone
    alone = undecided_alone(table, "fedadmm_gong")
    assert "table2_param_counts" not in alone                # decided here (it reads no results)
    md = to_markdown(table, "fedadmm_gong", alone=alone)
    b = bill(claim_build("fedadmm_gong", "table4_rounds"))
    row = next(line for line in md.splitlines() if line.startswith("| table4_rounds | `"))
    assert f"`{command(claim_build('fedadmm_gong', 'table4_rounds'))}`" in row
    assert f"{b['cpu_h']:,.2f} CPU-hours" in row
    assert "## Undecided claims built alone" in md
    assert "## Undecided claims built alone" not in to_markdown(table, "fedadmm_gong")


def test_undecided_bills_say_why_a_claim_has_no_target():
    out = undecided_bills("fedadmm_gong", ["table2_param_counts"])
    assert out["table2_param_counts"][0] == "—" and "names no experiments" in out["table2_param_counts"][1]


def test_a_kind_the_bill_lacks_is_calibrated_on_its_groups_samples():
    from fedrepro.papers.alone import calibrated_entry

    build = claim_build("fedadmm_gong", "table3_fedadmm_rounds_alg1")      # Algorithm 1's kinds: not sampled
    cells = runs(build.cells)
    assert not any(cost_kind_id(c) in load_measured_bill() for c in cells)
    entries = [calibrated_entry(c) for c in cells]
    assert all(e is not None and e["ratio"] > 0 for e in entries)
    b = bill(build)
    assert b["by"] == {"calibrated here": 40}
    assert b["cpu_s"] == pytest.approx(sum(measured_cpu_s(c, e) for c, e in zip(cells, entries)))
    # below the uncalibrated work model (the FLOP rate it assumes is a conservative 10 GFLOP/s)
    assert b["cpu_s"] < sum(modelled_cell_seconds(c) for c in cells)


@pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed in this environment")
def test_a_scale_given_with_the_claim_wins(tmp_path):
    given = tmp_path / "quick.yaml"
    given.write_text("scale: quick\ncells_per_job: {quick: 1, verify: 1, reduced: 1, paper: 1}\n")
    res = claim_dry_run(tmp_path, "claim=fedadmm_zhou/fig4_ls_cr_falls_with_m", configfile=given)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    quick = claim_build("fedadmm_zhou", "fig4_ls_cr_falls_with_m", scale="quick")
    ran = {o for j in jobs(res.stdout) if j["rule"] == "run_cells" for o in j["output"]}
    assert ran == {f"results/cells/fedadmm_zhou/fig4_ls/{c['cell']}.parquet" for c in runs(quick.cells)}
    assert len(ran) < len(runs(claim_build("fedadmm_zhou", "fig4_ls_cr_falls_with_m").cells))
    # a scale given with --config (read by the Snakefile's config hook) wins over a --configfile's
    other = tmp_path / "verify.yaml"
    other.write_text("scale: verify\ncells_per_job: {quick: 1, verify: 1, reduced: 1, paper: 1}\n")
    res = claim_dry_run(tmp_path, "claim=fedadmm_zhou/fig4_ls_cr_falls_with_m", "scale=quick", configfile=other)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert {o for j in jobs(res.stdout) if j["rule"] == "run_cells" for o in j["output"]} == ran


def test_a_run_stopped_at_the_target_gives_the_full_runs_rounds_to_target(tmp_path):
    """The stop rule ends a run at the round the reading counts, its rows those of the full run up to there."""
    import numpy as np

    from fedrepro.experiments.expansion import expand
    from fedrepro.experiments.runner import run_cell
    from tests.test_neural_problem import fake_images

    fake_images().save(tmp_path / "mnist")
    block = {"problem": {"name": "neural", "model": "mlp1", "dataset": "mnist", "m": 10, "partition": "iid",
                         "train_size": 200},
             "algorithms": {"fedadmm_gong": {"E": 1, "B": 20}}, "metrics": ["test_accuracy"],
             "datasets": ["mnist"], "rho": 0.5, "max_rounds": 8, "eval_every": 1, "seeds": 1}
    full = run_cell(expand("custom", "nn", block)[0], data_dir=str(tmp_path))
    acc = full["test_accuracy"].to_numpy()
    level = float(acc[1:].max())                          # reached first at some round r >= 1
    first = int(full["round"].to_numpy()[1:][np.argmax(acc[1:] >= level - 1e-12)])
    stopped = run_cell(expand("custom", "nn", {**block, "stop": {"rule": "reached", "metric": "test_accuracy",
                                                                  "level": level}})[0], data_dir=str(tmp_path))
    assert first < 8                                      # (it stops before the cap)
    assert stopped["round"].tolist() == list(range(first + 1))
    assert stopped["stop_reason"].iloc[-1] == "reached" and stopped["status"].iloc[-1] == "converged"
    np.testing.assert_array_equal(stopped["test_accuracy"].to_numpy(), acc[:first + 1])


def test_gong_round_count_readings_on_fedadmm_alone_equal_those_on_every_run(tmp_path):
    """The cells a target drops are no part of the reading: on frames holding only the target's algorithms (none of
    table3's for the Algorithm 1 twin) the claim's value and verdict are those of the whole experiments."""
    import pandas as pd

    from fedrepro.papers.registry import evaluate_alone
    from fedrepro.claims.evaluate import evaluate, load_claims
    from fedrepro.papers.fedadmm_gong.analysis import MLP_TARGETS, TABLE3_COLUMNS
    from fedrepro.papers.registry import checks
    from tests.test_fedadmm_gong_paper import _table3, ramp, run

    cols = TABLE3_COLUMNS[:2]
    frames = _table3({s: {"FedADMM": [5, 6, 5], "FedAvg": [9, 10, 9], "FedProx": 12, "SCAFFOLD": 10}
                      for s in cols}, seeds=(0, 1, 2))
    frames["table3_alg1"] = pd.concat([run("table3_alg1", "FedADMM", ramp(15, level=MLP_TARGETS["local"]["mnist"]),
                                           setting=s, seed=seed, E=5, local_init="local")
                                       for s in cols for seed in (0, 1, 2)], ignore_index=True)
    summaries = {e: f.groupby("cell", as_index=False).last() for e, f in frames.items() if not f.empty}
    claims = {c["id"]: c for c in load_claims("fedadmm_gong")}
    for claim_id in ("table3_fedadmm_rounds", "table3_fedadmm_rounds_alg1"):
        claim = claims[claim_id]
        whole = evaluate([claim], checks("fedadmm_gong"), frames, summaries, "fedadmm_gong", scale="paper")
        build = claim_build("fedadmm_gong", claim_id)
        folder = tmp_path / claim_id
        folder.mkdir()
        for e in build.experiments_with_cells():
            keep = build.target.algorithms.get(e)
            part = frames[e][frames[e]["algorithm"].isin(keep)] if keep else frames[e]
            assert 0 < len(part) < len(frames[e]) or e == "table3_alg1"
            part.to_parquet(folder / f"{e}.parquet")
            part.groupby("cell", as_index=False).last().to_parquet(folder / f"{e}.summary.parquet")
        alone, md = evaluate_alone(build, folder)
        assert alone["our_value"].iloc[0] == whole["our_value"].iloc[0] != "—"
        assert alone["verdict"].iloc[0] == whole["verdict"].iloc[0]
        assert f"`{command(build)}`" in md and "Cells: " in md


def test_a_reading_that_names_its_algorithms_runs_theirs_only():
    from fedrepro.papers.alone import reading_algorithms

    q = {"of": {"where": {"algorithm": "drfa_prox"}, "final": "acc_w"},
         "minus": {"where": {"algorithm": ["afl", "erm"]}, "final": "acc_w"}}
    assert reading_algorithms(q) == {"drfa_prox", "afl", "erm"}
    assert reading_algorithms({**q, "where": {"algorithm": ["afl", "drfa_prox"]}}) == {"drfa_prox", "afl"}
    assert reading_algorithms({"of": {"final": "acc_w"}, "minus": q["minus"]}) is None     # `of` reads any
    assert reading_algorithms({**q, "frame": "chosen"}) is None                  # a view: its own combination
    assert reading_algorithms({"components": [{"of": {"where": {"algorithm": "a"}, "column": "x"}},
                                              {"of": {"column": "x"}}]}) is None
    assert reading_algorithms({"where": {"algorithm": "a"}, "components": [{"of": {"column": "x"}}]}) == {"a"}
    from fedrepro.experiments.expansion import all_cells
    from fedrepro.experiments.yamlio import read_yaml

    build = claim_build("aspire", "t3_drfa_beats_afl_shl")
    assert build.scale == "verify"
    config = {**read_yaml(ROOT / "config.yaml"), "scale": "verify", "papers": ["aspire"], "experiments": {}}
    whole = all_cells(config, ROOT)[("aspire", "table3_shl")]
    assert {c["algorithm"] for c in whole} > {"afl", "drfa_prox"}
    assert {c["cell"] for c in runs(build.cells)} == {c["cell"] for c in whole if c["algorithm"] in ("afl", "drfa_prox")}


def test_a_claim_is_not_built_at_a_scale_its_experiment_does_not_run_at():
    """aspire's figure sweeps run at verify and paper only (run_at): building one of their claims at quick is
    refused naming the experiment and the scale that decides it; its default scale builds it."""
    from fedrepro.core.params import ConfigError

    with pytest.raises(ConfigError, match=r"experiment 'sweep_fig2' runs at scale verify and paper only .* "
                                          r"use --config scale=verify"):
        claim_build("aspire", "f2_adp_adapts", scale="quick")
    assert claim_build("aspire", "f2_adp_adapts").scale == "verify"
