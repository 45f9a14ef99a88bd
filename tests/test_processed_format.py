"""The processed-dataset folder (issue #28): uint8 pixels decoded bit-identically to the float arrays
the loaders used to write, memory-mapped loading, and writes that never look complete half-way."""
from __future__ import annotations

import gzip

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp

from fedrepro.data import Dataset, fetch, load
from fedrepro.data.dataset import MANIFEST, PixelArray, processed_path
from fedrepro.data.formats import read_cifar_bin, read_idx
from fedrepro.data.loaders import CIFAR10_TRAIN

ALL_PIXELS = np.arange(256, dtype=np.uint8)


def old_float_images(pixels: np.ndarray, dtype, inverted: bool = False) -> np.ndarray:
    """What the loaders computed before issue #28 (and saved as float): MNIST / Fashion-MNIST / USPS
    ``pixels.astype(float64) / 255.0`` (USPS then ``1.0 - X`` if inverted), CIFAR-10
    ``X = pixels.astype(float32); X /= 255``."""
    if np.dtype(dtype) == np.float32:
        X = pixels.astype(np.float32)
        X /= 255
        return X
    X = pixels.astype(np.float64) / 255.0
    return 1.0 - X if inverted else X


@pytest.mark.parametrize("dtype,inverted", [(np.float64, False), (np.float32, False), (np.float64, True)])
def test_every_pixel_value_decodes_to_the_old_float_bit_for_bit(dtype, inverted):
    """Decoding is elementwise, so all 256 values (at many positions and row selections) prove it for
    every image; the float32 a neural model sees (float64 -> float32 cast) is equal too."""
    rng = np.random.default_rng(0)
    pixels = np.vstack([np.tile(ALL_PIXELS, (3, 1)).reshape(-1, 16), rng.integers(0, 256, (37, 16), dtype=np.uint8)])
    X, old = PixelArray(pixels, dtype, inverted), old_float_images(pixels, dtype, inverted)
    assert X.shape == old.shape and X.dtype == old.dtype and len(X) == len(old)
    assert np.asarray(X).tobytes() == old.tobytes()
    rows = rng.permutation(len(pixels))[:23]
    for sel in (rows, np.sort(rows), slice(3, 40, 3), 5, (rows, slice(2, 9))):
        np.testing.assert_array_equal(X[sel], old[sel], strict=True)
    np.testing.assert_array_equal(np.asarray(X[rows], dtype=np.float32), old[rows].astype(np.float32), strict=True)
    np.testing.assert_array_equal(np.asarray(X, dtype=np.float32), old.astype(np.float32), strict=True)
    if not inverted:
        assert X[0][0] == 0.0 and X[0][15] == 15 / 255 and np.asarray(X).max() == 1.0


def test_pixel_array_rejects_non_uint8():
    with pytest.raises(ValueError, match="uint8"):
        PixelArray(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="2-D"):
        PixelArray(np.zeros(3, dtype=np.uint8))


def _toy(kind: str) -> Dataset:
    rng = np.random.default_rng(1)
    n = 30
    X = {"dense": rng.standard_normal((n, 4)),
         "csr": sp.random(n, 9, density=0.3, format="csr", random_state=2),
         "pixels": PixelArray(rng.integers(0, 256, (n, 12), dtype=np.uint8), np.float32)}[kind]
    return Dataset("toy", X, rng.integers(0, 3, n), np.array(["train"] * 20 + ["test"] * 10),
                   {"participant": np.repeat(["a", "b", "c"], 10), "frame": np.arange(n, dtype=np.int64)},
                   {"classes": [0, 1, 2], "note": "ü"})


