"""Rule aggregate: cells of one experiment -> results/<paper>/<experiment>(.summary).parquet."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import logged  # noqa: E402

from fedrepro.experiments.results import concat_frames, provenance, summarize, write_parquet  # noqa: E402

with logged(snakemake):
    df = concat_frames(snakemake.input)
    summary = summarize(df)                     # one row per run (cell)
    meta = provenance(snakemake.params.config_hash, paper=snakemake.wildcards.paper,
                      experiment=snakemake.wildcards.experiment, cells=len(summary), batch_files=len(snakemake.input))
    print(f"{len(summary)} runs from {len(snakemake.input)} batch files, {len(df)} rows; status counts:\n"
          f"{summary['status'].value_counts()}")
    write_parquet(df, snakemake.output.trace, meta)
    write_parquet(summary, snakemake.output.summary, meta)
