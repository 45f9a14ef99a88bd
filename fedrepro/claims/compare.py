"""Compare the claim verdicts of two builds (e.g. the same config with another ``seed:``).

    python -m fedrepro.claims.compare OLD_RESULTS NEW_RESULTS [--markdown out.md]

Reads ``<results>/<paper>/claims.parquet`` on both sides and prints, per paper, the verdict table
of each build and every claim whose verdict changed. A paper statement that ``holds`` in one build
and ``fails`` in the other is a *flip*: the exit status is 1 when there is one, since two builds
that differ only in their seeds must not turn a decided verdict around (issue #24). A move between
a decided verdict and ``undecided`` is listed but is not a flip: an interval that straddles the
statement in one build is what a borderline effect looks like.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

VERDICTS = ["holds", "fails", "undecided", "unavailable"]
DECIDED = {"holds", "fails"}


def read_verdicts(results_dir: str | Path) -> pd.DataFrame:
    """The ``paper, claim, kind, verdict`` rows of every claims table under ``results_dir``."""
    frames = [pd.read_parquet(p, columns=["paper", "claim", "kind", "verdict"])
              for p in sorted(Path(results_dir).glob("*/claims.parquet"))]
    if not frames:
        raise FileNotFoundError(f"no */claims.parquet under {results_dir}")
    return pd.concat(frames, ignore_index=True)


def compare_verdicts(old: pd.DataFrame, new: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(counts, changes)``: paper statements by verdict per paper and build, and one row per
    claim (either kind) whose verdict differs, with ``flip`` = decided one way in one build and the
    other way in the other (paper statements and checks alike)."""
    both = old.merge(new, on=["paper", "claim"], how="outer", suffixes=("_old", "_new"))
    both["kind"] = both["kind_new"].fillna(both["kind_old"])
    both[["verdict_old", "verdict_new"]] = both[["verdict_old", "verdict_new"]].fillna("absent")
    changed = both[both["verdict_old"] != both["verdict_new"]].copy()
    changed["flip"] = (changed["verdict_old"].isin(DECIDED) & changed["verdict_new"].isin(DECIDED))
    changes = changed[["paper", "claim", "kind", "verdict_old", "verdict_new", "flip"]].reset_index(drop=True)
    rows = []
    for side, frame in (("old", old), ("new", new)):
        stated = frame[frame["kind"] == "paper"]
        for paper, g in stated.groupby("paper"):
            counts = g["verdict"].value_counts()
            rows.append({"paper": paper, "build": side, **{v: int(counts.get(v, 0)) for v in VERDICTS}})
    counts = pd.DataFrame(rows, columns=["paper", "build", *VERDICTS])
    return counts, changes


def to_markdown(counts: pd.DataFrame, changes: pd.DataFrame, old_label: str, new_label: str) -> str:
    lines = [f"Paper statements by verdict: `{old_label}` (old) and `{new_label}` (new).", "",
             "| paper | build | " + " | ".join(VERDICTS) + " |", "|---|---|" + "---|" * len(VERDICTS)]
    for r in counts.sort_values(["paper", "build"], ascending=[True, False]).itertuples(index=False):
        lines.append(f"| {r.paper} | {r.build} | " + " | ".join(str(getattr(r, v)) for v in VERDICTS) + " |")
    lines += ["", f"Changed verdicts: {len(changes)} (flips holds <-> fails: {int(changes['flip'].sum())})", ""]
    if len(changes):
        lines += ["| paper | claim | kind | old | new | flip |", "|---|---|---|---|---|---|"]
        for r in changes.itertuples(index=False):
            lines.append(f"| {r.paper} | {r.claim} | {r.kind} | {r.verdict_old} | {r.verdict_new} | "
                         f"{'**yes**' if r.flip else ''} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="results folder of the first build")
    parser.add_argument("new", type=Path, help="results folder of the second build")
    parser.add_argument("--markdown", type=Path, help="also write the report to this file")
    args = parser.parse_args(argv)
    try:
        counts, changes = compare_verdicts(read_verdicts(args.old), read_verdicts(args.new))
    except FileNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    text = to_markdown(counts, changes, str(args.old), str(args.new))
    print(text, end="")
    if args.markdown:
        args.markdown.write_text(text)
    return 1 if changes["flip"].any() else 0


if __name__ == "__main__":
    sys.exit(main())
