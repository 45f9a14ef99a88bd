# Concatenate the cells of one experiment into results/<paper>/<experiment>.parquet
# (tidy, one row per run x evaluated round) and a per-run summary table.

def aggregate_inputs(wc):
    if CLAIM is not None:      # the claim's cells are a part of the experiment: never the build's aggregate
        raise ValueError(f"--config claim={CLAIM.name} builds results/{CLAIM.paper}/claims/{CLAIM.id}.md only; "
                         f"results/{wc.paper}/{wc.experiment}.parquet is the normal build's (drop claim=)")
    return batch_paths(wc.paper, wc.experiment)


rule aggregate:
    input:
        aggregate_inputs,
    output:
        trace="results/{paper}/{experiment}.parquet",
        summary="results/{paper}/{experiment}.summary.parquet",
    log:
        "logs/aggregate/{paper}/{experiment}.log",
    params:
        config_hash=CONFIG_HASH,
    script:
        "../scripts/aggregate.py"


# The timing pass of an experiment with `timing_repeats` (CPU-time claims are decided from its
# repetitions): every cell re-run with its seed, the methods of a setting interleaved. The job holds
# every core of a local run (Snakemake's --cores), so no other job runs beside the timed runs; on a
# cluster (no --cores) it is one job on its own allocation and asks for one CPU.
def all_local_cores(wc):
    try:
        return workflow.cores
    except Exception:          # WorkflowError: no --cores (a cluster executor)
        return 1


rule timing:
    input:
        summary="results/{paper}/{experiment}.summary.parquet",
        data=lambda wc: processed_inputs(cells_of(wc.paper, wc.experiment)),
    output:
        "results/{paper}/{experiment}.timing.parquet",
    log:
        "logs/timing/{paper}/{experiment}.log",
    params:
        cells=lambda wc: cells_of(wc.paper, wc.experiment),
        repeats=lambda wc: TIMING[(wc.paper, wc.experiment)],
        cache=lambda wc: timing_cache(wc.paper, wc.experiment),
        processed=lambda wc: config["data"]["processed"],
        config_hash=CONFIG_HASH,
    threads: all_local_cores
    resources:
        mem_mb=lambda wc: max(resources.cell_memory_mb(c) for c in cells_of(wc.paper, wc.experiment)),
        runtime=lambda wc: max(30, TIMING[(wc.paper, wc.experiment)] * sum(
            resources.cell_runtime_min(c, "paper") for c in cells_of(wc.paper, wc.experiment))),
    script:
        "../scripts/timing.py"


# Per-client label counts of every distinct partition of a paper's experiments (fedrepro.experiments.partitions):
# one job per paper builds each distinct partition's problem once, as the runs build it, and draws one figure
# per experiment for the report (stacked bars of labels per client, as Flower Datasets' partition plots).
def partition_cells(paper):
    return {exp: cells for (p, exp), cells in CELLS.items() if p == paper and (p, exp) not in SKIPPED}


rule partitions:
    input:
        lambda wc: processed_inputs([c for cells in partition_cells(wc.paper).values() for c in cells]),
    output:
        table="results/{paper}/partitions.parquet",
        figures=report(directory("figures/{paper}/partitions"), patterns=["{name}.png"], category="{paper}",
                       subcategory="partitions", caption="../report/partitions.rst"),
    log:
        "logs/partitions/{paper}.log",
    params:
        cells=lambda wc: partition_cells(wc.paper),
        processed=lambda wc: config["data"]["processed"],
        config_hash=CONFIG_HASH,
    resources:
        mem_mb=lambda wc: max((resources.cell_memory_mb(c) for cells in partition_cells(wc.paper).values()
                               for c in cells), default=resources.COPY_MEMORY_MB),
    script:
        "../scripts/partitions.py"
