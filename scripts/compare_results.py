"""Compare the Parquet results of two builds, timing columns aside.

    python scripts/compare_results.py OLD_RESULTS_DIR NEW_RESULTS_DIR [--rtol 0] [--renames TSV] [--ignore COL]

For every ``<paper>/<experiment>.parquet`` (trace) and ``.summary.parquet`` present in both folders,
the rows are matched by (cell, round) and every column the two files share is compared exactly
(``--rtol`` > 0: floats within that relative tolerance); NaN equals NaN. Columns that measure time
(``*wall_time``, ``*cpu_time``, ``*local_time``, ``*local_cpu_time``) are ignored. Prints one line
per file and exits 1 if any shared column differs, a run is missing, or a file is missing on one side.
Columns present on only one side are listed (new metrics are not a difference in results).
``--renames TSV`` (a table with columns ``old_cell`` and ``new_cell``): cell ids that a change of the
cells' spec renamed (the same run under a new id) are mapped to their new ids before matching;
``--ignore COL`` (repeatable) leaves a column out of the comparison (e.g. ``problem`` when its spec
moved a key elsewhere); both are printed in the summary line.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

TIMING = re.compile(r"(^|_)(wall_time|cpu_time|local_time|local_cpu_time)$")
KEYS = ["cell", "round"]


def result_files(root: Path) -> dict[str, Path]:
    return {str(p.relative_to(root)): p for p in sorted(root.glob("*/*.parquet"))
            if p.parent.name != "cells" and p.name != "claims.parquet"}


def compare_frames(a: pd.DataFrame, b: pd.DataFrame, rtol: float, renames: dict | None = None,
                   ignore=()) -> list[str]:
    problems = []
    if renames and "cell" in a.columns:
        a = a.assign(cell=a["cell"].map(lambda c: renames.get(c, c)))
    keys = [k for k in KEYS if k in a.columns and k in b.columns]
    a = a.sort_values(keys).reset_index(drop=True) if keys else a
    b = b.sort_values(keys).reset_index(drop=True) if keys else b
    if len(a) != len(b) or (keys and not a[keys].equals(b[keys])):
        ka = set(map(tuple, a[keys].to_numpy())) if keys else set()
        kb = set(map(tuple, b[keys].to_numpy())) if keys else set()
        problems.append(f"rows differ: {len(a)} vs {len(b)} ({len(ka - kb)} only old, {len(kb - ka)} only new)")
        return problems
    for col in sorted(set(a.columns) & set(b.columns)):
        if TIMING.search(col) or col in ignore:
            continue
        x, y = a[col], b[col]
        if pd.api.types.is_float_dtype(x) and pd.api.types.is_float_dtype(y):
            xv, yv = x.to_numpy(float), y.to_numpy(float)
            same = (np.isnan(xv) & np.isnan(yv)) | (np.abs(xv - yv) <= rtol * np.abs(xv)) | (xv == yv)
            if not same.all():
                i = int(np.flatnonzero(~same)[0])
                problems.append(f"{col}: {int((~same).sum())} values differ (first: {xv[i]!r} vs {yv[i]!r})")
        elif not x.astype(str).equals(y.astype(str)):
            n = int((x.astype(str) != y.astype(str)).sum())
            problems.append(f"{col}: {n} values differ")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--rtol", type=float, default=0.0)
    parser.add_argument("--renames", type=Path, default=None, help="TSV with old_cell and new_cell columns")
    parser.add_argument("--ignore", action="append", default=[], help="a column to leave out (repeatable)")
    args = parser.parse_args(argv)
    renames = {}
    if args.renames is not None:
        table = pd.read_csv(args.renames, sep="\t", dtype=str)
        renames = dict(zip(table["old_cell"], table["new_cell"]))
    old, new = result_files(args.old), result_files(args.new)
    bad = 0
    for name in sorted(set(old) | set(new)):
        if name not in old or name not in new:
            print(f"{name}: only in {'new' if name in new else 'old'}")
            bad += 1
            continue
        a, b = pd.read_parquet(old[name]), pd.read_parquet(new[name])
        problems = compare_frames(a, b, args.rtol, renames, set(args.ignore))
        extra = sorted(set(a.columns) ^ set(b.columns))
        note = f" (columns on one side only: {', '.join(extra)})" if extra else ""
        if problems:
            bad += 1
            print(f"{name}: DIFFERS{note}\n    " + "\n    ".join(problems))
        else:
            print(f"{name}: identical{note}")
    how = "".join([f"; {len(renames)} renamed cell ids mapped ({args.renames})" if renames else "",
                   f"; columns left out: {', '.join(args.ignore)}" if args.ignore else ""])
    print(f"{len(set(old) | set(new)) - bad} identical, {bad} differ{how}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
