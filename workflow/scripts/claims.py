"""Rule claims: evaluate a paper's claims file against our results."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import logged  # noqa: E402

from fedrepro.papers.registry import evaluate_paper  # noqa: E402
from fedrepro.experiments.report_html import markdown_to_html  # noqa: E402
from fedrepro.experiments.results import provenance, write_parquet, write_text_atomic  # noqa: E402

with logged(snakemake):
    paper = snakemake.wildcards.paper
    # claims computed from processed data (fedadmm_gong Table VI) read them from the configured folder
    os.environ["FEDREPRO_PROCESSED"] = str((snakemake.config.get("data") or {}).get("processed", "data/processed"))
    missing = {e: d for (p, e), d in snakemake.params.skipped.items() if p == paper}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the workflow's root
    # the cells each claim's experiments expand to at this scale: a claim missing any is incomplete
    table, markdown = evaluate_paper(paper, "results", skipped=missing, root=root, scale=snakemake.params.scale,
                                     config=snakemake.config)
    # the second look of a verify build (fedrepro.claims.plan): a statement decided at look 1 keeps that verdict
    first = f"results/{paper}/claims.look1.parquet"
    if int(((snakemake.config.get("verify") or {}).get("look", 0)) or 0) == 2 and os.path.exists(first):
        import pandas as pd

        from fedrepro.claims import to_markdown
        from fedrepro.claims.plan import combine_looks
        from fedrepro.papers.registry import undecided_alone
        table = combine_looks(pd.read_parquet(first), table)
        markdown = to_markdown(table, paper, alone=undecided_alone(table, paper, root))
    print(markdown)
    write_parquet(table, snakemake.output.parquet, provenance(snakemake.params.config_hash, paper=paper))
    write_text_atomic(snakemake.output.md, markdown)
    write_text_atomic(snakemake.output.html, markdown_to_html(markdown, f"Claims: {paper}"))
