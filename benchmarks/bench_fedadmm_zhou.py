"""Benchmark for Zhou & Li Example 5.1 at Fig. 5 sizes (run on demand, not part of the tests).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/bench_fedadmm_zhou.py --m 1000 4000
    python benchmarks/bench_fedadmm_zhou.py --tiny      # seconds: m = 20, n = 50, FedADMM and FedAvg (test suite)

Reports, for every kernel of :class:`~fedrepro.problems.glm.LinearModelProblem` (``--kernels``,
default both: ``fused`` row-fused, ``blas`` the two-pass reference) on the SAME instance, side by
side: the time of one full gradient pass and of ``evaluate`` against two single reads of the data
measured in the same run (``read_sum_s``: ``ndarray.sum`` of every bucket, the fastest plain read
here; ``read_gemv_s``: one ``X w`` gemv over every bucket) and their ratios (read time / pass time
= fraction of the single-read bandwidth); wall and CPU seconds of every algorithm to its stopping
rule (FedADMM: rule (30), code_scaled; baselines: the FedADMM target, capped at
``--baseline-rounds``), per-round times, and the peak resident memory. The ``blas`` runs are the
code before issue #15: the two-pass gradients and FedADMM's local iteration in numpy (its compiled
step, :mod:`fedrepro.algorithms.ops.admm_step`, is switched off for them). Threads: BLAS and numba
follow the environment variables (set all three to 1 for the one-core numbers). Every row records
the BLAS library, kernel and threads it ran with (``machine``: :func:`fedrepro.core.blas.blas_record`).
"""
from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np

from fedrepro.algorithms import make_algorithm
from fedrepro.algorithms.ops import admm_step
from fedrepro.core.blas import blas_record, describe
from fedrepro.problems.glm import build_linreg_synthetic
from fedrepro.sim.loop import simulate
from fedrepro.sim.stopping import build_stop


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def stream_time(problem, w, reps=3):
    """Best time of one gemv X w over every bucket (a single read of the data)."""
    best = np.inf
    for _ in range(reps):
        t = time.perf_counter()
        for bk in problem._dense.buckets:
            g, D, n = bk.X.shape
            bk.X.reshape(g * D, n) @ w
        best = min(best, time.perf_counter() - t)
    return best


def read_time(problem, reps=3):
    """Best time of summing every bucket (numpy's pairwise sum: a plain single read)."""
    best = np.inf
    for _ in range(reps):
        t = time.perf_counter()
        for bk in problem._dense.buckets:
            bk.X.sum()
        best = min(best, time.perf_counter() - t)
    return best


def timeit(fn, reps=3):
    """Best of ``reps`` (the machine may be shared; the minimum is the least disturbed)."""
    best = np.inf
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, nargs="+", default=[1000])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--k0", type=int, default=10)
    ap.add_argument("--rho", type=float, default=0.5)
    ap.add_argument("--measure", default="code_scaled")
    ap.add_argument("--baseline-rounds", type=int, default=30)
    ap.add_argument("--step-c", type=float, default=0.25)
    ap.add_argument("--algorithms", nargs="+", default=["fedadmm", "fedavg", "fedprox", "fedalt", "fedsim"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kernels", nargs="+", default=["fused", "blas"], choices=["fused", "blas"])
    ap.add_argument("--repeats", type=int, default=1,
                    help="runs of every (algorithm, kernel), alternating; times are their medians (all kept)")
    ap.add_argument("--tiny", action="store_true", help="m = 20, n = 50, FedADMM and FedAvg, 3 baseline rounds")
    args = ap.parse_args(argv)
    if args.tiny:
        args.m, args.n, args.algorithms, args.baseline_rounds = [20], 50, ["fedadmm", "fedavg"], 3
    print(describe(), flush=True)
    report = []
    for m in args.m:
        row = {"m": m, "n": args.n}
        t = time.perf_counter()
        p = build_linreg_synthetic({"m": m, "n": args.n}, args.seed)
        row["gen_s"] = time.perf_counter() - t
        row["n_samples"] = int(p.client_sizes.sum())
        row["data_gb"] = row["n_samples"] * args.n * 8 / 1e9
        t = time.perf_counter()
        p.lipschitz()
        row["lipschitz_s"] = time.perf_counter() - t
        w = np.random.default_rng(1).standard_normal(args.n) * 0.01
        from fedrepro.core.threads import kernel_threads
        row["kernel_threads"] = kernel_threads()
        p.kernel = "fused"
        p.gradient(w)                                    # compile / load the kernels before timing
        row["read_sum_s"] = read_time(p)
        row["read_gemv_s"] = stream_time(p, w)
        S = np.sort(np.random.default_rng(2).permutation(m)[: m // 2])
        W = np.tile(w, (len(S), 1))
        for kernel in args.kernels:
            p.kernel = kernel
            k = row[kernel] = {}
            k["gradient_s"] = timeit(lambda: p.gradient(w))
            k["evaluate_s"] = timeit(lambda: (p.evaluate(w), setattr(p, "_cache_key", None)))
            k["client_grads_half_s"] = timeit(lambda: p.client_grads(W, S))
            k["gradient_read_fraction"] = row["read_sum_s"] / k["gradient_s"]
            k["gradient_gemv_fraction"] = row["read_gemv_s"] / k["gradient_s"]
            print(kernel, k, flush=True)
        refs = {kernel: None for kernel in args.kernels}
        runs = {}
        # the kernels alternate, so both see the same machine load
        for name, _, kernel in ((a, i, k) for a in args.algorithms for i in range(args.repeats) for k in args.kernels):
            p.kernel = kernel
            if name == "fedadmm":
                alg, stop, cap = make_algorithm(name), build_stop(
                    {"rule": "fedadmm30", "eps": 1e-3, "measure": args.measure}, p), 1000
            else:
                alg = make_algorithm(name, step_c=args.step_c)
                ref = refs[kernel]
                stop = build_stop({"rule": "target", "rel": 2e-4}, p, ref) if ref else None
                cap = args.baseline_rounds
            compiled_step = admm_step.accepts
            if kernel == "blas":
                admm_step.accepts = lambda *a: False
            try:
                res = simulate(p, alg, k0=args.k0, rho=args.rho, max_rounds=cap, seed=args.seed, stop=stop)
            finally:
                admm_step.accepts = compiled_step
            if name == "fedadmm":
                refs[kernel] = res.final
            done = runs.setdefault((kernel, name), [])
            done.append((res.wall_time, res.cpu_time))
            wall, cpu = float(np.median([w for w, _ in done])), float(np.median([c for _, c in done]))
            row[kernel][name] = {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "rounds": res.rounds,
                                 "status": res.status, "s_per_round": round(wall / max(res.rounds, 1), 4),
                                 "cpu_s_per_round": round(cpu / max(res.rounds, 1), 4),
                                 "objective": res.final["objective"],
                                 "n_grad_evals": res.final.get("n_grad_evals"),
                                 "all_wall_s": [round(w, 3) for w, _ in done]}
            print(kernel, name, row[kernel][name], flush=True)
        for kernel in args.kernels:
            row[kernel]["total_cpu_s"] = round(sum(row[kernel][a]["cpu_s"] for a in args.algorithms), 1)
        row["peak_rss_mb"] = peak_rss_mb()
        row["machine"] = blas_record()
        print(json.dumps(row, indent=1, default=float), flush=True)
        report.append(row)
        del p
    return report


if __name__ == "__main__":
    main()
