"""Write (or check) the claim-verdict counts that README.md and FIDELITY.md quote.

    python -m fedrepro.claims.status README.md FIDELITY.md            # rewrite the marked blocks
    python -m fedrepro.claims.status --check README.md FIDELITY.md    # exit 1 if they are stale

A document quotes the counts between the lines ``<!-- claims-status:begin -->`` and
``<!-- claims-status:end -->``; the block is generated from ``results/<paper>/claims.parquet``
of the last build (``--results`` elsewhere), so the documents never state counts by hand.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from fedrepro.claims import STATUS_COLUMNS, status_table

BEGIN, END = "<!-- claims-status:begin -->", "<!-- claims-status:end -->"
_BLOCK = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)


def _provenance(results_dir) -> str:
    """Commit and date of the build, from the claims tables' provenance metadata."""
    from fedrepro.experiments.results import read_metadata

    seen = set()
    for path in sorted(Path(results_dir).glob("*/claims.parquet")):
        try:
            meta = read_metadata(path)
        except Exception:  # noqa: BLE001 - a table without metadata has no provenance to quote
            continue
        commit, date = str(meta.get("git_commit", ""))[:7], str(meta.get("created", ""))[:10]
        if commit or date:
            seen.add((commit, date))
    return "; ".join(f"commit {c or '?'}, {d or '?'}" for c, d in sorted(seen))


def status_markdown(results_dir: str | Path = "results", scale: str | None = None) -> str:
    """The generated block (markers included): per paper, the paper statements by verdict and the
    checks of our implementation apart."""
    table = status_table(results_dir)
    prov = _provenance(results_dir)
    head = (f"Claim verdicts of the last {scale + '-scale ' if scale else ''}build"
            f"{' (' + prov + ')' if prov else ''}, generated from `results/<paper>/claims.parquet` by "
            "`python -m fedrepro.claims.status`. Paper statements: holds / fails (decided by a 95% interval "
            "valid for ties and capped runs, at least 6 replicates, Benjamini-Hochberg over the paper's "
            "statements: docs/verdicts.md), depends (decided across a sweep of a parameter the paper does not "
            "state: holds at some values, fails at others; `claims.md` gives the table), undecided (the interval "
            "straddles the paper's statement; `claims.md` names the replicates that would decide it), incomplete "
            "(a cell the reading needs is missing: never decided on a subset), unavailable (dataset not available "
            "offline); *revised after a "
            "verdict*: how many of the statements' verdicts rest on a reading changed after a verdict of the old "
            "reading was seen (registered readings, `fedrepro/claims/registration.py`; `claims.md` shows each old "
            "verdict). Checks of our own code are counted apart:")
    cols = STATUS_COLUMNS[1:]
    lines = [BEGIN, head, "", "| paper | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for row in table.to_dict("records"):
        lines.append(f"| {row['paper']} | " + " | ".join(str(row[v]) for v in cols) + " |")
    return "\n".join(lines + [END])


def update(text: str, block: str, where: str = "document") -> str:
    if not _BLOCK.search(text):
        raise ValueError(f"{where} has no {BEGIN} ... {END} block to fill")
    return _BLOCK.sub(lambda _: block, text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fedrepro.claims.status", description=__doc__.split("\n\n")[0])
    parser.add_argument("documents", nargs="+", help="Markdown files holding a claims-status block")
    parser.add_argument("--results", default="results", help="results folder of the build (default: results)")
    parser.add_argument("--scale", default=None, help="scale of that build, for the heading (e.g. quick)")
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if a document is stale")
    args = parser.parse_args(argv)
    if not list(Path(args.results).glob("*/claims.parquet")):
        print(f"error: no {args.results}/<paper>/claims.parquet: build the papers first (bash scripts/reproduce.sh)",
              file=sys.stderr)
        return 2
    block = status_markdown(args.results, args.scale)
    stale = []
    for doc in args.documents:
        path = Path(doc)
        old = path.read_text()
        new = update(old, block, doc)
        if new != old:
            stale.append(doc)
            if not args.check:
                path.write_text(new)
    if args.check and stale:
        print(f"stale claim counts in {', '.join(stale)}: run python -m fedrepro.claims.status {' '.join(args.documents)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