@pytest.mark.parametrize("kind", ["dense", "csr", "pixels"])
def test_save_load_round_trip_keeps_every_array_and_dtype(tmp_path, kind):
    ds = _toy(kind)
    ds.save(tmp_path / "toy")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy"]          # no .partial left behind
    back = Dataset.load(tmp_path / "toy")
    assert back.name == "toy" and back.meta == ds.meta and type(back.X) is type(ds.X)
    if kind == "csr":
        assert (back.X != ds.X).nnz == 0 and back.X.dtype == ds.X.dtype
    else:
        np.testing.assert_array_equal(np.asarray(back.X), np.asarray(ds.X), strict=True)
    for a, b in ((back.y, ds.y), (back.split, ds.split), *((back.groups[k], ds.groups[k]) for k in ds.groups)):
        np.testing.assert_array_equal(a, b, strict=True)
    assert sorted(back.groups) == sorted(ds.groups)


def test_load_memory_maps_x_and_load_shared_is_read_only(tmp_path):
    _toy("pixels").save(tmp_path / "img")
    _toy("dense").save(tmp_path / "tab")
    img, tab = Dataset.load(tmp_path / "img"), Dataset.load(tmp_path / "tab")
    assert isinstance(img.X.pixels.base, np.memmap) and isinstance(tab.X.base, np.memmap)
    tab.X[0, 0] = 7.0                                   # copy-on-write: the file keeps its value
    assert Dataset.load(tmp_path / "tab").X[0, 0] == _toy("dense").X[0, 0]
    shared = Dataset.load_shared(tmp_path / "img")
    assert Dataset.load_shared(tmp_path / "img") is shared
    assert not shared.X.pixels.flags.writeable and not shared.y.flags.writeable


def test_load_shared_keeps_the_last_datasets_and_rereads_a_rewritten_folder(tmp_path, monkeypatch):
    import fedrepro.data.dataset as dataset_module

    monkeypatch.setattr(dataset_module, "_SHARED", dataset_module.Kept(2))
    for key in ("a", "b", "c"):
        _toy("dense").save(tmp_path / key)
    a, b = Dataset.load_shared(tmp_path / "a"), Dataset.load_shared(tmp_path / "b")
    assert Dataset.load_shared(tmp_path / "a") is a and Dataset.load_shared(tmp_path / "b") is b   # alternating cells
    Dataset.load_shared(tmp_path / "c")                 # a third: the least recently used (a) goes
    assert Dataset.load_shared(tmp_path / "b") is b and Dataset.load_shared(tmp_path / "a") is not a
    _toy("pixels").save(tmp_path / "b")                 # rewritten: read again, the old version dropped
    fresh = Dataset.load_shared(tmp_path / "b")
    assert fresh is not b and isinstance(fresh.X, PixelArray)
    assert sum(k[0] == str((tmp_path / "b").resolve()) for k in dataset_module._SHARED.keys()) == 1


def test_save_replaces_a_folder_and_an_incomplete_folder_is_never_read(tmp_path):
    _toy("dense").save(tmp_path / "toy")
    (tmp_path / "toy" / "stale.npy").write_bytes(b"x")
    _toy("pixels").save(tmp_path / "toy")
    assert not (tmp_path / "toy" / "stale.npy").exists()
    assert isinstance(Dataset.load(tmp_path / "toy").X, PixelArray)
    assert processed_path(tmp_path, "toy") == tmp_path / "toy"
    (tmp_path / "toy" / MANIFEST).unlink()             # a write interrupted before its manifest
    with pytest.raises(FileNotFoundError, match="not a processed dataset"):
        Dataset.load(tmp_path / "toy")
    with pytest.raises(ValueError, match=r"'toy' not found.*snakemake data/processed/toy/dataset\.json"):
        processed_path(tmp_path, "toy")


def test_truncated_array_file_is_an_error(tmp_path):
    _toy("pixels").save(tmp_path / "toy")
    file = tmp_path / "toy" / "X.npy"
    file.write_bytes(file.read_bytes()[:-5])
    with pytest.raises(ValueError, match=r"X\.npy: \d+ bytes, the manifest says \d+; rebuild it"):
        Dataset.load(tmp_path / "toy")


