"""Dataset layer: registry of raw files, verified fetching, and loaders to :class:`Dataset`.

Typical use::

    from fedrepro.data import load_dataset
    ds = load_dataset("adult")                    # cache -> $FEDREPRO_DATA_MIRROR -> download
    ds = load_dataset("usps", variant="h5")       # a specific raw form
"""
from __future__ import annotations

from pathlib import Path

from fedrepro.data.dataset import Dataset
from fedrepro.data.fetch import ChecksumError, DatasetUnavailable, UnpinnedChecksumWarning, available, fetch, locate
from fedrepro.data.registry import DATASETS, LOADERS, MIRROR_ENV, DatasetSpec, get_spec, register

__all__ = ["Dataset", "fetch", "available", "locate", "load", "load_dataset", "DATASETS", "DatasetSpec",
           "get_spec", "register", "LOADERS", "ChecksumError", "DatasetUnavailable", "UnpinnedChecksumWarning",
           "MIRROR_ENV"]


def load(name: str, paths: dict, variant: str | None = None, **options) -> Dataset:
    """Load dataset ``name`` (variant ``variant``) from ``paths`` with the variant's registered loader;
    adds licence/citation to ``meta``."""
    spec = get_spec(name)
    v = spec.variant(variant)
    ds = v.loader({k: Path(p) for k, p in paths.items()}, **options)
    ds.meta.update(variant=variant or spec.default_variant, loader=v.loader_name, title=spec.title,
                   licence=spec.licence, citation=spec.citation, source_files=list(v.files))
    return ds


def load_dataset(name: str, cache_dir="data/raw", mirror=None, *, variant: str | None = None,
                 download: bool | None = None, **options) -> Dataset:
    """Fetch (verified) and load dataset ``name``; ``options`` go to the variant's loader."""
    paths = fetch(name, cache_dir, mirror, variant=variant, download=download)
    return load(name, paths, variant=variant, **options)
