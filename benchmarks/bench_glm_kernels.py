"""Per-round time of the convex papers' real-data problems with both GLM kernels (issue #15).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 FEDREPRO_DATA_MIRROR=../shared/datasets \\
        python benchmarks/bench_glm_kernels.py [--rounds 40] [--repeats 3]
    python benchmarks/bench_glm_kernels.py --tiny     # seconds: Adult / FedEPM, 2 rounds, 1 repeat (test suite)

Problems: QSAR oral toxicity (``logreg``, m = 100, the fedadmm_zhou Fig. 2 set-up: k0 = 10,
rho = 0.5) with the five Zhou & Li algorithms, and Adult (``adult_logreg``, m = 50, fedepm's
set-up, k0 = 12) with FedEPM. Every (problem, algorithm) runs ``--rounds`` rounds with
``kernel: fused`` and ``kernel: blas`` alternately, ``--repeats`` times; the table gives the best
CPU seconds per round of each kernel and their ratio (blas / fused: > 1 means the fused kernel is
faster). The final objectives of the two kernels must agree to 1e-10 (relative), else it fails.
The datasets are read through the mirror (or the cache) with the package's own loaders. The JSON
output records the BLAS library, kernel and threads (``machine``, :mod:`fedrepro.core.blas`).
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import numpy as np

from fedrepro.algorithms import make_algorithm
from fedrepro.core.blas import blas_record, describe
from fedrepro.data import load_dataset
from fedrepro.problems import build_problem
from fedrepro.core.threads import kernel_threads
from fedrepro.sim.loop import simulate

SETUPS = {
    "qsar_oral_toxicity": ({"name": "logreg", "dataset": "qsar_oral_toxicity", "m": 100, "lam": 1e-3},
                           ("fedadmm", "fedavg", "fedprox", "fedalt", "fedsim"), 10),
    "adult": ({"name": "adult_logreg", "m": 50}, ("fedepm",), 12),
}


def prepare(dataset: str, data_dir: str) -> None:
    path = os.path.join(data_dir, dataset)
    if not os.path.exists(os.path.join(path, "dataset.json")):
        load_dataset(dataset, "data/raw", os.environ.get("FEDREPRO_DATA_MIRROR"), download=False).save(path)


def cpu_per_round(problem, algorithm, k0, rounds, seed=0):
    c = time.process_time()
    res = simulate(problem, make_algorithm(algorithm), k0=k0, rho=0.5, max_rounds=rounds, seed=seed)
    return (time.process_time() - c) / max(res.rounds, 1), res.final["objective"], res.rounds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data-dir", default=None, help="processed datasets (default: a temporary folder)")
    ap.add_argument("--out", default="benchmarks/out/bench_glm_kernels.json")
    ap.add_argument("--tiny", action="store_true", help="Adult with FedEPM only, 2 rounds, 1 repeat (test suite)")
    args = ap.parse_args(argv)
    setups = {"adult": SETUPS["adult"]} if args.tiny else SETUPS
    if args.tiny:
        args.rounds, args.repeats = 2, 1
    data_dir = args.data_dir or tempfile.mkdtemp(prefix="fedrepro-bench-")
    rows = []
    print(describe())
    print(f"kernel threads {kernel_threads()}")
    print(f"{'problem':<20} {'algorithm':<9} {'fused ms':>9} {'blas ms':>9} {'blas/fused':>10}")
    for dataset, (spec, algorithms, k0) in setups.items():
        prepare(dataset, data_dir)
        problems = {k: build_problem({**spec, "kernel": k}, 0, data_dir=data_dir) for k in ("fused", "blas")}
        for algorithm in algorithms:
            best = {k: np.inf for k in problems}
            final = {}
            for problem in problems.values():            # warm-up: kernels loaded, caches filled
                cpu_per_round(problem, algorithm, k0, 2)
            for _ in range(args.repeats):
                for kernel, problem in problems.items():
                    t, f, r = cpu_per_round(problem, algorithm, k0, args.rounds)
                    best[kernel] = min(best[kernel], t)
                    final[kernel] = f
            rel = abs(final["fused"] - final["blas"]) / max(abs(final["blas"]), 1e-300)
            if rel > 1e-10:
                raise AssertionError(f"{dataset} {algorithm}: final objectives differ by {rel:.2e} (relative)")
            row = {"problem": dataset, "algorithm": algorithm, "rounds": r, "fused_cpu_s_per_round": best["fused"],
                   "blas_cpu_s_per_round": best["blas"], "speedup": best["blas"] / best["fused"],
                   "final_rel_diff": rel}
            rows.append(row)
            print(f"{dataset:<20} {algorithm:<9} {1e3 * best['fused']:9.2f} {1e3 * best['blas']:9.2f} "
                  f"{row['speedup']:10.2f}", flush=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump({"threads": kernel_threads(), "rows": rows, "load": os.getloadavg(), "machine": blas_record()},
                  fh, indent=1)


if __name__ == "__main__":
    main()
