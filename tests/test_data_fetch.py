"""Fetching: cache -> mirror -> download order, checksums, atomic writes, offline checks."""
from __future__ import annotations

import hashlib
import importlib
import io
import json
import lzma
import re
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from fedrepro.data import (DATASETS, LOADERS, ChecksumError, DatasetUnavailable, UnpinnedChecksumWarning,
                           available, fetch, locate)
from fedrepro.data import loaders, registry
from fedrepro.data.registry import DatasetSpec, FileSpec, Source, Variant

MIRROR_ENV = "FEDREPRO_DATA_MIRROR"
# the package attribute ``fetch`` is the function; the module is reached through importlib
fetch_mod = importlib.import_module("fedrepro.data.fetch")




@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Tests never touch the network: downloads are refused unless a test patches them."""
    def refuse(url, folder):
        raise ConnectionError(f"network disabled in tests ({url})")
    monkeypatch.setattr(fetch_mod, "_download", refuse)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def no_partials(folder: Path) -> bool:
    return not [p for p in folder.rglob("*") if ".partial" in p.name]


# --------------------------------------------------------------------------- registry


def test_registry_is_consistent():
    hexsha = re.compile(r"^[0-9a-f]{64}$")
    assert set(DATASETS) == {"adult", "qsar_oral_toxicity", "real_sim", "mnist", "fashion_mnist", "usps",
                             "cifar10", "localization_person_activity", "chest_accelerometer", "shl"}
    for spec in DATASETS.values():
        assert spec.default_variant in spec.variants
        assert spec.licence and spec.citation and spec.urls
        for v in spec.variants.values():
            assert LOADERS[v.loader_name] is v.loader
            assert all(f in spec.files for f in v.files)
        for f in spec.files.values():
            assert f.sha256 is None or hexsha.match(f.sha256)
            assert f.sources and all(s.kind in ("mirror", "url", "manual") for s in f.sources)
            assert all(s.sha256 is None or hexsha.match(s.sha256) for s in f.sources)


def test_registry_matches_mirror_manifest(mirror):
    """Every mirror source carries the manifest's sha256 and size; decompressed pins match too."""
    manifest = json.loads((mirror / "manifest.json").read_text())
    by_path = {f["path"]: f for d in manifest["datasets"] for f in d["files"]}
    checked = 0
    for spec in DATASETS.values():
        for f in spec.files.values():
            for s in f.sources:
                if s.kind != "mirror" or s.location not in by_path:
                    continue
                entry = by_path[s.location]
                assert s.sha256 == entry["sha256"] and s.bytes == entry["bytes"], s.location
                if "decompressed" in entry:
                    assert f.sha256 == entry["decompressed"]["sha256"], s.location
                checked += 1
    assert checked >= 30


# --------------------------------------------------------------------------- real mirror


def test_fetch_through_mirror_then_cache(mirror, tmp_path):
    paths = fetch("adult", tmp_path, mirror, variant="mat", download=False)
    assert set(paths) == {"adult.mat", "adultclass.mat"}
    for name, p in paths.items():
        assert p == tmp_path / "adult" / name
        assert fetch_mod.sha256_file(p) == DATASETS["adult"].files[name].sha256
    # now served from the cache alone: no mirror, no network
    again = fetch("adult", tmp_path, mirror=None, variant="mat", download=False)
    assert again == paths
    assert no_partials(tmp_path)


def test_fetch_uses_env_mirror(mirror, tmp_path, monkeypatch):
    monkeypatch.setenv(MIRROR_ENV, str(mirror))
    paths = fetch("adult", tmp_path, variant="mat", download=False)
    assert paths["adult.mat"].is_file()


def test_fetch_extracts_zip_member_and_verifies_it(mirror, tmp_path):
    """QSAR: the mirror zip is checked, then the csv member is checked against its own pin."""
    p = fetch("qsar_oral_toxicity", tmp_path, mirror, download=False)["qsar_oral_toxicity.csv"]
    assert p.stat().st_size == 18505536
    assert fetch_mod.sha256_file(p) == "c8ec16179f505370c13491a2c98e0918aae3680270aad0a6f95de3aeb300c874"


def test_corrupted_mirror_copy_is_rejected(mirror, tmp_path):
    bad_mirror = tmp_path / "mirror" / "adult"
    bad_mirror.mkdir(parents=True)
    for n in ("adult.mat", "adultclass.mat"):
        shutil.copyfile(mirror / "adult" / n, bad_mirror / n)
    target = bad_mirror / "adultclass.mat"
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    cache = tmp_path / "cache"
    with pytest.raises(ChecksumError) as err:
        fetch("adult", cache, tmp_path / "mirror", variant="mat", download=False)
    msg = str(err.value)
    expected = DATASETS["adult"].files["adultclass.mat"].sha256
    assert "adultclass.mat" in msg and expected in msg and sha(bytes(data)) in msg
    assert not (cache / "adult" / "adultclass.mat").exists()
    assert no_partials(cache)


