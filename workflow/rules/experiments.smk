# Sweep cells (algorithm x problem x partition x parameters x seed). By default one cell is
# one job writing one Parquet file atomically; `cells_per_job` in config.yaml lets a job run
# several cells in a row (quick scale: saves process start-up, data loading and scheduling).
# Baselines that stop at a reference run's objective (Zhou & Li) depend on that run's file; a cell
# that repeats an earlier experiment's run (cells.same_runs) depends on that run's file and copies it.


def batch_inputs(wc):
    inputs = processed_inputs(run_cells_of(wc.batch))
    inputs += sorted({path for _, path in references(wc.paper, wc.experiment, wc.batch).values()}
                     | {copy["path"] for copy in copies(wc.batch).values()})
    return inputs


rule run_cells:
    input:
        batch_inputs,
    output:
        "results/cells/{paper}/{experiment}/{batch}.parquet",
    log:
        "logs/cells/{paper}/{experiment}/{batch}.log",
    params:
        cells=lambda wc: BATCH_CELLS[wc.batch],
        references=lambda wc: references(wc.paper, wc.experiment, wc.batch),
        copies=lambda wc: copies(wc.batch),
        processed=lambda wc: config["data"]["processed"],
        config_hash=CONFIG_HASH,
        progress_seconds=config.get("progress_seconds", 10),
    priority: lambda wc: resources.job_priority(run_cells_of(wc.batch))     # costliest first
    threads: lambda wc: max((resources.cell_threads(c, KERNEL_THREADS) for c in run_cells_of(wc.batch)), default=1)
    resources:
        mem_mb=lambda wc: max((resources.cell_memory_mb(c) for c in run_cells_of(wc.batch)),
                              default=resources.COPY_MEMORY_MB),
        runtime=lambda wc: max(1, sum(resources.cell_runtime_min(c, SCALE) for c in run_cells_of(wc.batch))),
    script:
        "../scripts/run_cells.py"
