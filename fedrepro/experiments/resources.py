"""Per-job resource requests of a cell (Snakemake ``threads``, ``mem_mb``, ``runtime``) from its
work: memory from the data, model and per-client stores it holds; runtime from its FLOPs or data passes."""
from __future__ import annotations

import math

from fedrepro.data.plan import split_key


def cell_memory_mb(cell: dict) -> int:
    """The memory request of a cell's job (Snakemake ``resources: mem_mb``; local runs respect it
    with ``--resources mem_mb=N``). Neural problems: the estimate of
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
    """The runtime request of a cell's job in minutes (Snakemake ``resources: runtime``). Neural
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
    rounds = int(cell.get("max_rounds", 1000))
    passes_per_round = 1 + 2 * int(cell.get("k0", 1)) * float(cell.get("rho", 1.0))
    seconds = rounds * (passes_per_round * convex_data_bytes(cell.get("problem") or {}) / CONVEX_READ_BYTES_PER_S
                        + 0.05)
    return int(min(24 * 60, math.ceil(10 + 3 * seconds / 60)))


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

    spec = worker_spec_defaults(cell["problem"])
    n_train, n_test, N = WORKER_SPLITS[spec["dataset"]].full_sizes
    N += 1 if spec.get("backdoor") else 0
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
    return {"runtime_min": runtime, "mem_mb": mem}


def neural_cell_runtime_min(cell: dict) -> int:
    """Work-based estimate: rounds x (per-sample training FLOPs (3 x forward) x samples the selected
    clients process per round (E, or (E+1)/2 with random epochs; FedSGD one pass) + one test-set
    evaluation) at :data:`NEURAL_GFLOPS`, plus 5 minutes for start-up and data loading; at least 10."""
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
    flops = int(cell.get("max_rounds", 100)) * model.forward_flops() * (3 * samples + n_test)
    return runtime_from_flops(flops)


def runtime_from_flops(flops: float) -> int:
    """Minutes to request for ``flops`` at :data:`NEURAL_GFLOPS`, plus 5 minutes for start-up and data
    loading; at least 10."""
    return int(max(10, math.ceil(5 + flops / (NEURAL_GFLOPS * 1e9) / 60)))
