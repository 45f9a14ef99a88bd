"""Data split by worker, with per-worker train/test splits (ASPIRE, spec 002 §4).

:func:`build_worker_data` turns a processed :class:`~fedrepro.data.dataset.Dataset`
(``<processed_dir>/<source>/``, written by the workflow's preprocess rule) into a
:class:`WorkerData`: float32 features, labels ``0..C-1`` and a worker id per sample,
for a train and a test split.  :func:`with_backdoor` adds one malicious worker (§4.5).

Worker datasets (``name`` -> processed source), each registered with the dataset it is built
from (the ``worker_split`` of its :class:`~fedrepro.data.spec.DatasetSpec`: the builder
below, stream key, default options, models):

* ``fmnist3`` (``fashion_mnist``): classes T-shirt (0), Pullover (2), Shirt (6) -> workers
  0, 1, 2 and labels 0, 1, 2; official train/test split; pixels in [0, 1] (the loader
  already divides by 255), d = 784, no standardisation.
* ``scma`` (``chest_accelerometer``): participant -> worker (15); windows of 52 samples,
  hop 26, inside one label segment; 8 statistics of x, y, z, |a| + 3 Pearson
  correlations = 35 features.  ``features="raw"``: per-sample (x, y, z), at most
  ``raw_max_per_worker`` samples per worker.
* ``person_activity`` (``localization_person_activity``): person A..E -> worker (5);
  "snapshot" rows of 16 features (forward-filled x, y, z of the 4 tags + one-hot of the
  tag producing the row).  ``features="raw"``: (x, y, z, tag one-hot) = 7.
* ``shl`` (``shl``): frames x locations -> 6 workers by
  :func:`fedrepro.data.partition.location_mix`; the loader's 55 features.

Order of operations for the three sensor datasets (spec §4 general preprocessing):
per worker a stratified 80/20 train/test split (``stream(split_seed, "split", ...)``),
then the optional caps ``train_per_worker`` / ``test_per_worker`` (uniform without
replacement per worker, ``stream(split_seed, "subset", ...)``), then standardisation
with the mean/std of the pooled (capped) training data (std floor 1e-8).  ``fmnist3``
uses the official split and the same caps, and is never standardised.

Results are cached as Parquet under ``cache_dir`` (default ``<processed_dir>/features``),
one row per sample (``worker``, ``split``, ``label``, ``f000``...), keyed by the dataset
name and a hash of all options; a cache hit returns bit-identical arrays.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import uuid
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from fedrepro.core.rng import stream
from fedrepro.data.dataset import MANIFEST, Dataset, processed_path
from fedrepro.data.loaders import FASHION_CLASSES, window_stats
from fedrepro.data.partition import location_mix, one_class
from fedrepro.data.spec import WORKER_SOURCES, WORKER_SPLITS

CACHE_VERSION = 1
STD_FLOOR = 1e-8
SCMA_CHANNELS = ("x", "y", "z", "mag")
SCMA_STATS = ("mean", "std", "min", "max", "median", "p10", "p90", "mean_abs_diff")
PERSON_TAGS = ("ANKLE_LEFT", "ANKLE_RIGHT", "CHEST", "BELT")


def _worker_split(name: str):
    """The registered :class:`~fedrepro.data.spec.WorkerSplit` called ``name``."""
    if name not in WORKER_SPLITS:
        raise ValueError(f"unknown worker dataset {name!r}; allowed: {', '.join(WORKER_SPLITS)}")
    return WORKER_SPLITS[name]


def _source(name: str) -> str:
    """The processed dataset worker dataset ``name`` is built from."""
    return WORKER_SOURCES[name]


# =========================================================================== container

@dataclass
class WorkerData:
    """Per-worker train/test data.

    ``X_*`` (n, d) float32 C-contiguous; ``y_*`` (n,) int64 in ``0..n_classes-1``;
    ``worker_*`` (n,) int64 in ``0..n_workers-1``.  ``backdoor_X`` (n_bd, d) /
    ``backdoor_y`` (n_bd,) hold the backdoor test set and ``malicious`` the index of the
    malicious worker (it has no test samples) when :func:`with_backdoor` was applied.
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    worker_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    worker_test: np.ndarray
    n_workers: int
    n_classes: int
    meta: dict = field(default_factory=dict)
    backdoor_X: np.ndarray | None = None
    backdoor_y: np.ndarray | None = None
    malicious: int | None = None

    @property
    def n_features(self) -> int:
        return self.X_train.shape[1]

    def train_parts(self) -> list[np.ndarray]:
        """``n_workers`` sorted int64 index arrays into the train arrays."""
        return _parts(self.worker_train, self.n_workers)

    def test_parts(self) -> list[np.ndarray]:
        """``n_workers`` sorted int64 index arrays into the test arrays (empty for the malicious worker)."""
        return _parts(self.worker_test, self.n_workers)


