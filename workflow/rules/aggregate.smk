# Concatenate the cells of one experiment into results/<paper>/<experiment>.parquet
# (tidy, one row per run x evaluated round) and a per-run summary table.

rule aggregate:
    input:
        lambda wc: batch_paths(wc.paper, wc.experiment),
    output:
        trace="results/{paper}/{experiment}.parquet",
        summary="results/{paper}/{experiment}.summary.parquet",
    log:
        "logs/aggregate/{paper}/{experiment}.log",
    params:
        config_hash=CONFIG_HASH,
    script:
        "../scripts/aggregate.py"
