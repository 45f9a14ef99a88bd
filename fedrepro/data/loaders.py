"""Turn verified raw files into processed :class:`~fedrepro.data.dataset.Dataset` objects.

Each loader takes ``paths`` (``{file name: path}`` as returned by
:func:`fedrepro.data.fetch.fetch`) plus keyword options and returns a ``Dataset``.
The dataset registrations (:mod:`fedrepro.data.registry`) name the loader of each variant;
:func:`fedrepro.data.load` dispatches by dataset name and variant.

Conventions shared by all loaders:

* ``y`` holds class indices ``0..C-1``; ``meta["classes"]`` lists the original label
  of each index (e.g. ``["negative", "positive"]`` or digit values);
* image pixels are scaled to ``[0, 1]`` (``meta["scaling"]``), flattened row-major
  (CIFAR-10 channel-major: 1024 R, 1024 G, 1024 B, ``meta["image_shape"] = (3, 32, 32)``);
  images whose raw pixels are uint8 keep them (:class:`~fedrepro.data.dataset.PixelArray`, X[rows]
  decodes ``pixels / 255``), the others (LIBSVM / HDF5 USPS) are float64 arrays;
* no normalisation/standardisation happens here (papers do that downstream);
* ``split`` is ``"train"``/``"test"`` where the data come with an official split,
  ``None`` otherwise; natural groupings (participant, body location, ...) are in ``groups``.
"""
from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.io as sio
import scipy.sparse as sp

from fedrepro.data.dataset import Dataset, PixelArray
from fedrepro.data.formats import parse_libsvm, read_cifar_bin, read_idx, read_libsvm  # noqa: F401  (re-exported)


def _str(values) -> np.ndarray:
    """Fixed-width unicode array (never object dtype, so ``Dataset.save`` needs no pickling)."""
    return np.asarray(values, dtype=str)


def _split(n_train: int, n_test: int) -> np.ndarray:
    return _str(["train"] * n_train + ["test"] * n_test)


# =========================================================================== adult

ADULT_COLUMNS = ("age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
                 "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
                 "hours-per-week", "native-country")
ADULT_CATEGORICAL = ("workclass", "education", "marital-status", "occupation", "relationship",
                     "race", "sex", "native-country")


def _read_adult_text(path: Path, skiprows: int) -> pd.DataFrame:
    """All 15 fields of a UCI adult file as stripped strings (blank lines skipped)."""
    df = pd.read_csv(path, header=None, names=[*ADULT_COLUMNS, "income"], skiprows=skiprows,
                     skipinitialspace=True, dtype=str, keep_default_na=False, na_filter=False)
    return df.apply(lambda c: c.str.strip())


def adult(paths: dict) -> Dataset:
    """UCI ``adult.test`` + ``adult.data`` coded exactly as the authors' ``adult.mat``.

    Complete cases only (no ``'?'``), adult.test rows first. Categorical columns are
    0-based indices into the sorted (code-point order) list of distinct values present;
    numeric columns stay raw. Returns X float64 (45222, 14), y in {0,1} (1 = '>50K'),
    ``groups["source"]`` = originating file; no split (FedEPM trains on everything).
    """
    parts = [_read_adult_text(paths["adult.test"], 1), _read_adult_text(paths["adult.data"], 0)]
    source = np.concatenate([np.full(len(p), n) for p, n in zip(parts, ("adult.test", "adult.data"))])
    df = pd.concat(parts, ignore_index=True)
    complete = ~(df == "?").any(axis=1).to_numpy()
    df, source = df[complete].reset_index(drop=True), source[complete]
    X = np.empty((len(df), len(ADULT_COLUMNS)), dtype=np.float64)
    categories = {}
    for j, col in enumerate(ADULT_COLUMNS):
        values = _str(df[col])
        if col in ADULT_CATEGORICAL:
            categories[col], X[:, j] = np.unique(values, return_inverse=True)
        else:
            X[:, j] = values.astype(np.int64)
    income = np.char.rstrip(_str(df["income"]), ".")
    if not np.isin(income, ["<=50K", ">50K"]).all():
        raise ValueError(f"unexpected income labels: {sorted(set(income) - {'<=50K', '>50K'})}")
    y = (income == ">50K").astype(np.int64)
    meta = {"columns": list(ADULT_COLUMNS), "categorical": list(ADULT_CATEGORICAL),
            "categories": {k: v.tolist() for k, v in categories.items()}, "classes": ["<=50K", ">50K"],
            "coding": "categorical = 0-based index in sorted distinct values (complete cases); numeric raw"}
    return Dataset("adult", X, y, None, {"source": _str(source)}, meta)