def test_old_npz_files_are_not_read_and_the_message_says_so(tmp_path):
    np.savez(tmp_path / "mnist.npz", X=np.zeros((2, 2)), y=np.zeros(2))
    with pytest.raises(ValueError, match=r"mnist\.npz is the format before issue #28 and is no longer read"):
        processed_path(tmp_path, "mnist")
    with pytest.raises(FileNotFoundError, match=r"no longer read: rebuild it with .*data/processed/mnist/dataset"):
        Dataset.load(tmp_path / "mnist.npz")
    with pytest.raises(ValueError, match="folder of .npy files"):
        _toy("dense").save(tmp_path / "toy.npz")


# --------------------------------------------------------------------------- real raw files


def _old_pixels(name: str, paths: dict) -> tuple[np.ndarray, type, bool]:
    """The raw uint8 pixels of a mirror dataset, read independently of the loaders."""
    if name in ("mnist", "fashion_mnist"):
        px = [read_idx(paths[f"{p}-images-idx3-ubyte.gz"]).reshape(-1, 784) for p in ("train", "t10k")]
        return np.vstack(px), np.float64, False
    if name == "cifar10":
        return np.vstack([read_cifar_bin(paths[n])[0] for n in (*CIFAR10_TRAIN, "test_batch.bin")]), np.float32, False
    data = sio.loadmat(paths["usps_all.mat"])["data"]                           # (256, 1100, 10)
    return data.transpose(2, 1, 0).reshape(-1, 16, 16).transpose(0, 2, 1).reshape(-1, 256), np.float64, False


@pytest.mark.parametrize("key", [pytest.param("mnist", marks=pytest.mark.slow), "fashion_mnist", "usps-roweis",
                                 pytest.param("cifar10", marks=pytest.mark.slow)])
def test_processed_images_equal_the_old_float_arrays(mirror, tmp_path, key):
    """Raw files -> loader -> saved folder -> memory-mapped load: every value equals the old loader's
    float array, and so does the float32 training subset a neural cell takes."""
    name, _, variant = key.partition("-")
    paths = fetch(name, tmp_path / "raw", mirror, variant=variant or None, download=False)
    load(name, paths, variant=variant or None).save(tmp_path / key)
    X = Dataset.load(tmp_path / key).X
    pixels, dtype, inverted = _old_pixels(name, paths)
    old = old_float_images(pixels, dtype, inverted)
    assert isinstance(X, PixelArray) and X.dtype == old.dtype
    assert np.asarray(X).tobytes() == old.tobytes()
    rows = np.sort(np.random.default_rng(0).choice(len(old), 3000, replace=False))
    assert np.asarray(X[rows], dtype=np.float32).tobytes() == old[rows].astype(np.float32).tobytes()
    assert (tmp_path / key / "X.npy").stat().st_size < old.nbytes // 3


def test_gzip_idx_pixels_stay_uint8(tmp_path):
    """The IDX loader hands the file's uint8 pixels through (no float copy of the whole set)."""
    imgs = np.random.default_rng(3).integers(0, 256, (5, 28, 28), dtype=np.uint8)
    paths = {}
    for part, n in (("train", 3), ("t10k", 2)):
        sl = imgs[:3] if part == "train" else imgs[3:]
        for kind, arr, dims in (("images", sl, (n, 28, 28)), ("labels", np.arange(n, dtype=np.uint8), (n,))):
            path = tmp_path / f"{part}-{kind}-idx{len(dims)}-ubyte.gz"
            header = bytes([0, 0, 0x08, len(dims)]) + np.array(dims, dtype=">u4").tobytes()   # 0x08: uint8
            path.write_bytes(gzip.compress(header + arr.tobytes()))
            paths[path.name] = path
    ds = load("mnist", paths)
    assert isinstance(ds.X, PixelArray) and ds.X.pixels.dtype == np.uint8
    assert np.asarray(ds.X).tobytes() == old_float_images(imgs.reshape(5, -1), np.float64).tobytes()
