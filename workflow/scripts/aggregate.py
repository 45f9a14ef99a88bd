"""Rule aggregate: cells of one experiment -> results/<paper>/<experiment>(.summary).parquet."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import logged  # noqa: E402

from fedrepro.experiments.results import (concat_frames, provenance, read_metadata, summarize,  # noqa: E402
                                          write_parquet)

with logged(snakemake):
    df = concat_frames(snakemake.input)
    summary = summarize(df)                     # one row per run (cell)
    meta = provenance(snakemake.params.config_hash, paper=snakemake.wildcards.paper,
                      experiment=snakemake.wildcards.experiment, cells=len(summary), batch_files=len(snakemake.input),
                      same_runs={c: s for path in snakemake.input
                                 for c, s in read_metadata(path).get("same_runs", {}).items()})
    print(f"{len(summary)} runs from {len(snakemake.input)} batch files, {len(df)} rows; status counts:\n"
          f"{summary['status'].value_counts()}")
    write_parquet(df, snakemake.output.trace, meta)
    write_parquet(summary, snakemake.output.summary, meta)
