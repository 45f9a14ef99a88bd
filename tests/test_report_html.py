"""The HTML pages the Snakemake report shows inline (claims, tables, skipped list, provenance):
every cell of every Markdown table reaches an HTML table, escaped; the report registers only
files it can show inline. The browser check of the built report is tests/test_report_browser.py."""
import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd

from fedrepro.claims import to_markdown
from fedrepro.experiments.report_html import markdown_to_html
from fedrepro.figures.base import write_table

ROOT = Path(__file__).resolve().parents[1]


class _Tables(HTMLParser):
    """Text of every table cell (per table, per row), of headings/paragraphs, and tag names seen."""

    def __init__(self):
        super().__init__()
        self.tables, self.blocks, self.tags, self._cell, self._block = [], [], set(), None, None

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag in ("h1", "h2", "h3", "p"):
            self._block = []

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None
        elif tag in ("h1", "h2", "h3", "p"):
            self.blocks.append("".join(self._block))
            self._block = None

    def handle_data(self, data):
        for part in (self._cell, self._block):
            if part is not None:
                part.append(data)


def parse(page: str) -> _Tables:
    parser = _Tables()
    parser.feed(page)
    return parser


def test_markdown_tables_become_escaped_html_tables():
    md = ("# Claims: x_y\n\nVerdicts: holds 1, fails 1\nsecond line with `code`\n\n"
          "| claim | text | verdict |\n|---|---|---|\n"
          "| c1 | a \\| b <script>alert(1)</script> & more | **holds** |\n"
          "| c2 | value **bold** here | **fails** |\n")
    page = markdown_to_html(md, "t <1>")
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    assert "<title>t &lt;1&gt;</title>" in page
    doc = parse(page)
    assert "script" not in doc.tags and {"h1", "p", "table", "strong", "code"} <= doc.tags
    assert doc.blocks == ["Claims: x_y", "Verdicts: holds 1, fails 1\nsecond line with code"]
    assert doc.tables == [[["claim", "text", "verdict"],
                           ["c1", "a | b <script>alert(1)</script> & more", "holds"],
                           ["c2", "value bold here", "fails"]]]
    assert '<td class="holds"><strong>holds</strong></td>' in page
    assert '<td class="fails"><strong>fails</strong></td>' in page


def test_claims_page_shows_every_claim_with_verdict_and_reason():
    base = {"paper": "p", "kind": "paper", "place": "Sec. V, Fig. 3", "quote": "A beats B.", "tolerance": None,
            "interval_lo": 0.0, "interval_hi": 1.0, "replicates": 5, "replicates_needed": 0}
    table = pd.DataFrame([
        {**base, "claim": "c_hold", "text": "A beats B", "paper_value": 1.0, "our_value": "1.02 [1, 1.04] (n=5)",
         "compare": "approx", "tolerance": 0.1, "verdict": "holds", "why": ""},
        {**base, "claim": "c_fail", "text": "ratio | is < 2", "paper_value": 2.0, "our_value": "3.5 [3.1, 3.9] (n=5)",
         "compare": "le", "tolerance": 0.0, "verdict": "fails", "why": "3.5 > 2 on 5 seeds"},
        {**base, "claim": "c_open", "text": "needs more seeds", "paper_value": 0.0, "our_value": "0.1 [-1, 1.2] (n=3)",
         "compare": "gt", "verdict": "undecided", "why": "about 40 replicates at the measured spread would decide it"},
        {**base, "claim": "c_check", "kind": "check", "text": "every run converges", "paper_value": None,
         "our_value": "yes", "compare": "true", "verdict": "holds", "why": ""},
    ])
    doc = parse(markdown_to_html(to_markdown(table, "p"), "Claims: p"))
    statements, checks = doc.tables
    for rows, part in ((statements, table[table["kind"] == "paper"]), (checks, table[table["kind"] == "check"])):
        header, body = rows[0], rows[1:]
        assert len(body) == len(part)
        col = {name: header.index(name) for name in ("claim", "the paper says", "our reading", "verdict",
                                                     "why (when it does not hold)")}
        for r, row in zip(part.itertuples(), body):
            assert row[col["claim"]] == r.claim
            assert row[col["the paper says"]] == r.quote
            assert row[col["our reading"]] == r.text
            assert row[col["verdict"]] == r.verdict
            assert row[col["why (when it does not hold)"]] == r.why


