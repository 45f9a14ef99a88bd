"""Loaders: real mirror files (shapes and counts from the manifest) and synthetic raw files."""
from __future__ import annotations

import bz2
from pathlib import Path

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from fedrepro.data import Dataset, fetch, load
from fedrepro.data.loaders import (CIFAR10_CLASSES, LOCALIZATION_ACTIVITIES, SHL_FEATURES, band_log_power,
                                   frame_labels, parse_libsvm, read_libsvm, window_stats)
from fedrepro.data.registry import SHL_CHANNELS, SHL_LOCATIONS

MIRROR_ENV = "FEDREPRO_DATA_MIRROR"




@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("raw")


def get(name, mirror, cache, variant=None, **opts) -> Dataset:
    return load(name, fetch(name, cache, mirror, variant=variant, download=False), variant=variant, **opts)


def counts(y, k):
    return np.bincount(y, minlength=k).tolist()


# =========================================================================== real files


def test_adult_raw_preprocessing_equals_authors_mat(mirror, cache):
    raw, mat = get("adult", mirror, cache, "raw"), get("adult", mirror, cache, "mat")
    assert raw.X.shape == mat.X.shape == (45222, 14)
    np.testing.assert_array_equal(raw.X, mat.X)  # exact: every integer code and raw value
    np.testing.assert_array_equal(raw.y, mat.y)
    assert raw.y.sum() == 11208
    assert (raw.groups["source"] == "adult.test").sum() == 15060
    cats = raw.meta["categories"]
    assert [len(cats[c]) for c in raw.meta["categorical"]] == [7, 16, 7, 14, 6, 5, 2, 41]
    assert cats["education"][:2] == ["10th", "11th"] and cats["native-country"][38] == "United-States"
    assert raw.split is None and not np.isnan(raw.X).any()


def test_qsar_csv_equals_authors_mat(mirror, cache):
    csv, mat = get("qsar_oral_toxicity", mirror, cache, "csv"), get("qsar_oral_toxicity", mirror, cache, "mat")
    for ds in (csv, mat):
        assert sp.isspmatrix_csr(ds.X) and ds.X.shape == (8992, 1024)
        assert counts(ds.y, 2) == [8251, 741]
    assert mat.X.nnz == csv.X.nnz == 856863
    assert (csv.X != mat.X).nnz == 0
    np.testing.assert_array_equal(csv.y, mat.y)
    assert mat.meta["original_labels"] == {"0": -1, "1": 1}


@pytest.mark.parametrize("name,train_counts,test_counts", [
    pytest.param("mnist", [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949],
                 [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009],
                 marks=pytest.mark.slow),    # same IDX loader as fashion_mnist, which stays fast
    ("fashion_mnist", [6000] * 10, [1000] * 10),
])
def test_idx_datasets(mirror, cache, name, train_counts, test_counts):
    ds = get(name, mirror, cache)
    tr, te = ds.subset("train"), ds.subset("test")
    assert tr.X.shape == (60000, 784) and te.X.shape == (10000, 784) and ds.X.dtype == np.float64
    assert counts(tr.y, 10) == train_counts and counts(te.y, 10) == test_counts
    X = np.asarray(ds.X)                # uint8 pixels decoded (fedrepro.data.dataset.PixelArray)
    assert X.min() == 0.0 and X.max() == 1.0
    assert (ds.split[:60000] == "train").all()


def test_usps_h5_and_libsvm_test_file(mirror, cache):
    ds = get("usps", mirror, cache, "h5")
    tr, te = ds.subset("train"), ds.subset("test")
    assert tr.X.shape == (7291, 256) and te.X.shape == (2007, 256)
    assert counts(tr.y, 10) == [1194, 1005, 731, 658, 652, 556, 664, 645, 542, 644]
    assert 0.0 <= ds.X.min() and ds.X.max() <= 1.0
    X, labels = read_libsvm(mirror / "usps" / "usps.t.bz2", n_features=256)
    assert X.shape == (2007, 256) and -1.0 <= X.min() and X.max() <= 1.0
    assert counts(labels.astype(int), 11)[1:] == [359, 264, 198, 166, 200, 160, 170, 147, 166, 177]
    np.testing.assert_array_equal(labels - 1, te.y)  # same order, labels 1..10 = digit + 1


