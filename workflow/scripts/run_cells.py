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

with logged(snakemake) as log:
    frames = []
    copies = snakemake.params.copies
    # runs an earlier job of this experiment already wrote (its batch re-cut: more seeds at the verify
    # build's second look): copied, not run again
    done = computed_cells(os.path.dirname(snakemake.output[0]), exclude=snakemake.output[0])
    for cell in snakemake.params.cells:
        earlier = pd.read_parquet(done[cell["cell"]], filters=[("cell", "==", cell["cell"])]) \
            if cell["cell"] in done and cell["cell"] not in copies else None
        if earlier is not None and not earlier.empty:
            frames.append(earlier)
            print(f"cell {cell['cell']}: computed by an earlier job ({done[cell['cell']]}), rows copied", flush=True)
            continue
        if cell["cell"] in copies:
            source, path = copies[cell["cell"]]["source"], copies[cell["cell"]]["path"]
            frames.append(relabel_run(pd.read_parquet(path, filters=[("cell", "==", source["cell"])]), source, cell))
            print(f"cell {cell['cell']}: {cell['paper']}/{cell['experiment']} {cell['algorithm']} "
                  f"columns={cell['columns']}: the run of {source['paper']}/{source['experiment']} cell "
                  f"{source['cell']} (columns={source['columns']}), rows copied", flush=True)
            continue
        reference = None
        if cell["cell"] in snakemake.params.references:
            ref_id, ref_path = snakemake.params.references[cell["cell"]]
            ref = summarize(pd.read_parquet(ref_path, filters=[("cell", "==", ref_id)]))
            if ref.empty:
                raise RuntimeError(f"reference cell {ref_id} is not in {ref_path}; rerun with --rerun-incomplete")
            reference = ref.iloc[0].to_dict()
            print(f"reference run {reference['algorithm']}: final objective {reference['objective']:.10g}")
        print(f"cell {cell['cell']}: {cell['paper']}/{cell['experiment']} {cell['algorithm']} "
              f"params={cell['params']} columns={cell['columns']} seed={cell['seed']}", flush=True)
        df = run_cell(cell, snakemake.params.processed, reference,
                      progress=progress_printer(log, snakemake.params.progress_seconds))
        last = df.iloc[-1]
        metrics = " ".join(f"{k}={last[k]:.10g}" for k in ("objective", "test_accuracy") if k in df.columns)
        print(f"done: status={last['status']} reason={last['stop_reason']} rounds={last['rounds']} "
              f"{metrics} wall={last['run_wall_time']:.2f}s", flush=True)
        frames.append(df)
    cells = [c["cell"] for c in snakemake.params.cells]
    out = pd.concat(frames, ignore_index=True, sort=False)
    same_runs = {c: f"{v['source']['paper']}/{v['source']['experiment']}/{v['source']['cell']}" for c, v in copies.items()}
    write_parquet(out, snakemake.output[0], provenance(snakemake.params.config_hash, cells=cells,
                                                       settings=snakemake.params.cells, same_runs=same_runs))
