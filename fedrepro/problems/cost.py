"""Work models of the problems: what a cell of a problem costs, for the workflow's resource requests
(:mod:`fedrepro.experiments.resources`) when the measured paper-scale bill has no sample of its kind.

Every problem registration (:mod:`fedrepro.problems.registry`) names its cost model: :class:`ConvexCost`
(passes over the data, read by compiled kernels in parallel over clients), :class:`NeuralCost` (FLOPs of
a model trained by the clients a round selects) or :class:`WorkerCost` (ASPIRE's worker datasets). A cost
model answers, for a cell: the memory (MB) and runtime (minutes) to request, the modelled CPU seconds
(without headroom, for the job order and the calibration of measured rates), the extra key of its
calibration group, whether its job's threads run the compiled kernels, and the least runtime of a
quick/verify cell. Its methods take the run's spec (:class:`fedrepro.experiments.spec.RunSpec`, read by
its attributes: ``problem``, ``algorithm.params``, ``run.max_rounds``, ``run.rho`` ...; this layer does not
import it) and the :class:`RunFacts` built from it.

What the run adds to the problem's cost (the algorithm built with its parameters, its per-client
vectors, the attack's added workers, the delay model) comes from the caller as a :class:`RunFacts`:
the algorithms and the simulation are layers above the problems, so the experiments layer builds them.
"""
from __future__ import annotations

import math
from typing import Protocol

from fedrepro.data.plan import split_key

# Sustained training/evaluation rate assumed for the runtime requests of neural cells: one core, small
# GEMMs and the per-step vector work. The paper-scale FedADMM CNN 1 MNIST cell ran at 66 GFLOP/s by this
# count (23.8 CPU-s per round, FIDELITY GO-16); 10 keeps a request an upper bound on a slower node and for
# small batches, where the per-step vector work dominates.
NEURAL_GFLOPS = 10.0

# Bytes per second assumed for a pass over a convex problem's data in a runtime request: ~10x below
# the measured single-core rate of the fused kernels (20-28 GB/s, benchmarks/README), for slower
# cluster nodes and the algorithms' own vector work per round.
CONVEX_READ_BYTES_PER_S = 2e9

#: least runtime request (minutes) of a convex cell at quick and verify scale
CONVEX_SHORT_FLOOR_MIN = 30


class RunFacts(Protocol):
    """What a run adds to its problem's cost (built lazily by the caller, from the run's spec)."""

    algorithm: object            # the cell's algorithm, built with its parameters
    client_vectors: tuple        # the per-client vectors its class declares (fedrepro.algorithms.base.client_vectors)
    added_workers: int           # workers the cell's attack adds (the backdoor's malicious worker)
    delays: object | None        # the cell's delay model (fedrepro.sim.delays.build_delays), None without one


def runtime_from_flops(flops: float) -> int:
    """Minutes to request for ``flops`` at :data:`NEURAL_GFLOPS`, plus 5 minutes for start-up and data
    loading; at least 10."""
    return int(max(10, math.ceil(5 + flops / (NEURAL_GFLOPS * 1e9) / 60)))


def dataset_bytes(dataset: str | None) -> float:
    """Upper bound on the bytes of one read of a registry dataset, without loading it: its recorded
    non-zeros (CSR) or its expected (samples, features) as dense float64; no dataset (user data) 1 GB."""
    if dataset is None:
        return 1e9
    from fedrepro.data.spec import get_spec

    spec = get_spec(split_key(dataset)[0])
    if "nnz" in spec.facts:                     # sparse: values and column indices of the CSR matrix
        return spec.facts["nnz"] * 12.0
    return float(max(rows * features for rows, features in spec.expected_shape.values())) * 8.0


def synthetic_bytes(problem: dict) -> float:
    """One read of ``linreg_synthetic``'s data: from m, n and the mean client size."""
    m, n = int(problem.get("m", 100)), int(problem.get("n", 100))
    mean_d = (int(problem.get("d_low", 50)) + int(problem.get("d_high", 150))) / 2
    return m * mean_d * (n + 1) * 8.0


