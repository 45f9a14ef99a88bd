"""Where a verify build spends its CPU: replicates added only to the claims that more replicates would decide
(issue #43, point 6; docs/verdicts.md "Two looks").

After a first pass (look 1), a paper statement left ``undecided`` names the replicates that its measured
spread says would decide it (``replicates_needed``, :mod:`fedrepro.claims.verdicts`). The plan raises the
seeds (instances) of that claim's experiments to that number, cheapest claim first, until the CPU budget
is spent. A claim whose need is unbounded (no number of replicates decides it: the estimate on the edge,
half the replicates on each side, a capped side), or more than ``max_factor`` times its replicates, gets
nothing. The plan is a config fragment (``paper_overrides``) for the second pass (look 2).

The cost of a seed is measured, not modelled: the CPU seconds of look 1's runs of the experiment
(``run_cpu_time`` of its summaries, and of its timing pass when it has one) divided by its seeds.

    python -m fedrepro.claims.plan --results results --budget-cpu-s 10000 --out results/verify/plan.yaml

(``--budget-cpu-s``: both looks' runs; look 1's measured CPU is subtracted.)

**Error control of the repeated look.** A claim is looked at twice; each look decides at its own level,
``alpha_1 + alpha_2 = 0.05`` (``verify.alpha_per_look`` in config.yaml, default 0.025 + 0.025), so the
chance that either look gives a wrong verdict is at most 5% (Bonferroni over the looks). A claim decided
at look 1 keeps that verdict (:func:`combine_looks`).
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from fedrepro.claims.verdicts import HOLDS, FAILS, UNDECIDED

#: the default split of the 5% error over the two looks of a verify build
ALPHA_PER_LOOK = (0.025, 0.025)


@dataclass
class ClaimPlan:
    paper: str
    claim: str
    replicates: int
    needed: int | None
    experiments: tuple[str, ...]
    cost_cpu_s: float = math.nan
    status: str = ""            # planned / over budget / unbounded / too many / no cost


@dataclass
class Plan:
    budget_cpu_s: float
    seeds: dict = field(default_factory=dict)          # (paper, experiment) -> seeds at look 2
    claims: list = field(default_factory=list)        # ClaimPlan, in the order considered
    spent_cpu_s: float = 0.0

    def overrides(self, scale: str = "verify") -> dict:
        """The config fragment of look 2: ``paper_overrides: {paper: {exp: {scales: {scale: {seeds: n}}}}}``."""
        out: dict = {}
        for (paper, exp), n in sorted(self.seeds.items()):
            out.setdefault(paper, {})[exp] = {"scales": {scale: {"seeds": int(n)}}}
        return {"paper_overrides": out}

    def markdown(self) -> str:
        lines = [f"# Verify plan: look 2 adds replicates where they decide (budget {self.budget_cpu_s:.0f} CPU-s, "
                 f"planned {self.spent_cpu_s:.0f})", "",
                 "| paper | claim | replicates | needed | experiments | CPU-s | plan |", "|---|---|---|---|---|---|---|"]
        for c in self.claims:
            cost = "—" if math.isnan(c.cost_cpu_s) else f"{c.cost_cpu_s:.0f}"
            lines.append(f"| {c.paper} | {c.claim} | {c.replicates} | {c.needed or '—'} | "
                         f"{', '.join(c.experiments)} | {cost} | {c.status} |")
        return "\n".join(lines + [""])


def _run_cpu(path: Path) -> float:
    """CPU seconds inside the runs of one summary or timing file (one value per run and repetition)."""
    df = pd.read_parquet(path)
    if "run_cpu_time" not in df or df.empty:
        return 0.0
    keys = [c for c in ("cell", "repeat") if c in df]
    return float(df.groupby(keys)["run_cpu_time"].max().sum()) if keys else float(df["run_cpu_time"].sum())


def spent_cpu_s(results_dir: str | Path) -> float:
    """CPU seconds look 1 spent inside its runs: every paper's summaries and timing passes."""
    return sum(_run_cpu(p) for pat in ("*/*.summary.parquet", "*/*.timing.parquet")
               for p in Path(results_dir).glob(pat))


def seed_costs(results_dir: str | Path, paper: str, experiments) -> dict:
    """``{experiment: (seeds, CPU-s per seed)}`` measured from look 1's results: the summed
    ``run_cpu_time`` of the experiment's runs (its timing pass included) over its distinct instances."""
    out = {}
    for e in experiments:
        s = Path(results_dir, paper, f"{e}.summary.parquet")
        if not s.exists():
            continue
        summ = pd.read_parquet(s)
        seeds = int(summ["instance" if "instance" in summ else "seed"].nunique())
        cpu = _run_cpu(s)
        t = Path(results_dir, paper, f"{e}.timing.parquet")
        if t.exists():
            cpu += _run_cpu(t)
        if seeds > 0 and math.isfinite(cpu):
            out[e] = (seeds, cpu / seeds)
    return out


