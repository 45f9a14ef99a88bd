"""The aspire paper's result frames (spec 002 §3.0.2, §6): final per-run metrics, Table 3 / Table 4
aggregates over seeds, the Gamma sweep, virtual-time curves, time to target and the plane counts.

Conventions (spec §3.0.2): Acc_w = min_j Acc_j (%), Loss_w = max_j Loss_j, Std = population std of
the Acc_j (pp); table entries are mean ± std over seeds (ddof 0); the Std column is the mean over
seeds of the per-run Std. max{Ind_j}: per seed, the Ind_j model with the largest Acc_w (its Acc_w and
Std; no Loss_w); not defined for Fashion-MNIST (one class per worker).
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

#: experiment suffix -> (problem dataset key, display name), in the paper's column order
DATASETS = {"shl": ("shl", "SHL"), "person": ("person_activity", "Person Activity"),
            "scma": ("scma", "SC-MA"), "fmnist3": ("fmnist3", "Fashion-MNIST")}
METHODS = {"individual": "max{Ind_j}", "mix_even": "Mix_Even", "fedavg_steps": "FedAvg", "afl": "AFL",
           "drfa_prox": "DRFA-Prox", "aspire": "ASPIRE-EASE", "aspire_per": "ASPIRE-EASE_per",
           "aspire_cp": "ASPIRE-CP", "aspire_sync": "ASPIRE-EASE(-)", "aspire_adp": "ASPIRE-ADP"}
TABLE3_METHODS = ("individual", "mix_even", "fedavg_steps", "afl", "drfa_prox", "aspire", "aspire_per")
TABLE4_METHODS = ("mix_even", "fedavg_steps", "afl", "drfa_prox", "aspire")
FIG4_METHODS = ("aspire", "aspire_cp", "aspire_sync", "afl", "drfa_prox")

# The paper's Table 3 (Acc_w mean, std; Loss_w mean, std; Std) and Table 4 (success rate mean, std), spec §6.
PAPER_TABLE3 = {
    "individual": {"shl": (19.06, 0.65, None, None, 29.1), "person": (49.38, 0.08, None, None, 8.32),
                   "scma": (22.56, 0.78, None, None, 17.5), "fmnist3": None},
    "mix_even": {"shl": (69.87, 3.10, 0.806, 0.018, 4.81), "person": (56.31, 0.69, 1.165, 0.017, 3.00),
                 "scma": (49.81, 0.21, 1.424, 0.024, 6.99), "fmnist3": (66.80, 0.18, 0.784, 0.003, 10.1)},
    "fedavg_steps": {"shl": (69.96, 3.07, 0.802, 0.023, 5.21), "person": (56.28, 0.63, 1.154, 0.019, 3.13),
                     "scma": (49.53, 0.96, 1.441, 0.015, 7.17), "fmnist3": (66.58, 0.39, 0.781, 0.002, 10.2)},
    "afl": {"shl": (78.11, 1.99, 0.582, 0.021, 1.87), "person": (58.39, 0.37, 1.081, 0.014, 0.99),
            "scma": (54.56, 0.79, 1.172, 0.018, 3.50), "fmnist3": (77.32, 0.15, 0.703, 0.001, 1.86)},
    "drfa_prox": {"shl": (78.34, 1.46, 0.532, 0.034, 1.85), "person": (58.62, 0.16, 1.096, 0.037, 1.26),
                  "scma": (54.61, 0.76, 1.151, 0.039, 4.69), "fmnist3": (77.95, 0.51, 0.702, 0.007, 1.34)},
    "aspire": {"shl": (79.16, 1.13, 0.515, 0.019, 1.02), "person": (59.43, 0.44, 1.053, 0.010, 0.82),
               "scma": (56.31, 0.29, 1.127, 0.021, 3.16), "fmnist3": (78.82, 0.07, 0.696, 0.004, 1.01)},
    "aspire_per": {"shl": (78.94, 1.27, 0.521, 0.023, 1.36), "person": (59.54, 0.21, 1.051, 0.016, 0.79),
                   "scma": (56.71, 0.16, 1.119, 0.028, 3.48), "fmnist3": (78.73, 0.06, 0.698, 0.006, 1.09)},
}
PAPER_TABLE4 = {
    "mix_even": {"shl": (36.21, 2.23), "person": (34.32, 2.18), "scma": (52.14, 2.89), "fmnist3": (83.18, 2.07)},
    "fedavg_steps": {"shl": (38.15, 3.02), "person": (33.25, 2.49), "scma": (55.39, 3.13), "fmnist3": (82.04, 1.84)},
    "afl": {"shl": (68.63, 4.24), "person": (43.66, 3.87), "scma": (75.81, 4.03), "fmnist3": (90.04, 2.52)},
    "drfa_prox": {"shl": (21.23, 3.63), "person": (27.27, 3.31), "scma": (30.79, 3.65), "fmnist3": (63.24, 2.47)},
    "aspire": {"shl": (9.17, 1.65), "person": (22.36, 2.33), "scma": (14.51, 3.21), "fmnist3": (45.10, 1.64)},
}


def frames_of(frames: dict, prefix: str) -> dict:
    """``{dataset suffix: trace frame}`` of the experiments ``<prefix>_<suffix>`` present in ``frames``."""
    return {ds: frames[f"{prefix}_{ds}"] for ds in DATASETS if frames.get(f"{prefix}_{ds}") is not None
            and not frames[f"{prefix}_{ds}"].empty}


def missing_datasets(frames: dict, prefix: str) -> list[str]:
    """Display names of the datasets whose ``<prefix>_*`` experiment was not built (missing data)."""
    return [DATASETS[ds][1] for ds in DATASETS if f"{prefix}_{ds}" not in frames]


def param(df: pd.DataFrame, key: str, default=None) -> pd.Series:
    """One algorithm parameter of every row (from the ``params`` JSON column)."""
    return df["params"].map(lambda p: json.loads(p).get(key, default))


def finals(df: pd.DataFrame) -> pd.DataFrame:
    """The last evaluated record of every run (cell)."""
    return df.sort_values(["cell", "round"]).groupby("cell", as_index=False).tail(1).reset_index(drop=True)


def _mean_std(values) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    return (float(v.mean()), float(v.std())) if v.size else (float("nan"), float("nan"))


def individual_best(fin: pd.DataFrame) -> pd.DataFrame:
    """max{Ind_j}: per seed, the Ind_j run (one per worker j) with the largest Acc_w."""
    ind = fin[fin["algorithm"] == "individual"]
    if ind.empty:
        return ind
    return ind.loc[ind.groupby("seed")["acc_w"].idxmax()]


def table3_frame(frames: dict) -> pd.DataFrame:
    """One row per (dataset, method): Acc_w / Loss_w mean and std over seeds, Std, seeds; with the
    paper's values next to ours."""
    rows = []
    for ds, df in frames_of(frames, "table3").items():
        fin = finals(df)
        for method in TABLE3_METHODS:
            sub = individual_best(fin) if method == "individual" else fin[fin["algorithm"] == method]
            if sub.empty:
                continue
            acc, acc_sd = _mean_std(sub["acc_w"])
            loss, loss_sd = _mean_std(sub["loss_w"]) if method != "individual" else (np.nan, np.nan)
            paper = (PAPER_TABLE3[method].get(ds) or (None,) * 5)
            rows.append({"dataset": DATASETS[ds][1], "dataset_key": ds, "method": METHODS[method], "algorithm": method,
                         "acc_w": acc, "acc_w_std": acc_sd, "loss_w": loss, "loss_w_std": loss_sd,
                         "std": float(sub["acc_std"].mean()), "seeds": int(sub["seed"].nunique()),
                         "paper_acc_w": paper[0], "paper_loss_w": paper[2], "paper_std": paper[4]})
    return pd.DataFrame(rows)


