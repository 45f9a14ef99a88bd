# One claim built alone (`--config claim=<paper>/<id>`, fedrepro.papers.alone): the claim's cells run through
# rule run_cells as in any build (same jobs, resources and SLURM profile); their aggregates go to
# results/<paper>/claims/<id>/<experiment>(.summary).parquet and the claim's verdict to results/<paper>/claims/<id>.md.
# Without `claim` these rules do not exist (the normal build's DAG is unchanged).

if CLAIM is not None:

    rule claim_aggregate:
        input:
            lambda wc: batch_paths(wc.paper, wc.experiment),
        output:
            trace="results/{paper}/claims/{claim}/{experiment}.parquet",
            summary="results/{paper}/claims/{claim}/{experiment}.summary.parquet",
        log:
            "logs/claims/{paper}/{claim}/{experiment}.log",
        wildcard_constraints:
            paper=re.escape(CLAIM.paper),
            claim=re.escape(CLAIM.id),
            experiment="|".join(map(re.escape, CLAIM.experiments_with_cells())) or "(?!)",
        params:
            config_hash=CONFIG_HASH,
        script:
            "../scripts/aggregate.py"

    rule claim_alone:
        input:
            lambda wc: [f"results/{wc.paper}/claims/{wc.claim}/{e}{s}" for e in CLAIM.experiments_with_cells()
                        if (wc.paper, e) not in SKIPPED for s in (".parquet", ".summary.parquet")],
            definitions=[os.path.join(workflow.basedir, p) for p in (
                f"fedrepro/papers/{CLAIM.paper}/claims.yaml", f"fedrepro/papers/{CLAIM.paper}/claims.py",
                "fedrepro/papers/alone.py", "fedrepro/papers/registry.py", "fedrepro/claims/entries.py",
                "fedrepro/claims/evaluate.py", "fedrepro/claims/verdicts.py")
                if os.path.exists(os.path.join(workflow.basedir, p))],
        output:
            parquet="results/{paper}/claims/{claim}.parquet",
            md="results/{paper}/claims/{claim}.md",
        log:
            "logs/claims/{paper}/{claim}.log",
        wildcard_constraints:
            paper=re.escape(CLAIM.paper),
            claim=re.escape(CLAIM.id),
        params:
            skipped=lambda wc: {e: d for (p, e), d in SKIPPED.items() if p == wc.paper},
            config_hash=CONFIG_HASH,
        script:
            "../scripts/claim_alone.py"
