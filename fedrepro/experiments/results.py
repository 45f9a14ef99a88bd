"""Tidy results: one row per (run, evaluated round), written atomically as Parquet
with provenance in the file metadata.

Columns (see README "Results schema"):

identifiers   paper, experiment, cell, algorithm, instance, seed
settings      k0, rho, m, dim, n_samples, params (algorithm parameters, JSON),
              problem (problem spec, JSON), swept (JSON list of the swept columns),
              + one column per swept key
run outcome   status, stop_reason, rounds, iterations, run_wall_time, run_cpu_time, run_local_time,
              run_local_cpu_time
per round     round, iteration, wall_time, cpu_time, local_time, local_cpu_time,
              objective, grad_norm2,
              + every extra metric the problem/algorithm records (accuracy, err, snr, loss_F ...)
"""
from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from fedrepro import __version__
from fedrepro.experiments.spec import as_spec

IDENTIFIERS = ["paper", "experiment", "cell", "algorithm", "instance", "seed"]
RUN_COLUMNS = ["status", "stop_reason", "rounds", "iterations", "run_wall_time", "run_cpu_time", "run_local_time",
               "run_local_cpu_time"]
ROUND_COLUMNS = ["round", "iteration", "wall_time", "cpu_time", "local_time", "local_cpu_time", "objective", "grad_norm2"]
METADATA_KEY = b"fedrepro"


