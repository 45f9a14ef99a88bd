"""The command line of registered readings (:mod:`fedrepro.claims.registration`), with each paper's checks
from the paper registry:

    python -m fedrepro.papers.readings check [PAPER ...]      # exit 1 when a reading differs from its registration
    python -m fedrepro.papers.readings register [PAPER ...]   # register new claims (never rewrites one)
    python -m fedrepro.papers.readings revise PAPER CLAIM --changed "..." --why "..." [--results DIR]
    python -m fedrepro.papers.readings migrate [PAPER ...]    # fingerprints to the code's algorithm version
"""
from __future__ import annotations

import argparse
import sys

from fedrepro.claims import registration
from fedrepro.papers.registry import PAPERS, checks

PAPER_KEYS = [p for p in PAPERS if p != "custom"]


def check(papers=None, root=None) -> list[str]:
    """Every registration problem of ``papers`` (default: all)."""
    return registration.check_registrations(lambda paper: checks(paper, root), papers or PAPER_KEYS, root)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fedrepro.papers.readings", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_reg = sub.add_parser("register", help="register the readings of new claims (never changes a registered one)")
    p_reg.add_argument("papers", nargs="*", help="papers (default: all)")
    p_chk = sub.add_parser("check", help="exit 1 when a reading differs from its registration without a revision")
    p_chk.add_argument("papers", nargs="*")
    p_mig = sub.add_parser("migrate", help="move fingerprints to the code's algorithm version (only while every "
                                           "reading matches under the old one)")
    p_mig.add_argument("papers", nargs="*")
    p_rev = sub.add_parser("revise", help="record a change of a registered reading as a revision")
    p_rev.add_argument("paper", choices=PAPER_KEYS)
    p_rev.add_argument("claim")
    p_rev.add_argument("--changed", required=True, help="what changed in the reading")
    p_rev.add_argument("--why", required=True, help="why the reading changed")
    p_rev.add_argument("--results", default="results", help="the build under the old reading (default: results)")
    p_rev.add_argument("--build", default=None, help="name of that build (default: its claims table's commit)")
    p_rev.add_argument("--not-seen", action="store_true",
                       help="no verdict of the old reading was seen before this change")
    p_rev.add_argument("--same-values", action="store_true",
                       help="nothing computed or compared changed (a label, or a refactor with identical values on the build): "
                            "not counted as revised")
    args = parser.parse_args(argv)
    if args.command == "register":
        for paper in args.papers or PAPER_KEYS:
            added = registration.register(paper, checks(paper))
            print(f"{paper}: registered {len(added)} reading(s)" + (f": {', '.join(added)}" if added else ""))
        return 0
    if args.command == "migrate":
        for paper in args.papers or PAPER_KEYS:
            print(f"{paper}: {registration.migrate(paper, checks(paper))} fingerprint(s) moved to version "
                  f"{registration.FINGERPRINT_VERSION}")
        return 0
    if args.command == "check":
        found = check(args.papers or None)
        for line in found:
            print(line, file=sys.stderr)
        return 1 if found else 0
    try:
        entry = registration.revise(args.paper, args.claim, checks(args.paper), args.changed, args.why, args.results,
                                    args.build, seen=not args.not_seen, same_values=args.same_values)
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{args.paper} {args.claim}: revision recorded (before: {entry['verdict_before']}, {entry['value_before']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
