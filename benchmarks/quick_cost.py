"""Compute cost of a paper's experiments without the workflow's per-job overhead.

    OMP_NUM_THREADS=1 python benchmarks/quick_cost.py fedepm [--scale quick] [-j 2] [--only fig3 table1]
        [--data-dir data/processed] [--out DIR]
    python benchmarks/quick_cost.py fedepm --only fig3 --tiny     # seconds: the first cell only (test suite)

Expands ``fedrepro/papers/<paper>/experiments.yaml`` exactly as the workflow does, runs every cell with
``fedrepro.experiments.runner.run_cell`` in ``-j`` processes (largest cells first when ``max_rounds`` differs),
and prints wall time, summed CPU time and the CPU time per (experiment, algorithm). With ``--out``
it also writes ``<out>/<paper>/<experiment>(.summary).parquet``. The processed datasets must
exist (``snakemake -j 2 data/processed/<dataset>/dataset.json``). Reference cells (stop rule ``target``)
run before the cells that need them. Prints the BLAS library, kernel and threads of the driver and of
a worker process (:mod:`fedrepro.core.blas`; the workers inherit the driver's environment).
"""
from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _worker_blas() -> dict:
    from fedrepro.core.blas import blas_record

    return blas_record()


def _run(spec, data_dir, reference):
    from fedrepro.experiments.runner import run_cell

    c = time.process_time()
    df = run_cell(spec, data_dir=data_dir, reference=reference)
    return df, time.process_time() - c


def run_paper(paper: str, scale: str = "quick", jobs: int = 2, data_dir: str = "data/processed",
              only=None, out: str | None = None, seed: int = 20260101, max_cells: int | None = None) -> dict:
    import pandas as pd

    from fedrepro.experiments.expansion import expand, reference_cell
    from fedrepro.experiments.spec import as_spec
    from fedrepro.experiments.yamlio import load_paper_fragment
    from fedrepro.experiments.results import summarize

    blocks = load_paper_fragment(paper, ROOT)["experiments"]
    expanded = [c for e, b in blocks.items() if not only or e in only for c in expand(paper, e, b, scale, seed)]
    if max_cells is not None:             # the first cells that need no reference run
        expanded = [c for c in expanded if reference_cell(c, expanded) is None][:max_cells]
    by_exp = {}                           # experiment -> its cell dicts (reference_cell, the constructors' side)
    runs = [(as_spec(c), c) for c in expanded]
    for spec, c in runs:
        by_exp.setdefault(spec.experiment, []).append(c)
    refs = {spec.name: None if (ref := reference_cell(c, by_exp[spec.experiment])) is None else as_spec(ref).name
            for spec, c in runs}          # a run's reference run (a `target` stop rule), by name
    first = sorted((s for s, _ in runs if refs[s.name] is None), key=lambda s: -s.run.max_rounds)
    second = [s for s, _ in runs if refs[s.name] is not None]
    t0 = time.perf_counter()
    frames, cpu = {}, {}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        worker_blas = pool.submit(_worker_blas).result()
        for batch in (first, second):
            futs = [(s, pool.submit(_run, s, data_dir, None if refs[s.name] is None else
                                    summarize(frames[refs[s.name]]).iloc[0].to_dict()))
                    for s in batch]
            for s, f in futs:
                df, dc = f.result()
                frames[s.name] = df
                key = f"{s.experiment}/{s.algorithm.name}"
                cpu[key] = cpu.get(key, 0.0) + dc
    wall = time.perf_counter() - t0
    if out:
        folder = Path(out) / paper
        folder.mkdir(parents=True, exist_ok=True)
        names = {exp: [s.name for s, _ in runs if s.experiment == exp] for exp in by_exp}
        for exp, ns in names.items():
            df = pd.concat([frames[n] for n in ns], ignore_index=True, sort=False)
            df.to_parquet(folder / f"{exp}.parquet")
            summarize(df).to_parquet(folder / f"{exp}.summary.parquet")
    return {"paper": paper, "scale": scale, "cells": len(runs), "wall_s": round(wall, 1),
            "cpu_s": round(sum(cpu.values()), 1), "cpu_by_experiment_algorithm": {k: round(v, 1) for k, v in sorted(cpu.items())},
            "worker_blas": worker_blas}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paper")
    ap.add_argument("--scale", default="quick")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--data-dir", default="data/processed")
    ap.add_argument("--only", nargs="*", default=None, help="experiment ids (default: all)")
    ap.add_argument("--out", default=None, help="folder for the results frames")
    ap.add_argument("--tiny", action="store_true", help="the first cell only, 1 process (what the test suite runs)")
    args = ap.parse_args(argv)
    from fedrepro.core.blas import describe

    print(describe(), flush=True)
    result = run_paper(args.paper, args.scale, 1 if args.tiny else args.jobs, args.data_dir, args.only, args.out,
                       max_cells=1 if args.tiny else None)
    for key, value in result.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