def adult_mat(paths: dict) -> Dataset:
    """The authors' ``adult.mat`` (X int32 45222 x 14) and ``adultclass.mat`` (y uint8) as float64 / int64."""
    X = sio.loadmat(paths["adult.mat"])["X"].astype(np.float64)
    y = sio.loadmat(paths["adultclass.mat"])["y"].ravel().astype(np.int64)
    n_test = 15060  # rows of adult.test come first (manifest fact, checked against the raw files)
    source = _str(["adult.test"] * n_test + ["adult.data"] * (len(y) - n_test))
    meta = {"columns": list(ADULT_COLUMNS), "categorical": list(ADULT_CATEGORICAL), "classes": ["<=50K", ">50K"]}
    return Dataset("adult", X, y, None, {"source": source}, meta)


# =========================================================================== QSAR oral toxicity

def _open_member_or_file(path: Path, member: str):
    """Binary handle of ``path``, or of ``member`` inside it when ``path`` is a zip."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            return io.BytesIO(zf.read(member))
    return open(path, "rb")


def qsar_oral_toxicity(paths: dict) -> Dataset:
    """UCI csv (or the zip holding it): X CSR float64 (8992, 1024) in {0,1}, y = 1 for 'positive'."""
    path = paths.get("qsar_oral_toxicity.csv") or paths["qsar_oral_toxicity.zip"]
    with _open_member_or_file(Path(path), "qsar_oral_toxicity.csv") as fh:
        df = pd.read_csv(fh, sep=";", header=None)
    labels = _str(df.iloc[:, -1]).astype(str)
    if not np.isin(labels, ["negative", "positive"]).all():
        raise ValueError("qsar_oral_toxicity: labels other than 'positive'/'negative'")
    X = sp.csr_matrix(df.iloc[:, :-1].to_numpy(dtype=np.float64))
    y = (labels == "positive").astype(np.int64)
    return Dataset("qsar_oral_toxicity", X, y, None, {},
                   {"classes": ["negative", "positive"], "original_labels": {"0": "negative", "1": "positive"}})


def qsar_oral_toxicity_mat(paths: dict) -> Dataset:
    """Authors' ``toxicity.mat`` (sparse X) + ``toxicityclass.mat`` (y in {-1,+1} -> {0,1}); X stays CSR."""
    X = sp.csr_matrix(sio.loadmat(paths["toxicity.mat"])["X"], dtype=np.float64)
    X.sort_indices()
    y_orig = sio.loadmat(paths["toxicityclass.mat"])["y"].ravel()
    if not np.isin(y_orig, [-1, 1]).all():
        raise ValueError("toxicityclass.mat: labels other than -1/+1")
    return Dataset("qsar_oral_toxicity", X, (y_orig == 1).astype(np.int64), None, {},
                   {"classes": ["negative", "positive"], "original_labels": {"0": -1, "1": 1}})


# =========================================================================== LIBSVM (real-sim, USPS)

def real_sim(paths: dict) -> Dataset:
    """real-sim: X CSR float64 (72309, 20958), y = 1 for label +1, 0 for -1."""
    X, labels = read_libsvm(paths["real-sim.bz2"], n_features=20958)
    if not np.isin(labels, [-1, 1]).all():
        raise ValueError("real-sim: labels other than -1/+1")
    return Dataset("real_sim", X, (labels == 1).astype(np.int64), None, {},
                   {"classes": [-1, 1], "original_labels": {"0": -1, "1": 1}})


