# Claims (verdicts computed from results), the list of skipped figures, provenance,
# and one rule per paper key so users can build one paper: `snakemake -j 2 fedepm`.


rule claims:
    input:
        lambda wc: [f"results/{wc.paper}/{e}{s}" for e in OUTPUTS[wc.paper]["claim_experiments"]
                    for s in (".parquet", ".summary.parquet")],
    output:
        parquet="results/{paper}/claims.parquet",
        md=report("results/{paper}/claims.md", category="{paper}", subcategory="claims",
                  caption="../report/claims.rst"),
    log:
        "logs/claims/{paper}.log",
    wildcard_constraints:
        paper="|".join(ws.PAPER_KEYS),
    params:
        skipped=lambda wc: SKIPPED,
        config_hash=CONFIG_HASH,
        scale=SCALE,
    script:
        "../scripts/claims.py"


rule skipped:
    output:
        report("results/skipped.md", category="provenance", caption="../report/skipped.rst"),
    log:
        "logs/skipped.log",
    params:
        text=ws.skipped_markdown(SKIPPED, OUTPUTS, DATA),
    script:
        "../scripts/write_text.py"


rule provenance:
    output:
        report("results/provenance.md", category="provenance", caption="../report/provenance.rst"),
    log:
        "logs/provenance.log",
    params:
        text=ws.provenance_markdown(config, CONFIG_HASH, CELLS),
    script:
        "../scripts/write_text.py"


for _paper in ws.PAPER_KEYS:
    rule:
        name: _paper
        input:
            # results/skipped.md: what this build left out for missing data (datasets, URLs)
            (paper_targets(_paper) + ["results/skipped.md"] if _paper in OUTPUTS else []),
