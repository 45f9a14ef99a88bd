"""The build plan of the expanded cells: which runs repeat an earlier experiment's (:func:`same_runs`,
:func:`run_key`), how cells are grouped into jobs (:func:`batches`), the order of a timing pass
(:func:`timing_repeats`, :func:`timing_order`) and the user's data files the jobs read
(:func:`user_data_files`, :func:`check_user_data`) and the datasets of each experiment
(:func:`experiment_datasets`).

The functions take the cells as the workflow holds them (cell dicts or :class:`RunSpec` objects) and read each through
its spec (:func:`fedrepro.experiments.spec.as_spec`); what they return holds the cells as given."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from fedrepro.core.params import ConfigError
from fedrepro.experiments.expansion import reference_cell, resolve_scale
from fedrepro.experiments.spec import RunSpec, as_spec

#: what names a cell in its experiment, not what its run computes
LABEL_KEYS = ("experiment", "cell", "columns", "shared")


#: keys of a cell that are its experiment's, not its run's: ``datasets`` lists every dataset the
#: experiment reads (the job's data dependencies); the run reads the one its ``problem`` names
EXPERIMENT_KEYS = ("datasets",)


def user_data_files(cells: list[dict]) -> list[str]:
    """The user's own data files the cells read (``problem.data``: a client npz): inputs of their jobs,
    so that regenerating a file re-runs what depends on it."""
    problems = [as_spec(c).problem for c in cells]
    return sorted({str(p["data"]) for p in problems if isinstance(p, dict) and isinstance(p.get("data"), (str, Path))})


def experiment_datasets(cells_by_experiment: dict) -> dict[tuple, list[str]]:
    """``{(paper, exp): [the dataset keys its cells read]}`` (each cell's ``datasets``: the job's data
    dependencies), what :func:`fedrepro.data.plan.skipped_experiments` checks."""
    return {key: sorted({d for c in cells for d in (as_spec(c).label.datasets or [])})
            for key, cells in cells_by_experiment.items()}


def check_user_data(cells_by_experiment: dict, root: str | Path = ".") -> None:
    """Every ``problem.data`` file exists (relative paths: from ``root``, the workflow's working
    directory); else a ConfigError naming the experiment, the key and the path, before any job."""
    for (paper, exp), cells in cells_by_experiment.items():
        for path in user_data_files(cells):
            if not (Path(root) / path).is_file():
                raise ConfigError(f"experiment {paper}/{exp}: problem.data {path!r} is not a file (looked for "
                                  f"{(Path(root) / path).resolve()}); give the path of your client npz, relative "
                                  "to the directory snakemake runs in, or an absolute path")


def run_key(cell: dict | RunSpec) -> str:
    """The cell's content without :data:`LABEL_KEYS` and :data:`EXPERIMENT_KEYS`: two cells with the
    same key run the same computation (same data, algorithm, parameters, seed, stop rule, scale) and
    give the same rows but for the labels."""
    return as_spec(cell).content_hash(without=LABEL_KEYS + EXPERIMENT_KEYS)


def same_runs(cells_by_experiment: dict, skipped: dict | tuple = ()) -> dict[str, dict]:
    """``{cell id: earlier cell}`` for the cells that repeat, in a later experiment, a run of an
    earlier experiment of the same paper (e.g. the centre point of a sensitivity sweep that another
    figure also shows): such a cell is not run again; its rows are the earlier run's, relabelled
    (:func:`fedrepro.experiments.results.relabel_run`). "Earlier" is the order of
    ``cells_by_experiment`` (papers, then experiments as configured), so a copy always points back and
    the jobs' dependencies have no cycle. A cell with a ``target`` stop rule repeats a run only if its
    reference run (looked up in its own experiment) repeats the other's reference run too. The
    experiments in ``skipped`` (keys of :func:`fedrepro.data.plan.skipped_experiments`: data missing)
    run nothing, so they are no one's source: two experiments may share a run but not their datasets."""
    first: dict[tuple, dict] = {}
    out = {}
    for (paper, exp), cells in cells_by_experiment.items():
        if (paper, exp) in skipped:
            continue
        plan = _Cells(cells)
        specs = plan.specs
        keys: dict[str, str] = {}

        def key(i):
            name = specs[i].name
            if name not in keys:
                ref = plan.reference(i)
                keys[name] = run_key(specs[i]) + ("" if ref is None else " stops at " + key(ref))
            return keys[name]

        for i, cell in enumerate(cells):
            first_spec, source = first.setdefault((paper, key(i)), (specs[i], cell))
            if first_spec.experiment != specs[i].experiment:
                out[specs[i].name] = source
    return out


