"""The CPU bill of a claim built alone (:mod:`fedrepro.papers.alone`)::

    python -m fedrepro.papers.bill fedadmm_gong table3_fedadmm_rounds [--scale paper] [--cells]

prints the command that builds the claim alone, its runs and their CPU-hours (the measured paper-scale bill,
``benchmarks/results/paper_bill.json``, where a cell's kind is there, else the work model; each cell at its round
cap), and with ``--cells`` one line per cell."""
from __future__ import annotations

import argparse
import sys

from fedrepro.papers.alone import bill, bill_text, cell_cost, claim_build, runs
from fedrepro.core.params import ConfigError
from fedrepro.experiments.spec import as_spec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fedrepro.papers.bill", description=__doc__.splitlines()[0])
    ap.add_argument("paper")
    ap.add_argument("claims", nargs="+", metavar="claim", help="claim ids of the paper's claims.yaml")
    ap.add_argument("--scale", default=None, help="default: the cheapest scale the claim's testable_at names")
    ap.add_argument("--cells", action="store_true", help="one line per cell: experiment, algorithm, setting, "
                                                         "round cap, CPU seconds and how estimated")
    args = ap.parse_args(argv)
    total = 0.0
    for claim_id in args.claims:
        try:
            build = claim_build(args.paper, claim_id, args.scale)
        except ConfigError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        b = bill(build)
        total += b["cpu_h"]
        print(f"{build.name}: {bill_text(b)}\n  {b['command']}")
        if args.cells:
            for c in runs(build.cells):
                s, how = cell_cost(c, calibrate_at=build.scale)
                r = as_spec(c)
                print(f"    {r.experiment} {r.name} {r.algorithm.name} {r.columns} seed={r.seed} "
                      f"max_rounds={r.run.max_rounds} stop={r.stop}: {s:,.0f} CPU-s ({how})")
    if len(args.claims) > 1:
        print(f"total: {total:,.2f} CPU-hours (cells shared by two claims counted in each)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
