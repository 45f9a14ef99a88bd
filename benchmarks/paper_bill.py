"""The measured paper-scale bill (issue #28): CPU-hours and peak memory of every paper at ``scale: paper``.

    OMP_NUM_THREADS=1 python benchmarks/paper_bill.py [--papers aspire frpg] [--budget-s 2400]
        [--rounds N] [--data-dir data/processed] [--out benchmarks/results/paper_bill.json] [--table-only]
    python benchmarks/paper_bill.py --tiny --out /tmp/bill.json     # two synthetic kinds, 1 round (the tests)

Expands every paper's ``experiments.yaml`` at scale ``paper`` as the workflow does and groups the cells
into cost kinds (:func:`fedrepro.experiments.resources.cost_kind`). One cell of every kind is run for a
few rounds (``SAMPLE_ROUNDS`` by problem, capped, stop rule off, evaluated every round), all kinds of
one problem spec in one subprocess with 1 BLAS/numba thread. Per kind it records, in CPU seconds: the
subprocess's start-up and imports, building the problem and the run (plus the first round's and first
evaluation's extra over the later ones: compilation, caches), the algorithm's initialisation, one
evaluation (mean of evaluations 1..R) and one round (mean of rounds 2..R; round 1 when R = 1), the
mean virtual time per round, and the peak resident memory during the kind (VmHWM, reset per kind
through /proc/self/clear_refs; the data the subprocess holds count in every kind that uses them).
:func:`fedrepro.experiments.resources.measured_cell_cpu_s` extrapolates these to every cell's round
budget; the table sums them per paper. The samples go to ``--out`` (resumable: kinds already there
are skipped); kinds that cannot run here (a dataset not processed) are listed under ``unsampled``.
``--budget-s`` stops starting new subprocesses once the samples have used that much CPU.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))                     # this checkout's fedrepro, not an installed one

from fedrepro.core.peak_memory import peak_rss_mb as _peak_mb  # noqa: E402
from fedrepro.data.dataset import MANIFEST  # noqa: E402
from fedrepro.experiments.spec import RunSpec, as_spec  # noqa: E402
OUT = ROOT / "benchmarks" / "results" / "paper_bill.json"
#: rounds of a sample by problem: the neural problems' rounds are the expensive part of the bill
SAMPLE_ROUNDS = {"neural": 1, "worker_neural": 10}
DEFAULT_ROUNDS = 10
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


#: experiments to expand (None: all); --tiny keeps one
ONLY_EXPERIMENTS = None


def paper_cells(papers, scale: str = "paper", seed: int = 20260101) -> list[RunSpec]:
    """The runs a build runs (their specs): every experiment's cells, less those that copy an earlier
    experiment's run (:func:`fedrepro.experiments.build_plan.same_runs`)."""
    from fedrepro.experiments.build_plan import same_runs
    from fedrepro.experiments.expansion import expand
    from fedrepro.experiments.yamlio import load_paper_fragment

    by_experiment = {(p, e): expand(p, e, b, scale, seed) for p in papers
                     for e, b in load_paper_fragment(p, ROOT)["experiments"].items()
                     if ONLY_EXPERIMENTS is None or e in ONLY_EXPERIMENTS}
    copies = same_runs(by_experiment)
    return [spec for spec in map(as_spec, (c for cs in by_experiment.values() for c in cs)) if spec.name not in copies]


def group_kinds(specs: list[RunSpec]) -> dict:
    """``{kind id: {"cells": n, "spec": the first run of the kind}}``."""
    from fedrepro.experiments.resources import cost_kind_id

    kinds = {}
    for spec in specs:
        kind = kinds.setdefault(cost_kind_id(spec), {"cells": 0, "spec": spec})
        kind["cells"] += 1
    return kinds


def sample_rounds(spec: RunSpec, cap: int | None) -> int:
    rounds = SAMPLE_ROUNDS.get(spec.problem["name"], DEFAULT_ROUNDS)
    return max(1, min(rounds, cap or rounds, int(spec.run.max_rounds) or 1))


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as fh:     # "5": reset the peak resident set size (Linux >= 4.0)
        fh.write("5")