def test_usps_roweis_mat(mirror, cache):
    """Roweis usps_all.mat (the FRPG paper's 8,000 / 3,000 USPS): layout read with scipy.io.loadmat,
    class index j -> digit j mod 10, column-major 16x16 images, balanced 800 / 300 per-class split."""
    raw = sio.loadmat(mirror / "usps_roweis" / "usps_all.mat")["data"]
    assert raw.shape == (256, 1100, 10) and raw.dtype == np.uint8 and int(raw.sum(dtype=np.int64)) == 178348534
    ds = get("usps", mirror, cache, "roweis")
    tr, te = ds.subset("train"), ds.subset("test")
    assert tr.X.shape == (8000, 256) and te.X.shape == (3000, 256)
    assert counts(tr.y, 10) == [800] * 10 and counts(te.y, 10) == [300] * 10
    assert ds.meta["scaling"] == "pixel/255"          # background 0: not inverted
    np.testing.assert_array_equal(ds.X[0], raw[:, 0, 0].reshape(16, 16, order="F").ravel() / 255.0)
    assert ds.y[0] == 1 and ds.y[-1] == 0
    # class index 10 is digit 0: a ring with an empty centre (a wrong j -> digit map would put a '9' here)
    zeros = ds.X[ds.y == 0].reshape(-1, 16, 16)
    assert zeros[:, 6:10, 6:10].mean() < 0.5 * zeros.mean()
    # the paper's USPS constant L = 156 is floor(max_i ||x_i||^2) of these pixel/255 vectors
    assert int((np.asarray(ds.X) ** 2).sum(1).max()) == 156


def test_chest_accelerometer(mirror, cache):
    full = get("chest_accelerometer", mirror, cache, drop_label0=False)
    assert full.X.shape == (1926896, 3)
    rows = [162501, 138001, 102341, 122201, 160001, 140901, 163001, 138001, 166741,
            126801, 104451, 114702, 67651, 116101, 103501]
    assert counts(full.groups["participant"], 16)[1:] == rows
    assert counts(full.y, 8) == [3719, 608667, 47878, 216737, 357064, 51498, 47770, 593563]
    ds = get("chest_accelerometer", mirror, cache)  # label 0 dropped (ASPIRE spec §4.3)
    assert ds.X.shape == (1926896 - 3719, 3) and ds.meta["classes"] == [1, 2, 3, 4, 5, 6, 7]
    assert counts(ds.y, 7) == [608667, 47878, 216737, 357064, 51498, 47770, 593563]
    seg = ds.groups["segment"]
    same = seg[1:] == seg[:-1]
    assert (ds.y[1:][same] == ds.y[:-1][same]).all()
    assert (ds.groups["participant"][1:][same] == ds.groups["participant"][:-1][same]).all()


@pytest.mark.slow                              # decodes all 60,000 CIFAR-10 images (~10 s)
def test_cifar10(mirror, cache):
    ds = get("cifar10", mirror, cache)
    train = ds.split == "train"
    assert ds.X.shape == (60000, 3072) and train.sum() == 50000 and train[:50000].all()
    assert counts(ds.y[train], 10) == [5000] * 10 and counts(ds.y[~train], 10) == [1000] * 10
    assert counts(ds.y[:10000], 10) == [1005, 974, 1032, 1016, 999, 937, 1030, 1001, 1025, 981]
    assert ds.meta["image_shape"] == [3, 32, 32] and 0.0 <= ds.X[:1000].min() and ds.X[:1000].max() <= 1.0
    names = (mirror / "cifar10" / "batches.meta.txt").read_text().split()
    assert names == CIFAR10_CLASSES == ds.meta["classes"]


# =========================================================================== LIBSVM / real-sim (synthetic)