class ConvexCost:
    """A convex problem's work: every round reads the data for the evaluation and, on the selected
    share rho, for k0 local steps with up to two gradients each, at :data:`CONVEX_READ_BYTES_PER_S`.

    ``data_bytes(problem block)``: one read of the data (default: the registry dataset the block names,
    else ``default_dataset``, else 1 GB: :func:`dataset_bytes`)."""

    kernel_threads = True                      # compiled kernels run in parallel over clients
    short_floor_min = CONVEX_SHORT_FLOOR_MIN

    def __init__(self, data_bytes=None, default_dataset: str | None = None):
        self._data_bytes = data_bytes
        self.default_dataset = default_dataset

    def __repr__(self) -> str:
        how = getattr(self._data_bytes, "__name__", None) or f"dataset default {self.default_dataset!r}"
        return f"ConvexCost({how})"

    def data_bytes(self, problem: dict) -> float:
        if self._data_bytes is not None:
            return self._data_bytes(problem)
        return dataset_bytes(problem.get("dataset") or self.default_dataset)

    def memory_mb(self, spec, run: RunFacts) -> int:
        """A generous fixed formula of m and n."""
        m = int((spec.problem or {}).get("m", 100) or 100)
        n = int((spec.problem or {}).get("n", 100) or 100)
        return int(min(64000, 1000 + 8 * 6 * m * max(n, 100) * 150 / 2**20))

    def seconds(self, spec, run: RunFacts) -> float:
        """The work model in seconds, without headroom: up to ``max_rounds`` rounds of
        (1 + 2 k0 rho) data reads plus 0.05 s of bookkeeping."""
        rounds = int(spec.run.max_rounds)
        passes_per_round = 1 + 2 * int(spec.run.k0) * float(spec.run.rho)
        return rounds * (passes_per_round * self.data_bytes(spec.problem or {}) / CONVEX_READ_BYTES_PER_S
                         + 0.05)

    def runtime_min(self, spec, run: RunFacts) -> int:
        """:meth:`seconds` x3 headroom, +10 min for start-up and data loading, at most 24 h."""
        return int(min(24 * 60, math.ceil(10 + 3 * self.seconds(spec, run) / 60)))

    def calibration_key(self, spec) -> tuple:
        return ()


class NeuralCost:
    """A neural problem's work (:mod:`fedrepro.problems.neural`): FLOPs of the model on the samples the
    selected clients process, at :data:`NEURAL_GFLOPS`; memory from the data, model and per-client
    stores (:func:`fedrepro.core.store.run_memory_bytes`)."""

    kernel_threads = False                     # BLAS stays single-threaded in every job
    short_floor_min = None

    def __repr__(self) -> str:
        return "NeuralCost()"

    def memory_mb(self, spec, run: RunFacts) -> int:
        """Data, model, per-client stores as the run's ``store`` setting holds them (declared by the
        algorithm's ``client_vectors``) plus 1 GiB for the interpreter and 25% headroom."""
        from fedrepro.core.sampling import participants
        from fedrepro.core.store import run_memory_bytes
        from fedrepro.problems.neural import neural_memory_bytes

        est = neural_memory_bytes(spec.problem)
        settings = spec.run.settings()
        total = run_memory_bytes(m=est["m"], dim=est["dim"], vectors=run.client_vectors,
                                 clients_per_round=participants(est["m"], float(spec.run.rho)),
                                 data_bytes=est["data"], workspace_bytes=est["workspace"],
                                 store=settings["store"], budget_mb=settings["store_budget_mb"])
        return int(math.ceil(1024 + 1.25 * total / 2**20))

    def flops(self, spec, run: RunFacts) -> float:
        """rounds x (per-sample training FLOPs (3 x forward) x samples the selected clients process per
        round (E, or (E+1)/2 with random epochs; FedSGD one pass) + one test-set evaluation)."""
        from fedrepro.core.sampling import participants
        from fedrepro.nn import build_model
        from fedrepro.problems.neural import neural_memory_bytes, neural_spec_defaults

        block = neural_spec_defaults(spec.problem)
        est = neural_memory_bytes(spec.problem)
        n_train, n_test = est["n_train"], est["n_test"]
        model = build_model(block["model"])
        alg = run.algorithm
        E = float(getattr(alg, "E", 1))
        epochs = (E + 1) / 2 if getattr(alg, "random_epochs", False) else E
        clients = participants(int(block["m"]), float(spec.run.rho))
        samples = clients * epochs * n_train / int(block["m"])
        return int(spec.run.max_rounds) * model.forward_flops() * (3 * samples + n_test)

    def seconds(self, spec, run: RunFacts) -> float:
        return self.flops(spec, run) / (NEURAL_GFLOPS * 1e9)

    def runtime_min(self, spec, run: RunFacts) -> int:
        """:meth:`flops` at :data:`NEURAL_GFLOPS`, plus 5 minutes for start-up and data loading; at least 10."""
        return runtime_from_flops(self.flops(spec, run))

    def calibration_key(self, spec) -> tuple:
        """Whether the local mini-batches are small (B <= 50: per-step overhead and small GEMMs, far
        below the FLOP rate of full-batch or B = 200 passes)."""
        batch = spec.algorithm.params.get("B")
        return ("small batches" if isinstance(batch, int) and batch <= 50 else "large batches",)