def _timed_run(spec: RunSpec, problem, data_dir: str) -> dict:
    """Simulate ``spec`` (evaluated every round) on the built ``problem``: CPU seconds of building the
    run (and the algorithm's prepare), of its initialisation, of every evaluation and every round, the
    virtual time, and the peak resident memory since the call."""
    from fedrepro.experiments.runner import build_run

    _reset_peak()
    c = time.process_time()
    run = build_run(spec, data_dir=data_dir, problem=problem)
    marks = []                                       # CPU time at the end of every evaluation
    result = run.simulate(progress=lambda record: marks.append(time.process_time()))
    total = time.process_time()
    trace = result.trace
    origin = total - result.cpu_time                 # the loop's clock starts after the algorithm's prepare
    starts = [origin + rec["cpu_time"] for rec in trace]           # CPU time at each evaluation's start
    return {"build": origin - c, "init": trace[0]["cpu_time"],
            "evals": [end - begin for begin, end in zip(starts, marks)],
            "rounds": [starts[i + 1] - marks[i] for i in range(len(trace) - 1)],
            "virtual_time": trace[-1].get("virtual_time"), "peak_mb": _peak_mb(), "cpu": total - c,
            "store": result.info.get("store", "dense")}


def _mean(values):
    return sum(values) / len(values) if values else 0.0


def clients_round_cpu(one: float, two: float, clients: int) -> float:
    """CPU seconds of a round of ``clients`` clients from rounds of one and of two: clients x the
    larger of the one-client round and half the two-client round. A round is a + b x clients with
    a >= 0 (the server's work), so either is at least b: an upper bound, and the larger of the two
    guards against the noise of one short timing (a fit of a and b from two short rounds swung by
    +-50%)."""
    return clients * max(one, two / 2)


def sample_kind(spec: RunSpec, rounds: int, problem, data_dir: str) -> dict:
    """The sample of one kind: ``rounds`` rounds of ``spec``; the first evaluation's and the first
    round's extra over the later ones (compilation, caches) count as set-up. A neural cell with more
    than two clients per round runs three one-round samples instead, with 1, 1 and 2 clients (the
    first is the warm-up): its round is :func:`clients_round_cpu` of the last two, its peak the
    2-client peak plus (clients - 2) x the larger of the second client's measured memory and its two
    float32 uploads."""
    capped = spec.replace(max_rounds=rounds, eval_every=1, stop=None, time_limit=None, time_budget=None)
    from fedrepro.core.sampling import participants

    m = getattr(problem, "m", 1)
    clients = participants(m, float(spec.run.rho), spec.run.sample_count)
    if spec.problem["name"] != "neural" or clients <= 2:
        t = _timed_run(capped, problem, data_dir)
        eval_cpu, round_cpu = _mean(t["evals"][1:] or t["evals"]), _mean(t["rounds"][1:] or t["rounds"])
        extra = (t["evals"][0] - eval_cpu) + (t["rounds"][0] - round_cpu if t["rounds"] else 0.0)
        return {"rounds_sampled": len(t["rounds"]), "build": t["build"], "extra": extra, "init": t["init"],
                "eval_cpu_s": eval_cpu, "round_cpu_s": round_cpu, "peak_mb": t["peak_mb"], "cpu": t["cpu"],
                "store": t["store"], "virtual_time_per_round": (t["virtual_time"] / len(t["rounds"])
                                                                if t["virtual_time"] and t["rounds"] else None)}
    one = capped.replace(max_rounds=1, rho=1 / m, sample_count="ceil")
    warm, t1, t2 = (_timed_run(s, problem, data_dir) for s in (one, one, one.replace(rho=2 / m)))
    r1, r2 = t1["rounds"][0], t2["rounds"][0]
    round_cpu = clients_round_cpu(r1, r2, clients)
    eval_cpu = _mean(t1["evals"] + t2["evals"])
    upload_mb = 2 * 4 * getattr(problem, "dim", 0) / 2**20
    peak = t2["peak_mb"] + (clients - 2) * max(t2["peak_mb"] - t1["peak_mb"], upload_mb)
    return {"rounds_sampled": 1, "clients_sampled": [1, 1, 2], "clients_per_round": clients,
            "one_client_round_cpu_s": round(r1, 4), "two_client_round_cpu_s": round(r2, 4),
            "build": warm["build"], "init": warm["init"],
            "extra": (warm["rounds"][0] - r1) + (warm["evals"][0] - eval_cpu),
            "eval_cpu_s": eval_cpu, "round_cpu_s": round_cpu, "peak_mb": peak, "store": t2["store"],
            "cpu": warm["cpu"] + t1["cpu"] + t2["cpu"], "virtual_time_per_round": None}


