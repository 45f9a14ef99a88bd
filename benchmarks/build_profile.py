"""Per-rule profile of a Snakemake build from the records every rule script appends to
``logs/profile/<rule>.jsonl`` (``workflow/scripts/_common.py``).

    python benchmarks/build_profile.py [--root .] [--total-cpu S] [--json OUT]

Per rule: jobs, summed wall and CPU seconds, the CPU spent before the script body (interpreter,
Snakemake's preamble, imports), the mean CPU per job and the largest peak memory. For ``run_cells``
it also splits the CPU into the runs themselves (the results' ``run_cpu_time``, one value per cell)
and the job around them (data loading, set-up, writing). With ``--total-cpu`` (the whole build's
CPU seconds, e.g. from ``/usr/bin/time``) the difference to the jobs' sum is the Snakemake scheduler
process's own share. It also reports the span from the first job's start to the last job's end and the
core-seconds in that span when fewer than ``--cores`` jobs ran (a long job left alone at the end shows
here). ``--tiny`` summarises a two-job synthetic profile (the test suite runs it).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path


def read_records(profile_dir: Path) -> list[dict]:
    records = []
    for path in sorted(profile_dir.glob("*.jsonl")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise SystemExit(f"{path}:{n}: not a JSON record ({err})") from None
    return records


def run_cpu_by_output(root: Path, outputs: list[str]) -> float:
    """CPU seconds inside the runs of the given run_cells outputs (max ``run_cpu_time`` per cell)."""
    import pandas as pd

    total = 0.0
    for out in outputs:
        path = root / out
        if path.exists():
            df = pd.read_parquet(path, columns=["cell", "run_cpu_time"])
            total += float(df.groupby("cell")["run_cpu_time"].max().sum())
    return total


def idle_core_seconds(records: list[dict], cores: int) -> tuple[float, float]:
    """(span, core-seconds without a job): from the first job's start to the last job's end, the time
    integral of max(0, cores - jobs running), from the records' start and wall times."""
    events = sorted([(r["start"], 1) for r in records] + [(r["start"] + r["wall_s"], -1) for r in records])
    if not events:
        return 0.0, 0.0
    idle, running, last = 0.0, 0, events[0][0]
    for t, step in events:
        idle += max(0, cores - running) * (t - last)
        running, last = running + step, t
    return events[-1][0] - events[0][0], idle


def summarise(records: list[dict], root: Path, total_cpu: float | None = None, cores: int = 2) -> dict:
    rules: dict[str, dict] = {}
    for r in records:
        s = rules.setdefault(r["rule"], {"jobs": 0, "wall_s": 0.0, "cpu_s": 0.0, "sys_s": None,
                                         "startup_cpu_s": 0.0, "max_rss_mb": 0.0, "failed": 0, "outputs": []})
        s["jobs"] += 1
        s["failed"] += r.get("status") != "ok"
        s["wall_s"] += r["wall_s"]
        s["cpu_s"] += r["cpu_s"]
        if "sys_s" in r:                       # records before the field: the kernel share unknown
            s["sys_s"] = (s["sys_s"] or 0.0) + r["sys_s"]
        s["startup_cpu_s"] += r["startup_cpu_s"]
        s["max_rss_mb"] = max(s["max_rss_mb"], r["max_rss_mb"])
        s["outputs"].append(r["output"])
    if "run_cells" in rules:
        rules["run_cells"]["in_runs_cpu_s"] = run_cpu_by_output(root, rules["run_cells"]["outputs"])
    for s in rules.values():
        del s["outputs"]
    jobs_cpu = sum(s["cpu_s"] for s in rules.values())
    span, idle = idle_core_seconds(records, cores)
    out = {"rules": rules, "jobs_cpu_s": jobs_cpu, "span_s": span, "cores": cores, "idle_core_s": idle}
    if total_cpu is not None:
        out["total_cpu_s"] = total_cpu
        out["scheduler_cpu_s"] = total_cpu - jobs_cpu
    return out


def print_table(summary: dict, file=sys.stdout) -> None:
    print("| rule | jobs | wall s | CPU s | of which kernel | before body (imports) | CPU / job | peak MB |", file=file)
    print("|---|---|---|---|---|---|---|---|", file=file)
    for name, s in sorted(summary["rules"].items(), key=lambda kv: -kv[1]["cpu_s"]):
        extra = f" (in runs {s['in_runs_cpu_s']:.0f})" if "in_runs_cpu_s" in s else ""
        kernel = "?" if s.get("sys_s") is None else f"{s['sys_s']:.0f}"
        print(f"| {name} | {s['jobs']} | {s['wall_s']:.0f} | {s['cpu_s']:.0f}{extra} | {kernel} | "
              f"{s['startup_cpu_s']:.0f} | {s['cpu_s'] / s['jobs']:.2f} | {s['max_rss_mb']:.0f} |", file=file)
    print(f"\njobs: {summary['jobs_cpu_s']:.0f} CPU-s; from the first job's start to the last one's end "
          f"{summary['span_s']:.0f} s, of which {summary['idle_core_s']:.0f} core-seconds with fewer than "
          f"{summary['cores']} jobs running", file=file)
    if "total_cpu_s" in summary:
        print(f"whole build: {summary['total_cpu_s']:.0f} CPU-s; Snakemake scheduler and the rest: "
              f"{summary['scheduler_cpu_s']:.0f} CPU-s", file=file)


def _tiny(tmp: Path) -> Path:
    (tmp / "logs/profile").mkdir(parents=True)
    lines = [{"rule": "aggregate", "output": "results/x.parquet", "status": "ok", "start": 0, "wall_s": 2.0,
              "cpu_s": 1.5, "sys_s": 0.25, "startup_wall_s": 1.0, "startup_cpu_s": 0.9, "max_rss_mb": 150.0},
             {"rule": "figure", "output": "figures/x.pdf", "status": "ok", "start": 1, "wall_s": 3.0,
              "cpu_s": 2.5, "sys_s": 0.5, "startup_wall_s": 1.2, "startup_cpu_s": 1.1, "max_rss_mb": 180.0}]
    for r in lines:
        with open(tmp / "logs/profile" / f"{r['rule']}.jsonl", "a") as fh:
            fh.write(json.dumps(r) + "\n")
    return tmp


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=".", help="the build's working directory (holds logs/profile)")
    ap.add_argument("--total-cpu", type=float, help="the whole build's CPU seconds (scheduler share = this - jobs)")
    ap.add_argument("--cores", type=int, default=2, help="the build's -j (for the core-seconds without a job)")
    ap.add_argument("--json", help="also write the summary as JSON here")
    ap.add_argument("--tiny", action="store_true", help="summarise a synthetic two-job profile")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = _tiny(Path(tmp)) if args.tiny else Path(args.root)
        profile_dir = root / "logs/profile"
        if not profile_dir.is_dir():
            raise SystemExit(f"{profile_dir}: no profile records (build with the workflow first)")
        summary = summarise(read_records(profile_dir), root, args.total_cpu, args.cores)
    print_table(summary)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
