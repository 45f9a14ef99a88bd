"""Rule run_cells: run the job's cells (one by default) -> one Parquet file, written atomically."""
import os
import sys

# the compiled kernels may use the job's threads (before numba is imported; BLAS stays at 1)
os.environ["NUMBA_NUM_THREADS"] = str(snakemake.threads)  # noqa: F821  (injected by Snakemake)
sys.path.insert(0, os.path.dirname(__file__))
from _common import logged  # noqa: E402

import pandas as pd  # noqa: E402

from fedrepro.experiments.results import (computed_cells, provenance, relabel_run, summarize,  # noqa: E402
                                          write_parquet)
from fedrepro.experiments.runner import progress_printer, run_cell  # noqa: E402
from fedrepro.experiments.spec import RunSpec  # noqa: E402

with logged(snakemake) as log:
    frames = []
    copies = snakemake.params.copies
    # runs an earlier job of this experiment already wrote (its batch re-cut: more seeds at the verify
    # build's second look): copied, not run again
    done = computed_cells(os.path.dirname(snakemake.output[0]), exclude=snakemake.output[0])
    specs = [RunSpec.from_cell(c) for c in snakemake.params.cells]     # the job's parameters: cell dicts
    for spec in specs:
        name = spec.name
        earlier = pd.read_parquet(done[name], filters=[("cell", "==", name)]) \
            if name in done and name not in copies else None
        if earlier is not None and not earlier.empty:
            frames.append(earlier)
            print(f"cell {name}: computed by an earlier job ({done[name]}), rows copied", flush=True)
            continue
        if name in copies:
            source, path = RunSpec.from_cell(copies[name]["source"]), copies[name]["path"]
            frames.append(relabel_run(pd.read_parquet(path, filters=[("cell", "==", source.name)]), source, spec))
            print(f"cell {name}: {spec.paper}/{spec.experiment} {spec.algorithm.name} "
                  f"columns={spec.label.columns}: the run of {source.paper}/{source.experiment} cell "
                  f"{source.name} (columns={source.label.columns}), rows copied", flush=True)
            continue
        reference = None
        if name in snakemake.params.references:
            ref_id, ref_path = snakemake.params.references[name]
            ref = summarize(pd.read_parquet(ref_path, filters=[("cell", "==", ref_id)]))
            if ref.empty:
                raise RuntimeError(f"reference cell {ref_id} is not in {ref_path}; rerun with --rerun-incomplete")
            reference = ref.iloc[0].to_dict()
            print(f"reference run {reference['algorithm']}: final objective {reference['objective']:.10g}")
        print(f"cell {name}: {spec.paper}/{spec.experiment} {spec.algorithm.name} "
              f"params={spec.algorithm.params} columns={spec.label.columns} seed={spec.seed}", flush=True)
        df = run_cell(spec, snakemake.params.processed, reference,
                      progress=progress_printer(log, snakemake.params.progress_seconds))
        last = df.iloc[-1]
        metrics = " ".join(f"{k}={last[k]:.10g}" for k in ("objective", "test_accuracy") if k in df.columns)
        print(f"done: status={last['status']} reason={last['stop_reason']} rounds={last['rounds']} "
              f"{metrics} wall={last['run_wall_time']:.2f}s", flush=True)
        frames.append(df)
    cells = [spec.name for spec in specs]
    out = pd.concat(frames, ignore_index=True, sort=False)
    sources = {c: RunSpec.from_cell(v["source"]) for c, v in copies.items()}
    same_runs = {c: f"{s.paper}/{s.experiment}/{s.name}" for c, s in sources.items()}
    write_parquet(out, snakemake.output[0], provenance(snakemake.params.config_hash, cells=cells,
                                                       settings=[spec.to_dict() for spec in specs], same_runs=same_runs))