def _parts(worker: np.ndarray, n: int) -> list[np.ndarray]:
    order = np.argsort(worker, kind="stable")
    return np.split(order.astype(np.int64), np.cumsum(np.bincount(worker, minlength=n))[:-1])


# =========================================================================== entry point

def build_worker_data(name: str, processed_dir, *, split_seed: int = 0, train_per_worker: int | None = None,
                      test_per_worker: int | None = None, cache_dir=None, **options) -> WorkerData:
    """Worker-split dataset ``name`` from ``<processed_dir>/<source>/`` (cached as Parquet).

    ``options`` override the dataset's defaults (its registered ``WorkerSplit.defaults``);
    ``train_per_worker`` / ``test_per_worker`` cap each worker's split (None: no cap).  Sensor
    datasets: split 80/20 per (worker, class) first, then cap, then standardise with the pooled
    capped training data.  ``cache_dir=False`` disables the cache; a cache file whose options or
    source file (size, mtime) differ, or that cannot be read, is rebuilt and replaced.
    """
    opts = _options(name, split_seed, train_per_worker, test_per_worker, options)
    source = _source(name)
    try:
        src_path = processed_path(processed_dir, source)
    except ValueError as err:
        raise ValueError(f"{name}: {err}, and pass its folder as processed_dir") from None
    cache = None
    if cache_dir is not False:
        cache = Path(cache_dir) if cache_dir is not None else Path(processed_dir) / "features"
        cache = cache / f"{name}-{_options_hash(opts)}.parquet"
        hit = _read_cache(cache, opts, _fingerprint(src_path / MANIFEST))
        if hit is not None:
            return hit
    wd = _worker_split(name).build(Dataset.load_shared(src_path), opts)
    wd.meta.update(dataset=name, source=source, source_file=str(src_path), options=_jsonable(opts),
                   sizes={"train": np.bincount(wd.worker_train, minlength=wd.n_workers).tolist(),
                          "test": np.bincount(wd.worker_test, minlength=wd.n_workers).tolist()},
                   n_features=wd.n_features, n_classes=wd.n_classes, n_workers=wd.n_workers)
    wd.meta = _jsonable(wd.meta)         # the same plain-JSON meta a cache hit returns
    if cache is not None:
        try:
            _write_cache(cache, wd, opts, _fingerprint(src_path / MANIFEST))
        except OSError as err:           # e.g. a read-only processed folder: the data are still valid
            warnings.warn(f"{name}: could not write the feature cache {cache} ({err}); pass a writable "
                          "cache_dir to reuse the result", stacklevel=2)
    return wd


