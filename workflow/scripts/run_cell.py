"""Rule run_cell: one algorithm x setting x seed -> one Parquet file (atomic)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import logged  # noqa: E402

import pandas as pd  # noqa: E402

from fedrepro.results import provenance, summarize, write_parquet  # noqa: E402
from fedrepro.runner import progress_printer, run_cell  # noqa: E402

with logged(snakemake) as log:
    cell = snakemake.params.cell
    reference = None
    if snakemake.params.reference:
        ref = summarize(pd.read_parquet(snakemake.params.reference))
        reference = ref.iloc[0].to_dict()
        print(f"reference run {ref['algorithm'].iloc[0]}: final objective {reference['objective']:.10g}")
    print(f"cell {cell['cell']}: {cell['paper']}/{cell['experiment']} {cell['algorithm']} "
          f"params={cell['params']} columns={cell['columns']} seed={cell['seed']}", flush=True)
    df = run_cell(cell, snakemake.params.processed, reference,
                  progress=progress_printer(log, snakemake.params.progress_seconds))
    last = df.iloc[-1]
    print(f"done: status={last['status']} reason={last['stop_reason']} rounds={last['rounds']} "
          f"objective={last['objective']:.10g} wall={last['run_wall_time']:.2f}s")
    write_parquet(df, snakemake.output[0], provenance(snakemake.params.config_hash, cell=cell))