def sample_kinds(job: dict) -> list[dict]:
    """Run in the child: time the runs of ``job["samples"]`` (``{"kind", "cell": the cell dict, "rounds"}``; one
    problem spec, built once) for their sample rounds."""
    import numpy as np  # noqa: F401  (BLAS loaded before threadpoolctl looks)

    from fedrepro.experiments.runner import build_run  # noqa: F401  (imports count as start-up)
    from fedrepro.problems import build_problem

    start_cpu = time.process_time()
    out, problem, build_cpu = [], None, 0.0
    for entry in job["samples"]:
        spec = as_spec(entry["cell"])
        try:
            if problem is None:
                c = time.process_time()
                problem = build_problem(spec.problem, spec.seed, data_dir=job["data_dir"])
                build_cpu = time.process_time() - c
            s = sample_kind(spec, entry["rounds"], problem, job["data_dir"])
        except (OSError, KeyError, ValueError) as err:
            out.append({"kind": entry["kind"], "error": f"{type(err).__name__}: {err}"})
            continue
        out.append({"kind": entry["kind"], "start_cpu_s": round(start_cpu, 3),
                    "setup_cpu_s": round(build_cpu + s.pop("build") + s.pop("extra"), 3),
                    "init_cpu_s": round(s.pop("init"), 3), "sample_cpu_s": round(s.pop("cpu"), 2),
                    **{k: round(v, 6) if isinstance(v, float) else v for k, v in s.items()}})
    return out


def run_child(samples: list[dict], data_dir: str) -> tuple[list[dict], float]:
    """One subprocess (1 thread) over the kinds of one problem spec (``samples``: :func:`sample_kinds`'s); returns
    its samples and CPU seconds."""
    env = {**os.environ, **{v: "1" for v in THREAD_VARIABLES}, "PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, __file__, "--child"],
                          input=json.dumps({"samples": samples, "data_dir": data_dir}), capture_output=True, text=True, env=env, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        return [{"kind": e["kind"], "error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else
                 f"exit {proc.returncode}"} for e in samples], cpu
    return json.loads(proc.stdout), cpu


def machine() -> dict:
    import numpy  # noqa: F401
    from threadpoolctl import threadpool_info

    blas = [f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')}" for i in threadpool_info()
            if i.get("user_api") == "blas"]
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "blas": blas,
            "threads": 1}


def commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    return out.stdout.strip()