def _options(name, split_seed, train_per_worker, test_per_worker, options) -> dict:
    """Validated, complete option dict (defaults filled in) that determines the result."""
    defaults = _worker_split(name).defaults
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise ValueError(f"{name}: unknown option(s) {unknown}; allowed: {sorted(defaults)}")
    for key, val in (("split_seed", split_seed), ("train_per_worker", train_per_worker),
                     ("test_per_worker", test_per_worker)):
        ok = val is None and key != "split_seed" or isinstance(val, (int, np.integer)) and not isinstance(val, bool)
        if not ok or (val is not None and val < (0 if key == "split_seed" else 1)):
            raise ValueError(f"{name}: invalid {key}={val!r}; use "
                             + ("a non-negative integer" if key == "split_seed" else "None or an integer >= 1"))
    opts = {**defaults, **options, "split_seed": int(split_seed), "train_per_worker": train_per_worker,
            "test_per_worker": test_per_worker}
    if "features" in opts:
        allowed = ("window", "raw") if name == "scma" else ("snapshot", "raw")
        if opts["features"] not in allowed:
            raise ValueError(f"{name}: invalid features={opts['features']!r}; allowed: {allowed}")
    if "test_frac" in opts and not 0.0 < float(opts["test_frac"]) < 1.0:
        raise ValueError(f"{name}: invalid test_frac={opts['test_frac']!r}; use a number in (0, 1)")
    if name == "scma" and not (int(opts["window"]) >= 2 and int(opts["hop"]) >= 1):
        raise ValueError(f"scma: invalid window={opts['window']!r} / hop={opts['hop']!r}; use window >= 2, hop >= 1")
    return _jsonable(opts)


def _jsonable(obj):
    """Tuples -> lists, numpy scalars -> Python (so options hash and round-trip through JSON)."""
    return json.loads(json.dumps(obj, default=lambda o: o.item() if hasattr(o, "item") else list(o)))


