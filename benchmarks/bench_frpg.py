"""Benchmarks of the FRPG paper (spec 004).

Time of one FRPG round on MNIST (Q = 20, minibatch 15, label flipping) and of one
evaluation (loss_server + gradient + test accuracy + loss_F). The cost of the whole
quick scale: ``benchmarks/quick_cost.py frpg``.

Usage (processed data: ``snakemake -j 2 data/processed/mnist.npz``):
    OMP_NUM_THREADS=1 python benchmarks/bench_frpg.py --data-dir data/processed
"""
from __future__ import annotations

import argparse
import time

import numpy as np


def bench_round(data_dir: str, rounds: int = 50, dataset: str = "mnist") -> dict:
    from fedrepro.algorithms import RunContext, make_algorithm
    from fedrepro.attacks import build_attack
    from fedrepro.problems import build_problem

    t0 = time.perf_counter()
    prob = build_problem({"name": "softmax", "dataset": dataset, "Q": 20, "batch": 15}, 0, data_dir=data_dir)
    t_build = time.perf_counter() - t0
    alg = make_algorithm("frpg")
    ctx = RunContext(k0=1, seed=0, max_rounds=rounds)
    att = build_attack({"name": "label_flip", "B": 4})
    att.prepare(prob, ctx)
    st = alg.init(prob, ctx)
    clients = np.arange(prob.m)
    times = []
    for r in range(rounds):
        t = time.perf_counter()
        st.w = alg.aggregate(st, prob, r)
        alg.begin_round(st, prob, clients, r)
        alg.local_step(st, prob, clients, r, 0)
        U = att.corrupt(alg.upload(st, prob, clients, r), clients, r, st, prob, alg, ctx)
        alg.receive(st, prob, clients, U, r)
        times.append(time.perf_counter() - t)
    ev = []
    for _ in range(3):
        t = time.perf_counter()
        prob.evaluate(st.w)
        alg.round_metrics(st, prob)
        ev.append(time.perf_counter() - t)
    return {"dataset": dataset, "dim": prob.dim, "build_s": t_build,
            "round_ms_median": 1e3 * float(np.median(times[5:])), "round_ms_mean": 1e3 * float(np.mean(times[5:])),
            "eval_s_median": float(np.median(ev))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default="data/processed")
    ap.add_argument("--dataset", default="mnist")
    args = ap.parse_args()
    print(bench_round(args.data_dir, dataset=args.dataset))


if __name__ == "__main__":
    main()
