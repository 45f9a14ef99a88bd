"""worker_data: ASPIRE per-worker datasets from synthetic raw files in the real formats, plus the real mirror."""
from __future__ import annotations

import gzip
import math
import time
from pathlib import Path

import numpy as np
import pytest

from fedrepro.data import Dataset, load
from fedrepro.data.loaders import LOCALIZATION_TAGS, SHL_FEATURES
from fedrepro.data.worker_data import (build_worker_data, cap_per_worker, scma_window_features, scma_windows,
                                       snapshot_features, stratified_test_mask, trigger_columns, with_backdoor)
from fedrepro.core.rng import stream
from tests.test_data_loaders import _write_shl

# =========================================================================== synthetic raw files

# per participant file: (label, rows) blocks; the label-0 gap splits the two label-1 runs
SCMA_BLOCKS = [(1, 130), (0, 10), (1, 60), (3, 104), (7, 80), (4, 78)]


def _write_scma(folder: Path) -> dict:
    """15 UCI-format csv files (seq, x, y, z, label); x = row number, so contiguity is visible."""
    rng = np.random.default_rng(7)
    paths = {}
    for i in range(1, 16):
        labels = np.concatenate([np.full(n, lab) for lab, n in SCMA_BLOCKS])
        n = labels.size
        rows = np.column_stack([np.arange(1, n + 1), np.arange(n), rng.integers(1900, 2100, n),
                                rng.integers(1900, 2100, n), labels])
        rows[:52, 2] = 2000 if i == 2 else rows[:52, 2]          # constant y in participant 2's first window
        paths[f"{i}.csv"] = folder / f"{i}.csv"
        np.savetxt(paths[f"{i}.csv"], rows, fmt="%d", delimiter=",")
    return paths


TAG_ID = {v: k for k, v in LOCALIZATION_TAGS.items()}
ACTS = ["walking", "lying", "sitting", "falling"]


def _loc_line(seq, tag, ts, xyz, act):
    return f"{seq},{TAG_ID[tag]},{ts},27.05.2009 14:03:25:127,{xyz[0]!r},{xyz[1]!r},{xyz[2]!r},{act}"


# hand-built sequence A01 (file order shuffled; timestamps define the order)
HAND = [  # (timestamp, tag, xyz, activity)
    (10, "ANKLE_LEFT", (1.0, 1.5, 0.1), "walking"),
    (11, "CHEST", (2.0, 2.5, 1.2), "walking"),
    (12, "ANKLE_LEFT", (1.1, 1.6, 0.2), "walking"),
    (13, "BELT", (3.0, 3.5, 0.9), "walking"),
    (14, "ANKLE_RIGHT", (4.0, 4.5, 0.3), "lying"),      # first row with all four tags seen
    (15, "CHEST", (2.2, 2.7, 1.1), "lying"),
]


