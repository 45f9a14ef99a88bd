"""The dataset registry's types and table: :class:`DatasetSpec` (a dataset's files, checksums, sources,
shapes, licence, loaders, normalisation and worker split), :func:`register` / :func:`get_spec`, and the
tables derived from the registrations (:data:`LOADERS`, :data:`NORMALIZATIONS`, :data:`WORKER_SPLITS`,
:data:`WORKER_SOURCES`).

The registrations themselves (one :func:`register` call per dataset) are in :mod:`fedrepro.data.registry`,
which imports this module, the loaders and the worker-data builders; this module imports none of them, so
:mod:`fedrepro.data.worker_data` reads the tables here without an import circle. Importing the package
:mod:`fedrepro.data` loads the registrations, so the tables are full whenever this module is used.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable

MIRROR_ENV = "FEDREPRO_DATA_MIRROR"


@dataclass(frozen=True)
class Source:
    """One way to obtain a file.

    kind : ``"mirror"`` (``location`` relative to the mirror folder), ``"url"`` or ``"manual"``.
    sha256 : checksum of the object at ``location`` itself (``None``: unknown).
    compression : single-stream compression of that object (``"xz"``, ``"bz2"``, ``"gz"``).
    archive, member : ``"zip"``/``"tar"`` archive and the member path to extract.
    bytes : size of the object at ``location`` when known (cheap offline check).
    """

    kind: str
    location: str
    sha256: str | None = None
    compression: str | None = None
    archive: str | None = None
    member: str | None = None
    bytes: int | None = None


@dataclass(frozen=True)
class FileSpec:
    """A raw file as it lies in the cache: ``<cache_dir>/<dataset>/<name>``."""

    name: str
    sha256: str | None
    sources: tuple[Source, ...]
    bytes: int | None = None
    md5: str | None = None


@dataclass(frozen=True)
class Variant:
    """A complete raw form of a dataset: the files it needs and the loader function that reads them
    (``loader(paths, **options) -> Dataset``; its function name is recorded in ``meta["loader"]``)."""

    files: tuple[str, ...]
    loader: Callable
    description: str = ""

    @property
    def loader_name(self) -> str:
        return self.loader.__name__


@dataclass(frozen=True)
class WorkerSplit:
    """The per-worker train/test data built from a processed dataset (ASPIRE, :mod:`fedrepro.data.worker_data`).

    name : the worker dataset's name in configs (``problem: {name: worker_neural, dataset: scma}``).
    stream_key : key of its random streams (split, subsets, backdoor); never renumber one, it fixes the data.
    build : ``build(processed Dataset, options) -> WorkerData``.
    defaults : its options and their default values (the only options it accepts, with the caps and seed).
    models : ``{"quick": model, "paper": model}``, names in :data:`fedrepro.nn.MODELS`.
    full_sizes : (training samples, test samples, workers) of the uncapped data (measured for SC-MA and
        Fashion-MNIST, the spec's sizes for the others), for the workflow's resource requests.
    """

    name: str
    stream_key: int
    build: Callable
    defaults: dict
    models: dict
    full_sizes: tuple[int, int, int]


@dataclass(frozen=True)
class DatasetSpec:
    """Everything known about one dataset before it is read."""

    name: str
    title: str
    files: dict  # name -> FileSpec
    variants: dict  # variant -> Variant
    default_variant: str
    raw_format: str
    expected_shape: dict  # variant or split -> (n_samples, n_features)
    urls: tuple[str, ...]
    licence: str
    citation: str
    notes: str = ""
    facts: dict = field(default_factory=dict)
    normalize: tuple[float, float] | None = None  # (mean, std) of the neural problems' input (x - mean) / std
    worker_split: WorkerSplit | None = None

    def variant(self, variant: str | None = None) -> Variant:
        """The :class:`Variant` called ``variant`` (default: :attr:`default_variant`)."""
        v = self.default_variant if variant is None else variant
        if v not in self.variants:
            raise KeyError(f"dataset {self.name!r} has no variant {v!r}; known: {sorted(self.variants)}")
        return self.variants[v]

    def variant_files(self, variant: str | None = None) -> list[FileSpec]:
        """The :class:`FileSpec` entries a variant needs, in order."""
        return [self.files[f] for f in self.variant(variant).files]


# --------------------------------------------------------------------------- registration

DATASETS: dict[str, DatasetSpec] = {}


class DerivedTable(Mapping):
    """A read-only table computed from the registrations at every read, so it always agrees with them."""

    def __init__(self, derive: Callable[[], dict]):
        self._derive = derive

    def __getitem__(self, key):
        return self._derive()[key]

    def __iter__(self):
        return iter(self._derive())

    def __len__(self) -> int:
        return len(self._derive())

    def __repr__(self) -> str:
        return f"DerivedTable({self._derive()!r})"


def _loaders() -> dict:
    return {v.loader_name: v.loader for spec in DATASETS.values() for v in spec.variants.values()}


def _normalizations() -> dict:
    return {name: spec.normalize for name, spec in DATASETS.items() if spec.normalize is not None}


def _worker_splits() -> dict:
    splits = [spec.worker_split for spec in DATASETS.values() if spec.worker_split is not None]
    return {split.name: split for split in sorted(splits, key=lambda split: split.stream_key)}


def _worker_sources() -> dict:
    return {spec.worker_split.name: name for name, spec in DATASETS.items() if spec.worker_split is not None}


#: loader name (``meta["loader"]`` of what it loads) -> loader function, over every variant
LOADERS = DerivedTable(_loaders)
#: dataset -> (mean, std) the neural problems normalise its inputs with (datasets that declare one)
NORMALIZATIONS = DerivedTable(_normalizations)
#: worker dataset -> :class:`WorkerSplit`, in stream-key order
WORKER_SPLITS = DerivedTable(_worker_splits)
#: worker dataset -> the dataset it is built from
WORKER_SOURCES = DerivedTable(_worker_sources)


def register(spec: DatasetSpec) -> DatasetSpec:
    """Add ``spec`` to :data:`DATASETS`; a name, loader name, worker dataset or stream key that another
    registration already holds is an error (the derived tables would otherwise disagree)."""
    if spec.name in DATASETS:
        raise ValueError(f"dataset {spec.name!r} is registered twice")
    loaders_by_name = dict(LOADERS)
    for v in spec.variants.values():
        if loaders_by_name.setdefault(v.loader_name, v.loader) is not v.loader:
            raise ValueError(f"dataset {spec.name!r}: another loader is already registered as {v.loader_name!r}")
    split = spec.worker_split
    if split is not None:
        if split.name in WORKER_SPLITS:
            raise ValueError(f"dataset {spec.name!r}: worker dataset {split.name!r} is registered twice")
        taken = {s.stream_key: s.name for s in WORKER_SPLITS.values()}
        if split.stream_key in taken:
            raise ValueError(f"dataset {spec.name!r}: worker dataset {split.name!r} reuses stream key "
                             f"{split.stream_key} of {taken[split.stream_key]!r}")
    DATASETS[spec.name] = spec
    return spec


def get_spec(name: str) -> DatasetSpec:
    """The :class:`DatasetSpec` registered as ``name`` (``KeyError`` listing the known names)."""
    try:
        return DATASETS[name]
    except KeyError:
        raise KeyError(f"unknown dataset {name!r}; known: {', '.join(sorted(DATASETS))}") from None
