"""Rule timing: the experiment's timing pass -> results/<paper>/<experiment>.timing.parquet.

Every cell is re-run ``repeats`` times with its own seed (the trace is the one of the experiment's
results: rounds and status are checked against its summary), the cells of a setting interleaved
(:func:`fedrepro.experiments.build_plan.timing_order`); one row per (cell, repetition) with the run's
summary columns and ``repeat`` / ``position``. The job holds all of Snakemake's cores so that no
other job runs beside the timed runs. Repetitions an earlier pass of the same commit measured are reused
(:func:`fedrepro.experiments.results.timed_repetitions`): a pass after more seeds times the new cells only."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import logged  # noqa: E402

import pandas as pd  # noqa: E402

from fedrepro.experiments.build_plan import timing_order  # noqa: E402
from fedrepro.experiments.expansion import reference_cell  # noqa: E402
from fedrepro.experiments.results import provenance, summarize, timed_repetitions, write_parquet  # noqa: E402
from fedrepro.experiments.runner import run_cell  # noqa: E402
from fedrepro.experiments.spec import RunSpec  # noqa: E402

with logged(snakemake):  # noqa: F821  (injected by Snakemake)
    cells, repeats = snakemake.params.cells, int(snakemake.params.repeats)
    summary = pd.read_parquet(snakemake.input.summary).set_index("cell")
    names = [RunSpec.from_cell(c).name for c in cells]
    record = provenance(snakemake.params.config_hash, repeats=repeats, cells=names)
    done = timed_repetitions(snakemake.params.cache, cells, repeats, record)
    rows = []
    for r in range(repeats):
        for pos, cell in enumerate(timing_order(cells, r)):
            spec = RunSpec.from_cell(cell)
            if (spec.name, r) in done:            # measured by an earlier pass of this commit
                rows.append(done[(spec.name, r)])
                continue
            ref = reference_cell(cell, cells)
            ref_name = None if ref is None else RunSpec.from_cell(ref).name
            reference = summary.loc[ref_name].to_dict() | {"cell": ref_name} if ref is not None else None
            row = summarize(run_cell(spec, snakemake.params.processed, reference)).iloc[0].to_dict()
            expected = summary.loc[spec.name]
            if int(row["rounds"]) != int(expected["rounds"]) or row["status"] != expected["status"]:
                raise RuntimeError(f"timing pass: cell {spec.name} ran {row['rounds']} rounds ({row['status']}), "
                                   f"the experiment's results {expected['rounds']} ({expected['status']}): the runs "
                                   "are not reproducible; rerun the experiment")
            rows.append({**row, "repeat": r, "position": pos})
        reused = sum((name, r) in done for name in names)
        print(f"repetition {r + 1}/{repeats}: {len(cells) - reused} runs timed, {reused} reused", flush=True)
    out = pd.DataFrame(rows)
    write_parquet(out, snakemake.params.cache, record)       # every repetition, for a later pass
    write_parquet(out, snakemake.output[0], record)
