"""Obtain verified raw dataset files: cache -> offline mirror -> canonical download.

``fetch(name)`` returns ``{file name: local path}`` for the files of one dataset
(variant), every one of them checked against its sha256 from
:mod:`fedrepro.data.registry`. For each file the order is:

1. the cache ``<cache_dir>/<name>/<file>`` (verified; a bad cached copy is deleted
   with a warning and the file is fetched again);
2. the mirror folder (argument ``mirror``, else the environment variable
   ``FEDREPRO_DATA_MIRROR``): copied or decompressed/extracted into the cache;
3. the canonical URL(s), downloaded with :func:`pooch.retrieve` into
   ``<cache_dir>/<name>/.downloads/`` and copied/extracted from there.

Every write goes to a temporary name in the destination folder and is renamed with
:func:`os.replace` only after the checksum matched, so a bad file never lies in the
cache under its final name. A mismatch from the mirror or a download raises
:class:`ChecksumError` (naming the file, the expected and the actual sha256) after
deleting the bad copy. A dataset that is neither cached, mirrored nor downloadable
raises :class:`DatasetUnavailable` with one message naming the dataset, its URLs
and ``FEDREPRO_DATA_MIRROR``.

Files without a pinned checksum (``sha256=None``) are trusted on first use: the
first copy's sha256 is printed as an :class:`UnpinnedChecksumWarning` and recorded
in ``<file>.sha256.json`` beside it; later copies must match that record (delete
the record to trust a new copy). The same record caches successful verifications, keyed by
inode + size + mtime + ctime, so large cached files are not re-hashed on every call: any write to
the file changes its ctime (which, unlike mtime, cannot be set back), so a same-size corruption
with a preserved mtime is re-hashed and caught; a copied or moved cache is re-hashed once.

Set ``FEDREPRO_OFFLINE=1`` (or pass ``download=False``) to never try the network.
"""
from __future__ import annotations

import bz2
import contextlib
import fnmatch
import gzip
import hashlib
import json
import lzma
import os
import shutil
import tarfile
import warnings
import zipfile
from pathlib import Path
from urllib.parse import unquote, urlparse

import pooch

from fedrepro.data.spec import MIRROR_ENV, DatasetSpec, FileSpec, Source, get_spec

OFFLINE_ENV = "FEDREPRO_OFFLINE"
DOWNLOADS = ".downloads"
_CHUNK = 1 << 20


class ChecksumError(ValueError):
    """A file's sha256 differs from the expected one (the bad copy has been deleted)."""

    def __init__(self, path, expected: str, actual: str, what: str = "file"):
        self.path, self.expected, self.actual = str(path), expected, actual
        super().__init__(f"checksum mismatch for {what} {self.path}: expected sha256 {expected}, "
                         f"got sha256 {actual}; nothing from it was kept in the cache (mirror files are "
                         f"never modified; a bad download is deleted). Replace the file with an intact copy.")


class DatasetUnavailable(RuntimeError):
    """A dataset is neither cached, in the mirror, nor downloadable."""


class UnpinnedChecksumWarning(UserWarning):
    """A file without a pinned checksum was trusted on first use."""


# --------------------------------------------------------------------------- small helpers

def sha256_file(path) -> str:
    """Hex sha256 of a file (pooch's implementation)."""
    return pooch.file_hash(str(path), alg="sha256")


def mirror_root(mirror=None) -> Path | None:
    """The mirror folder: ``mirror`` if given, else ``$FEDREPRO_DATA_MIRROR``, else ``None``."""
    m = mirror if mirror is not None else os.environ.get(MIRROR_ENV) or None
    return Path(m) if m else None


def _download_allowed(download: bool | None) -> bool:
    if download is not None:
        return bool(download)
    return os.environ.get(OFFLINE_ENV, "").strip().lower() not in ("1", "true", "yes")


def _tmp_name(dest: Path) -> Path:
    return dest.with_name(f".{dest.name}.partial-{os.getpid()}")


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256.json")