def plan(tables: dict, claims: dict, costs: dict, budget_cpu_s: float, max_factor: float = 4.0) -> Plan:
    """The look-2 plan from look 1's claims tables.

    tables: ``{paper: claims table}`` (columns claim, kind, verdict, replicates, replicates_needed);
    claims: ``{paper: {claim id: experiments}}``; costs: ``{paper: {experiment: (seeds, CPU-s per seed)}}``.
    A claim's replicates are its experiments' seeds (paired by seed or instance): reaching ``needed``
    replicates means ``ceil(seeds * needed / replicates)`` seeds in each of its experiments."""
    p = Plan(budget_cpu_s)
    candidates = []
    for paper, table in tables.items():
        for r in table.itertuples():
            if getattr(r, "kind", "paper") != "paper" or r.verdict != UNDECIDED:
                continue
            exps = tuple(claims.get(paper, {}).get(r.claim, ()))
            n, need = int(r.replicates or 0), int(r.replicates_needed or 0)
            c = ClaimPlan(paper, r.claim, n, need or None, exps)
            if n <= 0 or not exps:
                continue                  # not computed (not testable here, incomplete, a sweep left open)
            if not need:
                c.status = "unbounded: no number of replicates decides it"
            elif need > max_factor * n:
                c.status = f"needs {need} replicates, more than {max_factor:g} x its {n}"
            elif any(e not in costs.get(paper, {}) for e in exps):
                c.status = "no measured cost"
            candidates.append(c)
    open_ = [c for c in candidates if not c.status]

    def want(c):
        return {(c.paper, e): math.ceil(costs[c.paper][e][0] * c.needed / c.replicates) for e in c.experiments}

    def marginal(c, seeds):
        return sum(max(0, n - seeds.get(k, costs[k[0]][k[1]][0])) * costs[k[0]][k[1]][1] for k, n in want(c).items())

    while open_:
        open_.sort(key=lambda c: (marginal(c, p.seeds), c.paper, c.claim))
        c = open_.pop(0)
        cost = marginal(c, p.seeds)
        c.cost_cpu_s = cost
        if p.spent_cpu_s + cost > budget_cpu_s:
            c.status = "over budget"
            continue
        for k, n in want(c).items():
            p.seeds[k] = max(n, p.seeds.get(k, costs[k[0]][k[1]][0]))
        p.spent_cpu_s += cost
        c.status = "planned"
    p.claims = sorted(candidates, key=lambda c: (c.status != "planned", c.paper, c.claim))
    p.seeds = {k: n for k, n in p.seeds.items() if n > costs[k[0]][k[1]][0]}
    return p


def combine_looks(look1: pd.DataFrame, look2: pd.DataFrame) -> pd.DataFrame:
    """The verify build's verdicts: a statement decided at look 1 keeps that verdict (its whole row); the
    others take look 2's. Column ``look`` says which look decided each row."""
    first = look1.set_index("claim")
    rows = []
    for r in look2.to_dict("records"):
        c = r["claim"]
        if c in first.index and first.at[c, "verdict"] in (HOLDS, FAILS):
            r = {**first.loc[c].to_dict(), "claim": c, "look": 1}
        else:
            r = {**r, "look": 2}
        rows.append(r)
    return pd.DataFrame(rows, columns=[*look2.columns, "look"])


def main(argv=None) -> int:
    import yaml

    from fedrepro.claims.evaluate import load_claims

    ap = argparse.ArgumentParser(prog="python -m fedrepro.claims.plan", description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default="results", help="look 1's results folder (results/<paper>/claims.parquet)")
    ap.add_argument("--budget-cpu-s", type=float, required=True,
                    help="CPU seconds both looks' runs may spend (look 1's measured runs are subtracted)")
    ap.add_argument("--max-factor", type=float, default=4.0, help="plan no claim beyond this x its replicates")
    ap.add_argument("--out", default=None, help="write the config fragment (paper_overrides) here, and the "
                                                "table beside it (.md)")
    args = ap.parse_args(argv)
    tables, claims, costs = {}, {}, {}
    for path in sorted(Path(args.results).glob("*/claims.parquet")):
        paper = path.parent.name
        tables[paper] = pd.read_parquet(path)
        claims[paper] = {c["id"]: c.get("experiments") or [] for c in load_claims(paper)}
        costs[paper] = seed_costs(args.results, paper, sorted({e for v in claims[paper].values() for e in v}))
    if not tables:
        print(f"error: no {args.results}/<paper>/claims.parquet: run look 1 first (snakemake --config scale=verify)",
              file=sys.stderr)
        return 2
    spent = spent_cpu_s(args.results)
    p = plan(tables, claims, costs, max(0.0, args.budget_cpu_s - spent), args.max_factor)
    print(f"look 1 spent {spent:.0f} CPU-s in its runs; look 2 may spend {p.budget_cpu_s:.0f}", file=sys.stderr)
    print(p.markdown())
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(yaml.safe_dump(p.overrides(), sort_keys=True))
        Path(args.out).with_suffix(".md").write_text(p.markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
