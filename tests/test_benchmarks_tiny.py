"""Every script in benchmarks/ runs in its tiny mode (seconds) and names the BLAS it ran with.

The benchmarks are run on demand, not in CI; their tiny modes are what keeps them working (two of them
imported a function that had moved, unnoticed, before these tests). Each runs in a subprocess with this
checkout first on the import path, in a temporary folder, with the environment as it is (the BLAS
kernel variables are never changed here). Scripts that need data read it through the mirror: a
temporary ``processed`` folder gets Adult, USPS and an 8,000-image subset of MNIST (6,000 training,
2,000 test images) built by the package's loaders.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
# fedrepro.core.blas.describe: "BLAS: openblas 0.3.31 (SkylakeX kernel, 1 thread)..."
BLAS_LINE = re.compile(r"BLAS: \S+ \S+ \((\S+) kernel, \d+ threads?\)")


@pytest.fixture(scope="module")
def processed(mirror, tmp_path_factory) -> Path:
    from fedrepro.data import load_dataset
    from fedrepro.data.dataset import Dataset

    root = tmp_path_factory.mktemp("bench_data")
    out = root / "processed"
    out.mkdir()
    for name in ("adult", "usps"):
        load_dataset(name, cache_dir=root / "raw", mirror=mirror, download=False).save(out / name)
    mnist = load_dataset("mnist", cache_dir=root / "raw", mirror=mirror, download=False)
    train, test = np.flatnonzero(mnist.split == "train"), np.flatnonzero(mnist.split == "test")
    keep = np.concatenate([train[:6000], test[:2000]])
    Dataset(mnist.name, mnist.X[keep], mnist.y[keep], mnist.split[keep], meta=mnist.meta).save(out / "mnist")
    return out


def run_tiny(script: str, *args, cwd: Path) -> str:
    # one numba thread: the parallel kernels would be compiled in every process (seconds each)
    env = dict(os.environ, NUMBA_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--tiny", *map(str, args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{script} --tiny failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr and "Warning" not in proc.stderr, proc.stderr[-3000:]
    kernels = BLAS_LINE.findall(proc.stdout)
    assert kernels and all(kernels), f"{script} does not name its BLAS kernel:\n{proc.stdout[:2000]}"
    return proc.stdout


def assert_machine_record(record: dict):
    assert record["blas"] and all(lib["architecture"] and lib["threads"] >= 1 for lib in record["blas"])
    assert set(record["kernel_env"]) == {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"}
    assert len(record["loadavg"]) == 3 and record["cpu"]


@pytest.mark.parametrize("script", ["bench_fedadmm_zhou.py", "bench_local_loop.py", "bench_store.py"])
def test_synthetic_benchmarks(script, tmp_path):
    out = run_tiny(script, cwd=tmp_path)
    assert "machine" in out


def test_bench_nn_numpy_side(tmp_path):
    run_tiny("bench_nn.py", "--out", tmp_path / "nn.json", cwd=tmp_path)
    result = json.loads((tmp_path / "nn.json").read_text())
    assert [row["bench"] for row in result["rows"]] == ["cnn1_step", "fedavg_mlp1"]
    (run,) = result["runs"]
    assert_machine_record(run["machine"])
    assert run["kernel_setting"] == "inherit"
    assert all(row["numpy_ms"] > 0 and row["numpy_blas"] for row in result["rows"])


def test_quick_cost_one_cell(tmp_path):
    out = run_tiny("quick_cost.py", "fedadmm_zhou", "--only", "fig2_ls", cwd=tmp_path)
    assert "cells: 1" in out and "worker_blas" in out


def test_bench_fedepm(processed, tmp_path):
    out = run_tiny("bench_fedepm.py", "--data", processed, cwd=tmp_path)
    assert "ENS:" in out and "FedEPM run:" in out


def test_bench_glm_kernels(processed, tmp_path):
    run_tiny("bench_glm_kernels.py", "--data-dir", processed, "--out", tmp_path / "glm.json", cwd=tmp_path)
    result = json.loads((tmp_path / "glm.json").read_text())
    assert [row["algorithm"] for row in result["rows"]] == ["fedepm"]
    assert_machine_record(result["machine"])


def test_bench_frpg(processed, tmp_path):
    out = run_tiny("bench_frpg.py", "--dataset", "usps", "--data-dir", processed, cwd=tmp_path)
    assert "'rounds': 7" in out


def test_gong_targets(processed, tmp_path):
    run_tiny("gong_targets.py", "--data-dir", processed, "--out", tmp_path / "targets.json", cwd=tmp_path)
    result = json.loads((tmp_path / "targets.json").read_text())
    assert set(result["sequential_shared"]) == {"mnist"} and result["sequential_shared"]["mnist"]["T"] == 1
    assert_machine_record(result["machine"])


def test_gong_go16_sweep(processed, tmp_path):
    run_tiny("gong_go16_sweep.py", "--data-dir", processed, "--out", tmp_path / "go16.jsonl", cwd=tmp_path)
    (line,) = (tmp_path / "go16.jsonl").read_text().splitlines()
    cell = json.loads(line)
    assert (cell["variant"], cell["lr"], cell["rounds"]) == ("early", 0.1, 1)
    assert_machine_record(cell["machine"])


def test_bench_processed_load(tmp_path):
    out = run_tiny("bench_processed_load.py", cwd=tmp_path)
    assert "tiny: 1.5 MiB on disk" in out and out.count("peak RSS") == 2


def test_build_profile_summary(tmp_path):
    """The per-rule profile of a build (no timing of its own, so no BLAS line: the build's kernel is in
    results/provenance.md) summarises the records the rule scripts append."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "build_profile.py"), "--tiny", "--total-cpu", "10",
                           "--json", str(tmp_path / "p.json")], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "p.json").read_text())
    assert {r: s["jobs"] for r, s in summary["rules"].items()} == {"aggregate": 1, "figure": 1}
    assert summary["jobs_cpu_s"] == 4.0 and summary["scheduler_cpu_s"] == 6.0
    assert summary["span_s"] == 4.0 and summary["idle_core_s"] == 3.0      # one core idle in [0, 1) and [2, 4)
    assert summary["rules"]["figure"]["sys_s"] == 0.5                       # the kernel's share, from the records
    assert "| figure | 1 | 3 | 2 | 0 |" in proc.stdout


def test_speed_probe_records_one_probe(tmp_path):
    out = run_tiny("speed_probe.py", "--out", tmp_path / "probe.jsonl", cwd=tmp_path)
    (record,) = [json.loads(line) for line in (tmp_path / "probe.jsonl").read_text().splitlines()]
    assert record["python_ms"] > 0 and record["sgemm_ms"] > 0 and "python loop" in out


def test_bench_allocator(tmp_path):
    out = run_tiny("bench_allocator.py", cwd=tmp_path)
    assert ("keep_freed_memory" in out and "minor faults a step" in out and "minor faults a round" in out
            and "kept / fresh" in out) or "not glibc" in out


def test_every_benchmark_script_has_a_tiny_test():
    """Every script in benchmarks/ is run with --tiny by a test: here, or (paper_bill.py) in its own file."""
    text = "\n".join(p.read_text() for p in (ROOT / "tests").glob("test_*.py"))
    scripts = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_"))
    assert "--tiny" in text
    assert [s for s in scripts if f'{s}"' not in text] == []