def _read_stamp(path: Path) -> dict | None:
    try:
        return json.loads(_stamp_path(path).read_text())
    except (OSError, ValueError):
        return None


def _write_stamp(path: Path, sha: str, pinned: bool) -> None:
    st = path.stat()
    rec = {"file": path.name, "sha256": sha, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
           "ctime_ns": st.st_ctime_ns, "inode": st.st_ino, "pinned": pinned}
    tmp = _tmp_name(_stamp_path(path))
    tmp.write_text(json.dumps(rec, indent=1))
    os.replace(tmp, _stamp_path(path))


def _expected_sha(f: FileSpec, dest: Path) -> str | None:
    """Pinned sha256, else the trusted-on-first-use record beside ``dest``, else ``None``."""
    if f.sha256:
        return f.sha256
    stamp = _read_stamp(dest)
    return stamp["sha256"] if stamp else None


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


# --------------------------------------------------------------------------- cache

def _cached_ok(f: FileSpec, dest: Path) -> bool:
    """True when ``dest`` exists and verifies; a bad cached copy is deleted (with a warning)."""
    if not dest.is_file():
        return False
    expected = _expected_sha(f, dest)
    stamp, st = _read_stamp(dest), dest.stat()
    if (stamp and expected == stamp.get("sha256") and stamp.get("size") == st.st_size
            and stamp.get("mtime_ns") == st.st_mtime_ns and stamp.get("ctime_ns") == st.st_ctime_ns
            and stamp.get("inode") == st.st_ino):
        return True                     # unchanged since it was hashed (see the module docstring)
    actual = sha256_file(dest)
    if expected is None:
        _trust_on_first_use(dest, actual)
        return True
    if actual == expected:
        _write_stamp(dest, actual, pinned=bool(f.sha256))
        return True
    warnings.warn(f"cached file {dest} is corrupt (expected sha256 {expected}, got {actual}); "
                  "deleted, fetching it again", stacklevel=3)
    _unlink(dest)
    if f.sha256:
        _unlink(_stamp_path(dest))
    return False


def _trust_on_first_use(dest: Path, actual: str) -> None:
    warnings.warn(f"{dest}: no pinned checksum; trusted on first use with sha256 {actual} "
                  f"(recorded in {_stamp_path(dest).name})", UnpinnedChecksumWarning, stacklevel=4)
    _write_stamp(dest, actual, pinned=False)


# --------------------------------------------------------------------------- materialising

def _copy_hash(fsrc, tmp: Path) -> str:
    """Stream ``fsrc`` into ``tmp``; return the sha256 of what was written."""
    h = hashlib.sha256()
    with open(tmp, "wb") as out:
        for block in iter(lambda: fsrc.read(_CHUNK), b""):
            h.update(block)
            out.write(block)
    return h.hexdigest()


def _zip_member(zf: zipfile.ZipFile, member: str) -> str:
    """Resolve ``member`` (exact path, or a ``*/name`` pattern matched outside ``__MACOSX``)."""
    names = zf.namelist()
    if member in names:
        return member
    base = member.rsplit("/", 1)[-1]
    hits = [n for n in names if not n.startswith("__MACOSX")
            and (fnmatch.fnmatch(n, member) or n.rsplit("/", 1)[-1] == base)]
    if len(hits) != 1:
        raise FileNotFoundError(f"member {member!r} not found (or ambiguous: {hits}) in {zf.filename}")
    return hits[0]


@contextlib.contextmanager
def _open_payload(package: Path, src: Source):
    """Binary file object yielding the payload of ``package`` (decompressed / archive member)."""
    with contextlib.ExitStack() as stack:
        if src.archive == "zip":
            zf = stack.enter_context(zipfile.ZipFile(package))
            fobj = zf.open(_zip_member(zf, src.member))
        elif src.archive == "tar":
            tf = stack.enter_context(tarfile.open(package, mode="r:*"))
            fobj = tf.extractfile(src.member)
            if fobj is None:
                raise FileNotFoundError(f"member {src.member!r} is not a regular file in {package}")
        else:
            opener = {"xz": lzma.open, "bz2": bz2.open, "gz": gzip.open, None: open}[src.compression]
            fobj = opener(package, "rb")
        yield stack.enter_context(fobj)


