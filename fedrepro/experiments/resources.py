"""Per-job resource requests of a cell (Snakemake ``threads``, ``mem_mb``, ``runtime``): from the
measured paper-scale bill (``benchmarks/results/paper_bill.json``, written by
``benchmarks/paper_bill.py``) when the cell's cost kind has a sample or a calibration there, with the
margins stated below; else from the work model: memory from the data, model and per-client stores it
holds; runtime from its FLOPs or data passes."""
from __future__ import annotations

import functools
import hashlib
import json
import math
from pathlib import Path

from fedrepro.data.plan import split_key


#: memory request of a job whose cells all copy an earlier experiment's run: the interpreter, pandas and
#: the source's results file (the aggregate jobs, which read such files, peaked at 180-290 MB in quick builds)
COPY_MEMORY_MB = 1024


def cell_memory_mb(cell: dict) -> int:
    """The memory request of a cell's job (Snakemake ``resources: mem_mb``; local runs respect it
    with ``--resources mem_mb=N``): from the measured peak of its kind's sample
    (:func:`measured_requests`) when :data:`MEASURED_BILL_FILE` has one, else
    :func:`estimated_memory_mb`."""
    measured = measured_requests(cell)
    return measured["mem_mb"] if measured else estimated_memory_mb(cell)


def estimated_memory_mb(cell: dict) -> int:
    """The work-model memory request of a cell (kinds without a sample). Neural problems: the estimate of
    :func:`fedrepro.core.store.run_memory_bytes` (data, model, per-client stores as the run's
    ``store`` setting holds them, declared by the algorithm's ``client_vectors``) plus 1 GiB for the
    interpreter and 25% headroom. Other problems: a generous fixed formula."""
    if (cell.get("problem") or {}).get("name") == "neural":
        return neural_cell_memory_mb(cell)
    if (cell.get("problem") or {}).get("name") == "worker_neural":
        return worker_cell_cost(cell)["mem_mb"]
    m = int((cell.get("problem") or {}).get("m", 100) or 100)
    n = int((cell.get("problem") or {}).get("n", 100) or 100)
    return int(min(64000, 1000 + 8 * 6 * m * max(n, 100) * 150 / 2**20))


def neural_cell_memory_mb(cell: dict) -> int:
    """See :func:`cell_memory_mb`."""
    from fedrepro.algorithms import algorithm_class
    from fedrepro.algorithms.base import client_vectors
    from fedrepro.core.context import RUN_OPTIONAL
    from fedrepro.core.sampling import participants
    from fedrepro.core.store import run_memory_bytes
    from fedrepro.problems.neural import neural_memory_bytes

    est = neural_memory_bytes(cell["problem"])
    total = run_memory_bytes(m=est["m"], dim=est["dim"], vectors=client_vectors(algorithm_class(cell["algorithm"])),
                             clients_per_round=participants(est["m"], float(cell.get("rho", 1.0))),
                             data_bytes=est["data"], workspace_bytes=est["workspace"],
                             store=cell.get("store", RUN_OPTIONAL["store"]),
                             budget_mb=cell.get("store_budget_mb", RUN_OPTIONAL["store_budget_mb"]))
    return int(math.ceil(1024 + 1.25 * total / 2**20))


# Sustained training/evaluation rate assumed for the runtime requests of neural cells: one core, small
# GEMMs and the per-step vector work. The paper-scale FedADMM CNN 1 MNIST cell ran at 66 GFLOP/s by this
# count (23.8 CPU-s per round, FIDELITY GO-16); 10 keeps a request an upper bound on a slower node and for
# small batches, where the per-step vector work dominates.
NEURAL_GFLOPS = 10.0


def cell_threads(cell: dict, kernel_threads: int) -> int:
    """Threads of a cell's job (Snakemake ``threads``): ``kernel_threads`` (config, per scale) for the
    convex problems, whose compiled kernels run in parallel over clients; 1 for the neural ones
    (003, aspire), whose BLAS stays single-threaded in every job."""
    if (cell.get("problem") or {}).get("name") in ("neural", "worker_neural"):
        return 1
    return max(1, int(kernel_threads))


