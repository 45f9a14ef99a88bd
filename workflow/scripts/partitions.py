"""Rule partitions: per-client label counts of a paper's partitions -> results/<paper>/partitions.parquet,
and one figure per experiment -> figures/<paper>/partitions/<experiment>.png (fedrepro.experiments.partitions)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import logged  # noqa: E402

from fedrepro.experiments.partitions import partition_table  # noqa: E402
from fedrepro.experiments.results import provenance, write_parquet  # noqa: E402
from fedrepro.figures.partitions import plot_experiments  # noqa: E402

with logged(snakemake):
    paper = snakemake.wildcards.paper
    cells = {(paper, exp): c for exp, c in snakemake.params.cells.items()}
    table = partition_table(cells, snakemake.params.processed, log=lambda line: print(line, flush=True))
    write_parquet(table, snakemake.output.table,
                  provenance(snakemake.params.config_hash, paper=paper, experiments=sorted(snakemake.params.cells),
                             partitions=int(table["partition"].nunique()) if len(table) else 0))
    os.makedirs(snakemake.output.figures, exist_ok=True)
    for path in plot_experiments(table, snakemake.output.figures):
        print(f"figure {path}", flush=True)