def test_corrupted_cache_copy_is_replaced(mirror, tmp_path):
    p = fetch("adult", tmp_path, mirror, variant="mat", download=False)["adultclass.mat"]
    p.write_bytes(p.read_bytes()[:-1])
    with pytest.warns(UserWarning, match="corrupt"):
        p2 = fetch("adult", tmp_path, mirror, variant="mat", download=False)["adultclass.mat"]
    assert fetch_mod.sha256_file(p2) == DATASETS["adult"].files["adultclass.mat"].sha256


def test_missing_dataset_raises_one_clear_message(tmp_path, monkeypatch):
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    with pytest.raises(DatasetUnavailable) as err:
        fetch("real_sim", tmp_path / "cache", download=True)  # download attempted, refused (offline)
    msg = str(err.value)
    assert "'real_sim'" in msg and MIRROR_ENV in msg
    assert "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/real-sim.bz2" in msg
    assert not (tmp_path / "cache" / "real_sim" / "real-sim.bz2").exists()


def test_usps_train_file_missing_from_mirror(mirror, tmp_path):
    with pytest.raises(DatasetUnavailable, match="usps.bz2"):
        fetch("usps", tmp_path, mirror, variant="libsvm", download=False)


def test_available_offline(mirror, tmp_path):
    cache = tmp_path / "cache"
    for name in ("adult", "qsar_oral_toxicity", "mnist", "fashion_mnist", "cifar10", "chest_accelerometer"):
        assert available(name, cache, mirror), name
    assert available("usps", cache, mirror, variant="h5")
    assert not available("usps", cache, mirror, variant="libsvm")
    assert available("usps", cache, mirror, variant="roweis")  # usps_roweis/usps_all.mat, sha256-pinned
    for name in ("real_sim", "localization_person_activity", "shl"):
        assert not available(name, cache, mirror), name
    assert not available("adult", cache, mirror=tmp_path / "empty")
    assert not cache.exists()  # checking never writes
    fetch("adult", cache, mirror, variant="mat", download=False)
    assert locate("adult", cache, None, variant="mat") == {"adult.mat": "cache", "adultclass.mat": "cache"}


# --------------------------------------------------------------------------- synthetic packagings


def _toy(monkeypatch, files, name="toy"):
    spec = DatasetSpec(name=name, title="toy", files={f.name: f for f in files},
                       variants={"v": Variant(tuple(f.name for f in files), loaders.adult)}, default_variant="v",
                       raw_format="bytes", expected_shape={}, urls=("https://example.invalid/toy",),
                       licence="none", citation="none")
    monkeypatch.setitem(registry.DATASETS, name, spec)
    return spec


def _make_packages(root: Path, payload: bytes):
    root.mkdir(parents=True, exist_ok=True)
    (root / "a.bin.xz").write_bytes(lzma.compress(payload))
    with zipfile.ZipFile(root / "pkg.zip", "w") as zf:
        zf.writestr("__MACOSX/inner/a.bin", b"junk")
        zf.writestr("inner/a.bin", payload)
    with tarfile.open(root / "pkg.tar.gz", "w:gz") as tf:
        info = tarfile.TarInfo("batches/a.bin")
        info.size = len(payload)
        tf.addfile(info, io.BytesIO(payload))


@pytest.mark.parametrize("packaging", ["xz", "zip", "plain"])
def test_mirror_packagings(monkeypatch, tmp_path, packaging):
    payload = b"payload bytes\n" * 100
    mir = tmp_path / "mirror"
    _make_packages(mir / "toy", payload)
    (mir / "toy" / "a.bin").write_bytes(payload)
    src = {"xz": Source("mirror", "toy/a.bin.xz", sha((mir / "toy/a.bin.xz").read_bytes()), compression="xz"),
           "zip": Source("mirror", "toy/pkg.zip", None, archive="zip", member="*/a.bin"),
           "plain": Source("mirror", "toy/a.bin", sha(payload))}[packaging]
    _toy(monkeypatch, [FileSpec("a.bin", sha(payload), (src,))])
    p = fetch("toy", tmp_path / "cache", mir, download=False)["a.bin"]
    assert p.read_bytes() == payload
    assert no_partials(tmp_path / "cache")


def test_corrupted_compressed_mirror_package(monkeypatch, tmp_path):
    payload = b"x" * 5000
    mir = tmp_path / "mirror"
    _make_packages(mir / "toy", payload)
    good = sha((mir / "toy/a.bin.xz").read_bytes())
    raw = bytearray((mir / "toy/a.bin.xz").read_bytes())
    raw[-20] ^= 1
    (mir / "toy/a.bin.xz").write_bytes(bytes(raw))
    _toy(monkeypatch, [FileSpec("a.bin", sha(payload), (Source("mirror", "toy/a.bin.xz", good, compression="xz"),))])
    with pytest.raises(ChecksumError, match=good):
        fetch("toy", tmp_path / "cache", mir, download=False)
    assert not (tmp_path / "cache" / "toy" / "a.bin").exists()


def _fake_download(src_folder: Path):
    def download(url, folder):
        folder.mkdir(parents=True, exist_ok=True)
        out = folder / url.rsplit("/", 1)[-1]
        shutil.copyfile(src_folder / url.rsplit("/", 1)[-1], out)
        return out
    return download