def cell_runtime_min(cell: dict, scale: str) -> int:
    """The runtime request of a cell's job in minutes (Snakemake ``resources: runtime``): from the
    measured CPU time of its kind's sample extrapolated to its round budget (:func:`measured_requests`)
    when :data:`MEASURED_BILL_FILE` has one, else :func:`estimated_runtime_min`; convex cells at
    least 30 min at quick and verify scale."""
    measured = measured_requests(cell)
    if measured is None:
        return estimated_runtime_min(cell, scale)
    convex = (cell.get("problem") or {}).get("name") not in ("neural", "worker_neural")
    return max(30, measured["runtime_min"]) if convex and scale in ("quick", "verify") else measured["runtime_min"]


def estimated_runtime_min(cell: dict, scale: str) -> int:
    """The work-model runtime request of a cell (kinds without a sample). Neural
    problems: :func:`neural_cell_runtime_min`; aspire's: :func:`worker_cell_cost`; the convex
    problems: :func:`convex_cell_runtime_min` (at least 30 min at quick scale)."""
    if (cell.get("problem") or {}).get("name") == "neural":
        return neural_cell_runtime_min(cell)
    if (cell.get("problem") or {}).get("name") == "worker_neural":
        return worker_cell_cost(cell)["runtime_min"]
    minutes = convex_cell_runtime_min(cell)
    return max(30, minutes) if scale in ("quick", "verify") else minutes


# Bytes per second assumed for a pass over a convex problem's data in a runtime request: ~10x below
# the measured single-core rate of the fused kernels (20-28 GB/s, benchmarks/README), for slower
# cluster nodes and the algorithms' own vector work per round.
CONVEX_READ_BYTES_PER_S = 2e9


def convex_data_bytes(problem: dict) -> float:
    """Upper bound on the bytes of one read of a convex problem's data, without loading it:
    ``linreg_synthetic`` from m, n and the mean client size; a registry dataset from its recorded
    non-zeros (CSR) or its expected (samples, features) as dense float64; user data (``linreg``
    with a file or arrays) 1 GB."""
    if problem.get("name") == "linreg_synthetic":
        m, n = int(problem.get("m", 100)), int(problem.get("n", 100))
        mean_d = (int(problem.get("d_low", 50)) + int(problem.get("d_high", 150))) / 2
        return m * mean_d * (n + 1) * 8.0
    dataset = problem.get("dataset") or ("adult" if problem.get("name") == "adult_logreg" else None)
    if dataset is None:
        return 1e9
    from fedrepro.data.registry import get_spec

    spec = get_spec(split_key(dataset)[0])
    if "nnz" in spec.facts:                     # sparse: values and column indices of the CSR matrix
        return spec.facts["nnz"] * 12.0
    return float(max(rows * features for rows, features in spec.expected_shape.values())) * 8.0


def convex_cell_runtime_min(cell: dict) -> int:
    """Minutes to request for a convex cell: every round reads the data for the evaluation and, on
    the selected share rho, for k0 local steps with up to two gradients each, at
    :data:`CONVEX_READ_BYTES_PER_S`, up to ``max_rounds`` (plus 0.05 s of bookkeeping per round);
    x3 headroom, +10 min for start-up and data loading, at most 24 h."""
    return int(min(24 * 60, math.ceil(10 + 3 * convex_cell_seconds(cell) / 60)))


def convex_cell_seconds(cell: dict) -> float:
    """The work model of :func:`convex_cell_runtime_min` in seconds, without its headroom."""
    rounds = int(cell.get("max_rounds", 1000))
    passes_per_round = 1 + 2 * int(cell.get("k0", 1)) * float(cell.get("rho", 1.0))
    return rounds * (passes_per_round * convex_data_bytes(cell.get("problem") or {}) / CONVEX_READ_BYTES_PER_S
                     + 0.05)