# =========================================================================== USPS

USPS_NOTE = ("The FRPG paper (spec 004 §4) uses Roweis' usps_all.mat: 11,000 images, 800 train / 300 test per "
             "digit (8,000 / 3,000). The LIBSVM/HDF5 copies have the standard 7,291 / 2,007 split (fallback).")


def usps(paths: dict, scale: bool = True) -> Dataset:
    """LIBSVM ``usps.bz2`` (train) + ``usps.t.bz2`` (test): X (9298, 256), labels 1..10 -> digits 0..9.

    ``scale``: map the provider's [-1, 1] to [0, 1] via (x + 1) / 2.
    """
    parts = [read_libsvm(paths[n], n_features=256) for n in ("usps.bz2", "usps.t.bz2")]
    X = np.vstack([p[0].toarray() for p in parts])
    labels = np.concatenate([p[1] for p in parts])
    if not np.isin(labels, np.arange(1, 11)).all():
        raise ValueError("usps: labels outside 1..10")
    X = (X + 1.0) / 2.0 if scale else X
    return Dataset("usps", X, labels.astype(np.int64) - 1, _split(parts[0][0].shape[0], parts[1][0].shape[0]), {},
                   {"classes": list(range(10)), "scaling": "(x+1)/2 -> [0,1]" if scale else "raw [-1,1]",
                    "note": USPS_NOTE})


def usps_h5(paths: dict) -> Dataset:
    """Kaggle ``usps.h5``: train (7291) + test (2007), X float64 (values as stored, in [0, 1]), y 0..9."""
    import h5py

    with h5py.File(paths["usps.h5"], "r") as f:
        Xs = [np.asarray(f[f"{s}/data"], dtype=np.float64) for s in ("train", "test")]
        ys = [np.asarray(f[f"{s}/target"], dtype=np.int64) for s in ("train", "test")]
    return Dataset("usps", np.vstack(Xs), np.concatenate(ys), _split(len(ys[0]), len(ys[1])), {},
                   {"classes": list(range(10)), "scaling": "as stored in usps.h5 ([0,1])", "note": USPS_NOTE})


def usps_roweis(paths: dict, split_seed: int = 0, n_train_per_class: int = 800) -> Dataset:
    """Roweis ``usps_all.mat`` (``data`` uint8 256 x 1100 x 10, images 16x16 column-major).

    Class index j = 1..10 of the third axis is digit ``j mod 10``. Pixels -> [0, 1], rows
    flattened row-major; inverted when the border is bright (background must be ~0). Split:
    per class a seeded permutation (``fedrepro.core.rng.stream(split_seed, "split", digit)``)
    gives ``n_train_per_class`` train and the rest test (800 / 300).
    """
    from fedrepro.core.rng import stream

    data = np.asarray(sio.loadmat(paths["usps_all.mat"])["data"])
    n_pix, n_per, n_cls = data.shape
    side = int(round(np.sqrt(n_pix)))
    imgs = data.transpose(2, 1, 0).reshape(n_cls * n_per, side, side).transpose(0, 2, 1)  # column-major -> rows
    border = np.r_[imgs[:, 0, :].ravel(), imgs[:, -1, :].ravel(), imgs[:, :, 0].ravel(), imgs[:, :, -1].ravel()]
    inverted = bool(border.mean() / 255.0 > 0.5)
    X = PixelArray(np.ascontiguousarray(imgs.reshape(n_cls * n_per, n_pix)), np.float64, inverted)
    y = np.repeat((np.arange(1, n_cls + 1)) % 10, n_per).astype(np.int64)
    split = np.full(len(y), "test", dtype="<U5")
    for c in range(n_cls):
        rows = np.arange(c * n_per, (c + 1) * n_per)
        digit = (c + 1) % 10
        split[rows[stream(split_seed, "split", digit).permutation(n_per)[:n_train_per_class]]] = "train"
    return Dataset("usps", X, y, split, {},
                   {"classes": list(range(10)), "scaling": "pixel/255" + (", inverted" if inverted else ""),
                    "split_seed": split_seed, "n_train_per_class": n_train_per_class, "note": USPS_NOTE})


