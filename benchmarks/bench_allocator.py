"""Large numpy temporaries with glibc's default malloc settings and with freed memory kept (issue #28).

FRPG's worker passes (8a)-(8c) in numpy on (n, d) float64 rows (default: the quick MNIST runs' 20 x 7,850,
1.26 MB a temporary), ``--steps`` times, in two fresh processes: one with glibc's defaults, one after
:func:`fedrepro.core.allocator.keep_freed_memory` (what every run does, ``Run.simulate``). Per process:
CPU ms per step (best of ``--repeats``) and the minor page faults of all steps. The arithmetic is the
same in both; only where the temporaries' pages come from differs.

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


def measure(rows: int, dim: int, steps: int, repeats: int, keep: bool) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps([rows, dim, steps, repeats, keep])],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def main(argv=None) -> None:
    from fedrepro.core.allocator import _mallopt
    from fedrepro.core.blas import describe

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20)
    ap.add_argument("--dim", type=int, default=7850)
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tiny", action="store_true", help="20 steps, 1 repeat")
    args = ap.parse_args(argv)
    if min(args.rows, args.dim, args.steps, args.repeats) < 1:
        ap.error("--rows, --dim, --steps and --repeats must be >= 1")
    if args.tiny:
        args.steps, args.repeats = 20, 1
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


if __name__ == "__main__":
    main()