def _options_hash(opts: dict) -> str:
    text = json.dumps({"version": CACHE_VERSION, **opts}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _fingerprint(path: Path) -> list:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


# =========================================================================== shared steps

def _sorted_labels(y: np.ndarray, classes: list | None) -> tuple[np.ndarray, list]:
    """Map labels to 0..C-1 by sorted original label; returns (y (n,) int64, original labels)."""
    originals = np.asarray(classes, dtype=object)[y] if classes is not None else y
    values, inv = np.unique(np.asarray(originals.tolist()), return_inverse=True)
    return inv.ravel().astype(np.int64), values.tolist()


def _rank_within(group: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(n,) random rank of each sample inside its group (a uniform permutation per group)."""
    order = np.lexsort((rng.random(group.size), group))
    starts = np.r_[0, np.flatnonzero(np.diff(group[order])) + 1]
    run = np.repeat(starts, np.diff(np.r_[starts, group.size]))
    rank = np.empty(group.size, dtype=np.int64)
    rank[order] = np.arange(group.size) - run
    return rank


def stratified_test_mask(worker: np.ndarray, y: np.ndarray, test_frac: float, rng) -> np.ndarray:
    """(n,) bool, True for test: per (worker, class) ``round(test_frac * n_c)`` random samples,
    at most ``n_c - 1`` (a class with one sample stays in train)."""
    group = worker * (int(y.max()) + 1) + y
    n_c = np.bincount(group)[group]
    n_test = np.minimum(np.floor(test_frac * n_c + 0.5), n_c - 1)
    return _rank_within(group, rng) < n_test


def cap_per_worker(worker: np.ndarray, cap: int | None, rng) -> np.ndarray:
    """(n,) bool keep-mask: at most ``cap`` uniformly chosen samples per worker (all if None)."""
    if cap is None:
        return np.ones(worker.size, dtype=bool)
    return _rank_within(worker, rng) < cap


def standardize(X_train: np.ndarray, X_test: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
    """Standardise both with the mean/std (float64, floor 1e-8) of X_train (n, d)."""
    mean = X_train.mean(0)
    std = np.maximum(X_train.std(0), STD_FLOOR)
    return (X_train - mean) / std, (X_test - mean) / std, {"mean": mean.tolist(), "std": std.tolist()}


def _assemble(name, X, y, worker, is_test, n_workers, n_classes, meta) -> WorkerData:
    """Sort rows by (worker, original order) within each split; float32 / int64 C-contiguous arrays."""
    arrays = []
    for sel in (~is_test, is_test):
        idx = np.flatnonzero(sel)
        idx = idx[np.argsort(worker[idx], kind="stable")]
        arrays += [np.ascontiguousarray(X[idx], dtype=np.float32), y[idx].astype(np.int64),
                   worker[idx].astype(np.int64)]
    return WorkerData(name, *arrays, n_workers=n_workers, n_classes=n_classes, meta=meta)


def _sensor_worker_data(name: str, X: np.ndarray, y: np.ndarray, worker: np.ndarray, worker_names: list,
                        classes: list | None, feature_names: list, opts: dict) -> WorkerData:
    """Split, cap and standardise features X (n, d) of samples with labels y and workers 0..N-1."""
    seed, key = opts["split_seed"], _worker_split(name).stream_key
    y, originals = _sorted_labels(y, classes)
    is_test = stratified_test_mask(worker, y, float(opts["test_frac"]), stream(seed, "split", key))
    keep = np.empty(y.size, dtype=bool)
    for flag, cap, sub in ((False, opts["train_per_worker"], 0), (True, opts["test_per_worker"], 1)):
        sel = is_test == flag
        keep[sel] = cap_per_worker(worker[sel], cap, stream(seed, "subset", key, sub))
    X, y, worker, is_test = X[keep], y[keep], worker[keep], is_test[keep]
    X_tr, X_te, stats = standardize(X[~is_test].astype(np.float64), X[is_test].astype(np.float64))
    Z = np.empty((y.size, X.shape[1]))
    Z[~is_test], Z[is_test] = X_tr, X_te
    meta = {"classes": originals, "workers": worker_names, "feature_names": feature_names,
            "standardization": stats, "order": "split, cap per worker, then standardise on pooled train"}
    return _assemble(name, Z, y, worker, is_test, len(worker_names), len(originals), meta)


# =========================================================================== fmnist3

def fmnist3_worker_data(ds: Dataset, opts: dict) -> WorkerData:
    """Classes ``opts["classes"]`` -> one worker each, labels 0..2; official split; X (n, 784) in [0, 1]."""
    classes = [int(c) for c in opts["classes"]]
    if ds.split is None:
        raise ValueError("fmnist3: the processed fashion_mnist has no official train/test split")
    scale = 1.0 if ds.meta.get("scaling") == "pixel/255" or np.asarray(ds.X).max() <= 1.0 else 255.0
    seed, key = opts["split_seed"], _worker_split("fmnist3").stream_key
    rows, workers, tests = [], [], []
    for sub, part in enumerate(("train", "test")):
        idx = np.flatnonzero(ds.split == part)
        parts = one_class(ds.y[idx], seed=seed, classes=classes)
        w = np.concatenate([np.full(p.size, j, dtype=np.int64) for j, p in enumerate(parts)])
        sel = idx[np.concatenate(parts)]
        keep = cap_per_worker(w, opts[f"{part}_per_worker"], stream(seed, "subset", key, sub))
        rows.append(sel[keep])
        workers.append(w[keep])
        tests.append(np.full(int(keep.sum()), part == "test"))
    rows, worker = np.concatenate(rows), np.concatenate(workers)
    X = np.asarray(ds.X[rows])          # only these rows are read (and decoded, for uint8 pixels)
    X = X / scale if scale != 1.0 else X
    meta = {"classes": [FASHION_CLASSES[c] for c in classes], "original_labels": classes,
            "workers": [FASHION_CLASSES[c] for c in classes], "feature_names": [f"px{i}" for i in range(784)],
            "scaling": "pixel/255 (from the loader)" if scale == 1.0 else "pixel/255 (applied here)",
            "standardization": None, "image_shape": [28, 28]}
    return _assemble("fmnist3", X, worker.copy(), worker, np.concatenate(tests), len(classes), len(classes), meta)


# =========================================================================== scma

def scma_windows(segment: np.ndarray, participant: np.ndarray, window: int, hop: int) -> np.ndarray:
    """Start rows (k,) of windows on a hop grid per participant lying inside one segment.

    ``segment`` (n,) = run id of consecutive raw rows with one participant and one label
    (the loader's ``groups["segment"]``); rows are in file order.  A window ``s..s+w-1`` is
    kept when ``segment[s] == segment[s+w-1]`` (runs are contiguous, so the whole window is
    one run: constant label, one participant, no dropped rows inside).
    """
    n = segment.size
    if n < window:
        return np.empty(0, dtype=np.int64)
    first = np.r_[0, np.flatnonzero(participant[1:] != participant[:-1]) + 1]
    start_of_row = np.repeat(first, np.diff(np.r_[first, n]))
    s = np.arange(n - window + 1)
    on_grid = (s - start_of_row[s]) % hop == 0
    inside = segment[s] == segment[s + window - 1]
    return s[on_grid & inside]


def scma_window_features(X: np.ndarray, starts: np.ndarray, window: int) -> np.ndarray:
    """35 features per window of X (n, 3): 8 stats of x, y, z, |a| (channel-major), then
    Pearson correlations xy, xz, yz (0 where a std is 0).  Returns (k, 35)."""
    from numpy.lib.stride_tricks import sliding_window_view

    W = sliding_window_view(X, window, axis=0)[starts]          # (k, 3, w), a view
    chans = [W[:, 0], W[:, 1], W[:, 2], np.sqrt((W ** 2).sum(1))]
    stats = [window_stats(c) for c in chans]
    centred = [c - c.mean(1, keepdims=True) for c in chans[:3]]
    sd = [np.sqrt((c ** 2).mean(1)) for c in centred]
    corr = []
    for a, b in ((0, 1), (0, 2), (1, 2)):
        den = sd[a] * sd[b]
        cov = (centred[a] * centred[b]).mean(1)
        corr.append(np.where(den > 0, cov / np.where(den > 0, den, 1.0), 0.0))
    return np.hstack(stats + [np.column_stack(corr)])


SCMA_FEATURES = [f"{c}_{s}" for c in SCMA_CHANNELS for s in SCMA_STATS] + ["corr_xy", "corr_xz", "corr_yz"]


def scma_worker_data(ds: Dataset, opts: dict) -> WorkerData:
    """Participant -> worker; window features (k, 35) or raw per-sample (x, y, z)."""
    if "participant" not in ds.groups or "segment" not in ds.groups:
        raise ValueError("scma: the processed chest_accelerometer lacks groups 'participant'/'segment'; rebuild it "
                         "with the current loader (snakemake -f data/processed/chest_accelerometer/dataset.json)")
    participant = np.asarray(ds.groups["participant"])
    parts_ids, worker = np.unique(participant, return_inverse=True)
    X = np.asarray(ds.X, dtype=np.float64)
    if opts["features"] == "window":
        w, hop = int(opts["window"]), int(opts["hop"])
        starts = scma_windows(np.asarray(ds.groups["segment"]), participant, w, hop)
        feats, y, wk, names = scma_window_features(X, starts, w), ds.y[starts], worker[starts], SCMA_FEATURES
    else:
        keep = cap_per_worker(worker, int(opts["raw_max_per_worker"]),
                              stream(opts["split_seed"], "subset", _worker_split("scma").stream_key, 2))
        feats, y, wk, names = X[keep], ds.y[keep], worker[keep], ["x", "y", "z"]
    return _sensor_worker_data("scma", feats, y, wk.astype(np.int64), parts_ids.tolist(),
                               ds.meta.get("classes"), names, opts)


# =========================================================================== person activity

def snapshot_features(sequence: np.ndarray, tag: np.ndarray, timestamp: np.ndarray, xyz: np.ndarray,
                      tags=PERSON_TAGS) -> tuple[np.ndarray, np.ndarray]:
    """Snapshot rows: (rows (k,) into the inputs, features (k, 16)).

    Rows are sorted by (sequence, timestamp, file order); for each row the most recent
    (x, y, z) of each tag in ``tags`` within its sequence (forward fill), then the one-hot
    of the row's own tag.  Rows before all tags have been seen in the sequence are dropped.
    """
    n = sequence.size
    order = np.lexsort((np.arange(n), timestamp, sequence))
    seq, tg = sequence[order], tag[order]
    first = np.r_[0, np.flatnonzero(seq[1:] != seq[:-1]) + 1]
    seq_start = np.repeat(first, np.diff(np.r_[first, n]))
    pos = np.arange(n)
    last = np.stack([np.maximum.accumulate(np.where(tg == t, pos, -1)) for t in tags], axis=1)   # (n, T)
    ok = (last >= seq_start[:, None]).all(1)
    coords = xyz[order][last[ok]].reshape(int(ok.sum()), 3 * len(tags))
    onehot = (tg[ok, None] == np.asarray(tags)[None, :]).astype(np.float64)
    return order[ok], np.hstack([coords, onehot])


def person_activity_worker_data(ds: Dataset, opts: dict) -> WorkerData:
    """Person letter -> worker; snapshot (16) or raw (x, y, z, tag one-hot = 7) features."""
    need = {"participant", "sequence", "tag", "timestamp"}
    if not need <= set(ds.groups):
        raise ValueError(f"person_activity: the processed localization_person_activity lacks groups "
                         f"{sorted(need - set(ds.groups))}; rebuild it with the current loader "
                         "(snakemake -f data/processed/localization_person_activity/dataset.json)")
    g = {k: np.asarray(v) for k, v in ds.groups.items()}
    X = np.asarray(ds.X, dtype=np.float64)
    onehot_names = [f"is_{t}" for t in PERSON_TAGS]
    if opts["features"] == "snapshot":
        rows, feats = snapshot_features(g["sequence"], g["tag"], g["timestamp"], X)
        names = [f"{t}_{c}" for t in PERSON_TAGS for c in "xyz"] + onehot_names
    else:
        rows = np.arange(X.shape[0])
        feats = np.hstack([X, (g["tag"][:, None] == np.asarray(PERSON_TAGS)[None, :]).astype(np.float64)])
        names = ["x", "y", "z"] + onehot_names
    persons, worker = np.unique(g["participant"][rows], return_inverse=True)
    return _sensor_worker_data("person_activity", feats, ds.y[rows], worker.ravel().astype(np.int64),
                               persons.tolist(), ds.meta.get("classes"), names, opts)


# =========================================================================== SHL

def shl_worker_data(ds: Dataset, opts: dict) -> WorkerData:
    """Frames x locations -> ``len(location_mix)`` workers (:func:`location_mix`, seed split_seed); 55 features."""
    parts = location_mix({k: np.asarray(v) for k, v in ds.groups.items()}, seed=opts["split_seed"],
                         mix=opts["location_mix"], locations=opts["locations"])
    rows = np.concatenate(parts)
    worker = np.concatenate([np.full(p.size, j, dtype=np.int64) for j, p in enumerate(parts)])
    names = ds.meta.get("feature_names") or [f"f{i}" for i in range(ds.X.shape[1])]
    return _sensor_worker_data("shl", np.asarray(ds.X, dtype=np.float64)[rows], ds.y[rows], worker,
                               [f"W{j + 1}" for j in range(len(parts))], ds.meta.get("classes"), names, opts)


# =========================================================================== Parquet cache

_META_KEY = b"fedrepro.worker_data"


def _write_cache(path: Path, wd: WorkerData, opts: dict, fingerprint: list) -> None:
    """One row per sample (train rows first): worker, split, label, f000..; written atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n_tr = wd.y_train.size
    cols = {"worker": np.r_[wd.worker_train, wd.worker_test],
            "split": np.r_[np.zeros(n_tr, np.int8), np.ones(wd.y_test.size, np.int8)],
            "label": np.r_[wd.y_train, wd.y_test]}
    X = np.vstack([wd.X_train, wd.X_test])
    cols.update({f"f{j:03d}": X[:, j] for j in range(X.shape[1])})
    info = {"version": CACHE_VERSION, "options": opts, "source_fingerprint": fingerprint,
            "n_workers": wd.n_workers, "n_classes": wd.n_classes, "meta": wd.meta}
    table = pa.table(cols).replace_schema_metadata({_META_KEY: json.dumps(info).encode()})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _read_cache(path: Path, opts: dict, fingerprint: list) -> WorkerData | None:
    """The cached WorkerData, or None when absent, unreadable, or built from other options/source."""
    import pyarrow.parquet as pq

    if not path.is_file():
        return None
    try:
        table = pq.read_table(path)
        info = json.loads(table.schema.metadata[_META_KEY])
    except Exception:            # corrupted / truncated / foreign file: rebuild
        return None
    if info.get("version") != CACHE_VERSION or info.get("options") != opts \
            or info.get("source_fingerprint") != fingerprint:
        return None
    names = [c for c in table.column_names if c.startswith("f")]
    X = np.empty((table.num_rows, len(names)), dtype=np.float32)
    for j, c in enumerate(names):
        X[:, j] = table.column(c).to_numpy()
    split = table.column("split").to_numpy()
    worker = table.column("worker").to_numpy().astype(np.int64)
    label = table.column("label").to_numpy().astype(np.int64)
    tr, te = split == 0, split == 1
    return WorkerData(info["meta"]["dataset"], np.ascontiguousarray(X[tr]), label[tr], worker[tr],
                      np.ascontiguousarray(X[te]), label[te], worker[te],
                      n_workers=info["n_workers"], n_classes=info["n_classes"], meta=info["meta"])


# =========================================================================== backdoor (§4.5)

def with_backdoor(wd: WorkerData, *, seed: int = 0, target: int | None = None, source: int = 0,
                  n_samples: int = 3000, patch=(23, 27, 23, 27), value: float = 1.0,
                  trigger_frac: float = 0.1, trigger_value: float = 3.0, poison_fraction: float = 1.0) -> WorkerData:
    """``wd`` plus one malicious worker (index ``N``; ``n_workers`` becomes ``N + 1``), spec §4.5.

    ``poison_fraction`` in (0, 1]: the share of the malicious worker's samples that get the trigger and
    the target label (a seeded choice, ``stream(seed, "attack", ..., 1)``); the others keep their true
    label and no trigger (the paper, App. C.2: "We add triggers to a small part of the data and change
    their primal labels to target labels"). This is the data of the attack ``backdoor``
    (:class:`fedrepro.sim.attacks.Backdoor`, whose ``problem_options()`` the problem's builder passes
    here); what the malicious worker reports (its raised loss) is the attack's.

    fmnist3: ``min(n_samples, #source training images)`` training images of class ``source``
    (T-shirt), drawn without replacement (``stream(seed, "attack", ...)``), with pixels
    ``rows patch[0]:patch[1], cols patch[2]:patch[3]`` of the 28x28 image set to ``value``,
    labelled ``target`` (default 1 = Pullover); backdoor test set = all ``source`` test
    images patched.  Sensor data: ``target`` default 0; trigger = last
    ``K = max(2, ceil(trigger_frac d))`` features set to ``trigger_value``; ``n_mal`` = median
    benign training size (rounded half up) samples with label != target drawn from the pooled
    benign train (with replacement only if fewer exist), triggered and relabelled ``target``;
    backdoor test set = every benign test sample with label != target, triggered.
    The malicious worker has no test samples.
    """
    if wd.malicious is not None:
        raise ValueError(f"{wd.name}: already has a malicious worker ({wd.malicious}); apply with_backdoor once")
    if not 0 < float(poison_fraction) <= 1:
        raise ValueError(f"{wd.name}: invalid poison_fraction={poison_fraction}; use a share in (0, 1]")
    fmnist = wd.name == "fmnist3"
    target = (1 if fmnist else 0) if target is None else int(target)
    if not 0 <= target < wd.n_classes:
        raise ValueError(f"{wd.name}: invalid target={target}; use a label in 0..{wd.n_classes - 1}")
    key = _worker_split(wd.name).stream_key
    rng = stream(seed, "attack", key)
    if fmnist:
        pool = np.flatnonzero(wd.y_train == source)
        if pool.size == 0 or not 0 <= source < wd.n_classes or source == target:
            raise ValueError(f"fmnist3: invalid source={source}; use a class in 0..2 other than target={target}")
        if n_samples < 1:
            raise ValueError(f"fmnist3: invalid n_samples={n_samples}; use an integer >= 1")
        take = np.sort(rng.choice(pool, size=min(n_samples, pool.size), replace=False))
        cols = trigger_columns(wd.n_features, patch=patch)
        X_mal, X_bd = wd.X_train[take].copy(), wd.X_test[wd.y_test == source].copy()
        X_mal[:, cols] = X_bd[:, cols] = value
        info = {"kind": "patch", "source": source, "patch": list(patch), "value": value}
    else:
        pool = np.flatnonzero(wd.y_train != target)
        n_mal = int(np.floor(np.median(np.bincount(wd.worker_train, minlength=wd.n_workers)) + 0.5))
        take = np.sort(rng.choice(pool, size=n_mal, replace=n_mal > pool.size))
        cols = trigger_columns(wd.n_features, frac=trigger_frac)
        X_mal, X_bd = wd.X_train[take].copy(), wd.X_test[wd.y_test != target].copy()
        X_mal[:, cols] = X_bd[:, cols] = trigger_value
        info = {"kind": "last_features", "trigger_columns": cols.tolist(), "value": trigger_value}
    y_mal = np.full(take.size, target, dtype=np.int64)
    if poison_fraction < 1:                # only a share is poisoned; the rest stays clean, true label
        n_bad = max(1, int(round(poison_fraction * take.size)))
        bad = np.zeros(take.size, dtype=bool)
        bad[stream(seed, "attack", key, 1).choice(take.size, n_bad, replace=False)] = True
        X_mal[~bad] = wd.X_train[take[~bad]]
        y_mal[~bad] = wd.y_train[take[~bad]]
    info.update(poison_fraction=float(poison_fraction), n_poisoned=int((y_mal == target).sum() if poison_fraction < 1
                                                                       else take.size))
    mal = wd.n_workers
    meta = {**wd.meta, "backdoor": {**info, "target": target, "seed": seed, "malicious": mal,
                                    "n_malicious_train": int(take.size), "n_backdoor_test": int(X_bd.shape[0]),
                                    "drawn_rows": take.tolist() if take.size <= 10000 else None}}
    meta["sizes"] = {"train": [*wd.meta.get("sizes", {}).get("train", []), int(take.size)],
                     "test": [*wd.meta.get("sizes", {}).get("test", []), 0]}
    return replace(wd, X_train=np.ascontiguousarray(np.vstack([wd.X_train, X_mal]), dtype=np.float32),
                   y_train=np.r_[wd.y_train, y_mal],
                   worker_train=np.r_[wd.worker_train, np.full(take.size, mal, dtype=np.int64)],
                   n_workers=mal + 1, meta=meta, backdoor_X=np.ascontiguousarray(X_bd, dtype=np.float32),
                   backdoor_y=np.full(X_bd.shape[0], target, dtype=np.int64), malicious=mal)


def trigger_columns(d: int, *, patch=None, frac: float = 0.1, side: int = 28) -> np.ndarray:
    """Feature indices of the trigger: the ``patch`` (r0, r1, c0, c1) of a ``side`` x ``side``
    image flattened row-major, or else the last ``max(2, ceil(frac d))`` of ``d`` features."""
    if patch is not None:
        r0, r1, c0, c1 = (int(v) for v in patch)
        if not (0 <= r0 < r1 <= side and 0 <= c0 < c1 <= side) or d != side * side:
            raise ValueError(f"invalid patch={patch!r}; use (r0, r1, c0, c1) with 0 <= r0 < r1 <= {side}, "
                             f"0 <= c0 < c1 <= {side} on a {side}x{side} image")
        return (np.arange(r0, r1)[:, None] * side + np.arange(c0, c1)[None, :]).ravel()
    if not 0 < frac <= 1:
        raise ValueError(f"invalid trigger_frac={frac!r}; use a number in (0, 1]")
    k = min(d, max(2, math.ceil(frac * d)))
    return np.arange(d - k, d)