def worker_cell_cost(cell: dict) -> dict:
    """Runtime (minutes) and memory (MB) requests of a ``worker_neural`` (aspire) cell from its work:
    per round, the jobs (asynchronous: S workers' reports per master iteration; synchronous: every
    worker, Ind_j one) x (local steps x 3 x B + B_loss) samples through the model, plus one evaluation
    of every split per ``eval_every``, at :data:`NEURAL_GFLOPS`; memory: data, two (N, dim) stores and
    1 GiB for the interpreter, with 25% headroom."""
    from fedrepro.algorithms import make_algorithm
    from fedrepro.data.registry import WORKER_SPLITS
    from fedrepro.nn import build_model
    from fedrepro.problems.worker_neural import worker_spec_defaults
    from fedrepro.sim.attacks import added_workers

    spec = worker_spec_defaults(cell["problem"])
    n_train, n_test, N = WORKER_SPLITS[spec["dataset"]].full_sizes
    N += added_workers(cell.get("attack"))             # the backdoor's malicious worker
    if spec.get("train_per_worker"):
        n_train = min(n_train, N * int(spec["train_per_worker"]))
    if spec.get("test_per_worker"):
        n_test = min(n_test, N * int(spec["test_per_worker"]))
    model = build_model(spec["model"])
    alg = make_algorithm(cell["algorithm"], **(cell.get("params") or {}))
    if alg.asynchronous:
        jobs = N if getattr(alg, "S", 1) is None else min(int(getattr(alg, "S", 1)), N)
    else:
        jobs = 1 if hasattr(alg, "worker") else N
    per_job = getattr(alg, "local_steps", 1) * 3 * getattr(alg, "B", 64) + getattr(alg, "B_loss", 0)
    rounds = int(cell.get("max_rounds", 100))
    if cell.get("time_budget") and cell.get("delays") is not None:     # capped by the virtual-time budget
        from fedrepro.sim.delays import build_delays

        d = build_delays(cell["delays"])
        job = getattr(alg, "local_steps", 1) * d.c0 + d.m0
        # synchronous: a round waits for the slowest worker; asynchronous: N reports per mean job duration
        per_round = job * (1 + d.H_max) / 2 / N if alg.asynchronous else job * d.H_max
        rounds = min(rounds, int(math.ceil(2 * float(cell["time_budget"]) / max(per_round, 1e-6))))
    evals = rounds // int(cell.get("eval_every", 1)) + 1
    flops = model.forward_flops() * (rounds * jobs * per_job + evals * (n_train + n_test))
    runtime = runtime_from_flops(flops)
    data = (n_train + n_test) * (model.input_shape[0] * 4 + 16)
    mem = int(math.ceil(1024 + 1.25 * (3 * data + 2 * N * model.n_params * 4) / 2**20))
    return {"runtime_min": runtime, "mem_mb": mem, "flops": flops}


def neural_cell_runtime_min(cell: dict) -> int:
    """Work-based estimate: :func:`neural_cell_flops` at :data:`NEURAL_GFLOPS`, plus 5 minutes for
    start-up and data loading; at least 10."""
    return runtime_from_flops(neural_cell_flops(cell))


def neural_cell_flops(cell: dict) -> float:
    """rounds x (per-sample training FLOPs (3 x forward) x samples the selected clients process per
    round (E, or (E+1)/2 with random epochs; FedSGD one pass) + one test-set evaluation)."""
    from fedrepro.algorithms import make_algorithm
    from fedrepro.core.sampling import participants
    from fedrepro.nn import build_model
    from fedrepro.problems.neural import neural_memory_bytes, neural_spec_defaults

    spec = neural_spec_defaults(cell["problem"])
    est = neural_memory_bytes(cell["problem"])
    n_train, n_test = est["n_train"], est["n_test"]
    model = build_model(spec["model"])
    alg = make_algorithm(cell["algorithm"], **(cell.get("params") or {}))
    E = float(getattr(alg, "E", 1))
    epochs = (E + 1) / 2 if getattr(alg, "random_epochs", False) else E
    clients = participants(int(spec["m"]), float(cell.get("rho", 1.0)))
    samples = clients * epochs * n_train / int(spec["m"])
    return int(cell.get("max_rounds", 100)) * model.forward_flops() * (3 * samples + n_test)


def modelled_cell_seconds(cell: dict) -> float:
    """The work model's CPU seconds of a cell, without headroom or start-up: FLOPs at
    :data:`NEURAL_GFLOPS` (neural, aspire), data passes at :data:`CONVEX_READ_BYTES_PER_S` (convex)."""
    name = (cell.get("problem") or {}).get("name")
    if name == "neural":
        return neural_cell_flops(cell) / (NEURAL_GFLOPS * 1e9)
    if name == "worker_neural":
        return worker_cell_cost(cell)["flops"] / (NEURAL_GFLOPS * 1e9)
    return convex_cell_seconds(cell)


#: Snakemake priority of the data jobs (fetch, preprocess): above every run's (:func:`job_priority`), so
#: that every dataset is ready before the runs are ordered by their cost
DATA_PRIORITY = 10 ** 9