def table4_frame(frames: dict) -> pd.DataFrame:
    """One row per (dataset, method): success attack rate (%) mean and std over seeds, the clean Acc_w,
    the malicious worker's final weight (ASPIRE pi, AFL / DRFA-Prox lambda) and the paper's value."""
    rows = []
    for ds, df in frames_of(frames, "table4").items():
        fin = finals(df)
        for method in TABLE4_METHODS:
            sub = fin[fin["algorithm"] == method]
            if sub.empty:
                continue
            rate, rate_sd = _mean_std(sub["attack_success"])
            weight = sub["pi_last"] if "pi_last" in sub and sub["pi_last"].notna().any() else \
                sub["lambda_last"] if "lambda_last" in sub else pd.Series(dtype=float)
            paper = PAPER_TABLE4[method][ds]
            rows.append({"dataset": DATASETS[ds][1], "dataset_key": ds, "method": METHODS[method], "algorithm": method,
                         "success_rate": rate, "success_rate_std": rate_sd, "acc_w": float(sub["acc_w"].mean()),
                         "malicious_weight": float(weight.mean()) if weight.notna().any() else np.nan,
                         "seeds": int(sub["seed"].nunique()), "paper_success_rate": paper[0]})
    return pd.DataFrame(rows)


def fig3_frame(frames: dict) -> pd.DataFrame:
    """ASPIRE-EASE's final Acc_w and Loss_w (mean, std over seeds) per dataset and Gamma."""
    rows = []
    for ds, df in frames_of(frames, "fig3").items():
        fin = finals(df)
        fin = fin.assign(Gamma=param(fin, "Gamma"))
        for gamma, sub in fin.groupby("Gamma"):
            acc, acc_sd = _mean_std(sub["acc_w"])
            loss, loss_sd = _mean_std(sub["loss_w"])
            rows.append({"dataset": DATASETS[ds][1], "dataset_key": ds, "Gamma": float(gamma), "acc_w": acc,
                         "acc_w_std": acc_sd, "loss_w": loss, "loss_w_std": loss_sd, "seeds": int(sub["seed"].nunique())})
    return pd.DataFrame(rows).sort_values(["dataset", "Gamma"]).reset_index(drop=True) if rows else pd.DataFrame()