class _Cells:
    """An experiment's cells read through their specs: ``specs[i]`` and ``reference(i)``, the index of the
    reference run of cell ``i`` (:func:`fedrepro.experiments.expansion.reference_cell`; None without one)."""

    def __init__(self, cells: list):
        self.specs = [as_spec(c) for c in cells]
        self._dicts = [s.to_dict() if isinstance(c, RunSpec) else c for c, s in zip(cells, self.specs)]
        self._at = {id(d): j for j, d in enumerate(self._dicts)}

    def reference(self, i: int) -> int | None:
        ref = reference_cell(self._dicts[i], self._dicts)
        return None if ref is None else self._at[id(ref)]


def batches(cells: list[dict], cells_per_job: int = 1) -> dict:
    """Group an experiment's cells into jobs: ``{batch_id: [cells]}``.

    With ``cells_per_job=1`` every cell is its own job (batch id = cell id). Larger values
    put up to that many cells into one job, which saves the per-process start-up, the data
    loading and the scheduler's work per job (~2 s, ``benchmarks/build_profile.py``) on small
    quick-scale cells. Cells are grouped by their depth in the chain of ``target`` references
    (0: no reference; 1: stops at a depth-0 run's objective; ...): a batch never holds both a
    run and a run whose stop rule refers to it, so references always lie in other batches.

    Membership is a function of the cells' content, not of their position in the config: a
    cell goes to bucket ``int(cell_id) mod n_buckets`` (``n_buckets``: the power of two at or
    below len(group) / cells_per_job), and a bucket is cut, in cell-id order, into jobs of at most
    ``cells_per_job``. Inserting a value in a sweep list therefore changes only the bucket(s) of
    the new cells (a job or two re-run), not every job after it.
    """
    if cells_per_job < 1:
        raise ConfigError(f"cells_per_job={cells_per_job} must be >= 1")
    plan = _Cells(cells)
    names = [s.name for s in plan.specs]
    if cells_per_job == 1:
        return {name: [c] for name, c in zip(names, cells)}
    depth: dict[int, int] = {}

    def depth_of(i):
        if i not in depth:
            ref = plan.reference(i)
            depth[i] = 0 if ref is None else 1 + depth_of(ref)
        return depth[i]

    by_depth: dict[int, list] = {}
    for i in range(len(cells)):
        by_depth.setdefault(depth_of(i), []).append(i)
    out = {}
    for _, group in sorted(by_depth.items()):
        n_buckets = 1 << max(0, (len(group) // cells_per_job).bit_length() - 1)
        buckets: dict[int, list] = {}
        for i in group:
            buckets.setdefault(int(names[i], 16) % n_buckets, []).append(i)
        for bucket in buckets.values():
            bucket.sort(key=lambda i: names[i])
            for k in range(0, len(bucket), cells_per_job):
                chunk = bucket[k:k + cells_per_job]
                key = names[chunk[0]] if len(chunk) == 1 else "b" + hashlib.sha256(
                    "".join(names[i] for i in chunk).encode()).hexdigest()[:11]
                out[key] = [cells[i] for i in chunk]
    return out


def timing_repeats(block: dict, scale: str) -> int | None:
    """The repetitions of the experiment's timing pass at ``scale`` (``timing_repeats`` of the block
    after its scale is applied; None: no timing pass)."""
    r = resolve_scale(block, scale).get("timing_repeats")
    if r is None:
        return None
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        raise ConfigError(f"timing_repeats={r!r} must be an integer >= 1 (repetitions of each timed run)")
    return r


def timing_order(cells: list[dict], repeat: int) -> list[dict]:
    """The cells of one repetition of a timing pass, in run order: the cells of one setting and seed
    (same shared grid point and instance) run back to back, their algorithms rotated by ``repeat`` plus
    the instance, so that the methods compared are interleaved and none always runs first: across the
    repetitions of an instance, and across the instances when each is timed once (the CPU-time claims
    replicate over instances, issue #43)."""
    groups: dict[str, list] = {}
    for c in cells:
        spec = as_spec(c)
        key = json.dumps([spec.label.shared or {}, spec.instance], sort_keys=True, default=str)
        groups.setdefault(key, []).append((spec.name, spec.instance, c))
    out = []
    for key in sorted(groups):
        named = sorted(groups[key], key=lambda n: n[0])
        g = [c for _, _, c in named]
        k = (repeat + int(named[0][1] or 0)) % len(g)
        out += g[k:] + g[:k]
    return out
