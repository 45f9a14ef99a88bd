"""Per-client label counts of the partitions a build's runs use: ``results/<paper>/partitions.parquet``.

A partition (which training samples each client holds) depends on the problem block (dataset, partition
rule and its parameters, number of clients), the cell's seed and, for a data-side attack that adds a
worker (``backdoor``), the attack's problem options; not on the algorithm. :func:`partition_table`
builds the problem of one cell per distinct partition with :func:`fedrepro.experiments.runner.cell_problem`
(the code path every run takes) and reads its :meth:`~fedrepro.problems.base.FederatedProblem.label_counts`.

Long format, one row per (experiment, partition, client, label), zero counts included:

==========  ===========================================================================================
paper       the paper key (``custom`` for your own experiments)
experiment  the experiment id
partition   a short id of the partition (hash of problem block, seed and attack's data options)
problem     the problem block as JSON, as in the results' ``problem`` column (join on problem + seed)
seed        the cell seed the partition was drawn with
<swept>     each swept column whose value is the same in every cell of this partition (e.g. ``alpha``)
client      client (worker) index 0..m-1
label       class label (nullable integer; missing for problems without class labels, e.g. least
            squares, where ``count`` is the client's sample count)
count       number of the client's training samples with that label
==========  ===========================================================================================
"""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd

COLUMNS = ["paper", "experiment", "partition", "problem", "seed", "client", "label", "count"]


def partition_key(cell) -> str:
    """What decides a run's partition, as canonical JSON: problem block, seed, the attack's data options
    (``cell``: its :class:`~fedrepro.experiments.spec.RunSpec` or cell dict)."""
    from fedrepro.experiments.runner import problem_options
    from fedrepro.experiments.spec import as_spec
    from fedrepro.sim.attacks import build_attack

    spec = as_spec(cell)
    options = problem_options(build_attack(spec.channel.attack))
    return json.dumps({"problem": spec.problem if spec.problem is not None else {}, "seed": int(spec.seed),
                       "options": options},
                      sort_keys=True, default=str)


def partition_id(key: str) -> str:
    return hashlib.sha1(key.encode()).hexdigest()[:12]


def counts_frame(problem) -> pd.DataFrame:
    """``client, label, count`` of a built problem (:meth:`FederatedProblem.label_counts`), zeros included."""
    labels, counts = problem.label_counts()
    counts = np.asarray(counts, dtype=np.int64)
    m, k = counts.shape
    if labels is None:
        label = pd.array([pd.NA] * m, dtype="Int64")
    else:
        label = pd.array(np.tile(np.asarray(labels, dtype=np.int64), m), dtype="Int64")
    return pd.DataFrame({"client": np.repeat(np.arange(m, dtype=np.int64), k), "label": label,
                         "count": counts.ravel()})


def _shared_columns(cells: list[dict]) -> dict:
    """The swept columns with one value in every cell of ``cells`` (the partition's settings)."""
    from fedrepro.experiments.spec import as_spec

    columns = [as_spec(c).columns for c in cells]
    first = columns[0]
    out = {}
    for key, value in first.items():
        if key in COLUMNS:
            continue
        if all(key in cols and json.dumps(cols[key], sort_keys=True, default=str)
               == json.dumps(value, sort_keys=True, default=str) for cols in columns):
            out[key] = value
    return out


def partition_table(cells_by_experiment: dict, data_dir: str = "data/processed", log=None) -> pd.DataFrame:
    """The label counts of every distinct partition of the given experiments (``{(paper, experiment):
    cells}``), one problem built per distinct partition (shared across the experiments). ``log``: a
    callable taking a line (progress)."""
    from fedrepro.experiments.runner import cell_problem

    cache: dict[str, pd.DataFrame] = {}
    frames = []
    for (paper, experiment), cells in cells_by_experiment.items():
        groups: dict[str, list[dict]] = {}
        for cell in cells:
            groups.setdefault(partition_key(cell), []).append(cell)
        for key, group in groups.items():
            if key not in cache:
                problem = cell_problem(group[0], data_dir)
                cache[key] = counts_frame(problem)
                del problem
                if log is not None:
                    log(f"{paper}/{experiment}: partition {partition_id(key)} (seed {group[0]['seed']}): "
                        f"{cache[key]['client'].nunique()} clients, {int(cache[key]['count'].sum())} samples")
            frame = cache[key].copy()
            head = {"paper": paper, "experiment": experiment, "partition": partition_id(key),
                    "problem": json.dumps(group[0].get("problem", {}), sort_keys=True, default=str),
                    "seed": int(group[0]["seed"])}
            for i, (name, value) in enumerate(head.items()):
                frame.insert(i, name, value)
            for name, value in _shared_columns(group).items():
                frame.insert(frame.columns.get_loc("client"), name, [value] * len(frame))
            frames.append(frame)
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype="Int64" if c == "label" else object) for c in COLUMNS})
    out = pd.concat(frames, ignore_index=True, sort=False)
    for name in out.columns:
        # a setting with integer values that some experiments lack stays integer (nullable), not float
        if name not in COLUMNS and out[name].dtype.kind == "f":
            values = out[name].dropna()
            if len(values) and np.all(values == np.round(values)) and all(
                    isinstance(f[name].iloc[0], (int, np.integer)) for f in frames if name in f.columns):
                out[name] = out[name].astype("Int64")
    front = [c for c in COLUMNS if c not in ("client", "label", "count")]
    return out[front + [c for c in out.columns if c not in COLUMNS] + ["client", "label", "count"]]


def count_matrix(table: pd.DataFrame) -> pd.DataFrame:
    """One partition's rows of :func:`partition_table` as a client x label matrix of counts (a problem
    without class labels: one column ``samples``)."""
    if table["label"].isna().all():
        return table.groupby("client")["count"].sum().to_frame("samples")
    return table.pivot_table(index="client", columns="label", values="count", aggfunc="sum", fill_value=0)
