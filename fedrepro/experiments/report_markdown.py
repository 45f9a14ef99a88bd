"""The build's Markdown reports: what was skipped for missing data, and the provenance of the run."""
from __future__ import annotations

from fedrepro.data.plan import DataPlan


def skipped_markdown(skipped: dict, outputs: dict, data: DataPlan) -> str:
    lines = ["# Skipped outputs", ""]
    idle = sorted((p, f, why) for p, info in outputs.items() for f, why in info.get("not_built", {}).items())
    if idle:        # an experiment without cells in this build (run_at, or the verify build's leave_out)
        lines += ["Not built in this build: an experiment they need does not run here.", "",
                  "| figure/table | why |", "|---|---|"]
        lines += [f"| {p}/{f} | {why} |" for p, f, why in idle] + [""]
    if not skipped:
        return "\n".join(lines + ["Nothing was skipped for missing data: every dataset was in the cache or the "
                                  "mirror, or downloaded.", ""])
    lines += ["These experiments, and the figures/tables/claims that need them, were skipped because a dataset "
              "is neither in the cache nor in the mirror (`FEDREPRO_DATA_MIRROR`), and downloads are off. "
              "Run with `--config data='{download: true}'` to download them, or `--config strict=true` "
              "to make this an error.", "",
              "| paper | experiment | missing dataset | get it from |", "|---|---|---|---|"]
    for (paper, exp), missing in sorted(skipped.items()):
        for d in missing:
            lines.append(f"| {paper} | {exp} | {d} | {', '.join(data.urls(d))} |")
    figs = [(p, f, m) for p, info in outputs.items() for f, m in info.get("skipped_figures", {}).items()]
    if figs:
        lines += ["", "| skipped figure/table | missing dataset |", "|---|---|"]
        lines += [f"| {p}/{f} | {', '.join(m)} |" for p, f, m in sorted(figs)]
    partial = [(p, f, sorted({d for e in spec.optional for d in skipped.get((p, e), [])}))
               for p, info in outputs.items() for kind in ("figures", "tables")
               for f, spec in info.get(kind, {}).items()]
    partial = [row for row in partial if row[2]]
    if partial:
        lines += ["", "Built without the columns or panels of a missing dataset (the output says which):", "",
                  "| partial figure/table | missing dataset |", "|---|---|"]
        lines += [f"| {p}/{f} | {', '.join(m)} |" for p, f, m in sorted(partial)]
    return "\n".join(lines + [""])


def provenance_markdown(config: dict, config_hash: str, cells_by_exp: dict) -> str:
    from fedrepro.experiments.results import provenance

    prov = provenance(config_hash)
    lines = ["# Provenance", "", "| key | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in prov.items() if k != "created"]
    lines += [f"| scale | {config.get('scale')} |", f"| seed | {config.get('seed')} |",
              f"| papers | {', '.join(config.get('papers', []))} |",
              f"| cells | {sum(len(c) for c in cells_by_exp.values())} |", ""]
    return "\n".join(lines)