def time_curves(df: pd.DataFrame, metric: str = "loss_w") -> pd.DataFrame:
    """Per method: ``metric`` against virtual time, mean and std over seeds on the union of the runs'
    evaluation times (each run's curve held constant between its evaluations)."""
    out = []
    for method, sub in df.groupby("algorithm"):
        grid = np.unique(sub["virtual_time"].to_numpy())
        runs = []
        for _, run in sub.groupby("cell"):
            run = run.sort_values("virtual_time")
            idx = np.searchsorted(run["virtual_time"].to_numpy(), grid, side="right") - 1
            vals = np.where(idx >= 0, run[metric].to_numpy()[np.clip(idx, 0, None)], np.nan)
            runs.append(vals)
        arr = np.vstack(runs)
        out.append(pd.DataFrame({"algorithm": method, "virtual_time": grid, "mean": np.nanmean(arr, axis=0),
                                 "std": np.nanstd(arr, axis=0)}))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def time_to_target(df: pd.DataFrame, metric: str = "loss_w") -> pd.DataFrame:
    """Spec aspire/fig4: target = the final ``metric`` of the worst method (mean curve); per method the
    first virtual time its mean curve reaches it (NaN: not within the budget). ``initial`` is the
    value at time 0 (every method starts from the same model): a target at or above it is no target."""
    curves = time_curves(df, metric)
    if curves.empty:
        return curves
    finals_ = curves.groupby("algorithm")["mean"].last()
    initial = float(curves.groupby("algorithm")["mean"].first().max())
    target = float(finals_.max())
    rows = []
    for method, c in curves.groupby("algorithm"):
        hit = c[c["mean"] <= target]
        rows.append({"method": METHODS.get(method, method), "algorithm": method, "target": target,
                     "time_to_target": float(hit["virtual_time"].iloc[0]) if not hit.empty else np.nan,
                     "final": float(finals_[method]), "initial": initial,
                     "budget": float(df["virtual_time"].max())})
    return pd.DataFrame(rows)
