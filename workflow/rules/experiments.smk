# Sweep cells (algorithm x problem x partition x parameters x seed). By default one cell is
# one job writing one Parquet file atomically; `cells_per_job` in config.yaml lets a job run
# several cells in a row (quick scale: saves process start-up, data loading and scheduling).
# Baselines that stop at a reference run's objective (Zhou & Li) depend on that run's file.


def batch_inputs(wc):
    cells = BATCH_CELLS[wc.batch]
    inputs = processed_inputs(cells)
    inputs += sorted({path for _, path in references(wc.paper, wc.experiment, wc.batch).values()})
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
        processed=lambda wc: config["data"]["processed"],
        config_hash=CONFIG_HASH,
        progress_seconds=config.get("progress_seconds", 10),
    threads: lambda wc: max(resources.cell_threads(c, KERNEL_THREADS) for c in BATCH_CELLS[wc.batch])
    resources:
        mem_mb=lambda wc: max(resources.cell_memory_mb(c) for c in BATCH_CELLS[wc.batch]),
        runtime=lambda wc: sum(resources.cell_runtime_min(c, SCALE) for c in BATCH_CELLS[wc.batch]),
    script:
        "../scripts/run_cells.py"