# =========================================================================== MNIST / Fashion-MNIST

def _idx_dataset(name: str, paths: dict, classes: list) -> Dataset:
    """Train + test IDX images/labels: X (70000, 784) uint8 pixels read as float64 pixel/255, y 0..9, split."""
    Xs, ys = [], []
    for part in ("train", "t10k"):
        imgs = read_idx(paths[f"{part}-images-idx3-ubyte.gz"])
        labels = read_idx(paths[f"{part}-labels-idx1-ubyte.gz"])
        if len(imgs) != len(labels):
            raise ValueError(f"{name} {part}: {len(imgs)} images but {len(labels)} labels")
        Xs.append(imgs.reshape(len(imgs), -1))
        ys.append(labels.astype(np.int64))
    X = PixelArray(np.vstack(Xs), np.float64)
    return Dataset(name, X, np.concatenate(ys), _split(len(ys[0]), len(ys[1])), {},
                   {"classes": classes, "scaling": "pixel/255", "image_shape": [1, 28, 28]})


FASHION_CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
                   "Bag", "Ankle boot"]


def mnist(paths: dict) -> Dataset:
    """MNIST: X (70000, 784) pixels read as float64 in [0,1]; first 60,000 rows train, then 10,000 test."""
    return _idx_dataset("mnist", paths, list(range(10)))


def fashion_mnist(paths: dict) -> Dataset:
    """Fashion-MNIST: X (70000, 784) pixels read as float64 in [0,1]; first 60,000 rows train, then 10,000 test."""
    return _idx_dataset("fashion_mnist", paths, FASHION_CLASSES)


# =========================================================================== CIFAR-10

CIFAR10_CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
CIFAR10_TRAIN = tuple(f"data_batch_{i}.bin" for i in range(1, 6))


def cifar10(paths: dict, dtype=np.float32) -> Dataset:
    """CIFAR-10: X (60000, 3072) uint8 pixels read as pixel/255 in ``dtype`` (float32 default: what the
    models use), layout 1024 R, 1024 G, 1024 B per row (``meta["image_shape"] = (3, 32, 32)``); train =
    batches 1..5."""
    parts = [read_cifar_bin(paths[n]) for n in (*CIFAR10_TRAIN, "test_batch.bin")]
    X = PixelArray(np.vstack([p[0] for p in parts]), dtype)
    y = np.concatenate([p[1] for p in parts])
    n_test = len(parts[-1][1])
    return Dataset("cifar10", X, y, _split(len(y) - n_test, n_test), {},
                   {"classes": CIFAR10_CLASSES, "scaling": "pixel/255", "image_shape": [3, 32, 32],
                    "dtype": np.dtype(dtype).name})


# =========================================================================== chest accelerometer (UCI 287)

CHEST_ACTIVITIES = {1: "Working at Computer", 2: "Standing Up, Walking and Going up/down stairs", 3: "Standing",
                    4: "Walking", 5: "Going Up/Down Stairs", 6: "Walking and Talking with Someone",
                    7: "Talking while Standing"}


def _runs(*keys: np.ndarray) -> np.ndarray:
    """Run id (0, 1, ...) of maximal blocks of consecutive rows with equal ``keys``."""
    change = np.zeros(len(keys[0]), dtype=bool)
    for k in keys:
        change[1:] |= k[1:] != k[:-1]
    return np.cumsum(change)


