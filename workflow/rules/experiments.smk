# One job per sweep cell (algorithm x problem x partition x parameters x seed), one Parquet
# file per cell, written atomically. Baselines that stop at a reference run's objective
# (Zhou & Li) depend on that run's cell.


def cell_inputs(wc):
    cell = CELL_BY_ID[wc.cell]
    inputs = [f"data/processed/{d}.npz" for d in cell["datasets"]]
    ref = reference_cell(cell, cells_of(cell["paper"], cell["experiment"]))
    if ref is not None:
        inputs.append(cell_path(ref))
    return inputs


rule run_cell:
    input:
        cell_inputs,
    output:
        "results/cells/{paper}/{experiment}/{cell}.parquet",
    log:
        "logs/cells/{paper}/{experiment}/{cell}.log",
    params:
        cell=lambda wc: CELL_BY_ID[wc.cell],
        reference=lambda wc: (lambda r: cell_path(r) if r else None)(
            reference_cell(CELL_BY_ID[wc.cell], cells_of(wc.paper, wc.experiment))),
        processed=lambda wc: config["data"]["processed"],
        config_hash=CONFIG_HASH,
        progress_seconds=config.get("progress_seconds", 10),
    threads: 1
    resources:
        mem_mb=lambda wc: ws.cell_memory_mb(CELL_BY_ID[wc.cell]),
        runtime=lambda wc: ws.cell_runtime_min(CELL_BY_ID[wc.cell], SCALE),
    script:
        "../scripts/run_cell.py"
