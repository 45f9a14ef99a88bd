"""FIDELITY GO-16's MNIST cell, swept: which FedADMM reproduces the paper's "97% in 10 rounds"?

    OMP_NUM_THREADS=1 nice -n 19 python benchmarks/gong_go16_sweep.py --out /tmp/go16.jsonl \\
        [--variants early alg1 head] [--lrs 0.1 0.05 0.2 0.5] [--seeds 0 1 2] [--rounds 10]
    python benchmarks/gong_go16_sweep.py --tiny --out DIR/go16.jsonl --data-dir DIR   # one cell, 1 round (test suite)

The cell: ``table3``'s paper-scale MNIST-100 IID column (CNN 1, full MNIST, 10,000 test images, m = 100,
C = 0.1, E = 5, B = 200, momentum 0.5, rho = 0.01, eta = 1), FedADMM only, ``--rounds`` rounds, as the
workflow expands it (``fedrepro.experiments.expansion.expand``, base seed 20260101), with the variant's
parameters and the learning rate overridden. Variants (spec 003 §3.1-3.2, §7 A1, A3, A4):

* ``early``: the authors' early code: ``local_init: sequential_shared``, random client order, fixed E
  (its ``--fixed 1`` default);
* ``early_random_e``: the same with E_i ~ U{1..E};
* ``early_ascending``: the former hybrid (ascending client order, E_i ~ U{1..E});
* ``alg1``: Algorithm 1 as printed, Option I (``local_init: local``), E_i ~ U{1..E};
* ``head``: the authors' published HEAD code, Option II (``local_init: global``), E_i ~ U{1..E} (its
  ``--fixed 0`` default; its eta schedule starts at round 60, outside 10 rounds).

Cells run one after another in this process (seed-major: every variant and lr of seed 0 first), and each
finished cell is appended to ``--out`` as one JSON line (accuracy per evaluated round, CPU seconds), so
an interrupted sweep keeps what it measured; cells already in ``--out`` are skipped. Every line also
records the BLAS library, kernel and threads the cell ran with (``machine``, :mod:`fedrepro.core.blas`).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE_SEED = 20260101
VARIANTS = {
    "early": {"local_init": "sequential_shared", "client_order": "random", "random_epochs": False},
    "early_random_e": {"local_init": "sequential_shared", "client_order": "random", "random_epochs": True},
    "early_ascending": {"local_init": "sequential_shared", "client_order": "ascending", "random_epochs": True},
    "alg1": {"local_init": "local", "random_epochs": True},
    "head": {"local_init": "global", "random_epochs": True},
}


def go16_cell(variant: str, lr: float, instance: int, rounds: int, eval_every: int = 1):
    """The run (a :class:`~fedrepro.experiments.spec.RunSpec`) of ``variant`` with learning rate ``lr``."""
    from fedrepro.experiments.expansion import check_cell, expand
    from fedrepro.experiments.spec import as_spec
    from fedrepro.experiments.yamlio import load_paper_fragment

    block = load_paper_fragment("fedadmm_gong", ROOT)["experiments"]["table3"]
    runs = [s for s in map(as_spec, expand("fedadmm_gong", "table3", block, "paper", BASE_SEED))
            if s.algorithm.name == "fedadmm_gong" and s.columns.get("setting") == "MNIST-100 IID"
            and s.instance == instance]
    if len(runs) != 1:
        raise SystemExit(f"expected one FedADMM MNIST-100 IID cell of instance {instance}, got {len(runs)}")
    spec = runs[0]
    params = {k: v for k, v in spec.algorithm.params.items()
              if k not in ("local_init", "client_order", "random_epochs")}
    spec = spec.replace(params={**params, **VARIANTS[variant], "lr": float(lr)}, max_rounds=int(rounds),
                        eval_every=int(eval_every))
    check_cell(spec.to_dict())
    return spec


def table(path: Path, variants, lrs, seeds, rounds) -> str:
    """Markdown: one row per (variant, lr), one column per seed: test accuracy after ``rounds`` rounds
    (round-1 accuracy and CPU seconds in brackets); "—" = not run."""
    runs = {}
    if path.exists():
        for line in path.read_text().splitlines():
            r = json.loads(line)
            runs[(r["variant"], r["lr"], r["instance"], r["rounds"])] = r
    head = "| variant | lr | " + " | ".join(f"seed {BASE_SEED + i}" for i in seeds) + " |"
    rows = [head, "|" + "---|" * (2 + len(seeds))]
    for v in variants:
        for lr in lrs:
            cells = []
            for i in seeds:
                r = runs.get((v, lr, i, rounds))
                cells.append("—" if r is None else
                             f"**{r['final']:.3f}** (r1 {r['acc'].get('1', r['acc'].get(1, float('nan'))):.3f}; {r['cpu_s']:.0f} CPU-s)")
            rows.append(f"| {v} | {lr:g} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--variants", nargs="+", default=["early", "alg1", "head"], choices=sorted(VARIANTS))
    ap.add_argument("--lrs", nargs="+", type=float, default=[0.1, 0.05, 0.2, 0.5])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="instances (seed = 20260101 + instance)")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--eval-every", type=int, default=1)
    ap.add_argument("--data-dir", default="data/processed")
    ap.add_argument("--table", action="store_true", help="print --out's cells as FIDELITY GO-16's table and exit")
    ap.add_argument("--tiny", action="store_true", help="one cell (early code, lr 0.1, seed 0), 1 round: a smoke "
                    "test of the script (what the test suite runs, on a small MNIST)")
    args = ap.parse_args(argv)
    if args.tiny:
        args.variants, args.lrs, args.seeds, args.rounds = ["early"], [0.1], [0], 1
    if args.table:
        print(table(Path(args.out), args.variants, args.lrs, args.seeds, args.rounds))
        return
    from fedrepro.core.blas import blas_record, describe
    from fedrepro.experiments.runner import run_cell

    print(describe(), flush=True)

    out = Path(args.out)
    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done.add((r["variant"], r["lr"], r["instance"], r["rounds"]))
    for inst in args.seeds:
        for lr in args.lrs:
            for variant in args.variants:
                if (variant, lr, inst, args.rounds) in done:
                    continue
                spec = go16_cell(variant, lr, inst, args.rounds, args.eval_every)
                c0, w0 = time.process_time(), time.perf_counter()
                df = run_cell(spec, data_dir=args.data_dir)
                cpu, wall = time.process_time() - c0, time.perf_counter() - w0
                acc = {int(r): float(a) for r, a in zip(df["round"], df["test_accuracy"])}
                rec = {"variant": variant, "lr": lr, "instance": inst, "seed": spec.seed, "rounds": args.rounds,
                       "params": spec.algorithm.params, "acc": acc, "final": acc[max(acc)], "cpu_s": round(cpu, 1),
                       "wall_s": round(wall, 1), "machine": blas_record()}
                with out.open("a") as fh:
                    fh.write(json.dumps(rec) + "\n")
                print(f"{variant:16s} lr={lr:<5g} seed={spec.seed} acc@{max(acc)}={rec['final']:.4f} "
                      f"cpu={cpu:.0f}s wall={wall:.0f}s", flush=True)


if __name__ == "__main__":
    main()
