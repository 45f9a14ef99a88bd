"""Write params.text to the rule's Markdown output and its HTML page (skipped list, provenance)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import logged  # noqa: E402

from fedrepro.experiments.report_html import markdown_to_html  # noqa: E402
from fedrepro.experiments.results import write_text_atomic  # noqa: E402

with logged(snakemake):
    write_text_atomic(snakemake.output.md, snakemake.params.text)
    write_text_atomic(snakemake.output.html, markdown_to_html(snakemake.params.text, snakemake.params.title))
