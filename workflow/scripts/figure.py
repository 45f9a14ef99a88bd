"""Rules figure/table: render one figure or table of a paper from its experiments' results."""
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from _common import logged  # noqa: E402

import pandas as pd  # noqa: E402

from fedrepro.experiments.report_html import write_markdown_html  # noqa: E402
from fedrepro.papers.registry import figure_spec  # noqa: E402

with logged(snakemake):
    paper, fig = snakemake.wildcards.paper, snakemake.wildcards.fig
    # tables computed from processed data (fedadmm_gong Table VI) read them from the configured folder
    os.environ["FEDREPRO_PROCESSED"] = str((snakemake.config.get("data") or {}).get("processed", "data/processed"))
    spec = figure_spec(paper, fig)
    experiments = snakemake.params.experiments      # required + optional ones whose data are available
    frames = {e: pd.read_parquet(f"results/{paper}/{e}.parquet") for e in experiments}
    summaries = {e: pd.read_parquet(f"results/{paper}/{e}.summary.parquet") for e in experiments}
    out = Path(snakemake.output[0]).with_suffix("")
    spec.render(frames, summaries, out)
    if getattr(snakemake.output, "html", None):       # tables: the report's inline view of the .md
        write_markdown_html(out.with_suffix(".md"), snakemake.output.html, title=f"{paper}: {fig}")
    for path in snakemake.output:
        if not Path(path).exists():
            raise RuntimeError(f"{paper}/{fig}: the renderer did not write {path}")
    print(f"wrote {', '.join(snakemake.output)}")
