"""Rule fetch: verified raw files of one dataset (cache -> mirror -> canonical URL)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import logged  # noqa: E402

from fedrepro.data import fetch  # noqa: E402
from fedrepro.experiments.results import write_text_atomic  # noqa: E402
from fedrepro.data.plan import split_key  # noqa: E402

with logged(snakemake):
    name, variant = split_key(snakemake.wildcards.dataset)
    # downloads only when config.yaml (or --config) says data: {download: true}; without it a job
    # runs only for datasets in the cache or mirror (the others were skipped when the DAG was built)
    download = bool((snakemake.config.get("data") or {}).get("download", False))
    paths = fetch(name, snakemake.params.cache, snakemake.params.mirror, variant=variant, download=download)
    for fname, path in paths.items():
        print(f"verified {fname}: {path}")
    write_text_atomic(snakemake.output[0], json.dumps({k: str(v) for k, v in paths.items()}, indent=1))