def job_priority(cells: list[dict]) -> int:
    """Snakemake priority of a job running ``cells``: their :func:`modelled_cell_seconds`, so that
    among ready jobs the longest start first (longest-processing-time-first list scheduling: on two
    cores the quick build's runs then end together instead of one long job running alone at the
    end). Only the order matters, so the work model's conservative rates do no harm as long as they
    rank the costly jobs first (benchmarks/README.md, "Job order"); below :data:`DATA_PRIORITY`."""
    return int(min(DATA_PRIORITY - 1, round(sum(modelled_cell_seconds(c) for c in cells))))


def runtime_from_flops(flops: float) -> int:
    """Minutes to request for ``flops`` at :data:`NEURAL_GFLOPS`, plus 5 minutes for start-up and data
    loading; at least 10."""
    return int(max(10, math.ceil(5 + flops / (NEURAL_GFLOPS * 1e9) / 60)))


# --- Requests from measurements (issue #28) --------------------------------------------------------
# benchmarks/paper_bill.py times a sample of one cell of every *cost kind* (what sets a cell's cost per
# round: the cell without its seed, instance, round budget, stop rule, evaluation period and
# float-valued parameters such as step sizes) and writes the per-kind rates below to
# MEASURED_BILL_FILE. A cell's CPU time is extrapolated from its kind's rates to its round budget
# (measured_cell_cpu_s); the requests add a margin (measured_requests).

MEASURED_BILL_FILE = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "paper_bill.json"
#: runtime request = RUNTIME_MARGIN x measured CPU time + RUNTIME_SLACK_MIN: 1.5 for a slower cluster node
#: and load on the sampled machine's neighbours; the slack for Snakemake's job start-up and the Parquet write
RUNTIME_MARGIN, RUNTIME_SLACK_MIN = 1.5, 5
#: memory request = MEMORY_MARGIN x measured peak resident memory + MEMORY_SLACK_MB (allocator and
#: Snakemake's own process, which the samples do not include)
MEMORY_MARGIN, MEMORY_SLACK_MB = 1.25, 512
#: a time-budgeted (virtual clock) cell's rounds: this many times the budget over the sample's mean
#: virtual time per round (the virtual round length is random)
TIME_BUDGET_ROUND_MARGIN = 1.25
_RUN_KEYS_OUTSIDE_KIND = ("cell", "columns", "shared", "experiment", "instance", "seed", "datasets",
                          "max_rounds", "eval_every", "stop", "time_limit", "time_budget", "metrics")


def cost_kind(cell: dict) -> dict:
    """What sets a cell's cost per round: the cell less its identity (seed, instance, experiment), its
    round budget and evaluation period (the extrapolation's inputs, :func:`measured_cell_cpu_s`), its
    stop rule and every float-valued algorithm, mechanism or attack parameter (step sizes, penalties,
    privacy levels: they change the numbers, not the work of a round)."""
    kind = {}
    for key, value in cell.items():
        if key in _RUN_KEYS_OUTSIDE_KIND:
            continue
        if key in ("params", "mechanism", "attack", "aggregator") and isinstance(value, dict):
            value = {k: v for k, v in value.items() if not isinstance(v, float)}
        kind[key] = value
    return kind


