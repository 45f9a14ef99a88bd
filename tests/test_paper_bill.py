"""The measured paper-scale bill (issue #28): cost kinds, the extrapolation of a sample to a cell's
round budget, the requests with their margins, and the tiny mode of benchmarks/paper_bill.py."""
import json
import math
import subprocess
import sys
from pathlib import Path

from fedrepro.experiments import resources
from fedrepro.experiments.resources import (calibrate, cell_memory_mb, cell_round_bound, cell_runtime_min,
                                            cost_kind_id, estimated_memory_mb, estimated_runtime_min,
                                            measured_cell_cpu_s, measured_requests, modelled_cell_seconds)

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = {"start_cpu_s": 1.0, "setup_cpu_s": 2.0, "init_cpu_s": 0.5, "eval_cpu_s": 0.25, "round_cpu_s": 0.1,
          "virtual_time_per_round": None, "peak_mb": 800.0, "rounds_sampled": 10}
CELL = {"paper": "fedadmm_zhou", "algorithm": "fedavg", "params": {"step_c": 0.5}, "seed": 1, "instance": 0,
        "problem": {"name": "linreg_synthetic", "m": 100, "n": 100}, "k0": 5, "rho": 1.0, "max_rounds": 100,
        "eval_every": 10, "stop": {"rule": "target"}}


def test_cost_kind_keeps_what_sets_the_work_of_a_round():
    same = dict(CELL, seed=2, instance=7, params={"step_c": 2.0}, max_rounds=5, eval_every=1, stop=None)
    assert cost_kind_id(same) == cost_kind_id(CELL)
    for other in (dict(CELL, k0=6), dict(CELL, rho=0.5), dict(CELL, algorithm="fedprox"),
                  dict(CELL, problem={**CELL["problem"], "m": 200}), dict(CELL, params={"E": 5})):
        assert cost_kind_id(other) != cost_kind_id(CELL)


def test_a_sample_extrapolates_to_the_round_budget():
    # 100 rounds, evaluated at 0, 10, ..., 100: 11 evaluations
    assert math.isclose(measured_cell_cpu_s(CELL, SAMPLE), 1.0 + 2.0 + 0.5 + 11 * 0.25 + 100 * 0.1)
    # 105 rounds: 0, 10, ..., 100 and the last round
    assert math.isclose(measured_cell_cpu_s(dict(CELL, max_rounds=105), SAMPLE), 3.5 + 12 * 0.25 + 105 * 0.1)
    assert math.isclose(measured_cell_cpu_s(dict(CELL, max_rounds=0), SAMPLE), 3.5 + 0.25)
    # a virtual-time budget caps the rounds at 1.25 x budget / virtual time per round
    timed = dict(CELL, max_rounds=10_000, time_budget=40.0)
    assert cell_round_bound(timed, dict(SAMPLE, virtual_time_per_round=0.5)) == 100
    assert cell_round_bound(timed, SAMPLE) == 10_000          # no virtual clock measured: the round cap


def test_requests_add_the_stated_margins_and_fall_back_without_a_sample():
    entries = {cost_kind_id(CELL): SAMPLE}
    cpu = 3.5 + 11 * 0.25 + 100 * 0.1
    req = measured_requests(CELL, entries)
    assert req["runtime_min"] == math.ceil(1.5 * cpu / 60 + 5) == 6
    assert req["mem_mb"] == math.ceil(1.25 * 800 + 512) == 1512
    long = dict(CELL, max_rounds=100_000)
    assert measured_requests(long, entries)["runtime_min"] == math.ceil(1.5 * measured_cell_cpu_s(long, SAMPLE) / 60 + 5)
    assert measured_requests(dict(CELL, k0=6), entries) is None
    # a calibrated kind: the group's measured ratio times the work model; memory from the estimate
    # (the peak of a sample with the same problem and algorithm, else none)
    ratio = (cpu - 3.5) / modelled_cell_seconds(CELL)
    more_steps = dict(CELL, k0=6)
    calibrated = calibrate(more_steps, [(CELL, dict(SAMPLE, kind="x"))])
    assert math.isclose(calibrated["ratio"], ratio) and calibrated["peak_mb"] == 800
    req = measured_requests(more_steps, {cost_kind_id(more_steps): calibrated})
    assert math.isclose(req["cpu_s"], 3.5 + ratio * modelled_cell_seconds(more_steps))
    assert req["cpu_s"] > cpu and req["mem_mb"] == 1512
    bigger = dict(CELL, problem={**CELL["problem"], "m": 400})
    calibrated = calibrate(bigger, [(CELL, dict(SAMPLE, kind="x"))])
    assert calibrated["peak_mb"] is None
    assert measured_requests(bigger, {cost_kind_id(bigger): calibrated})["mem_mb"] == estimated_memory_mb(bigger)


def test_cell_requests_follow_the_measured_entries(monkeypatch):
    entries = {cost_kind_id(CELL): SAMPLE}
    monkeypatch.setattr(resources, "load_measured_bill", lambda: entries)
    assert cell_runtime_min(CELL, "paper") == 6 and cell_memory_mb(CELL) == 1512
    assert cell_runtime_min(CELL, "quick") == 30                   # convex cells: 30 min at quick and verify
    other = dict(CELL, k0=6)
    assert cell_runtime_min(other, "paper") == estimated_runtime_min(other, "paper")
    assert cell_memory_mb(other) == estimated_memory_mb(other)


def test_committed_bill_entries_are_complete():
    bill = json.loads(resources.MEASURED_BILL_FILE.read_text())
    assert bill["kinds"], "benchmarks/results/paper_bill.json has no samples"
    for sample in bill["kinds"].values():
        assert {"start_cpu_s", "setup_cpu_s", "init_cpu_s", "eval_cpu_s", "round_cpu_s", "peak_mb",
                "rounds_sampled", "date", "commit"} <= set(sample)
        assert sample["round_cpu_s"] >= 0 and sample["peak_mb"] > 0 and sample["rounds_sampled"] >= 1
    for entry in bill["calibrated"].values():
        assert entry["ratio"] > 0 and set(entry["from"]) <= set(bill["kinds"])


def test_tiny_mode_samples_two_kinds_and_prints_the_table(tmp_path):
    out = tmp_path / "bill.json"
    proc = subprocess.run([sys.executable, "benchmarks/paper_bill.py", "--tiny", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    bill = json.loads(out.read_text())
    assert len(bill["kinds"]) == 2 and not bill["unsampled"]
    for sample in bill["kinds"].values():
        assert sample["rounds_sampled"] == 1 and sample["round_cpu_s"] > 0 and sample["peak_mb"] > 0
    assert bill["calibrated"]                     # the other synthetic kinds of the sampled group
    assert "| fedadmm_zhou | 3,280 |" in proc.stdout and "2 of " in proc.stdout


def test_a_neural_round_scales_from_one_and_two_clients():
    import importlib.util

    spec = importlib.util.spec_from_file_location("paper_bill", ROOT / "benchmarks" / "paper_bill.py")
    bill = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bill)
    assert bill.clients_round_cpu(1.0, 1.8, 10) == 10.0           # the one-client round bounds b
    assert bill.clients_round_cpu(1.0, 2.4, 10) == 12.0           # half the two-client round, when larger