def load(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {"kinds": {}, "calibrated": {}, "unsampled": {}, "runs": []}


def save(path: Path, bill: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(bill, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def kind_label(spec: RunSpec) -> str:
    p = spec.problem
    params = {k: v for k, v in spec.algorithm.params.items() if not isinstance(v, float)}
    return " ".join(str(x) for x in (spec.paper, spec.algorithm.name, p.get("name"), p.get("dataset", ""),
                                     f"m={p['m']}" if "m" in p else "", f"k0={spec.run.k0}",
                                     f"rho={spec.run.rho}", params or "") if x != "")


#: a kind is a group's first sample when its sample costs at most this by the work model (seconds)
FIRST_SAMPLE_CAP_S = 300.0


def sampling_jobs(kinds: dict, done, rounds_cap: int | None, limit_kinds: int | None,
                  data_dir: str = "data/processed", order: str = "cost") -> tuple[list[list[dict]], list[dict]]:
    """The subprocesses to run, in order, and the kinds that cannot run here (a dataset not processed).
    First, alone, one kind of every calibration group without a sample: the one with the largest share
    of the group's bill by the work model among those whose sample costs at most FIRST_SAMPLE_CAP_S
    (else the cheapest); then the other kinds, those of one problem spec together, cheapest job first
    (``order="weight"``: the job with the largest share of the bill by the work model first).
    ``limit_kinds`` keeps the first kinds of that order."""
    from fedrepro.experiments.resources import calibration_group, modelled_cell_seconds

    def entry(k):
        spec = kinds[k]["spec"]
        rounds = sample_rounds(spec, rounds_cap)
        return {"kind": k, "spec": spec, "rounds": rounds, "label": kind_label(spec),
                "cost": modelled_cell_seconds(spec.replace(max_rounds=rounds, time_budget=None)),
                "weight": kinds[k]["cells"] * modelled_cell_seconds(spec)}

    todo = [entry(k) for k in kinds if k not in done]
    missing = [e for e in todo
               if not all((Path(data_dir) / d / MANIFEST).is_file() for d in e["spec"].label.datasets or ())]
    todo = sorted((e for e in todo if e not in missing), key=lambda e: e["cost"])
    sampled_groups = {calibration_group(kinds[k]["spec"]) for k in done if k in kinds}
    groups = defaultdict(list)
    for e in todo:
        groups[calibration_group(e["spec"])].append(e)
    first = [max([e for e in es if e["cost"] <= FIRST_SAMPLE_CAP_S] or es[:1], key=lambda e: e["weight"])
             for g, es in groups.items() if g not in sampled_groups]
    rest = defaultdict(list)
    for e in todo:
        if e not in first:
            rest[json.dumps([e["spec"].paper, e["spec"].problem], sort_keys=True)].append(e)
    key = "weight" if order == "weight" else "cost"
    rest = [sorted(es, key=lambda e: -e[key] if key == "weight" else e[key]) for es in rest.values()]
    jobs = [[e] for e in sorted(first, key=lambda e: e["cost"])] + sorted(
        rest, key=lambda es: -sum(e[key] for e in es) if key == "weight" else sum(e[key] for e in es))
    if limit_kinds is not None:
        kept, left = [], limit_kinds
        for job in jobs:
            if left > 0:
                kept.append(job[:left])
                left -= len(kept[-1])
        jobs = kept
    return jobs, missing


def sample(papers, out: Path, data_dir: str, budget_s: float, rounds_cap: int | None, limit_kinds: int | None,
           synthetic_only: bool = False, order: str = "cost", log=print) -> dict:
    bill = load(out)
    kinds = group_kinds(paper_cells(papers))
    if synthetic_only:                            # kinds whose cells read no dataset
        kinds = {k: v for k, v in kinds.items() if not v["spec"].label.datasets}
    jobs, missing = sampling_jobs(kinds, set(bill["kinds"]) | set(bill["unsampled"]), rounds_cap, limit_kinds,
                                  data_dir, order)
    for e in missing:
        bill["unsampled"][e["kind"]] = {"label": e["label"],
                                        "error": f"datasets {e['spec'].label.datasets} not in {data_dir}"}
    run = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "commit": commit(), "machine": machine(), "load_at_start": os.getloadavg()[0], "cpu_s": 0.0}
    bill["runs"].append(run)
    log(f"{len(kinds)} kinds, {sum(map(len, jobs))} to sample in {len(jobs)} subprocesses; "
        f"budget {budget_s:.0f} CPU-s", flush=True)
    for entries in jobs:
        if run["cpu_s"] >= budget_s:
            log(f"budget reached after {run['cpu_s']:.0f} CPU-s", flush=True)
            break
        results, cpu = run_child([{"kind": e["kind"], "cell": e["spec"].to_dict(), "rounds": e["rounds"]}
                                  for e in entries], data_dir)
        run["cpu_s"] = round(run["cpu_s"] + cpu, 1)
        by_kind = {e["kind"]: e for e in entries}
        for res in results:
            entry = by_kind[res.pop("kind")]
            if "error" in res:
                bill["unsampled"][entry["kind"]] = {"label": entry["label"], "error": res["error"]}
                continue
            bill["kinds"][entry["kind"]] = {**res, "label": entry["label"], "date": run["date"], "commit": run["commit"]}
        bill["calibrated"] = calibrated(papers, bill, kinds)
        save(out, bill)
        log(f"{cpu:7.1f} CPU-s  {len(entries)} kinds  {entries[0]['label'][:90]}  "
            f"(total {run['cpu_s']:.0f} CPU-s, load {os.getloadavg()[0]:.1f}; saved)", flush=True)
    run["load_at_end"] = os.getloadavg()[0]
    bill["calibrated"] = calibrated(papers, bill, kinds)
    save(out, bill)
    return bill


def calibrated(papers, bill: dict, kinds: dict | None = None) -> dict:
    """Entries for the kinds without a sample whose calibration group has samples
    (:func:`fedrepro.experiments.resources.calibrate`)."""
    from fedrepro.experiments.resources import calibrate, calibration_group

    kinds = kinds or group_kinds(paper_cells(papers))
    by_group = defaultdict(list)
    for k, kind in kinds.items():
        if k in bill["kinds"]:
            by_group[calibration_group(kind["spec"])].append((kind["spec"], {**bill["kinds"][k], "kind": k}))
    kept = {k: v for k, v in bill.get("calibrated", {}).items() if k not in kinds}     # other papers' kinds
    return {**kept, **{k: {**calibrate(kind["spec"], by_group[group]), "label": kind_label(kind["spec"])}
                       for k, kind in kinds.items()
                       if k not in bill["kinds"] and (group := calibration_group(kind["spec"])) in by_group}}


def paper_table(papers, entries: dict) -> list[dict]:
    """Per paper: cells; CPU-hours and peak memory over the cells whose kind is sampled or calibrated;
    the cells and kinds of each."""
    from fedrepro.experiments.resources import (cost_kind_id, estimated_memory_mb, estimated_runtime_min,
                                                measured_cpu_s, measured_requests)

    rows = []
    for paper in papers:
        specs = paper_cells([paper])
        ids = [cost_kind_id(s) for s in specs]
        known = [(s, entries[k]) for s, k in zip(specs, ids) if k in entries]
        sampled = [e for _, e in known if "ratio" not in e]
        rows.append({
            "paper": paper, "cells": len(specs), "kinds": len(set(ids)),
            "kinds_sampled": len({k for k in ids if k in entries and "ratio" not in entries[k]}),
            "kinds_calibrated": len({k for k in ids if k in entries and "ratio" in entries[k]}),
            "cells_sampled": len(sampled), "cells_calibrated": len(known) - len(sampled),
            "cells_fallback": len(specs) - len(known),
            "cpu_h": sum(measured_cpu_s(s, e) for s, e in known) / 3600,
            "peak_mb": max((e["peak_mb"] for _, e in known if e.get("peak_mb")), default=None),
            "sample_rounds": sorted({e["rounds_sampled"] for e in sampled}),
            "requested_h": sum((measured_requests(s, entries) or {"runtime_min": estimated_runtime_min(s, "paper")})
                               ["runtime_min"] for s in specs) / 60,
            "estimated_h": sum(estimated_runtime_min(s, "paper") for s in specs) / 60,
            "largest_mem_mb": max((measured_requests(s, entries) or {"mem_mb": estimated_memory_mb(s)})["mem_mb"]
                                  for s in specs),
        })
    return rows


def print_table(rows, print_=print) -> None:
    print_("| paper | cells | CPU-hours | peak memory | requested: runtime sum (work model before) / largest mem_mb "
           "| how measured |")
    print_("|---|---:|---:|---:|---|---|")
    for r in rows:
        peak = f"{r['peak_mb'] / 1024:.1f} GiB" if r["peak_mb"] else "-"
        rounds = "/".join(map(str, r["sample_rounds"])) or "-"
        note = (f"{r['kinds_sampled']} of {r['kinds']} kinds sampled ({rounds} rounds), {r['cells_sampled']:,} cells "
                f"extrapolated; {r['kinds_calibrated']} kinds ({r['cells_calibrated']:,} cells) calibrated")
        if r["cells_fallback"]:
            note += f"; {r['cells_fallback']:,} cells not measured (not in CPU-hours)"
        print_(f"| {r['paper']} | {r['cells']:,} | {r['cpu_h']:,.1f} | {peak} | {r['requested_h']:,.0f} h "
               f"({r['estimated_h']:,.0f} h) / {r['largest_mem_mb']:,} MB | {note} |")


def main(argv=None):
    from fedrepro.experiments.yamlio import PAPERS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--papers", nargs="*", default=list(PAPERS))
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--data-dir", default="data/processed")
    ap.add_argument("--budget-s", type=float, default=900.0, help="CPU seconds of sampling before stopping")
    ap.add_argument("--rounds", type=int, default=None, help="cap on every sample's rounds")
    ap.add_argument("--kinds", type=int, default=None, help="sample at most this many kinds")
    ap.add_argument("--order", choices=("cost", "weight"), default="cost",
                    help="after one kind per group: cheapest jobs first, or largest share of the bill first")
    ap.add_argument("--table-only", action="store_true", help="recalibrate the kinds without a sample from --out and print the table, without sampling")
    ap.add_argument("--tiny", action="store_true",
                    help="two kinds of fedadmm_zhou's fig4_ls (synthetic data), 1 round (for the test suite)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        json.dump(sample_kinds(json.load(sys.stdin)), sys.stdout)
        return
    if args.tiny:
        global ONLY_EXPERIMENTS
        args.papers, ONLY_EXPERIMENTS = ["fedadmm_zhou"], ("fig4_ls",)
        bill = sample(args.papers, args.out, args.data_dir, budget_s=float("inf"), rounds_cap=1, limit_kinds=2,
                      synthetic_only=True)
    elif args.table_only:
        bill = load(args.out)
        bill["calibrated"] = calibrated(args.papers, bill)
        save(args.out, bill)
    else:
        bill = sample(args.papers, args.out, args.data_dir, args.budget_s, args.rounds, args.kinds, order=args.order)
    entries = {**bill.get("calibrated", {}), **bill["kinds"]}
    print_table(paper_table(args.papers, entries))


if __name__ == "__main__":
    main()
