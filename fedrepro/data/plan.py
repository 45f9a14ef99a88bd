"""Where each dataset of a build comes from (cache, mirror, download) and which experiments a
missing one skips: decided from the file system while Snakemake builds the DAG."""
from __future__ import annotations

import os
from pathlib import Path

from fedrepro.core.params import ConfigError
from fedrepro.data.dataset import MANIFEST

VARIANT_SEP = "-"


def split_key(key: str) -> tuple[str, str | None]:
    """``"usps-h5"`` -> ``("usps", "h5")``; ``"adult"`` -> ``("adult", None)``."""
    name, _, variant = key.partition(VARIANT_SEP)
    return name, (variant or None)


def raw_dataset(key: str) -> str:
    """The fetch target of a processed dataset key (the key itself: variants fetch their own files)."""
    return key


class DataPlan:
    """Where each dataset comes from in this run: cache, mirror, or download.

    Decided from the file system only (no network probe while Snakemake builds the DAG):
    a dataset in neither the cache nor the mirror is ``download`` when the config says
    ``data: {download: true}`` (rule fetch then downloads it, or fails naming the dataset
    and its URL), else ``missing`` (skipped, or an error with ``strict``)."""

    def __init__(self, config: dict):
        data = config.get("data") or {}
        self.cache = data.get("cache", "data/raw")
        self.processed = data.get("processed", "data/processed")
        self.mirror = os.environ.get("FEDREPRO_DATA_MIRROR") or data.get("mirror")
        self.download = bool(data.get("download", False))
        self._status: dict[str, str] = {}

    def status(self, key: str) -> str:
        """``processed``, ``local`` (cache or mirror), ``download`` (``data.download``) or ``missing``."""
        if key in self._status:
            return self._status[key]
        from fedrepro.data import DATASETS, available

        name, variant = split_key(key)
        if name not in DATASETS:
            raise ConfigError(f"dataset {key!r} is not in the registry; known: {', '.join(sorted(DATASETS))} "
                              "(a raw variant is selected as name-variant, e.g. usps-h5)")
        spec = DATASETS[name]
        if variant is not None and variant not in spec.variants:
            raise ConfigError(f"dataset {key!r}: {name} has no variant {variant!r}; known: {sorted(spec.variants)}")
        if Path(self.processed, key, MANIFEST).is_file():
            result = "processed"
        elif available(name, self.cache, self.mirror, variant=variant):
            result = "local"
        elif self.download:
            result = "download"
        else:
            result = "missing"
        self._status[key] = result
        return result

    def urls(self, key: str) -> list[str]:
        from fedrepro.data import DATASETS

        return list(DATASETS[split_key(key)[0]].urls)


def local_datasets(data: DataPlan) -> list[str]:
    """Keys (``name`` or ``name-variant``) of every raw form the cache or mirror holds completely."""
    from fedrepro.data import DATASETS, available

    keys = []
    for name, spec in sorted(DATASETS.items()):
        for variant in spec.variants:
            if available(name, data.cache, data.mirror, variant=variant):
                keys.append(name if variant == spec.default_variant else f"{name}{VARIANT_SEP}{variant}")
    return keys


def skipped_experiments(datasets_by_exp: dict, data: DataPlan, strict: bool) -> dict:
    """``{(paper, exp): [missing dataset keys]}`` of ``datasets_by_exp``, ``{(paper, exp): [the dataset keys
    the experiment reads]}`` (:func:`fedrepro.experiments.build_plan.experiment_datasets` of the expanded
    cells); with ``strict`` a missing dataset is an error."""
    skipped = {}
    for key, datasets in datasets_by_exp.items():
        needed = sorted(set(datasets))
        missing = [d for d in needed if data.status(d) == "missing"]
        if missing:
            skipped[key] = missing
    if strict and skipped:
        lines = "; ".join(f"{p}/{e} needs {', '.join(m)} (from {', '.join(data.urls(m[0]))})"
                          for (p, e), m in skipped.items())
        raise ConfigError(f"strict=true and datasets are unavailable: {lines}. Place the raw files in "
                          f"{data.cache}/<dataset>/, set FEDREPRO_DATA_MIRROR to a mirror folder, or let rule fetch "
                          "download them (--config data='{download: true}'); or run with strict=false to skip "
                          "these figures.")
    return skipped
