"""Series labels and seed-averaged curves of the frpg results, shared by its figures and claims."""
from __future__ import annotations

import json

import pandas as pd


DATASETS = [("usps", "USPS"), ("mnist", "MNIST"), ("fashion_mnist", "Fashion-MNIST")]


def series_label(algorithm: str, params: dict) -> str:
    """Human label of one run's variant (see module docstring)."""
    if algorithm == "frpg":
        return "FRPG" if params.get("L0_mode", "dataset") == "dataset" else "FRPG (L0=δ, literal)"
    if algorithm == "lfrpg":
        return "LFRPG" + ("" if params.get("lfrpg_momentum", "literal") == "literal" else " (chain)")
    a = float(params.get("a", 3.0))
    if algorithm == "rsa":
        return f"RSA (a={a:g}, λ={float(params.get('lam', 1.6)):g})"
    if algorithm == "sgd_mean":
        return "SGD (mean" + ("" if a == 3.0 else f", a={a:g}") + ")"
    name = {"krum": "Krum", "geomed": "GeoMed"}.get(algorithm, algorithm)
    return name + ("" if a == 3.0 else f" (a={a:g})")


def dataset_key(value) -> str:
    """``usps-h5`` -> ``usps`` (raw-variant suffix dropped)."""
    return str(value).split("-")[0]


def with_series(df: pd.DataFrame) -> pd.DataFrame:
    """Add ``series`` and ``ds`` columns (from ``params`` JSON and ``dataset``/``problem``)."""
    df = df.copy()
    params = df["params"].map(lambda s: json.loads(s) if isinstance(s, str) else {})
    df["series"] = [series_label(a, p) for a, p in zip(df["algorithm"], params)]
    if "dataset" in df.columns:
        ds = df["dataset"]
    else:
        ds = df["problem"].map(lambda s: json.loads(s).get("dataset"))
    df["ds"] = ds.map(dataset_key)
    return df


def curve(df: pd.DataFrame, series: str, ds: str, metric: str) -> pd.DataFrame:
    """Columns round, mean, lo, hi of ``metric`` over seeds for one series on one dataset."""
    sub = df[(df["series"] == series) & (df["ds"] == ds)]
    if sub.empty or metric not in sub.columns:
        return pd.DataFrame(columns=["round", "mean", "lo", "hi"])
    g = sub.groupby("round")[metric]
    return pd.DataFrame({"mean": g.mean(), "lo": g.min(), "hi": g.max()}).reset_index()