def chest_accelerometer(paths: dict, drop_label0: bool = True) -> Dataset:
    """15 participant files -> X float64 (n, 3) = uncalibrated x, y, z acceleration (52 Hz), in file order.

    ``y`` = label - 1 for labels 1..7 (``drop_label0``: rows labelled 0 are removed, as in the
    ASPIRE spec §4.3; otherwise y = label 0..7). ``groups``: ``participant`` (1..15, the file
    number) and ``segment`` (run id of consecutive rows with one participant and one label,
    computed before dropping, so windows never straddle a gap). The sequence-number column is
    discarded (it is printed with 6 significant digits, e.g. '1e+05', so it repeats).
    """
    blocks = []
    for i in range(1, 16):
        a = pd.read_csv(paths[f"{i}.csv"], header=None, dtype=np.float64).to_numpy()
        if a.shape[1] != 5:
            raise ValueError(f"chest_accelerometer {i}.csv: {a.shape[1]} columns, expected 5")
        blocks.append(np.column_stack([a, np.full(len(a), i, dtype=np.float64)]))
    A = np.vstack(blocks)
    label, participant = A[:, 4].astype(np.int64), A[:, 5].astype(np.int64)
    if (label != A[:, 4]).any() or not np.isin(label, np.arange(8)).all():
        raise ValueError("chest_accelerometer: labels outside 0..7")
    segment = _runs(participant, label)
    keep = label != 0 if drop_label0 else np.ones(len(label), dtype=bool)
    classes = list(range(1, 8)) if drop_label0 else list(range(8))
    return Dataset("chest_accelerometer", A[keep, 1:4].copy(), label[keep] - classes[0], None,
                   {"participant": participant[keep], "segment": segment[keep]},
                   {"classes": classes, "activities": {str(k): v for k, v in CHEST_ACTIVITIES.items()},
                    "columns": ["x", "y", "z"], "sampling_hz": 52, "dropped_label0": int((~keep).sum())})


# =========================================================================== localization (UCI 196)

LOCALIZATION_TAGS = {"010-000-024-033": "ANKLE_LEFT", "010-000-030-096": "ANKLE_RIGHT",
                     "020-000-033-111": "CHEST", "020-000-032-221": "BELT"}
LOCALIZATION_ACTIVITIES = sorted(["walking", "falling", "lying down", "lying", "sitting down", "sitting",
                                  "standing up from lying", "on all fours", "sitting on the ground",
                                  "standing up from sitting", "standing up from sitting on the ground"])
_LOC_COLUMNS = ["sequence", "tag", "timestamp", "date", "x", "y", "z", "activity"]


def localization_person_activity(paths: dict) -> Dataset:
    """``ConfLongDemo_JSI.txt`` rows as they are: X float64 (n, 3) = tag position x, y, z (metres).

    ``y`` = index of the activity in the sorted list of the 11 activities (``meta["classes"]``).
    ``groups``: ``participant`` (A..E, one worker each), ``sequence`` (A01..E05), ``tag``
    (ANKLE_LEFT, ANKLE_RIGHT, CHEST, BELT) and ``timestamp`` (int64 ticks; for the ASPIRE
    snapshot features, which sort by it within a sequence). File order is kept.
    """
    df = pd.read_csv(paths["ConfLongDemo_JSI.txt"], header=None, names=_LOC_COLUMNS,
                     dtype={"sequence": str, "tag": str, "timestamp": np.int64, "date": str,
                            "x": np.float64, "y": np.float64, "z": np.float64, "activity": str},
                     keep_default_na=False)
    tag_ids, activity = _str(df["tag"]), np.char.strip(_str(df["activity"]))
    if not np.isin(tag_ids, list(LOCALIZATION_TAGS)).all():
        raise ValueError(f"unknown tag ids: {sorted(set(tag_ids) - set(LOCALIZATION_TAGS))[:5]}")
    if not np.isin(activity, LOCALIZATION_ACTIVITIES).all():
        raise ValueError(f"unknown activities: {sorted(set(activity) - set(LOCALIZATION_ACTIVITIES))[:5]}")
    tag_names = np.array(list(LOCALIZATION_TAGS.values()))[_lookup(np.array(list(LOCALIZATION_TAGS)), tag_ids)]
    sequence = _str(df["sequence"])
    groups = {"participant": sequence.astype("<U1"), "sequence": sequence, "tag": _str(tag_names),
              "timestamp": df["timestamp"].to_numpy(np.int64)}
    y = np.searchsorted(LOCALIZATION_ACTIVITIES, activity).astype(np.int64)
    return Dataset("localization_person_activity", df[["x", "y", "z"]].to_numpy(np.float64), y, None, groups,
                   {"classes": LOCALIZATION_ACTIVITIES, "tags": LOCALIZATION_TAGS, "columns": ["x", "y", "z"]})