def test_parse_libsvm_exact_format():
    raw = (b"+1 3:0.5 10:-1.25e-1\r\n"
           b"-1 1:2 \n"
           b"\n"
           b"-1\n"
           b"1 2:3.0 7:4")
    X, y = parse_libsvm(raw, n_features=12)
    dense = np.zeros((3 + 1, 12))
    dense[0, [2, 9]] = [0.5, -0.125]
    dense[1, 0] = 2
    dense[3, [1, 6]] = [3.0, 4.0]
    assert sp.isspmatrix_csr(X) and X.shape == (4, 12)
    np.testing.assert_array_equal(X.toarray(), dense)
    np.testing.assert_array_equal(y, [1, -1, -1, 1])


@pytest.mark.parametrize("bad", [b"1 2:3 # comment\n", b"1 qid:3 2:1\n", b"1 0:1\n", b"1 2.5:1\n", b"1 x:1\n",
                                 b"1 3:1 2:1\n", b"1 2:1 2:3\n", b"1 2:\n", b"x 2:1\n"])
def test_parse_libsvm_rejects_malformed(bad):
    with pytest.raises(ValueError):
        parse_libsvm(bad)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([-1, 1]),
                          st.dictionaries(st.integers(1, 40), st.floats(-1e3, 1e3, allow_nan=False), max_size=8)),
                min_size=1, max_size=20))
def test_parse_libsvm_roundtrip(rows):
    text = "".join(f"{lab} " + " ".join(f"{k}:{v!r}" for k, v in sorted(feats.items())) + "\n"
                   for lab, feats in rows)
    X, y = parse_libsvm(text.encode(), n_features=40)
    dense = np.zeros((len(rows), 40))
    for i, (_, feats) in enumerate(rows):
        for k, v in feats.items():
            dense[i, k - 1] = v
    np.testing.assert_array_equal(X.toarray(), dense)
    np.testing.assert_array_equal(y, [r[0] for r in rows])


def _hand_parse_libsvm(raw: bytes, n_features=None):
    """The package's LIBSVM parser until issue #44 (numpy, no loop over rows), kept here only as the
    reference scikit-learn's reader must match."""
    import warnings
    if not raw.endswith(b"\n"):
        raw += b"\n"
    buf = np.frombuffer(raw, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10)
    starts = np.r_[0, ends[:-1] + 1]
    visible = np.flatnonzero(~np.isin(buf, (9, 10, 13, 32)))
    nonblank = (np.searchsorted(visible, ends) - np.searchsorted(visible, starts)) > 0
    colons = np.flatnonzero(buf == 58)
    nnz = (np.searchsorted(colons, ends) - np.searchsorted(colons, starts))[nonblank]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        tokens = np.fromstring(raw.replace(b":", b" ").decode("ascii"), dtype=np.float64, sep=" ")
    per_row = 1 + 2 * nnz
    assert tokens.size == per_row.sum()
    is_label = np.zeros(tokens.size, dtype=bool)
    is_label[np.r_[0, np.cumsum(per_row)[:-1]].astype(np.int64)] = True
    pairs = tokens[~is_label].reshape(-1, 2)
    idx = pairs[:, 0].astype(np.int64)
    n_features = int(idx.max()) if n_features is None and idx.size else int(n_features or 0)
    X = sp.csr_matrix((pairs[:, 1], idx - 1, np.r_[0, np.cumsum(nnz)]), shape=(nnz.size, n_features))
    X.sum_duplicates()
    X.sort_indices()
    return X, tokens[is_label]


def _assert_same_arrays(a, b):
    (Xa, ya), (Xb, yb) = a, b
    assert Xa.shape == Xb.shape and Xa.format == Xb.format == "csr" and Xa.has_sorted_indices and Xb.has_sorted_indices
    for name in ("data", "indices", "indptr"):
        u, v = getattr(Xa, name), getattr(Xb, name)
        assert u.dtype == v.dtype, name
        np.testing.assert_array_equal(u, v, err_msg=name)
    assert ya.dtype == yb.dtype == np.float64 and ya.shape == yb.shape
    np.testing.assert_array_equal(ya, yb)


