"""Benchmarks of the FRPG paper (spec 004).

Time of one FRPG round on MNIST (Q = 20, minibatch 15, label flipping) and of one evaluation
(loss_server + gradient + test accuracy + loss_F), both measured through the simulation loop
(`fedrepro.sim.loop.simulate`: per-round stamps from an identity upload mechanism, and the CPU /
wall seconds its trace records). The cost of the whole
quick scale: ``benchmarks/quick_cost.py frpg``.

Usage (processed data: ``snakemake -j 2 data/processed/mnist/dataset.json``):
    OMP_NUM_THREADS=1 python benchmarks/bench_frpg.py --data-dir data/processed
    python benchmarks/bench_frpg.py --tiny --dataset usps --data-dir DIR     # seconds: 7 rounds (test suite)

Prints the BLAS library, kernel and threads it ran with (:mod:`fedrepro.core.blas`).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from fedrepro.core.blas import blas_record, describe


class RoundClock:
    """Identity upload mechanism of ``simulate`` that timestamps every round (CPU and wall): the
    loop calls it once per round, between the upload and the attack, so consecutive stamps are one
    whole round apart (receive, aggregate, begin_round, local steps, upload)."""

    def __init__(self):
        self.cpu, self.wall = [], []

    def __call__(self, uploads, clients, r, state, ctx):
        self.cpu.append(time.process_time())
        self.wall.append(time.perf_counter())
        return uploads


def bench_round(data_dir: str, rounds: int = 50, dataset: str = "mnist", warmup: int = 5) -> dict:
    """Median / mean milliseconds of one loop round of ``simulate`` after ``warmup`` rounds (per-round
    stamps of :class:`RoundClock`; evaluations only at round 0 and the last round, outside the
    stamped rounds), the client part from the trace's ``local_cpu_time``, and one evaluation
    (loss_server + gradient + test accuracy + loss_F): the trace's span minus the rounds in it."""
    from fedrepro.algorithms import make_algorithm
    from fedrepro.sim.attacks import build_attack
    from fedrepro.problems import build_problem
    from fedrepro.sim.loop import simulate

    t0 = time.perf_counter()
    prob = build_problem({"name": "softmax", "dataset": dataset, "Q": 20, "batch": 15}, 0, data_dir=data_dir)
    t_build = time.perf_counter() - t0
    clock = RoundClock()
    res = simulate(prob, make_algorithm("frpg"), k0=1, rho=1.0, max_rounds=rounds, seed=0, eval_every=rounds,
                   mechanism=clock, attack=build_attack({"name": "label_flip", "B": 4}))
    first, last = res.trace[0], res.trace[-1]
    assert (first["round"], last["round"], res.status, len(clock.cpu)) == (0, rounds, "max_rounds", rounds)
    cpu, wall = np.diff(clock.cpu)[warmup:], np.diff(clock.wall)[warmup:]
    return {"dataset": dataset, "dim": prob.dim, "rounds": rounds, "build_s": t_build,
            "round_cpu_ms_median": 1e3 * float(np.median(cpu)), "round_cpu_ms_mean": 1e3 * float(np.mean(cpu)),
            "round_wall_ms_median": 1e3 * float(np.median(wall)), "round_wall_ms_mean": 1e3 * float(np.mean(wall)),
            "local_cpu_ms_mean": 1e3 * (last["local_cpu_time"] - first["local_cpu_time"]) / rounds,
            "eval_cpu_s": last["cpu_time"] - first["cpu_time"] - rounds * float(np.mean(cpu)),
            "eval_wall_s": last["wall_time"] - first["wall_time"] - rounds * float(np.mean(wall))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default="data/processed")
    ap.add_argument("--dataset", default="mnist")
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--tiny", action="store_true", help="7 rounds (5 of warm-up): what the test suite runs")
    args = ap.parse_args()
    print(describe(), flush=True)
    print(bench_round(args.data_dir, rounds=7 if args.tiny else args.rounds, dataset=args.dataset))
    print("machine:", blas_record())


if __name__ == "__main__":
    main()