def _write_person(folder: Path) -> Path:
    rng = np.random.default_rng(3)
    lines = [_loc_line("A01", t, ts, xyz, a) for ts, t, xyz, a in HAND[::-1]]
    for person in "ABCDE":
        for rec in (2, 3):
            for k in range(40):
                tag = list(TAG_ID)[k % 4]
                xyz = tuple(np.round(rng.normal(size=3), 3).tolist())
                lines.append(_loc_line(f"{person}0{rec}", tag, 1000 * rec + k, xyz, ACTS[(k // 10) % 4]))
    path = folder / "ConfLongDemo_JSI.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _write_idx(path: Path, arr: np.ndarray) -> None:
    header = bytes([0, 0, 0x08, arr.ndim]) + np.asarray(arr.shape, dtype=">u4").tobytes()
    with gzip.open(path, "wb") as fh:
        fh.write(header + arr.astype(np.uint8).tobytes())


def _write_fmnist(folder: Path) -> dict:
    rng = np.random.default_rng(5)
    paths = {}
    for part, n in (("train", 200), ("t10k", 60)):
        for kind, arr in (("images-idx3", rng.integers(0, 200, (n, 28, 28))),
                          ("labels-idx1", np.arange(n) % 10)):
            p = folder / f"{part}-{kind}-ubyte.gz"
            _write_idx(p, arr)
            paths[p.name] = p
    return paths


@pytest.fixture(scope="module")
def processed(tmp_path_factory) -> Path:
    """data/processed-like folder with the four sources built by the real loaders from synthetic raw files."""
    root = tmp_path_factory.mktemp("worker_data")
    raw = root / "raw"
    raw.mkdir()
    out = root / "processed"
    load("chest_accelerometer", _write_scma(raw)).save(out / "chest_accelerometer")
    load("localization_person_activity", {"ConfLongDemo_JSI.txt": _write_person(raw)}).save(
        out / "localization_person_activity")
    load("fashion_mnist", _write_fmnist(raw)).save(out / "fashion_mnist")
    labels = np.repeat((np.arange(48) % 8 + 1)[:, None], 500, axis=1)      # 6 frames of each mode 1..8
    load("shl", _write_shl(raw / "shl", 48, labels)).save(out / "shl")
    return out


def build(name, processed, tmp_path, **kw):
    return build_worker_data(name, processed, cache_dir=tmp_path / "cache", **kw)


def _check_layout(wd, d, n_workers, n_classes):
    assert wd.X_train.shape[1] == wd.X_test.shape[1] == d
    for X in (wd.X_train, wd.X_test):
        assert X.dtype == np.float32 and X.flags.c_contiguous
    for a in (wd.y_train, wd.y_test, wd.worker_train, wd.worker_test):
        assert a.dtype == np.int64
    assert wd.n_workers == n_workers and wd.n_classes == n_classes
    assert set(np.unique(wd.worker_train)) == set(range(n_workers))
    assert wd.y_train.max() < n_classes and wd.y_train.min() >= 0
    parts = wd.train_parts()
    assert len(parts) == n_workers and sum(p.size for p in parts) == wd.y_train.size
    assert all((wd.worker_train[p] == j).all() and (np.diff(p) > 0).all() for j, p in enumerate(parts))
    assert wd.meta["sizes"]["train"] == [p.size for p in parts]
    assert len(wd.meta["feature_names"]) == d


# =========================================================================== feature counts / layout


def test_feature_counts_and_layout(processed, tmp_path):
    for name, d, n_workers, n_classes in (("scma", 35, 15, 4), ("person_activity", 16, 5, 4),
                                          ("shl", 55, 6, 8), ("fmnist3", 784, 3, 3)):
        _check_layout(build(name, processed, tmp_path), d, n_workers, n_classes)
    assert build("person_activity", processed, tmp_path, features="raw").n_features == 7
    assert build("shl", processed, tmp_path).meta["feature_names"] == SHL_FEATURES


# =========================================================================== SC-MA windows


def test_scma_windows_stay_in_one_segment(processed):
    ds = Dataset.load(processed / "chest_accelerometer")
    starts = scma_windows(ds.groups["segment"], ds.groups["participant"], 52, 26)
    rows = starts[:, None] + np.arange(52)
    assert (ds.y[rows] == ds.y[rows[:, :1]]).all()                                # constant label
    assert (ds.groups["participant"][rows] == ds.groups["participant"][starts][:, None]).all()
    assert (np.diff(ds.X[rows, 0], axis=1) == 1).all()                            # contiguous raw rows (x = row no.)
    # per participant: label-1 runs 130 (4 windows) and 60 (1), label 3: 104 (3), label 7: 80 (2), label 4: 78 (2)
    # on the participant's hop grid (offsets from its first kept row)
    per = np.bincount(ds.groups["participant"][starts], minlength=16)[1:]
    assert (per == per[0]).all()
    first = np.flatnonzero(ds.groups["participant"] == 1)[0]
    assert ((starts[ds.groups["participant"][starts] == 1] - first) % 26 == 0).all()
    assert not np.isin(ds.X[starts, 0], np.arange(130 - 51, 140)).any()           # never across the label-0 gap


def test_scma_hand_computed_window(processed, tmp_path):
    ds = Dataset.load(processed / "chest_accelerometer")
    p2 = np.flatnonzero(ds.groups["participant"] == 2)[0]
    W = ds.X[p2:p2 + 52]                                                        # participant 2, first window
    feats = scma_window_features(ds.X, np.array([p2]), 52)[0]
    mag = np.sqrt((W ** 2).sum(1))
    for c, a in enumerate([W[:, 0], W[:, 1], W[:, 2], mag]):
        expect = [a.mean(), a.std(), a.min(), a.max(), np.median(a), np.percentile(a, 10), np.percentile(a, 90),
                  np.abs(np.diff(a)).mean()]
        np.testing.assert_allclose(feats[8 * c:8 * c + 8], expect, rtol=1e-12)
    assert W[:, 1].std() == 0 and feats[32] == 0 and feats[34] == 0             # y constant -> corr xy, yz = 0
    np.testing.assert_allclose(feats[33], np.corrcoef(W[:, 0], W[:, 2])[0, 1], rtol=1e-10)
    # the built (standardised) sample of that window maps back to the raw features
    wd = build("scma", processed, tmp_path)
    st = wd.meta["standardization"]
    raw_all = np.vstack([wd.X_train, wd.X_test]).astype(np.float64) * st["std"] + st["mean"]
    hit = np.abs(raw_all - feats).max(1).argmin()
    np.testing.assert_allclose(raw_all[hit], feats, rtol=1e-5, atol=1e-4)


# =========================================================================== Person Activity snapshots


def test_forward_fill_on_hand_sequence(processed):
    ds = Dataset.load(processed / "localization_person_activity")
    rows, F = snapshot_features(ds.groups["sequence"], ds.groups["tag"], ds.groups["timestamp"], ds.X)
    a01 = ds.groups["sequence"][rows] == "A01"
    assert a01.sum() == 2                                      # rows before all four tags are seen are dropped
    np.testing.assert_array_equal(ds.groups["timestamp"][rows[a01]], [14, 15])
    al, ar, ch, be = (1.1, 1.6, 0.2), (4.0, 4.5, 0.3), (2.0, 2.5, 1.2), (3.0, 3.5, 0.9)
    np.testing.assert_array_equal(F[a01][0], [*al, *ar, *ch, *be, 0, 1, 0, 0])   # latest left ankle = t 12
    np.testing.assert_array_equal(F[a01][1], [*al, *ar, 2.2, 2.7, 1.1, *be, 0, 0, 1, 0])
    names = [ds.meta["classes"][k] for k in ds.y[rows[a01]]]
    assert names == ["lying", "lying"]
    # other sequences: 40 rows each, first complete at their 4th row -> 37 snapshots
    assert (~a01).sum() == 10 * 37


# =========================================================================== split / caps / standardisation


def test_stratified_split_proportions():
    worker = np.repeat([0, 1], [300, 101])
    y = np.r_[np.repeat([0, 1, 2], [200, 95, 5]), np.repeat([0, 1, 2], [1, 2, 98])]
    test = stratified_test_mask(worker, y, 0.2, stream(0, "split", 9))
    got = {(w, c): int(test[(worker == w) & (y == c)].sum()) for w in (0, 1) for c in (0, 1, 2)}
    assert got == {(0, 0): 40, (0, 1): 19, (0, 2): 1, (1, 0): 0, (1, 1): 0, (1, 2): 20}


def test_split_standardisation_and_class_map(processed, tmp_path):
    wd = build("person_activity", processed, tmp_path)
    pooled = wd.X_train.astype(np.float64)
    np.testing.assert_allclose(pooled.mean(0), 0, atol=1e-5)
    sd = pooled.std(0)
    assert np.allclose(sd[sd > 0.5], 1, atol=1e-5)                           # non-constant columns
    assert not np.allclose(wd.X_test.mean(0), 0, atol=1e-6)                  # test is not re-standardised
    assert wd.meta["classes"] == sorted(ACTS)
    assert wd.meta["workers"] == list("ABCDE")
    # stratified per worker: each (worker, class) group loses round(0.2 n) to test
    for j in range(5):
        for c in range(4):
            n_tr = ((wd.worker_train == j) & (wd.y_train == c)).sum()
            n_te = ((wd.worker_test == j) & (wd.y_test == c)).sum()
            assert n_te == min(math.floor(0.2 * (n_tr + n_te) + 0.5), n_tr + n_te - 1)


def test_caps_then_standardise_on_capped_train(processed, tmp_path):
    full = build("person_activity", processed, tmp_path)
    assert min(full.meta["sizes"]["train"]) > 10 and min(full.meta["sizes"]["test"]) > 3
    wd = build("person_activity", processed, tmp_path, train_per_worker=10, test_per_worker=3)
    assert wd.meta["sizes"]["train"] == [10] * 5 and wd.meta["sizes"]["test"] == [3] * 5
    np.testing.assert_allclose(wd.X_train.astype(np.float64).mean(0), 0, atol=1e-5)
    keep = cap_per_worker(np.repeat([0, 1, 2], [10, 3, 7]), 4, stream(0, "subset", 9))
    assert np.bincount(np.repeat([0, 1, 2], [10, 3, 7])[keep]).tolist() == [4, 3, 4]
    with pytest.raises(ValueError, match="train_per_worker"):
        build("shl", processed, tmp_path, train_per_worker=0)


def test_shl_workers_follow_location_mix(processed, tmp_path):
    wd = build("shl", processed, tmp_path)
    ds = Dataset.load(processed / "shl")
    assert sum(wd.meta["sizes"]["train"]) + sum(wd.meta["sizes"]["test"]) == 48     # one copy per frame
    assert wd.meta["classes"] == list(range(1, 9)) and len(ds.y) == 48 * 4


# =========================================================================== determinism / cache


def _arrays(wd):
    return [wd.X_train, wd.y_train, wd.worker_train, wd.X_test, wd.y_test, wd.worker_test]


def _same(a, b):
    return all(x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
               for x, y in zip(_arrays(a), _arrays(b)))


def test_determinism_and_seed_dependence(processed, tmp_path):
    a = build_worker_data("person_activity", processed, cache_dir=False)
    b = build_worker_data("person_activity", processed, cache_dir=False)
    c = build_worker_data("person_activity", processed, cache_dir=False, split_seed=1)
    assert _same(a, b) and a.meta == b.meta
    assert not np.array_equal(a.y_test, c.y_test) or not np.array_equal(a.X_test, c.X_test)


def test_cache_hit_identical_and_stale_cache_rebuilt(processed, tmp_path):
    cache = tmp_path / "cache"
    cold = build_worker_data("scma", processed, cache_dir=cache)
    files = list(cache.glob("scma-*.parquet"))
    assert len(files) == 1 and not list(cache.glob(".*tmp"))
    hot = build_worker_data("scma", processed, cache_dir=cache)
    assert _same(cold, hot) and cold.meta == hot.meta
    other = build_worker_data("scma", processed, cache_dir=cache, hop=13)      # option change -> new file
    assert len(list(cache.glob("scma-*.parquet"))) == 2 and other.y_train.size > cold.y_train.size
    files[0].write_bytes(b"PAR1 garbage")                                      # corrupted -> rebuilt
    again = build_worker_data("scma", processed, cache_dir=cache)
    assert _same(cold, again)
    import pyarrow.parquet as pq
    pq.read_table(files[0])                                                    # and rewritten whole
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("")
    with pytest.warns(UserWarning, match="feature cache"):                     # unwritable cache: warn, still build
        assert _same(cold, build_worker_data("scma", processed, cache_dir=blocker))
    # default cache folder
    build_worker_data("fmnist3", processed)
    assert list((processed / "features").glob("fmnist3-*.parquet"))


# =========================================================================== fmnist3 / backdoor


def test_fmnist3_official_split_no_rescale(processed, tmp_path):
    ds = Dataset.load(processed / "fashion_mnist")
    wd = build("fmnist3", processed, tmp_path)
    assert wd.meta["sizes"] == {"train": [20, 20, 20], "test": [6, 6, 6]}
    assert (wd.y_train == wd.worker_train).all() and wd.meta["original_labels"] == [0, 2, 6]
    np.testing.assert_array_equal(wd.X_train[wd.worker_train == 1], ds.X[(ds.split == "train") & (ds.y == 2)]
                                  .astype(np.float32))
    assert 0.5 < wd.X_train.max() <= 1.0


def test_fmnist_backdoor(processed, tmp_path):
    wd = build("fmnist3", processed, tmp_path)
    bd = with_backdoor(wd, n_samples=15, seed=3)
    assert bd.n_workers == 4 and bd.malicious == 3
    mal = bd.worker_train == 3
    assert mal.sum() == 15 and (bd.y_train[mal] == 1).all()
    cols = trigger_columns(784, patch=(23, 27, 23, 27))
    assert cols.tolist()[:5] == [23 * 28 + 23, 23 * 28 + 24, 23 * 28 + 25, 23 * 28 + 26, 24 * 28 + 23]
    imgs = bd.X_train[mal].reshape(-1, 28, 28)
    assert (imgs[:, 23:27, 23:27] == 1.0).all()
    rest = np.ones((28, 28), bool)
    rest[23:27, 23:27] = False
    src = wd.X_train[wd.y_train == 0].reshape(-1, 28, 28)
    assert all(any((im[rest] == s[rest]).all() for s in src) for im in imgs)    # T-shirts, untouched elsewhere
    assert bd.backdoor_X.shape == (6, 784) and (bd.backdoor_y == 1).all()
    assert (bd.backdoor_X.reshape(-1, 28, 28)[:, 23:27, 23:27] == 1.0).all()
    assert [p.size for p in bd.test_parts()] == [6, 6, 6, 0]
    assert _same(bd, with_backdoor(wd, n_samples=15, seed=3))
    assert with_backdoor(wd, seed=0).meta["backdoor"]["n_malicious_train"] == 20     # capped at the T-shirts held


def test_backdoor_poisons_a_share(processed, tmp_path):
    # App. C.2: triggers on "a small part of the data": the share of poisoned samples is an option (the raised
    # reported loss is the attack's, fedrepro.sim.attacks.Backdoor: see
    # tests/test_aspire_rule.py::test_a_malicious_worker_raises_the_losses_it_reports)
    wd = build("fmnist3", processed, tmp_path)
    bd = with_backdoor(wd, seed=0, poison_fraction=0.25)
    mal = bd.worker_train == 3
    X, y = bd.X_train[mal].reshape(-1, 28, 28), bd.y_train[mal]
    assert mal.sum() == 20 and (y == 1).sum() == 5 and (y == 0).sum() == 15     # 25 % relabelled as Pullover
    assert (X[y == 1][:, 23:27, 23:27] == 1.0).all()
    src = {r.tobytes() for r in wd.X_train[wd.y_train == 0]}
    assert all(im.reshape(-1).tobytes() in src for im in X[y == 0])          # the rest: clean T-shirts
    info = bd.meta["backdoor"]
    assert info["n_poisoned"] == 5 and info["poison_fraction"] == 0.25 and "loss_scale" not in info
    assert _same(bd, with_backdoor(wd, seed=0, poison_fraction=0.25))
    for bad in ({"poison_fraction": 0.0}, {"poison_fraction": 1.5}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            with_backdoor(wd, **bad)


def test_sensor_backdoor(processed, tmp_path):
    wd = build("scma", processed, tmp_path)
    bd = with_backdoor(wd)
    N, d = wd.n_workers, wd.n_features
    k = max(2, math.ceil(0.1 * d))
    assert k == 4 and trigger_columns(d).tolist() == list(range(d - 4, d))
    mal = bd.worker_train == N
    n_mal = int(np.floor(np.median(wd.meta["sizes"]["train"]) + 0.5))
    assert bd.malicious == N and bd.n_workers == N + 1 and mal.sum() == n_mal
    assert (bd.y_train[mal] == 0).all() and (bd.X_train[mal][:, -k:] == 3.0).all()
    assert not (bd.X_train[mal][:, :-k] == 3.0).all()
    assert _same_rows_exist(bd.X_train[mal][:, :-k], wd.X_train[wd.y_train != 0][:, :-k])
    assert bd.backdoor_X.shape[0] == (wd.y_test != 0).sum() and (bd.backdoor_y == 0).all()
    assert (bd.backdoor_X[:, -k:] == 3.0).all()
    assert bd.meta["sizes"]["test"][-1] == 0 and bd.test_parts()[N].size == 0
    assert bd.X_train.dtype == np.float32 and bd.X_train.flags.c_contiguous
    with pytest.raises(ValueError, match="already"):
        with_backdoor(bd)


def _same_rows_exist(A, B):
    Bs = {r.tobytes() for r in B}
    return all(r.tobytes() in Bs for r in A)


# =========================================================================== errors


def test_bad_input_messages(processed, tmp_path):
    with pytest.raises(ValueError, match="allowed: fmnist3, scma, person_activity, shl"):
        build_worker_data("mnist", processed)
    with pytest.raises(ValueError, match=r"scma: processed dataset 'chest_accelerometer' not found.*"
                                         r"snakemake data/processed/chest_accelerometer/dataset\.json"):
        build_worker_data("scma", tmp_path)
    with pytest.raises(ValueError, match="unknown option"):
        build_worker_data("scma", processed, windw=10)
    with pytest.raises(ValueError, match="features"):
        build_worker_data("scma", processed, features="fft")
    with pytest.raises(ValueError, match="test_per_worker"):
        build_worker_data("scma", processed, test_per_worker=-1)


# =========================================================================== real mirror


def test_real_fmnist3_and_scma(mirror, tmp_path):
    from fedrepro.data import load_dataset

    for source in ("fashion_mnist", "chest_accelerometer"):
        load_dataset(source, tmp_path / "raw", mirror, download=False).save(tmp_path / source)
    t = time.perf_counter()
    fm = build_worker_data("fmnist3", tmp_path)
    sc = build_worker_data("scma", tmp_path)
    cold = time.perf_counter() - t
    assert fm.meta["sizes"] == {"train": [6000] * 3, "test": [1000] * 3} and fm.n_features == 784
    assert sc.n_workers == 15 and sc.n_features == 35 and sc.n_classes == 7
    assert 70000 < sum(sc.meta["sizes"]["train"]) + sum(sc.meta["sizes"]["test"]) < 76000   # spec: ~73k windows
    assert cold < 30
    t = time.perf_counter()
    assert _same(sc, build_worker_data("scma", tmp_path)) and _same(fm, build_worker_data("fmnist3", tmp_path))
    assert time.perf_counter() - t < 5
