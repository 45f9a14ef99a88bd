"""Per-job cost of reading a processed image dataset (issue #28): what one neural job does first.

    OMP_NUM_THREADS=1 python benchmarks/bench_processed_load.py [--data-dir data/processed]
        [--datasets mnist fashion_mnist cifar10] [--rows 6000 60000] [--repeats 2]
    python benchmarks/bench_processed_load.py --tiny        # synthetic 2,000-image set in a temporary folder

Each measurement is a fresh Python process (as a Snakemake job is): ``Dataset.load_shared`` of the
folder, then the float32 array of the first ``rows`` training rows (``build_neural``'s
``np.asarray(dataset.X[rows], dtype=np.float32)``). It prints the open time, the rows time and the
process's peak RSS, plus the folder's size on disk.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, resource, sys, time
import numpy as np
from fedrepro.data.dataset import Dataset
path, n = sys.argv[1], int(sys.argv[2])
t = time.perf_counter()
ds = Dataset.load_shared(path)
opened = time.perf_counter() - t
rows = np.flatnonzero(np.asarray(ds.split) == "train")[:n] if ds.split is not None else np.arange(n)
t = time.perf_counter()
X = np.asarray(ds.X[rows], dtype=np.float32)
took = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"open_s": opened, "rows_s": took, "peak_rss_mib": peak, "checksum": float(X.sum(dtype=np.float64))}))
"""


def measure(path: Path, rows: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), str(rows)], check=True, capture_output=True,
                         text=True, cwd=ROOT)
    return json.loads(out.stdout)


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).iterdir())


def tiny_dataset(folder: Path) -> Path:
    import numpy as np

    from fedrepro.data.dataset import Dataset, PixelArray

    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (2000, 784), dtype=np.uint8)
    Dataset("tiny", PixelArray(pixels), rng.integers(0, 10, 2000), np.array(["train"] * 1500 + ["test"] * 500)
            ).save(folder / "tiny")
    return folder / "tiny"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default="data/processed")
    ap.add_argument("--datasets", nargs="+", default=["mnist", "fashion_mnist", "cifar10"])
    ap.add_argument("--rows", nargs="+", type=int, default=[6000, 60000])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--tiny", action="store_true", help="a synthetic 2,000-image set (the test suite's run)")
    args = ap.parse_args(argv)
    from fedrepro.core.blas import describe

    print(describe())
    with tempfile.TemporaryDirectory() as tmp:
        if args.tiny:
            paths, rows, repeats = [tiny_dataset(Path(tmp))], [100, 1500], 1
        else:
            paths, rows, repeats = [Path(args.data_dir) / d for d in args.datasets], args.rows, args.repeats
        for path in paths:
            print(f"{path.name}: {folder_bytes(path) / 2**20:.1f} MiB on disk")
            for n in rows:
                runs = [measure(path, n) for _ in range(repeats)]
                best = min(runs, key=lambda r: r["open_s"] + r["rows_s"])
                print(f"  {n:6d} train rows: open {best['open_s']:.3f} s, rows -> float32 {best['rows_s']:.3f} s, "
                      f"peak RSS {max(r['peak_rss_mib'] for r in runs):.0f} MiB (best of {repeats})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
