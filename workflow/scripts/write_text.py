"""Write params.text to the rule's output (skipped list, provenance)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import logged  # noqa: E402

from fedrepro.experiments.results import write_text_atomic  # noqa: E402

with logged(snakemake):
    write_text_atomic(snakemake.output[0], snakemake.params.text)