LIBSVM_FILES = {"usps.bz2": 256, "usps.t.bz2": 256, "real-sim.bz2": 20958}   # the registry's LIBSVM files


def test_libsvm_reader_gives_the_hand_parsers_arrays_on_the_mirror_files(mirror):
    """scikit-learn's reader (issue #44) gives element-for-element the arrays of the hand-written
    parser on every LIBSVM file the mirror holds (this mirror: usps.t.bz2), with and without
    n_features."""
    found = [p for p in sorted(mirror.rglob("*.bz2")) if p.name in LIBSVM_FILES]
    if not found:
        pytest.skip(f"no LIBSVM file ({sorted(LIBSVM_FILES)}) in the mirror {mirror}")
    for path in found:
        raw = bz2.decompress(path.read_bytes())
        for n in (LIBSVM_FILES[path.name], None):
            _assert_same_arrays(read_libsvm(path, n_features=n), _hand_parse_libsvm(raw, n))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 12),
                          st.dictionaries(st.integers(1, 60), st.floats(-1e6, 1e6, allow_nan=False, width=32),
                                          max_size=10)),
                min_size=1, max_size=25),
       st.sampled_from(["\n", "\r\n"]), st.booleans(), st.sampled_from([None, 60, 75]))
def test_libsvm_reader_gives_the_hand_parsers_arrays(rows, eol, blank, n):
    """Same arrays on generated LIBSVM text: labels, explicit zeros, empty rows, CRLF, blank lines,
    trailing spaces, a last line without its newline, widths given or inferred."""
    lines = [f"{lab} " + " ".join(f"{k}:{v!r}" for k, v in sorted(feats.items())) for lab, feats in rows]
    if blank:
        lines.insert(len(lines) // 2, "")
    raw = eol.join(lines).encode()
    _assert_same_arrays(parse_libsvm(raw, n), _hand_parse_libsvm(raw, n))


def test_libsvm_reader_on_empty_text():
    """No rows: an empty matrix of the given width (the hand parser's np.fromstring read one
    spurious number from an empty text and failed)."""
    for raw in (b"", b"\n", b"\n\r\n"):
        X, y = parse_libsvm(raw, n_features=7)
        assert X.shape == (0, 7) and y.shape == (0,)
        assert parse_libsvm(raw)[0].shape == (0, 0)


def test_real_sim_loader_on_synthetic_file(tmp_path):
    rng = np.random.default_rng(0)
    dense = np.where(rng.random((25, 20958)) < 0.001, rng.random((25, 20958)), 0.0)
    dense[3] = 0.0  # an all-zero row: label only
    labels = np.where(rng.random(25) < 0.3, 1, -1)
    lines = [f"{l:+d} " + " ".join(f"{j + 1}:{row[j]:.6g}" for j in np.flatnonzero(row)) for l, row in zip(labels, dense)]
    path = tmp_path / "real-sim.bz2"
    path.write_bytes(bz2.compress(("\n".join(lines) + "\n").encode()))
    ds = load("real_sim", {"real-sim.bz2": path})
    assert sp.isspmatrix_csr(ds.X) and ds.X.shape == (25, 20958)
    np.testing.assert_allclose(ds.X.toarray(), dense, rtol=1e-5)
    np.testing.assert_array_equal(ds.y, (labels == 1).astype(int))


def test_usps_libsvm_loader_on_synthetic_files(tmp_path):
    rng = np.random.default_rng(1)
    paths = {}
    for name, n in (("usps.bz2", 12), ("usps.t.bz2", 5)):
        X = np.round(rng.uniform(-1, 1, (n, 256)), 6)
        lab = rng.integers(1, 11, n)
        text = "".join(f"{l} " + "".join(f"{j + 1}:{v:.6f} " for j, v in enumerate(row)) + "\n" for l, row in zip(lab, X))
        paths[name] = tmp_path / name
        paths[name].write_bytes(bz2.compress(text.encode()))
        if name == "usps.bz2":
            X_train, lab_train = X, lab
    ds = load("usps", paths, variant="libsvm")
    tr = ds.subset("train")
    assert tr.X.shape == (12, 256) and ds.subset("test").X.shape == (5, 256)
    np.testing.assert_allclose(tr.X, (X_train + 1) / 2)
    np.testing.assert_array_equal(tr.y, lab_train - 1)


def test_usps_roweis_loader_on_synthetic_mat(tmp_path):
    n_per = 11
    data = np.zeros((256, n_per, 10), dtype=np.uint8)
    data[16, :, :] = 255                # column-major index 16 = row 0, column 1
    data[0, :, 4] = 7                   # class index 5 (digit 5): pixel (0, 0)
    path = tmp_path / "usps_all.mat"
    sio.savemat(path, {"data": data})
    ds = load("usps", {"usps_all.mat": path}, variant="roweis", n_train_per_class=8)
    assert ds.X.shape == (10 * n_per, 256)
    assert (ds.X[:, 1] == 1.0).all() and (ds.X[:, 16] == 0.0).all()  # transposed to row-major
    assert counts(ds.y, 10) == [n_per] * 10 and ds.y[0] == 1 and ds.y[-1] == 0  # class j -> digit j mod 10
    assert np.allclose(ds.X[ds.y == 5, 0], 7 / 255)
    assert counts(ds.subset("train").y, 10) == [8] * 10 and counts(ds.subset("test").y, 10) == [3] * 10
    again = load("usps", {"usps_all.mat": path}, variant="roweis", n_train_per_class=8)
    np.testing.assert_array_equal(ds.split, again.split)  # seeded


# =========================================================================== localization (synthetic)

LOC_ROWS = """A01,010-000-024-033,633790226051280329,27.05.2009 14:03:25:127,4.062931060791016,1.8924342393875122,0.5074254274368286,walking
A01,020-000-033-111,633790226051820913,27.05.2009 14:03:25:183,4.291954040527344,1.7810497283935547,1.3444108963012695,walking
A01,020-000-032-221,633790226052091205,27.05.2009 14:03:25:210,4.359101295471191,1.8264134435653687,0.9688932299613953,lying down
A01,010-000-030-096,633790226052361498,27.05.2009 14:03:25:237,4.087835311889648,1.8799959421157837,0.4669482707977295,sitting on the ground
B02,010-000-024-033,633790226052631792,27.05.2009 14:03:25:263,4.33596658706665,1.8424569368362427,0.3950691223144531,standing up from sitting on the ground
E05,020-000-033-111,633790226052902082,27.05.2009 14:03:25:290,4.116001129150391,1.8245223760604858,1.1000000238418579,on all fours
"""


def test_localization_loader_on_synthetic_file(tmp_path):
    path = tmp_path / "ConfLongDemo_JSI.txt"
    path.write_text(LOC_ROWS)
    ds = load("localization_person_activity", {"ConfLongDemo_JSI.txt": path})
    assert ds.X.shape == (6, 3) and ds.X[0, 0] == 4.062931060791016
    assert ds.groups["participant"].tolist() == ["A", "A", "A", "A", "B", "E"]
    assert ds.groups["sequence"].tolist()[4:] == ["B02", "E05"]
    assert ds.groups["tag"].tolist()[:4] == ["ANKLE_LEFT", "CHEST", "BELT", "ANKLE_RIGHT"]
    assert ds.groups["timestamp"][0] == 633790226051280329
    names = [ds.meta["classes"][k] for k in ds.y]
    assert names == ["walking", "walking", "lying down", "sitting on the ground",
                     "standing up from sitting on the ground", "on all fours"]
    assert len(LOCALIZATION_ACTIVITIES) == 11
    ds.save(tmp_path / "loc")  # string groups must not need pickling
    back = Dataset.load(tmp_path / "loc")
    assert back.groups["tag"].tolist() == ds.groups["tag"].tolist()


def test_localization_rejects_unknown_tag(tmp_path):
    path = tmp_path / "ConfLongDemo_JSI.txt"
    path.write_text(LOC_ROWS.replace("020-000-032-221", "999-000-000-000"))
    with pytest.raises(ValueError, match="tag"):
        load("localization_person_activity", {"ConfLongDemo_JSI.txt": path})


# =========================================================================== SHL (synthetic)


def _write_shl(root: Path, n_frames: int, labels: np.ndarray) -> dict:
    rng = np.random.default_rng(2)
    t = np.arange(500) / 100.0
    paths = {}
    for loc in SHL_LOCATIONS:
        folder = root / "validation" / loc
        folder.mkdir(parents=True)
        for ch in SHL_CHANNELS:
            if ch == "Label":
                A = labels
            elif ch == "Pressure":
                A = 1000 + rng.normal(0, 0.1, (n_frames, 500))
            else:
                A = np.sin(2 * np.pi * 2.0 * t) + rng.normal(0, 0.01, (n_frames, 500))
            fmt = "%d" if ch == "Label" else "%.6f"
            np.savetxt(folder / f"{ch}.txt", A, fmt=fmt, delimiter=" ")
            paths[f"validation/{loc}/{ch}.txt"] = folder / f"{ch}.txt"
    return paths


def test_shl_loader_on_synthetic_files(tmp_path):
    labels = np.ones((6, 500), dtype=int)
    labels[1] = 0                        # null frame -> dropped
    labels[2, :150] = 3                  # mode 1 with share 0.7 < 0.8 -> dropped
    labels[3, :50] = 4                   # mode 1 with share 0.9 -> kept
    labels[4] = 8                        # Subway
    labels[5] = 2
    paths = _write_shl(tmp_path, 6, labels)
    ds = load("shl", paths, chunk_frames=4)
    assert ds.X.shape == (4 * 4, 55) and len(SHL_FEATURES) == 55
    assert ds.groups["frame"].tolist()[:4] == [0, 3, 4, 5]
    assert ds.y.tolist()[:4] == [0, 0, 7, 1]
    assert counts(np.unique(ds.groups["location"], return_inverse=True)[1], 4) == [4] * 4
    assert ds.meta["dropped_frames"]["null_or_mixed"] == 2 * 4
    quick = load("shl", paths, stride=2)
    assert quick.groups["frame"].tolist()[:2] == [0, 4]


def test_window_features():
    t = np.arange(500) / 100.0
    A = np.vstack([np.sin(2 * np.pi * 2.0 * t), np.sin(2 * np.pi * 20.0 * t)])
    P = band_log_power(A)
    assert P.shape == (2, 5) and P[0].argmax() == 1 and P[1].argmax() == 4
    S = window_stats(np.array([[1.0, 3.0, 2.0, 6.0]]))
    np.testing.assert_allclose(S[0, [0, 2, 3, 4, 7]], [3.0, 1.0, 6.0, 2.5, 7 / 3])
    mode, share = frame_labels(np.array([[1, 1, 2, 0]]))
    assert mode.tolist() == [1] and share.tolist() == [0.5]


def test_subset_of_contiguous_rows_is_a_view_with_the_same_values():
    """``Dataset.subset`` slices when the split's rows are contiguous (no copy of e.g. MNIST's
    training images per cell) and indexes otherwise; both give exactly the rows of that split."""
    from fedrepro.data.dataset import Dataset

    X = np.arange(24.0).reshape(8, 3)
    y = np.arange(8)
    for split in (np.array(["train"] * 5 + ["test"] * 3), np.array(["train", "test"] * 4)):
        ds = Dataset("toy", X, y, split, {"g": np.arange(8) % 2}, {})
        for which in ("train", "test"):
            rows = np.flatnonzero(split == which)
            sub = ds.subset(which)
            np.testing.assert_array_equal(sub.X, X[rows])
            np.testing.assert_array_equal(sub.y, y[rows])
            np.testing.assert_array_equal(sub.groups["g"], (np.arange(8) % 2)[rows])
            contiguous = rows[-1] - rows[0] + 1 == len(rows)
            assert np.shares_memory(sub.X, X) == contiguous
