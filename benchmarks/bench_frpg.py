"""Benchmarks of the FRPG paper (spec 004).

``round``  -- time of one FRPG round on MNIST (Q = 20, minibatch 15, label flipping)
              and of one evaluation (loss_server + gradient + test accuracy + loss_F).
``quick``  -- run every quick-scale cell of workflow/papers/frpg.yaml (the workflow's own
              cell expansion and runner) on ``-j`` processes, write
              ``<out>/frpg/<experiment>.parquet`` and ``.summary.parquet``, print the wall time.

Usage (processed data from ``fedrepro.data.load_dataset(...).save``):
    OMP_NUM_THREADS=1 python benchmarks/bench_frpg.py round --data-dir data/processed
    OMP_NUM_THREADS=1 python benchmarks/bench_frpg.py quick --data-dir data/processed --out results -j 2
"""
from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

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


def _run(cell, data_dir):
    from fedrepro.runner import run_cell

    t, c = time.perf_counter(), time.process_time()
    df = run_cell(cell, data_dir=data_dir)
    return cell, df, time.perf_counter() - t, time.process_time() - c


def _cost(cell):
    ds = cell["problem"].get("dataset", "")
    big = 1.0 if ds.startswith("usps") else 3.0
    return big * (10.0 if cell["algorithm"] == "lfrpg" else 1.0) * cell["max_rounds"]


def bench_quick(data_dir: str, out: str, jobs: int = 2, scale: str = "quick", only=None) -> None:
    import pandas as pd

    from fedrepro.experiments import expand, load_paper_fragment
    from fedrepro.results import summarize

    root = Path(__file__).resolve().parents[1]
    frag = load_paper_fragment("frpg", root)
    cells = [c for e, b in frag["experiments"].items() if not only or e in only
             for c in expand("frpg", e, b, scale)]
    cells.sort(key=_cost, reverse=True)
    t0 = time.perf_counter()
    frames, cpu = {}, 0.0
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futs = [pool.submit(_run, c, data_dir) for c in cells]
        for f in as_completed(futs):
            cell, df, dt, dc = f.result()
            cpu += dc
            frames.setdefault(cell["experiment"], []).append(df)
            last = df.iloc[-1]
            print(f"{time.perf_counter() - t0:7.1f}s  {cell['experiment']:10s} {cell['algorithm']:8s} "
                  f"{cell['problem'].get('dataset'):14s} {dt:6.1f}s (cpu {dc:6.1f}s)  acc {last.get('accuracy', float('nan')):.3f}",
                  flush=True)
    outdir = Path(out) / "frpg"
    outdir.mkdir(parents=True, exist_ok=True)
    for exp, dfs in frames.items():
        df = pd.concat(dfs, ignore_index=True, sort=False)
        df.to_parquet(outdir / f"{exp}.parquet")
        summarize(df).to_parquet(outdir / f"{exp}.summary.parquet")
    print(f"total wall {time.perf_counter() - t0:.1f}s, cpu {cpu:.1f}s for {len(cells)} cells on {jobs} processes")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["round", "quick"])
    ap.add_argument("--data-dir", default="data/processed")
    ap.add_argument("--out", default="results")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--scale", default="quick")
    ap.add_argument("--only", nargs="*", default=None, help="experiment ids (default all)")
    args = ap.parse_args()
    if args.mode == "round":
        for ds in ("mnist",):
            print(bench_round(args.data_dir, dataset=ds))
    else:
        bench_quick(args.data_dir, args.out, args.jobs, args.scale, args.only)


if __name__ == "__main__":
    main()
