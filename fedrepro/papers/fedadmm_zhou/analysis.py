"""Quantities derived from the fedadmm_zhou results that both its figures and its claims use:
the step-size choice of the baselines and the per-setting medians (tuning protocol in
:mod:`fedrepro.papers.fedadmm_zhou.figures`)."""
from __future__ import annotations

import pandas as pd


ALGS = ["fedadmm", "fedavg", "fedprox", "fedalt", "fedsim"]


LABELS = {"fedadmm": "FedADMM", "fedavg": "FedAvg", "fedprox": "FedProx", "fedalt": "FedAlt", "fedsim": "FedSim"}


def has_rows(df) -> bool:
    return df is not None and len(df) > 0


def choose_steps(summary: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Keep, per (algorithm, *by), only the runs of the chosen step_c (tuning protocol in the module
    docstring);
    FedADMM rows pass unchanged. Adds nothing else."""
    if not has_rows(summary):
        return summary
    s = summary.copy()
    if "step_c" not in s.columns:
        return s
    keep = [s[s["algorithm"] == "fedadmm"]]
    base = s[s["algorithm"] != "fedadmm"]
    if len(base):
        by = [b for b in by if b in base.columns]
        stats = (base.groupby(["algorithm", *by, "step_c"], dropna=False)
                 .agg(frac=("reached", "mean"), cr=("rounds", "median"), f=("objective", "median"))
                 .reset_index())
        stats = stats.sort_values(["frac", "cr", "f", "step_c"], ascending=[False, True, True, False])
        best = stats.groupby(["algorithm", *by], dropna=False).head(1)[["algorithm", *by, "step_c"]]
        keep.append(base.merge(best, on=["algorithm", *by, "step_c"]))
    return pd.concat(keep, ignore_index=True)


def medians(summary: pd.DataFrame, x: str) -> pd.DataFrame:
    """Per (algorithm, x): median CR and CPU time (``run_cpu_time``: process CPU seconds of the run,
    data loading excluded; far less sensitive to machine load than wall time), IQR, fraction reached, fraction that hit the
    round cap (``capped``: their CR and time are lower bounds), chosen step_c."""
    s = choose_steps(summary, [x])
    agg = {"cr": ("rounds", "median"), "cr_q1": ("rounds", lambda v: v.quantile(0.25)),
           "cr_q3": ("rounds", lambda v: v.quantile(0.75)), "time": ("run_cpu_time", "median"),
           "reached": ("reached", "mean"), "n": ("rounds", "size"),
           "capped": ("status", lambda v: float((v == "max_rounds").mean()))}
    out = s.groupby(["algorithm", x]).agg(**agg).reset_index()
    if "step_c" in s.columns:
        out = out.merge(s.groupby(["algorithm", x])["step_c"].first().reset_index(), on=["algorithm", x])
    return out
