"""Per-job resource requests of a cell (Snakemake ``threads``, ``mem_mb``, ``runtime``): from the
measured paper-scale bill (``benchmarks/results/paper_bill.json``, written by
``benchmarks/paper_bill.py``) when the cell's cost kind has a sample or a calibration there, with the
margins stated below; else from the work model of its problem's registration
(:mod:`fedrepro.problems.cost`): memory from the data, model and per-client stores it holds; runtime
from its FLOPs or data passes. No request here depends on a problem's name."""
from __future__ import annotations

import functools
import hashlib
import json
import math
from pathlib import Path

from fedrepro.problems.cost import CONVEX_READ_BYTES_PER_S, NEURAL_GFLOPS, ConvexCost, WorkerCost  # noqa: F401
from fedrepro.experiments.spec import RunSpec, as_spec
from fedrepro.problems.registry import DEFAULT_COST, problem_cost


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


class CellRun:
    """What a run adds to its problem's cost (:class:`fedrepro.problems.cost.RunFacts`), each
    built when the problem's cost model first asks: the algorithm with its parameters, the per-client
    vectors its class declares, the workers the attack adds, the delay model."""

    def __init__(self, spec: RunSpec):
        self.spec = spec

    @functools.cached_property
    def algorithm(self):
        return self.spec.algorithm.build()

    @functools.cached_property
    def client_vectors(self):
        from fedrepro.algorithms import algorithm_class
        from fedrepro.algorithms.base import client_vectors

        return client_vectors(algorithm_class(self.spec.algorithm.name))

    @functools.cached_property
    def added_workers(self) -> int:
        from fedrepro.sim.attacks import added_workers

        return added_workers(self.spec.channel.attack)

    @functools.cached_property
    def delays(self):
        from fedrepro.sim.delays import build_delays

        return None if self.spec.run.delays is None else build_delays(self.spec.run.delays)


def cell_cost(cell):
    """The cost model of the run's problem, from its registration (:mod:`fedrepro.problems.cost`)."""
    return problem_cost((as_spec(cell).problem or {}).get("name"))


def estimated_memory_mb(cell: dict) -> int:
    """The work-model memory request of a cell (kinds without a sample), by its problem's cost model:
    neural problems the estimate of :func:`fedrepro.core.store.run_memory_bytes` (data, model,
    per-client stores as the run's ``store`` setting holds them, declared by the algorithm's
    ``client_vectors``) plus 1 GiB for the interpreter and 25% headroom; aspire's
    (:func:`worker_cell_cost`); the convex problems a generous fixed formula."""
    spec = as_spec(cell)
    return cell_cost(spec).memory_mb(spec, CellRun(spec))


def cell_threads(cell: dict, kernel_threads: int) -> int:
    """Threads of a cell's job (Snakemake ``threads``): ``kernel_threads`` (config, per scale) for the
    problems whose compiled kernels run in parallel over clients (the convex ones: their cost model's
    ``kernel_threads``); 1 for the neural ones (003, aspire), whose BLAS stays single-threaded in every job."""
    if not cell_cost(cell).kernel_threads:
        return 1
    return max(1, int(kernel_threads))


def _short_floor(cell: dict, scale: str, minutes: int) -> int:
    """``minutes``, at least the cost model's ``short_floor_min`` at quick and verify scale (convex cells: 30)."""
    floor = cell_cost(cell).short_floor_min
    return max(floor, minutes) if floor is not None and scale in ("quick", "verify") else minutes


def cell_runtime_min(cell: dict, scale: str) -> int:
    """The runtime request of a cell's job in minutes (Snakemake ``resources: runtime``): from the
    measured CPU time of its kind's sample extrapolated to its round budget (:func:`measured_requests`)
    when :data:`MEASURED_BILL_FILE` has one, else :func:`estimated_runtime_min`; convex cells at
    least 30 min at quick and verify scale."""
    measured = measured_requests(cell)
    if measured is None:
        return estimated_runtime_min(cell, scale)
    return _short_floor(cell, scale, measured["runtime_min"])


