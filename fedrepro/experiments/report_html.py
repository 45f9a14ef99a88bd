"""HTML versions of the workflow's Markdown outputs, for the Snakemake report.

Snakemake's HTML report shows HTML, images and PDFs inline, but offers any other file (Markdown,
CSV) only as a link to a ``data:`` URL, which Chromium refuses to open. Every Markdown output the
report shows (claims, tables, the skipped list, provenance) is therefore also written as a
self-contained HTML page by :func:`markdown_to_html`. It understands exactly the Markdown our
writers emit: ``#`` headings, paragraphs, pipe tables (``\\|`` inside a cell), ``**bold**`` and
```code``` spans; everything else is shown as escaped text, so no content is dropped.
"""
from __future__ import annotations

import html
import re
from pathlib import Path

_INLINE = re.compile(r"`([^`]+)`|\*\*(.+?)\*\*")
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_RULE = re.compile(r"^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
VERDICT_CLASSES = {"holds": "holds", "fails": "fails", "undecided": "untestable", "unavailable": "untestable"}

STYLE = """
body { font-family: system-ui, sans-serif; font-size: 14px; margin: 1em; color: #111; background: #fff; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #bbb; padding: 3px 6px; vertical-align: top; text-align: left; }
th { background: #eee; }
td.holds { background: #d9f2d9; } td.fails { background: #f8d7d7; } td.untestable { background: #f2f2f2; }
code { background: #f2f2f2; padding: 0 2px; }
"""


def _inline(text: str) -> str:
    """Escape ``text``, turning ``code`` and **bold** spans into tags."""
    out, pos = [], 0
    for m in _INLINE.finditer(text):
        out.append(html.escape(text[pos:m.start()]))
        if m.group(1) is not None:
            out.append(f"<code>{html.escape(m.group(1))}</code>")
        else:
            out.append(f"<strong>{_inline(m.group(2))}</strong>")
        pos = m.end()
    out.append(html.escape(text[pos:]))
    return "".join(out)


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(body)]


def _td(cell: str) -> str:
    verdict = VERDICT_CLASSES.get(cell.strip("* "))
    attr = f' class="{verdict}"' if verdict else ""
    return f"<td{attr}>{_inline(cell)}</td>"


def markdown_to_html(markdown: str, title: str) -> str:
    """A complete, self-contained HTML page (inline CSS, no scripts) showing ``markdown``."""
    lines = markdown.splitlines()
    body, para, i = [], [], 0

    def flush():
        if para:
            body.append("<p>" + "<br>\n".join(_inline(p) for p in para) + "</p>")
            para.clear()

    while i < len(lines):
        line = lines[i]
        heading = _HEADING.match(line)
        if not line.strip():
            flush()
        elif heading:
            flush()
            level = len(heading.group(1))
            body.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif line.lstrip().startswith("|") and i + 1 < len(lines) and _RULE.match(lines[i + 1].strip()):
            flush()
            head = "".join(f"<th>{_inline(c)}</th>" for c in _cells(line))
            rows = []
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append("<tr>" + "".join(_td(c) for c in _cells(lines[i])) + "</tr>")
                i += 1
            body.append(f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(rows)
                        + "\n</tbody>\n</table>")
            continue
        else:
            para.append(line.strip())
        i += 1
    flush()
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")


def write_markdown_html(markdown_path: str | Path, html_path: str | Path, title: str | None = None) -> None:
    """Write the HTML page of the Markdown file ``markdown_path`` to ``html_path`` (atomically)."""
    from fedrepro.experiments.results import write_text_atomic

    markdown_path = Path(markdown_path)
    write_text_atomic(html_path, markdown_to_html(markdown_path.read_text(), title or str(markdown_path)))