def cost_kind_id(cell: dict) -> str:
    """A 12-hex-digit id of :func:`cost_kind` (the key of a kind in :data:`MEASURED_BILL_FILE`)."""
    blob = json.dumps(cost_kind(cell), sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


def cell_round_bound(cell: dict, sample: dict) -> int:
    """Upper bound on a cell's rounds: ``max_rounds`` (a cell that stops at a target or tolerance may
    end earlier), and for a cell with a virtual-time budget at most TIME_BUDGET_ROUND_MARGIN x the budget
    over the sample's mean virtual time per round."""
    rounds = int(cell.get("max_rounds", 100))
    per_round = sample.get("virtual_time_per_round")
    if cell.get("time_budget") and per_round:
        rounds = min(rounds, int(math.ceil(TIME_BUDGET_ROUND_MARGIN * float(cell["time_budget"]) / per_round)))
    return rounds


def measured_cell_cpu_s(cell: dict, sample: dict) -> float:
    """A cell's CPU seconds extrapolated from the sample of its kind: interpreter start-up and imports,
    building the problem (data) and the run, the algorithm's initialisation, one evaluation per
    ``eval_every`` rounds plus the first and the last, and the sample's CPU per round x the cell's
    round bound (:func:`cell_round_bound`)."""
    rounds = cell_round_bound(cell, sample)
    every = max(1, int(cell.get("eval_every", 1)))
    evaluations = rounds // every + 1 + (1 if rounds % every else 0)
    return (sample["start_cpu_s"] + sample["setup_cpu_s"] + sample["init_cpu_s"]
            + evaluations * sample["eval_cpu_s"] + rounds * sample["round_cpu_s"])


def calibration_group(cell: dict) -> tuple:
    """Kinds whose work model shares one measured calibration: the paper, the problem and its dataset;
    for the neural problems also whether the local mini-batches are small (B <= 50: per-step overhead
    and small GEMMs, far below the FLOP rate of full-batch or B = 200 passes)."""
    problem = cell.get("problem") or {}
    group = (cell.get("paper"), problem.get("name"), problem.get("dataset"))
    if problem.get("name") == "neural":
        batch = (cell.get("params") or {}).get("B")
        group += ("small batches" if isinstance(batch, int) and batch <= 50 else "large batches",)
    return group


def fixed_cpu_s(sample: dict) -> float:
    """A sample's CPU seconds that do not grow with the rounds: start-up, setup, initialisation."""
    return sample["start_cpu_s"] + sample["setup_cpu_s"] + sample["init_cpu_s"]


def calibrate(cell: dict, sampled: list[tuple[dict, dict]]) -> dict:
    """The calibrated entry of a kind without a sample, from ``sampled`` ((representative cell, sample)
    pairs of its :func:`calibration_group`), using the nearest samples: those with the same problem and
    algorithm, else the same problem, else the whole group. The largest ratio among them of measured
    per-round CPU time (rounds and evaluations, extrapolated to the representative's budget) to the
    work model (:func:`modelled_cell_seconds`), and their largest fixed CPU time; the peak memory of a
    sample with the same problem and algorithm, else none (the request falls back to
    :func:`estimated_memory_mb`)."""
    same_problem = [(c, s) for c, s in sampled if c["problem"] == cell["problem"]]
    same_run = [(c, s) for c, s in same_problem if c["algorithm"] == cell["algorithm"]]
    nearest = same_run or same_problem or sampled
    ratios = [(measured_cell_cpu_s(c, s) - fixed_cpu_s(s)) / modelled_cell_seconds(c) for c, s in nearest]
    return {"ratio": max(ratios), "fixed_cpu_s": max(fixed_cpu_s(s) for _, s in nearest),
            "peak_mb": max(s["peak_mb"] for _, s in same_run) if same_run else None,
            "from": sorted(s["kind"] for _, s in nearest)}


@functools.lru_cache(maxsize=4)
def load_measured_bill(path: str | Path = MEASURED_BILL_FILE) -> dict:
    """The entries of :data:`MEASURED_BILL_FILE` by kind id, sampled and calibrated (``{}`` when the
    file is absent)."""
    path = Path(path)
    if not path.exists():
        return {}
    bill = json.loads(path.read_text())
    return {**bill.get("calibrated", {}), **bill.get("kinds", {})}


def measured_cpu_s(cell: dict, entry: dict) -> float:
    """A cell's CPU seconds from its kind's entry: a sample's extrapolation
    (:func:`measured_cell_cpu_s`) or a calibrated work model (:func:`calibrate`)."""
    if "ratio" in entry:
        return entry["fixed_cpu_s"] + entry["ratio"] * modelled_cell_seconds(cell)
    return measured_cell_cpu_s(cell, entry)


def measured_requests(cell: dict, entries: dict | None = None) -> dict | None:
    """``{"runtime_min", "mem_mb", "cpu_s", "peak_mb"}`` of a cell from its kind's entry in
    :data:`MEASURED_BILL_FILE` (:func:`measured_cpu_s`; memory from the measured peak, or
    :func:`estimated_memory_mb` for a calibrated kind with no peak) with the margins above, or None
    when its kind has neither a sample nor a calibration."""
    entries = load_measured_bill() if entries is None else entries
    entry = entries.get(cost_kind_id(cell))
    if entry is None:
        return None
    cpu_s = measured_cpu_s(cell, entry)
    peak = entry.get("peak_mb")
    return {"cpu_s": cpu_s, "peak_mb": peak,
            "runtime_min": int(math.ceil(RUNTIME_MARGIN * cpu_s / 60 + RUNTIME_SLACK_MIN)),
            "mem_mb": (int(math.ceil(MEMORY_MARGIN * peak + MEMORY_SLACK_MB)) if peak is not None
                       else estimated_memory_mb(cell))}