def test_download_alternative_tarball(monkeypatch, tmp_path):
    """Canonical packaging (a tarball member) is accepted when the mirror lacks the file."""
    payload = b"cifar-like batch" * 64
    srv = tmp_path / "server"
    _make_packages(srv, payload)
    tar_sha = sha((srv / "pkg.tar.gz").read_bytes())
    _toy(monkeypatch, [FileSpec("a.bin", sha(payload), (
        Source("mirror", "toy/a.bin.xz", None, compression="xz"),
        Source("url", "https://example.invalid/pkg.tar.gz", tar_sha, archive="tar", member="batches/a.bin")))])
    monkeypatch.setattr(fetch_mod, "_download", _fake_download(srv))
    p = fetch("toy", tmp_path / "cache", tmp_path / "empty_mirror")["a.bin"]
    assert p.read_bytes() == payload
    assert not (tmp_path / "cache" / "toy" / ".downloads").exists()  # archive removed once extracted


def test_bad_download_is_deleted(monkeypatch, tmp_path):
    srv = tmp_path / "server"
    srv.mkdir()
    (srv / "a.bin").write_bytes(b"tampered")
    _toy(monkeypatch, [FileSpec("a.bin", sha(b"original"), (Source("url", "https://example.invalid/a.bin", sha(b"original")),))])
    monkeypatch.setattr(fetch_mod, "_download", _fake_download(srv))
    with pytest.raises(ChecksumError) as err:
        fetch("toy", tmp_path / "cache", None)
    assert sha(b"original") in str(err.value) and sha(b"tampered") in str(err.value)
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]


def test_trust_on_first_use(monkeypatch, tmp_path):
    mir = tmp_path / "mirror" / "toy"
    mir.mkdir(parents=True)
    (mir / "a.bin").write_bytes(b"first")
    _toy(monkeypatch, [FileSpec("a.bin", None, (Source("mirror", "toy/a.bin"),))])
    cache = tmp_path / "cache"
    with pytest.warns(UnpinnedChecksumWarning, match=sha(b"first")):
        p = fetch("toy", cache, tmp_path / "mirror")["a.bin"]
    assert json.loads(Path(str(p) + ".sha256.json").read_text())["sha256"] == sha(b"first")
    # the recorded hash is enforced from then on
    p.unlink()
    (mir / "a.bin").write_bytes(b"second")
    with pytest.raises(ChecksumError, match=sha(b"second")):
        fetch("toy", cache, tmp_path / "mirror")


def test_same_size_corruption_with_preserved_mtime_is_caught(mirror, tmp_path):
    """The verification cache is keyed by inode + size + mtime + ctime: rewriting a cached file
    with bytes of the same length and setting its mtime back still forces a re-hash (#14, 6)."""
    import os

    p = fetch("adult", tmp_path, mirror, variant="mat", download=False)["adultclass.mat"]
    st = p.stat()
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0xFF                               # same size, one byte flipped
    p.write_bytes(bytes(data))
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))          # mtime restored
    assert p.stat().st_size == st.st_size and p.stat().st_mtime_ns == st.st_mtime_ns
    with pytest.warns(UserWarning, match="corrupt"):
        p2 = fetch("adult", tmp_path, mirror, variant="mat", download=False)["adultclass.mat"]
    assert fetch_mod.sha256_file(p2) == DATASETS["adult"].files["adultclass.mat"].sha256


def test_truncated_mirror_copy_is_an_error_not_a_missing_dataset(mirror, tmp_path, monkeypatch):
    """A mirror file of the wrong size names the file, both sizes and both sha256 — at DAG time
    (available / locate) and in fetch — instead of counting the dataset as missing."""
    from fedrepro.data import available
    from fedrepro.data.plan import DataPlan

    bad_mirror = tmp_path / "mirror" / "adult"
    bad_mirror.mkdir(parents=True)
    for n in ("adult.mat", "adultclass.mat"):
        shutil.copyfile(mirror / "adult" / n, bad_mirror / n)
    (tmp_path / "mirror" / "manifest.json").write_text("{}")
    monkeypatch.delenv("FEDREPRO_DATA_MIRROR")             # DataPlan: the env var would win over data.mirror
    target = bad_mirror / "adultclass.mat"
    data = target.read_bytes()[:1000]
    target.write_bytes(data)
    expected = DATASETS["adult"].files["adultclass.mat"].sha256
    for dag_time, call in (
            (True, lambda: available("adult", tmp_path / "cache", tmp_path / "mirror", variant="mat")),
            (False, lambda: fetch("adult", tmp_path / "cache", tmp_path / "mirror", variant="mat", download=False)),
            (True, lambda: DataPlan({"data": {"cache": str(tmp_path / "cache"), "processed": str(tmp_path / "p"),
                                              "mirror": str(tmp_path / "mirror")}}).status("adult-mat"))):
        with pytest.raises(ChecksumError) as err:
            call()
        msg = str(err.value)
        assert "adultclass.mat" in msg and expected in msg and sha(data) in msg
        assert not dag_time or "1000 bytes" in msg