def estimated_runtime_min(cell: dict, scale: str) -> int:
    """The work-model runtime request of a cell (kinds without a sample), by its problem's cost model
    (:mod:`fedrepro.problems.cost`): neural FLOPs, aspire's :func:`worker_cell_cost`, the convex
    problems' data passes (at least 30 min at quick and verify scale)."""
    spec = as_spec(cell)
    return _short_floor(spec, scale, cell_cost(spec).runtime_min(spec, CellRun(spec)))


def convex_data_bytes(problem: dict) -> float:
    """Upper bound on the bytes of one read of a convex problem's data, without loading it (its cost
    model's ``data_bytes``): ``linreg_synthetic`` from m, n and the mean client size; a registry
    dataset from its recorded non-zeros (CSR) or its expected (samples, features) as dense float64;
    user data (``linreg`` with a file or arrays) 1 GB."""
    cost = problem_cost(problem.get("name"))
    return (cost if isinstance(cost, ConvexCost) else DEFAULT_COST).data_bytes(problem)


def worker_cell_cost(cell: dict) -> dict:
    """``{"runtime_min", "mem_mb", "flops"}`` of a ``worker_neural`` (aspire) cell
    (:meth:`fedrepro.problems.cost.WorkerCost.cost`)."""
    spec = as_spec(cell)
    return WorkerCost().cost(spec, CellRun(spec))


def modelled_cell_seconds(cell: dict) -> float:
    """The work model's CPU seconds of a cell, without headroom or start-up: FLOPs at
    :data:`~fedrepro.problems.cost.NEURAL_GFLOPS` (neural, aspire), data passes at
    :data:`~fedrepro.problems.cost.CONVEX_READ_BYTES_PER_S` (convex): its problem's cost model."""
    spec = as_spec(cell)
    return cell_cost(spec).seconds(spec, CellRun(spec))


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
    for key, value in as_spec(cell).to_dict().items():
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
    run = as_spec(cell).run
    rounds = int(run.max_rounds)
    per_round = sample.get("virtual_time_per_round")
    if run.time_budget and per_round:
        rounds = min(rounds, int(math.ceil(TIME_BUDGET_ROUND_MARGIN * float(run.time_budget) / per_round)))
    return rounds


def measured_cell_cpu_s(cell: dict, sample: dict) -> float:
    """A cell's CPU seconds extrapolated from the sample of its kind: interpreter start-up and imports,
    building the problem (data) and the run, the algorithm's initialisation, one evaluation per
    ``eval_every`` rounds plus the first and the last, and the sample's CPU per round x the cell's
    round bound (:func:`cell_round_bound`)."""
    rounds = cell_round_bound(cell, sample)
    every = max(1, int(as_spec(cell).run.eval_every))
    evaluations = rounds // every + 1 + (1 if rounds % every else 0)
    return (sample["start_cpu_s"] + sample["setup_cpu_s"] + sample["init_cpu_s"]
            + evaluations * sample["eval_cpu_s"] + rounds * sample["round_cpu_s"])


def calibration_group(cell: dict) -> tuple:
    """Kinds whose work model shares one measured calibration: the paper, the problem and its dataset;
    for the neural problems also whether the local mini-batches are small (B <= 50: per-step overhead
    and small GEMMs, far below the FLOP rate of full-batch or B = 200 passes)."""
    spec = as_spec(cell)
    problem = spec.problem or {}
    return (spec.paper, problem.get("name"), problem.get("dataset")) + cell_cost(spec).calibration_key(spec)


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
    spec = as_spec(cell)
    sampled = [(as_spec(c), s) for c, s in sampled]
    same_problem = [(c, s) for c, s in sampled if c.problem == spec.problem]
    same_run = [(c, s) for c, s in same_problem if c.algorithm.name == spec.algorithm.name]
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
