"""Rule custom_plots: generic plots of a user-defined experiment."""
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from _common import logged  # noqa: E402

import pandas as pd  # noqa: E402

from fedrepro.figures.generic import plot_rounds, plot_sweep  # noqa: E402

with logged(snakemake):
    df = pd.read_parquet(snakemake.input.trace)
    summary = pd.read_parquet(snakemake.input.summary)
    plot = dict(snakemake.params.plot, title=snakemake.params.title)
    plot_rounds(df, Path(snakemake.output.rounds).with_suffix(""), **plot)
    plot_sweep(summary, Path(snakemake.output.sweep).with_suffix(""), stop_rule=list(snakemake.params.stop_rules),
               trace=df, **plot)