class WorkerCost:
    """A ``worker_neural`` (ASPIRE) problem's work: :meth:`cost`."""

    kernel_threads = False
    short_floor_min = None

    def __repr__(self) -> str:
        return "WorkerCost()"

    def cost(self, spec, run: RunFacts) -> dict:
        """Runtime (minutes) and memory (MB) requests of a cell from its work: per round, the jobs
        (asynchronous: S workers' reports per master iteration; synchronous: every worker, Ind_j one) x
        (local steps x 3 x B + B_loss) samples through the model, plus one evaluation of every split per
        ``eval_every``, at :data:`NEURAL_GFLOPS`; memory: data, two (N, dim) stores and 1 GiB for the
        interpreter, with 25% headroom."""
        from fedrepro.data.spec import WORKER_SPLITS
        from fedrepro.nn import build_model
        from fedrepro.problems.worker_neural import worker_spec_defaults

        block = worker_spec_defaults(spec.problem)
        n_train, n_test, N = WORKER_SPLITS[block["dataset"]].full_sizes
        N += run.added_workers                         # the backdoor's malicious worker
        if block.get("train_per_worker"):
            n_train = min(n_train, N * int(block["train_per_worker"]))
        if block.get("test_per_worker"):
            n_test = min(n_test, N * int(block["test_per_worker"]))
        model = build_model(block["model"])
        alg = run.algorithm
        if alg.asynchronous:
            jobs = N if getattr(alg, "S", 1) is None else min(int(getattr(alg, "S", 1)), N)
        else:
            jobs = 1 if hasattr(alg, "worker") else N
        per_job = getattr(alg, "local_steps", 1) * 3 * getattr(alg, "B", 64) + getattr(alg, "B_loss", 0)
        rounds = int(spec.run.max_rounds)
        if spec.run.time_budget and spec.run.delays is not None:     # capped by the virtual-time budget
            d = run.delays
            job = getattr(alg, "local_steps", 1) * d.c0 + d.m0
            # synchronous: a round waits for the slowest worker; asynchronous: N reports per mean job duration
            per_round = job * (1 + d.H_max) / 2 / N if alg.asynchronous else job * d.H_max
            rounds = min(rounds, int(math.ceil(2 * float(spec.run.time_budget) / max(per_round, 1e-6))))
        evals = rounds // int(spec.run.eval_every) + 1
        flops = model.forward_flops() * (rounds * jobs * per_job + evals * (n_train + n_test))
        runtime = runtime_from_flops(flops)
        data = (n_train + n_test) * (model.input_shape[0] * 4 + 16)
        mem = int(math.ceil(1024 + 1.25 * (3 * data + 2 * N * model.n_params * 4) / 2**20))
        return {"runtime_min": runtime, "mem_mb": mem, "flops": flops}

    def memory_mb(self, spec, run: RunFacts) -> int:
        return self.cost(spec, run)["mem_mb"]

    def runtime_min(self, spec, run: RunFacts) -> int:
        return self.cost(spec, run)["runtime_min"]

    def seconds(self, spec, run: RunFacts) -> float:
        return self.cost(spec, run)["flops"] / (NEURAL_GFLOPS * 1e9)

    def calibration_key(self, spec) -> tuple:
        return ()
