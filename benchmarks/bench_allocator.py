"""Large numpy temporaries with glibc's default malloc settings and with freed memory kept (issue #28).

FRPG's worker passes (8a)-(8c) in numpy on (n, d) float64 rows (default: the quick MNIST runs' 20 x 7,850,
1.26 MB a temporary), ``--steps`` times, in two fresh processes: one with glibc's defaults, one after
:func:`fedrepro.core.allocator.keep_freed_memory` (what every run does, ``Run.simulate``). Per process:
CPU ms per step (best of ``--repeats``) and the minor page faults of all steps. The arithmetic is the
same in both; only where the temporaries' pages come from differs.

Second case, above glibc's largest mmap threshold (32 MiB, which ``keep_freed_memory`` sets): a round's
uploads, an (|S|, d) float64 array (default FedADMM-Gong on CIFAR-10's MLP-2 at |S| = 20: 20 x 656,810,
105 MB), every row written once a round (``--rounds``), either a fresh array each round (what
``LocalSGD.client_update`` did) or the one array kept across rounds (what it does), both after
``keep_freed_memory``: CPU ms a round and minor page faults a round.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_allocator.py [--rows 20 --dim 7850 --steps 500]
    python benchmarks/bench_allocator.py --tiny
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHILD = r"""
import json, resource, sys, time
import numpy as np
rows, dim, steps, repeats, keep = json.loads(sys.argv[1])
if keep:
    from fedrepro.core.allocator import keep_freed_memory
    assert keep_freed_memory(), "keep_freed_memory did not apply (not glibc?)"
rng = np.random.default_rng(0)
prev, V, q = (rng.standard_normal((rows, dim)) for _ in range(3))
w0 = rng.standard_normal(dim)
beta, alpha, delta, lam, mu = 0.1, 500.0, 1e-3, 1.6, 1e-3

def step():                                   # FRPG (8a)-(8c), the numpy expressions of issue #28's baseline
    U = (1 - beta) * prev + beta * V
    t = lam / alpha
    r = w0 - U + q / alpha
    n = np.sqrt(np.einsum("...d,...d->...", r, r))
    W = w0 - np.where(n <= mu + t, mu / (mu + t), 1.0 - t / np.maximum(n, mu + t))[:, None] * r
    G = (lam / np.maximum(n, mu + t))[:, None] * r
    return W, G, V - (delta * (V - U) + q - G) / (delta + alpha * beta)

best = float("inf")
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(repeats):
    c = time.process_time()
    for _ in range(steps):
        step()
    best = min(best, (time.process_time() - c) / steps)
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
print(json.dumps({"ms_per_step": best * 1e3, "minor_faults_per_step": faults / (repeats * steps)}))
"""


UPLOADS_CHILD = r"""
import json, resource, sys, time
import numpy as np
from fedrepro.core.allocator import keep_freed_memory
rows, dim, rounds, reuse = json.loads(sys.argv[1])
assert keep_freed_memory(), "keep_freed_memory did not apply (not glibc?)"
up = np.random.default_rng(0).standard_normal(dim)
kept = None
faults, c = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.process_time()
for _ in range(rounds):
    uploads = kept if reuse and kept is not None else np.empty((rows, dim))
    for j in range(rows):
        uploads[j] = up
    kept = uploads
    del uploads
    if not reuse:
        kept = None
cpu = time.process_time() - c
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
print(json.dumps({"ms_per_round": cpu / rounds * 1e3, "minor_faults_per_round": faults / rounds}))
"""


def _child(code: str, args: list) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, "-c", code, json.dumps(args)],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def measure(rows: int, dim: int, steps: int, repeats: int, keep: bool) -> dict:
    return _child(CHILD, [rows, dim, steps, repeats, keep])


def measure_uploads(rows: int, dim: int, rounds: int, reuse: bool) -> dict:
    return _child(UPLOADS_CHILD, [rows, dim, rounds, reuse])


def main(argv=None) -> None:
    from fedrepro.core.allocator import _mallopt
    from fedrepro.core.blas import describe

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20)
    ap.add_argument("--dim", type=int, default=7850)
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--upload-rows", type=int, default=20, help="|S|, the round's clients (second case)")
    ap.add_argument("--upload-dim", type=int, default=656_810, help="d of an upload (second case)")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--tiny", action="store_true", help="20 steps, 1 repeat; 3 rounds of 20 x 2^19 uploads (84 MB)")
    args = ap.parse_args(argv)
    if min(args.rows, args.dim, args.steps, args.repeats, args.upload_rows, args.upload_dim, args.rounds) < 1:
        ap.error("--rows, --dim, --steps, --repeats, --upload-rows, --upload-dim and --rounds must be >= 1")
    if args.tiny:
        args.steps, args.repeats, args.rounds, args.upload_dim = 20, 1, 3, 2 ** 19
    print(describe(), flush=True)
    if _mallopt() is None:
        print("not glibc: keep_freed_memory does nothing here; nothing to compare")
        return
    mb = args.rows * args.dim * 8 / 1e6
    print(f"FRPG (8a)-(8c) in numpy, ({args.rows}, {args.dim}) float64 rows ({mb:.2f} MB a temporary), "
          f"{args.steps} steps, best of {args.repeats}")
    res = {}
    for label, keep in (("glibc defaults", False), ("keep_freed_memory", True)):
        res[label] = r = measure(args.rows, args.dim, args.steps, args.repeats, keep)
        print(f"  {label:18s} {r['ms_per_step']:7.3f} ms a step  {r['minor_faults_per_step']:8.1f} minor faults a step")
    a, b = res["glibc defaults"], res["keep_freed_memory"]
    print(f"  kept / defaults: time {b['ms_per_step'] / a['ms_per_step']:.2f}x, "
          f"faults {b['minor_faults_per_step'] / max(a['minor_faults_per_step'], 1e-9):.3f}x")
    mb = args.upload_rows * args.upload_dim * 8 / 1e6
    print(f"a round's uploads after keep_freed_memory: ({args.upload_rows}, {args.upload_dim}) float64 "
          f"({mb:.1f} MB), every row written, {args.rounds} rounds")
    up = {}
    for label, reuse in (("fresh each round", False), ("kept across rounds", True)):
        up[label] = r = measure_uploads(args.upload_rows, args.upload_dim, args.rounds, reuse)
        print(f"  {label:18s} {r['ms_per_round']:8.2f} ms a round  {r['minor_faults_per_round']:9.1f} minor faults a round")
    a, b = up["fresh each round"], up["kept across rounds"]
    print(f"  kept / fresh: time {b['ms_per_round'] / a['ms_per_round']:.2f}x")


if __name__ == "__main__":
    main()