def git_commit(root: str | Path = ".") -> str:
    """The current commit (with ``-dirty`` if the tree has changes), or ``unknown``."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return (sha + ("-dirty" if dirty else "")) if sha else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


#: the libraries whose versions provenance records (the dependencies of pyproject.toml and the workflow's)
PROVENANCE_LIBRARIES = ("numpy", "scipy", "numba", "llvmlite", "pandas", "pyarrow", "matplotlib", "pooch", "h5py",
                        "pyyaml", "jsonschema", "threadpoolctl", "snakemake")


def library_versions() -> dict:
    """Installed version of every library in :data:`PROVENANCE_LIBRARIES` ("not installed" if absent)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in PROVENANCE_LIBRARIES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def provenance(config_hash: str = "", **extra) -> dict:
    """Package version, git commit, config hash, Python and library versions, the BLAS this
    process runs (library, version, kernel, threads; :mod:`fedrepro.core.blas`) with the two
    variables that choose its kernel, the CPU model, creation time."""
    import platform

    from fedrepro.core.blas import blas_record, describe_kernel_env, describe_libraries

    blas = blas_record()
    return {"package_version": __version__, "git_commit": os.environ.get("FEDREPRO_GIT_COMMIT") or git_commit(),
            "config_hash": config_hash, "python": platform.python_version(), **library_versions(),
            "blas": describe_libraries(blas["blas"]), "blas_kernel_env": describe_kernel_env(blas["kernel_env"]),
            "cpu": f"{blas['cpu']}, {blas['cpus']} CPUs",
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"), **extra}


def run_frame(spec, result, facts: dict, params: dict) -> pd.DataFrame:
    """Tidy DataFrame of one run (``spec``: its :class:`~fedrepro.experiments.spec.RunSpec` or cell dict;
    ``result`` is a :class:`~fedrepro.sim.result.RunResult`)."""
    from fedrepro.core.threads import kernel_threads    # numba: loaded by the run already, not by every reader

    spec = as_spec(spec)
    run, label, channel = spec.run, spec.label, spec.channel
    df = pd.DataFrame(result.trace)
    const = {
        "paper": label.paper, "experiment": label.experiment,
        "cell": spec.name, "algorithm": spec.algorithm.name,
        "instance": int(spec.instance), "seed": int(spec.seed),
        "k0": int(run.k0), "rho": float(run.rho),
        "m": int(facts.get("m", 0)), "dim": int(facts.get("dim", 0)), "n_samples": int(facts.get("n_samples", 0)),
        "params": json.dumps(params, sort_keys=True, default=str),
        "problem": json.dumps(spec.problem if spec.problem is not None else {}, sort_keys=True, default=str),
        "swept": json.dumps(sorted(spec.columns)),
        "status": result.status, "stop_reason": result.stop_reason, "rounds": int(result.rounds),
        "iterations": int(result.iterations), "run_wall_time": float(result.wall_time),
        "run_cpu_time": float(result.cpu_time),
        "run_local_time": float(result.local_time),
        "run_local_cpu_time": float(result.local_cpu_time),
        "kernel_threads": int(kernel_threads()),
    }
    if run.delays is not None:                  # runs on the virtual clock: the delay model and budget
        const["delays"] = json.dumps(run.delays, sort_keys=True, default=str)
        const["time_budget"] = run.time_budget
    if channel.aggregator:                      # the server's aggregator (fedrepro.sim.aggregation), when set
        const["aggregator_spec"] = json.dumps(channel.aggregator, sort_keys=True, default=str)
    if channel.attack:                          # the adversary (fedrepro.sim.attacks), when set
        const["attack_spec"] = json.dumps(channel.attack, sort_keys=True, default=str)
    for key, value in spec.columns.items():
        const[key] = value
    for key, value in const.items():
        df[key] = value
    front = IDENTIFIERS + [c for c in const if c not in IDENTIFIERS]
    return df[front + [c for c in df.columns if c not in front]]


def _same_label(stored, value) -> bool:
    """A label column's stored value is the cell's (None comes back from Parquet as None or NaN)."""
    if value is None or stored is None or (isinstance(stored, float) and stored != stored):
        return (value is None or value != value) and (stored is None or stored != stored)
    return bool(np.all(stored == value))


#: the columns run_frame sets from the cell and the run (besides the swept keys), in its order
RUN_CONSTANTS = (*IDENTIFIERS, "k0", "rho", "m", "dim", "n_samples", "params", "problem", "swept", *RUN_COLUMNS,
                 "kernel_threads", "delays", "time_budget")


def relabel_run(frame: pd.DataFrame, source, cell) -> pd.DataFrame:
    """The rows of ``cell`` from the rows of ``source``, a cell of another experiment with the same run
    (:func:`fedrepro.experiments.build_plan.same_runs`): what :func:`run_frame` gives for ``cell`` on the same
    run. The experiment, cell id and swept columns are ``cell``'s; the run's settings, outcome, rounds,
    metrics and timings (one measurement of the one run) are the source's. ``source``, ``cell``: their
    :class:`~fedrepro.experiments.spec.RunSpec` or cell dicts."""
    source, cell = as_spec(source), as_spec(cell)
    rows = frame[frame["cell"] == source.name]
    if rows.empty:
        raise ValueError(f"run {source.name} ({source.paper}/{source.experiment}) is not in its file; "
                         "rerun with --rerun-incomplete")
    old_labels = [k for k in source.columns if k not in RUN_CONSTANTS]
    for key in old_labels:
        if not all(_same_label(v, source.columns[key]) for v in rows[key]):
            raise ValueError(f"column {key!r} of run {source.name} is not its swept value "
                             f"{source.columns[key]!r}: a recorded metric of that name; cannot relabel")
    df = rows.drop(columns=old_labels).reset_index(drop=True)
    labels = {"experiment": cell.experiment, "cell": cell.name,
              "swept": json.dumps(sorted(cell.columns)), **cell.columns}
    for key, value in labels.items():
        df[key] = value
    const = [c for c in RUN_CONSTANTS if c in df.columns]
    front = const + [k for k in labels if k not in const]
    return df[front + [c for c in df.columns if c not in front]]


def write_parquet(df: pd.DataFrame, path: str | Path, metadata: dict) -> Path:
    """Write ``df`` to ``path`` atomically (temporary name, then rename) with ``metadata``
    stored as JSON under the schema key ``fedrepro``. Never leaves a partial file at ``path``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(df, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[METADATA_KEY] = json.dumps(metadata, default=str).encode()
    table = table.replace_schema_metadata(meta)
    tmp = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def read_metadata(path: str | Path) -> dict:
    """The ``fedrepro`` provenance stored in a results file."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    return json.loads(meta.get(METADATA_KEY, b"{}"))


def computed_cells(folder: str | Path, exclude: str | Path | None = None) -> dict:
    """``{cell id: path}`` of the runs already written by earlier jobs in ``folder`` (an experiment's
    ``results/cells/<paper>/<experiment>/``), from each file's provenance. A cell id is a hash of the
    run's whole content (:func:`fedrepro.experiments.expansion.cell_id`), so a job whose batch was re-cut
    (more seeds: the verify build's second look) copies those runs instead of computing them again."""
    out = {}
    folder = Path(folder)
    if not folder.is_dir():
        return out
    skip = Path(exclude).resolve() if exclude else None
    for path in sorted(folder.glob("*.parquet")):
        if skip is not None and path.resolve() == skip:
            continue
        try:
            cells = read_metadata(path).get("cells") or []
        except Exception:  # noqa: BLE001 - an unreadable file is not a source of runs
            continue
        for c in cells:
            out.setdefault(str(c), path)
    return out


def timing_cache(paper: str, experiment: str) -> str:
    """Where an experiment's timing pass keeps every repetition it measured, outside the rule's output (which
    Snakemake removes before the job): a later pass of the same commit reuses them (:func:`timed_repetitions`).
    In a subfolder, so that :func:`computed_cells` never takes it for runs."""
    return f"results/cells/{paper}/{experiment}/timing/repetitions.parquet"


def timed_repetitions(cache: str | Path, cells: list[dict], repeats: int, record: dict) -> dict:
    """``{(cell id, repetition): row}`` of the repetitions an earlier timing pass measured that this one
    needs: a cell still in the experiment and a repetition below ``repeats``. Only from a pass of the same
    clean commit on the same CPU (``record``: this pass's :func:`provenance`); otherwise nothing, and every
    repetition is timed again. A verify build's second look, which adds seeds, then times only the new
    cells (their cost is what its plan counted), not the whole experiment again."""
    cache = Path(cache)
    if not cache.exists():
        return {}
    try:
        meta = read_metadata(cache)
        old = pd.read_parquet(cache)
    except Exception:  # noqa: BLE001 - an unreadable cache is no source of timings
        return {}
    commit = str(record.get("git_commit", "unknown"))
    if (commit == "unknown" or commit.endswith("-dirty") or meta.get("git_commit") != commit
            or meta.get("cpu") != record.get("cpu")):
        return {}
    wanted = {as_spec(c).name for c in cells}
    return {(row["cell"], int(row["repeat"])): row for row in old.to_dict("records")
            if row["cell"] in wanted and int(row["repeat"]) < repeats}


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """One row per run: its last evaluated round, plus ``reached`` (stopped by its rule)."""
    if df.empty:
        return df.copy()
    last = df.sort_values(["cell", "round"]).groupby("cell", sort=False).tail(1).reset_index(drop=True)
    last["reached"] = last["status"] == "converged"
    return last


def concat_frames(paths) -> pd.DataFrame:
    """Concatenate run files (columns missing in some runs become NaN)."""
    frames = [pd.read_parquet(p) for p in paths]
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True, sort=False) if frames else pd.DataFrame()


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` via a temporary file and rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.partial-{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path
