"""Rule claim_alone: the verdict of one claim built alone (fedrepro.papers.alone) from its target's aggregates."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import logged  # noqa: E402

from fedrepro.papers.alone import build_from_config  # noqa: E402
from fedrepro.papers.registry import evaluate_alone  # noqa: E402
from fedrepro.experiments.results import provenance, write_parquet, write_text_atomic  # noqa: E402

with logged(snakemake):  # noqa: F821  (injected by Snakemake)
    config = snakemake.config  # noqa: F821
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the workflow's root
    os.environ["FEDREPRO_PROCESSED"] = str((config.get("data") or {}).get("processed", "data/processed"))
    build = build_from_config(config, given_scale=config["scale"], root=root)
    folder = os.path.join("results", build.paper, "claims", build.id)
    table, markdown = evaluate_alone(build, folder, skipped=snakemake.params.skipped, root=root)  # noqa: F821
    print(markdown)
    write_parquet(table, snakemake.output.parquet,  # noqa: F821
                  provenance(snakemake.params.config_hash, paper=build.paper, claim=build.id, scale=build.scale))  # noqa: F821
    write_text_atomic(snakemake.output.md, markdown)  # noqa: F821