def _lookup(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Index of each of ``values`` in ``keys`` (all present)."""
    order = np.argsort(keys)
    return order[np.searchsorted(keys, values, sorter=order)]


# =========================================================================== SHL

SHL_LOCATIONS = ("Bag", "Hips", "Torso", "Hand")
#: channels the SHL features need (|acc|, |gyr|, |mag|, |lacc|, pressure) + per-sample labels
SHL_CHANNELS = ("Acc_x", "Acc_y", "Acc_z", "Gyr_x", "Gyr_y", "Gyr_z", "Mag_x", "Mag_y", "Mag_z",
                "LAcc_x", "LAcc_y", "LAcc_z", "Pressure", "Label")
SHL_ROOT = "validation"

SHL_BANDS_HZ = ((0.0, 1.0), (1.0, 3.0), (3.0, 5.0), (5.0, 10.0), (10.0, 50.0))
SHL_STATS = ("mean", "std", "min", "max", "median", "p10", "p90", "mean_abs_diff")
SHL_MAGNITUDES = ("acc", "gyr", "mag", "lacc", "pressure")
SHL_BAND_CHANNELS = ("acc", "lacc", "gyr")
SHL_FEATURES = ([f"{c}_{s}" for c in SHL_MAGNITUDES for s in SHL_STATS]
                + [f"{c}_logpow_{lo:g}_{hi:g}Hz" for c in SHL_BAND_CHANNELS for lo, hi in SHL_BANDS_HZ])
SHL_MODES = {1: "Still", 2: "Walk", 3: "Run", 4: "Bike", 5: "Car", 6: "Bus", 7: "Train", 8: "Subway"}


def window_stats(A: np.ndarray) -> np.ndarray:
    """8 statistics per row of A (n, w): mean, std, min, max, median, p10, p90, mean |first difference|."""
    p10, p50, p90 = np.percentile(A, [10, 50, 90], axis=1)
    return np.column_stack([A.mean(1), A.std(1), A.min(1), A.max(1), p50, p10, p90,
                            np.abs(np.diff(A, axis=1)).mean(1)])


def band_log_power(A: np.ndarray, fs: float = 100.0, bands=SHL_BANDS_HZ) -> np.ndarray:
    """log(1 + power) of the mean-removed rows of A (n, w) in each band [lo, hi) (last band closed).

    Power = sum over the band's rfft bins of |F_k|^2 / w. Returns (n, len(bands)).
    """
    F = np.fft.rfft(A - A.mean(1, keepdims=True), axis=1)
    power = np.abs(F) ** 2 / A.shape[1]
    freq = np.fft.rfftfreq(A.shape[1], d=1.0 / fs)
    cols = []
    for k, (lo, hi) in enumerate(bands):
        sel = (freq >= lo) & ((freq <= hi) if k == len(bands) - 1 else (freq < hi))
        cols.append(np.log1p(power[:, sel].sum(1)))
    return np.column_stack(cols)


def shl_frame_features(ch: dict) -> np.ndarray:
    """55 features per frame from channel arrays ``ch[name]`` of shape (n, 500) (ASPIRE spec §4.1).

    |acc|, |gyr|, |mag|, |lacc| (Euclidean norms of the 3 axes) and pressure -> 8 statistics
    each (40), then log band powers of |acc|, |lacc|, |gyr| in 5 bands (15). Order: SHL_FEATURES.
    """
    norm = {k: np.sqrt(ch[f"{p}_x"] ** 2 + ch[f"{p}_y"] ** 2 + ch[f"{p}_z"] ** 2)
            for k, p in (("acc", "Acc"), ("gyr", "Gyr"), ("mag", "Mag"), ("lacc", "LAcc"))}
    norm["pressure"] = ch["Pressure"]
    return np.hstack([window_stats(norm[c]) for c in SHL_MAGNITUDES]
                     + [band_log_power(norm[c]) for c in SHL_BAND_CHANNELS])


def frame_labels(L: np.ndarray, n_classes: int = 9) -> tuple[np.ndarray, np.ndarray]:
    """Mode of each row of per-sample labels L (n, w) in 0..n_classes-1 and its share of the row."""
    Li = L.astype(np.int64)
    if (Li != L).any() or (Li < 0).any() or (Li >= n_classes).any():
        raise ValueError(f"frame labels must be integers in 0..{n_classes - 1}")
    counts = (Li[:, :, None] == np.arange(n_classes)).sum(1)
    mode = counts.argmax(1)
    return mode, counts[np.arange(len(mode)), mode] / L.shape[1]


def _iter_frames(files: dict, stride: int, chunk: int):
    """Yield (frame ids, {channel: (k, 500) array}) chunk by chunk, channels read in lockstep."""
    skip = (lambda i: i % stride != 0) if stride > 1 else None
    readers = {ch: pd.read_csv(p, sep=r"\s+", header=None, dtype=np.float64, chunksize=chunk, skiprows=skip)
               for ch, p in files.items()}
    start = 0
    try:
        for parts in zip(*readers.values()):
            arrays = {ch: df.to_numpy() for ch, df in zip(readers, parts)}
            if len({a.shape for a in arrays.values()}) != 1:
                raise ValueError(f"SHL channel files disagree in shape: { {k: a.shape for k, a in arrays.items()} }")
            n = len(parts[0])
            yield (start + np.arange(n)) * stride, arrays
            start += n
    finally:
        for r in readers.values():
            r.close()


def shl(paths: dict, stride: int = 1, chunk_frames: int = 500, min_majority: float = 0.8,
        root: str = SHL_ROOT) -> Dataset:
    """SHL Challenge 2020 validation frames -> 55 features per (frame, location), streamed.

    Reads every ``stride``-th frame (quick mode: 10). Frame label = mode of the 500 sample
    labels; frames whose mode is 0 (null) or whose mode share < ``min_majority`` are dropped,
    as are frames with non-finite features (NaN samples). ``y`` = mode - 1 (Still .. Subway).
    ``groups``: ``location`` (Bag, Hips, Torso, Hand) and ``frame`` (line number in the files).
    """
    X, y, loc, frame = [], [], [], []
    dropped = {"null_or_mixed": 0, "non_finite": 0}
    for location in SHL_LOCATIONS:
        files = {ch: paths[f"{root}/{location}/{ch}.txt"] for ch in SHL_CHANNELS}
        for ids, ch in _iter_frames(files, stride, chunk_frames):
            feats = shl_frame_features(ch)
            mode, share = frame_labels(ch["Label"])
            ok_label = (mode != 0) & (share >= min_majority)
            finite = np.isfinite(feats).all(1)
            dropped["null_or_mixed"] += int((~ok_label).sum())
            dropped["non_finite"] += int((ok_label & ~finite).sum())
            keep = ok_label & finite
            X.append(feats[keep])
            y.append(mode[keep] - 1)
            frame.append(ids[keep])
            loc.append(np.full(int(keep.sum()), location))
    cat = (lambda parts: np.concatenate(parts) if parts else np.empty(0))
    return Dataset("shl", np.vstack(X) if X else np.empty((0, len(SHL_FEATURES))), cat(y).astype(np.int64), None,
                   {"location": _str(cat(loc)), "frame": cat(frame).astype(np.int64)},
                   {"classes": list(SHL_MODES), "modes": {str(k): v for k, v in SHL_MODES.items()},
                    "feature_names": SHL_FEATURES, "stride": stride, "min_majority": min_majority,
                    "dropped_frames": dropped, "sampling_hz": 100, "frame_len": 500})
