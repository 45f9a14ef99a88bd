"""Per-run quantities of the fedepm results (CR, TCT, LCT, SNR) that its figures and claims use."""
from __future__ import annotations

import numpy as np
import pandas as pd


ALGOS = ["sfedavg", "sfedprox", "fedepm"]


def run_table(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per run with CR, TCT (CPU s), LCT (client CPU s per round), SNR, final f/m and ``capped``
    (hit the round cap)."""
    s = summary.copy()
    s["CR"] = s["rounds"].astype(int)
    s["TCT"] = s["run_cpu_time"].astype(float)
    s["LCT"] = s["run_local_cpu_time"].astype(float) / s["CR"].clip(lower=1)
    s["SNR"] = s["snr"].astype(float) if "snr" in s else np.nan
    s["f_over_m"] = s["objective_per_client"] if "objective_per_client" in s else s["objective"] / s["m"]
    s["capped"] = s["status"] == "max_rounds"
    return s