def _install(package: Path, src: Source, f: FileSpec, dest: Path) -> Path:
    """Write the payload of ``package`` to ``dest`` atomically after checking its sha256.

    Raises :class:`ChecksumError` (temporary copy deleted) on a mismatch.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_name(dest)
    try:
        with _open_payload(package, src) as fsrc:
            actual = _copy_hash(fsrc, tmp)
    except BaseException:
        _unlink(tmp)
        raise
    expected = _expected_sha(f, dest)
    if expected is not None and actual != expected:
        _unlink(tmp)
        what = "file" if src.archive is None and src.compression is None else f"payload {f.name} of"
        raise ChecksumError(package, expected, actual, what)
    os.replace(tmp, dest)
    if expected is None:
        _trust_on_first_use(dest, actual)
    else:
        _write_stamp(dest, actual, pinned=bool(f.sha256))
    return dest


def _check_package(package: Path, src: Source, delete: bool) -> None:
    """Verify a compressed/archived package against ``src.sha256`` when that is known."""
    if src.sha256 is None:
        return
    actual = sha256_file(package)
    if actual != src.sha256:
        if delete:
            _unlink(package)
        raise ChecksumError(package, src.sha256, actual)


def _from_mirror(root: Path, src: Source, f: FileSpec, dest: Path) -> Path | None:
    package = root / src.location
    if not package.is_file():
        return None
    if src.archive or src.compression:
        _check_package(package, src, delete=False)  # read-only mirror: nothing is copied on failure
    return _install(package, src, f, dest)


def _download(url: str, folder: Path) -> Path:
    """Download ``url`` into ``folder`` with pooch (no hash check here; the caller verifies)."""
    fname = unquote(Path(urlparse(url).path).name) or "download"
    downloader = pooch.HTTPDownloader(progressbar=False, timeout=60)
    return Path(pooch.retrieve(url, known_hash=None, fname=fname, path=folder, downloader=downloader))


def _from_url(src: Source, f: FileSpec, dest: Path, dl_dir: Path) -> Path:
    package = _download(src.location, dl_dir)
    _check_package(package, src, delete=True)
    try:
        out = _install(package, src, f, dest)
    except ChecksumError:
        _unlink(package)
        raise
    if src.archive is None and src.compression is None:
        _unlink(package)
    return out


# --------------------------------------------------------------------------- public API

def _fetch_file(spec: DatasetSpec, f: FileSpec, cache: Path, root: Path | None, download: bool,
                errors: list) -> Path | None:
    """One file through cache -> mirror -> URLs; ``None`` when no source has it."""
    dest = cache / spec.name / f.name
    if _cached_ok(f, dest):
        return dest
    if root is not None:
        for src in (s for s in f.sources if s.kind == "mirror"):
            got = _from_mirror(root, src, f, dest)
            if got is not None:
                return got
    if download:
        for src in (s for s in f.sources if s.kind == "url"):
            try:
                return _from_url(src, f, dest, cache / spec.name / DOWNLOADS)
            except ChecksumError:
                raise
            except Exception as exc:  # network, HTTP status, missing member ...
                errors.append(f"{src.location}: {type(exc).__name__}: {str(exc)[:160]}")
    return None


def _unavailable_message(spec: DatasetSpec, missing: list, cache: Path, root: Path | None,
                         download: bool, errors: list) -> str:
    urls = sorted({s.location for f in missing for s in f.sources if s.kind in ("url", "manual")})
    urls = list(spec.urls) + [u for u in urls if u not in spec.urls]
    mirror_txt = (f"not in the mirror {root}" if root is not None
                  else f"no mirror given (argument mirror=None and ${MIRROR_ENV} unset)")
    dl_txt = ("download failed: " + "; ".join(errors[:3]) if errors
              else "download disabled" if not download else "no downloadable source")
    names = ", ".join(f.name for f in missing[:6]) + (f" and {len(missing) - 6} more" if len(missing) > 6 else "")
    return (f"dataset {spec.name!r} is unavailable: missing {names}; not in the cache {cache / spec.name}, "
            f"{mirror_txt}, {dl_txt}. Get it from: {', '.join(urls)}. Either place the files under "
            f"{cache / spec.name}/ or set {MIRROR_ENV} to a folder holding {spec.name}/<files>."
            + (f" Note: {spec.notes}" if spec.notes and any(s.kind == 'manual' for f in missing for s in f.sources)
               else ""))


def fetch(name: str, cache_dir="data/raw", mirror=None, *, variant: str | None = None,
          download: bool | None = None) -> dict[str, Path]:
    """Return ``{file name: verified local path}`` for dataset ``name`` (one variant).

    Parameters
    ----------
    name : registry name, e.g. ``"adult"``.
    cache_dir : cache root; files land in ``<cache_dir>/<name>/``.
    mirror : offline mirror folder (default ``$FEDREPRO_DATA_MIRROR``).
    variant : raw form (default: the dataset's ``default_variant``).
    download : allow network downloads (default: unless ``$FEDREPRO_OFFLINE`` is set).

    Raises
    ------
    ChecksumError : a mirror copy or download does not match its sha256.
    DatasetUnavailable : some file is in no reachable source.
    """
    spec = get_spec(name)
    cache, root, allow = Path(cache_dir), mirror_root(mirror), _download_allowed(download)
    out, missing, errors = {}, [], []
    for f in spec.variant_files(variant):
        path = _fetch_file(spec, f, cache, root, allow, errors)
        if path is None:
            missing.append(f)
        else:
            out[f.name] = path
    if missing:
        raise DatasetUnavailable(_unavailable_message(spec, missing, cache, root, allow, errors))
    shutil.rmtree(cache / spec.name / DOWNLOADS, ignore_errors=True)  # archives fully extracted
    return out


def locate(name: str, cache_dir="data/raw", mirror=None, *, variant: str | None = None) -> dict[str, str | None]:
    """Where each file of a dataset could come from without downloading: ``"cache"``, ``"mirror"`` or ``None``.

    Cheap: looks at existence and, when known, sizes; no hashing.
    """
    spec, cache, root = get_spec(name), Path(cache_dir), mirror_root(mirror)
    where = {}
    for f in spec.variant_files(variant):
        dest = cache / spec.name / f.name
        if dest.is_file() and (f.bytes is None or dest.stat().st_size == f.bytes):
            where[f.name] = "cache"
        elif root is not None and any(_mirror_has(root, s) for s in f.sources if s.kind == "mirror"):
            where[f.name] = "mirror"
        else:
            where[f.name] = None
    return where


def _mirror_has(root: Path, src: Source) -> bool:
    """The mirror holds this source; a file of the wrong size is an error naming it and both sha256
    (a truncated or padded copy is a broken mirror, never a missing dataset)."""
    p = root / src.location
    if not p.is_file():
        return False
    if src.bytes is not None and p.stat().st_size != src.bytes:
        expected = f"sha256 {src.sha256}" if src.sha256 else "its registered sha256 (unknown for this source)"
        raise ChecksumError(p, src.sha256 or "(not registered)", sha256_file(p),
                            what=f"mirror file ({p.stat().st_size} bytes, expected {src.bytes}; {expected})")
    return True


def available(name: str, cache_dir="data/raw", mirror=None, *, variant: str | None = None) -> bool:
    """True when every file of the dataset (variant) is in the cache or the mirror (no download, no hashing)."""
    return all(v is not None for v in locate(name, cache_dir, mirror, variant=variant).values())
