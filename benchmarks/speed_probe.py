"""How fast this machine is right now: a probe to run beside a build (issue #28).

Every ``--every`` seconds: the CPU time of a fixed pure-Python loop (``sum(i * i for i in
range(200000))``) and of 20 float32 256^3 matrix products (one BLAS thread), each the best of 3. The
quick build is mostly interpreter-bound small numpy work, so the Python loop tells which speed the
host gives this VM; on the 2-core AMD EPYC VM of the benchmark README it flips between two modes
~1.6x apart (7.6–9.9 ms and 11.1–14.1 ms), idle or not, and the quick build's wall time follows.
Costs < 0.5 % of a core at the default 30 s.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/speed_probe.py [--every 30] [--count N] [--out probe.jsonl]
    python benchmarks/speed_probe.py --tiny        # one probe, no wait (the test suite)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _best_cpu_ms(fn, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best * 1e3


def probe() -> dict:
    numbers = list(range(200_000))
    a = np.random.default_rng(0).random((256, 256), dtype=np.float32)

    def gemms():
        for _ in range(20):
            a @ a

    return {"time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "python_ms": round(_best_cpu_ms(lambda: sum(i * i for i in numbers)), 2),
            "sgemm_ms": round(_best_cpu_ms(gemms), 2), "load": round(os.getloadavg()[0], 2)}


def main(argv=None) -> None:
    from fedrepro.core.blas import describe

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every", type=float, default=30.0, help="seconds between probes")
    ap.add_argument("--count", type=int, default=0, help="probes to take (0: until interrupted)")
    ap.add_argument("--out", type=Path, default=None, help="also append each probe as a JSON line here")
    ap.add_argument("--tiny", action="store_true", help="one probe, no wait")
    args = ap.parse_args(argv)
    if args.every < 0 or args.count < 0:
        ap.error("--every and --count must be >= 0")
    count, every = (1, 0.0) if args.tiny else (args.count, args.every)
    print(describe(), flush=True)
    n = 0
    try:
        while not count or n < count:
            record = probe()
            print(f"{record['time']}  python loop {record['python_ms']:6.1f} ms  20 sgemm 256^3 "
                  f"{record['sgemm_ms']:6.1f} ms  load {record['load']:.1f}", flush=True)
            if args.out:
                with args.out.open("a") as fh:
                    fh.write(json.dumps(record) + "\n")
            n += 1
            if not count or n < count:
                time.sleep(every)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