def test_table_page_matches_the_markdown_table(tmp_path):
    frame = pd.DataFrame({"method": ["FedEPM", "a|b"], "rounds": [12.0, float("nan")], "acc": [0.91234, 0.5]})
    write_table(frame, tmp_path / "table1", "Table 1. CR at **quick** scale", formats={"acc": "{:.3f}"})
    md = (tmp_path / "table1.md").read_text()
    doc = parse(markdown_to_html(md, "table1"))
    assert doc.blocks == ["Table 1. CR at quick scale"]
    assert doc.tables == [[["method", "rounds", "acc"], ["FedEPM", "12", "0.912"], ["a|b", "n/a", "0.500"]]]


def test_skipped_and_provenance_pages_keep_every_row():
    from fedrepro.experiments.report_markdown import provenance_markdown

    md = provenance_markdown({"scale": "quick", "seed": 1, "papers": ["fedepm"]}, "abc123", {("fedepm", "fig3"): [1, 2]})
    doc = parse(markdown_to_html(md, "Provenance"))
    (rows,) = doc.tables
    md_rows = [line for line in md.splitlines() if line.startswith("| ") and not line.startswith("| key")]
    assert len(rows) - 1 == len(md_rows)
    values = dict(rows[1:])
    assert values["config_hash"] == "abc123" and values["cells"] == "2" and values["scale"] == "quick"


def test_report_registers_only_files_a_browser_shows_inline():
    """Snakemake's report opens HTML, images and PDF inline and everything else as a data: link
    (which Chromium does not open): every report() output must be HTML or PNG."""
    registered, folders = [], []
    for path in sorted((ROOT / "workflow/rules").glob("*.smk")):
        registered += re.findall(r'report\(\s*"([^"]+)"', path.read_text())
        # a folder of files (rule partitions): what the report shows of it is what its patterns match
        folders += re.findall(r'report\(\s*directory\("([^"]+)"\),\s*patterns=\[([^\]]*)\]', path.read_text())
    assert registered, "no report() outputs found"
    assert [p for p in registered if not p.endswith((".html", ".png"))] == []
    patterns = [p.strip().strip('"') for _, given in folders for p in given.split(",")]
    assert folders and patterns and [p for p in patterns if not p.endswith((".html", ".png"))] == []
    for kind in ("claims.html", "{fig}.html", "{fig}.png", "skipped.html", "provenance.html"):
        assert any(p.endswith(kind) for p in registered), kind


def _run_reproduce(tmp_path, report_rc: int):
    """scripts/reproduce.sh in a copy whose bootstrap is a no-op and whose snakemake is a stub
    that records its arguments and fails `--report` with a message when ``report_rc`` != 0."""
    import shutil
    import subprocess

    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts/reproduce.sh", tmp_path / "scripts/reproduce.sh")
    (tmp_path / "scripts/bootstrap.sh").write_text("true\n")
    stub = tmp_path / ".venv/bin/snakemake"
    stub.parent.mkdir(parents=True)
    stub.write_text('#!/usr/bin/env bash\necho "$*" >> calls.txt\n'
                    f'case " $* " in *" --report "*) echo "report exploded: missing figure" >&2; exit {report_rc};; esac\n')
    stub.chmod(0o755)
    res = subprocess.run(["bash", str(tmp_path / "scripts/reproduce.sh"), "fedepm"], capture_output=True, text=True)
    return res, (tmp_path / "calls.txt").read_text().splitlines()


def test_reproduce_shows_and_fails_on_a_report_error(tmp_path):
    res, calls = _run_reproduce(tmp_path, report_rc=1)
    assert res.returncode != 0
    assert "report exploded: missing figure" in res.stderr            # snakemake's own message is shown
    assert "could not be built" in res.stderr
    assert calls == ["-j 2 --scheduler greedy --max-jobs-per-timespan 1000/5s --rerun-incomplete fedepm",
                     "--report results/report.html fedepm"]


def test_reproduce_builds_the_report_of_the_same_targets(tmp_path):
    res, calls = _run_reproduce(tmp_path, report_rc=0)
    assert res.returncode == 0, res.stderr
    assert calls[-1] == "--report results/report.html fedepm"
