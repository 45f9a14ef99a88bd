# Claims (verdicts computed from results), the list of skipped figures, provenance,
# and one rule per paper key so users can build one paper: `snakemake -j 2 fedepm`.
# Each Markdown output has an HTML twin that the report shows inline (`snakemake --report`
# offers Markdown only as a data: link, which Chromium does not open).


rule claims:
    input:
        lambda wc: [f"results/{wc.paper}/{e}{s}" for e in OUTPUTS[wc.paper]["claim_experiments"]
                    for s in (".parquet", ".summary.parquet")],
        timing=lambda wc: [f"results/{wc.paper}/{e}.timing.parquet" for e in OUTPUTS[wc.paper]["claim_experiments"]
                           if (wc.paper, e) in TIMING],
        # the claims and their checks: editing either re-evaluates the paper's claims
        definitions=lambda wc: [os.path.join(workflow.basedir, p) for p in (
            f"fedrepro/papers/{wc.paper}/claims.yaml", f"fedrepro/papers/{wc.paper}/claims.py", "fedrepro/papers/registry.py", "fedrepro/claims/__init__.py", "fedrepro/claims/entries.py", "fedrepro/claims/evaluate.py", "fedrepro/claims/verdicts.py", "fedrepro/claims/sweep.py", "fedrepro/claims/completeness.py", "fedrepro/claims/query.py", "fedrepro/claims/plan.py", "fedrepro/papers/alone.py")],
    output:
        parquet="results/{paper}/claims.parquet",
        md="results/{paper}/claims.md",
        html=report("results/{paper}/claims.html", category="{paper}", subcategory="claims",
                    caption="../report/claims.rst"),
    log:
        "logs/claims/{paper}.log",
    wildcard_constraints:
        paper="|".join(papers.PAPERS),
    params:
        skipped=lambda wc: SKIPPED,
        config_hash=CONFIG_HASH,
        scale=SCALE,
    script:
        "../scripts/claims.py"


rule skipped:
    output:
        md="results/skipped.md",
        html=report("results/skipped.html", category="provenance", caption="../report/skipped.rst"),
    log:
        "logs/skipped.log",
    params:
        title="Skipped outputs",
        text=skipped_markdown(SKIPPED, OUTPUTS, DATA),
    script:
        "../scripts/write_text.py"


rule provenance:
    output:
        md="results/provenance.md",
        html=report("results/provenance.html", category="provenance", caption="../report/provenance.rst"),
    log:
        "logs/provenance.log",
    params:
        title="Provenance",
        text=provenance_markdown(config, CONFIG_HASH, CELLS),
    script:
        "../scripts/write_text.py"


for _paper in papers.PAPERS:
    rule:
        name: _paper
        input:
            # the skipped list (what this build left out for missing data) and provenance, so that
            # `snakemake --report report.html <paper>` shows them for a one-paper build too
            (paper_targets(_paper) + REPORT_EXTRAS if _paper in OUTPUTS else []),


def custom_targets(wc=None):
    """What `snakemake -j 2 custom` builds: the experiments under config.yaml's own `experiments:` (results,
    summaries, their generic figures) and the skipped list and provenance, none of the papers' outputs."""
    if "custom" not in OUTPUTS:
        raise ValueError("target custom: config.yaml has no experiments of its own (`experiments:` is empty or "
                         "missing), so there is nothing to build; add a block under experiments: (README, "
                         "'Configuration, scales and your own sweeps') or build a paper (`snakemake -j 2 <paper>`)")
    return paper_targets("custom") + REPORT_EXTRAS


# `snakemake -j 2 custom`: only your own experiments (the papers in `papers:` are parsed and checked, not built)
rule custom:
    input:
        custom_targets,
