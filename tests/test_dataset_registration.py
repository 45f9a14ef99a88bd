"""A dataset is one registration (fedrepro.data.registry.register): its loader, normalisation and
per-worker split travel with it, and every table about datasets is derived from the registrations."""
from __future__ import annotations

import ast
import dataclasses
import hashlib
from pathlib import Path

import numpy as np
import pytest

from fedrepro.data import Dataset, fetch, load, load_dataset, loaders, registry, worker_data
from fedrepro.data.registry import (DATASETS, LOADERS, NORMALIZATIONS, WORKER_SOURCES, WORKER_SPLITS, DatasetSpec,
                                    FileSpec, Source, Variant, WorkerSplit, get_spec, register)
from fedrepro.experiments import resources
from fedrepro.nn import MODELS
from fedrepro.problems import neural, worker_neural
from fedrepro.problems.neural import build_neural
from fedrepro.problems.worker_neural import SPEC_CONSTRAINTS, build_worker_neural, worker_spec_defaults


@pytest.fixture
def registrations():
    """:func:`register`, with the registrations restored afterwards."""
    saved = dict(DATASETS)
    yield register
    DATASETS.clear()
    DATASETS.update(saved)


# --------------------------------------------------------------------------- the registered datasets

def test_the_derived_tables_agree_with_the_registrations():
    specs = list(DATASETS.values())
    assert LOADERS == {v.loader_name: v.loader for s in specs for v in s.variants.values()}
    assert len({v.loader for s in specs for v in s.variants.values()}) == len(LOADERS)   # one name per function
    assert NORMALIZATIONS == {s.name: s.normalize for s in specs if s.normalize is not None}
    splits = [s.worker_split for s in specs if s.worker_split is not None]
    assert list(WORKER_SPLITS.values()) == sorted(splits, key=lambda split: split.stream_key)
    assert WORKER_SOURCES == {s.worker_split.name: s.name for s in specs if s.worker_split is not None}
    assert set(SPEC_CONSTRAINTS["dataset"][0].values) == set(WORKER_SPLITS)
    for split in WORKER_SPLITS.values():
        assert set(split.models) == {"quick", "paper"} and set(split.models.values()) <= set(MODELS)


def test_the_registered_values_are_the_ones_the_results_were_computed_with():
    """Loader names (recorded in processed meta), normalisation constants, stream keys (they fix the
    splits), default options and models as they were before the tables were folded into the registry."""
    assert sorted(LOADERS) == ["adult", "adult_mat", "chest_accelerometer", "cifar10", "fashion_mnist",
                               "localization_person_activity", "mnist", "qsar_oral_toxicity", "qsar_oral_toxicity_mat",
                               "real_sim", "shl", "usps", "usps_h5", "usps_roweis"]
    assert get_spec("usps").variant("libsvm").loader_name == "usps"
    assert dict(NORMALIZATIONS) == {"mnist": (0.1307, 0.3081), "fashion_mnist": (0.1307, 0.3081),
                                    "cifar10": (0.5, 0.5)}
    assert {n: (WORKER_SOURCES[n], s.stream_key) for n, s in WORKER_SPLITS.items()} == {
        "fmnist3": ("fashion_mnist", 1), "scma": ("chest_accelerometer", 2),
        "person_activity": ("localization_person_activity", 3), "shl": ("shl", 4)}
    assert list(WORKER_SPLITS) == ["fmnist3", "scma", "person_activity", "shl"]
    assert WORKER_SPLITS["scma"].defaults == {"features": "window", "window": 52, "hop": 26, "test_frac": 0.2,
                                              "raw_max_per_worker": 20000}
    assert WORKER_SPLITS["shl"].defaults["location_mix"] == ((.7, .1, .1, .1), (.1, .7, .1, .1), (.1, .1, .7, .1),
                                                             (.1, .1, .1, .7), (.4, .4, .1, .1), (.1, .1, .4, .4))
    assert {n: tuple(s.models.values()) for n, s in WORKER_SPLITS.items()} == {
        "fmnist3": ("aspire_logistic", "aspire_logistic"),
        **{d: (f"aspire_quick_mlp_{d}", f"aspire_mlp_{d}") for d in ("scma", "person_activity", "shl")}}
    assert {n: s.full_sizes for n, s in WORKER_SPLITS.items()} == {
        "fmnist3": (18000, 3000, 3), "scma": (59000, 14700, 15), "person_activity": (131900, 33000, 5),
        "shl": (23000, 5800, 6)}


def test_no_table_repeats_the_registrations():
    for module, name in ((loaders, "LOADERS"), (neural, "NORMALIZE"), (worker_data, "DATASETS"),
                         (worker_data, "_BUILDERS"), (worker_neural, "WORKER_DATASETS"),
                         (worker_neural, "WORKER_MODELS"), (resources, "WORKER_DATA_SIZES")):
        assert not hasattr(module, name), f"{module.__name__}.{name}"


def _data_imports() -> dict:
    """``{module: data modules it imports}`` over :mod:`fedrepro.data`, imports inside functions included."""
    folder = Path(registry.__file__).parent
    graph = {}
    for path in folder.glob("*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("fedrepro.data"):
                found |= ({node.module.split(".")[2]} if node.module.count(".") >= 2
                          else {a.name for a in node.names})
        graph[path.stem] = found & {p.stem for p in folder.glob("*.py")} - {path.stem}
    return graph


def _circles(graph: dict) -> list:
    """The modules of ``graph`` that can reach themselves."""
    def reach(start):
        seen, todo = set(), list(graph.get(start, ()))
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo.extend(graph.get(m, ()))
        return seen
    return sorted(m for m in graph if m in reach(m))


def test_the_data_layer_has_no_import_circle():
    """The spec types and tables (fedrepro.data.spec) import no registration; the registrations
    (fedrepro.data.registry) import the worker-data builders, which read the tables from the spec module."""
    graph = _data_imports()
    assert graph["spec"] == set()
    assert "registry" not in graph["worker_data"] and "spec" in graph["worker_data"]
    assert _circles(graph) == []
    assert _circles({**graph, "worker_data": graph["worker_data"] | {"registry"}}) == ["registry", "worker_data"]
    assert registry.WORKER_SPLITS is worker_data.WORKER_SPLITS      # one table, re-exported


def test_a_dataset_registered_twice_is_an_error(registrations):
    before = dict(DATASETS)
    mnist, fashion = get_spec("mnist"), get_spec("fashion_mnist")
    with pytest.raises(ValueError, match="'mnist' is registered twice"):
        registrations(mnist)
    with pytest.raises(ValueError, match="another loader is already registered as 'mnist'"):
        def mnist_loader(paths):                     # another function under a taken loader name
            raise AssertionError
        mnist_loader.__name__ = "mnist"
        registrations(dataclasses.replace(mnist, name="mnist2", variants={"idx": Variant((), mnist_loader)}))
    with pytest.raises(ValueError, match="worker dataset 'fmnist3' is registered twice"):
        registrations(dataclasses.replace(fashion, name="fashion2"))
    with pytest.raises(ValueError, match="reuses stream key 1 of 'fmnist3'"):
        registrations(dataclasses.replace(fashion, name="fashion2",
                                          worker_split=dataclasses.replace(fashion.worker_split, name="fmnist4")))
    assert DATASETS == before


# --------------------------------------------------------------------------- one new registration

def toy_blobs(paths: dict) -> Dataset:
    """The toy's loader: columns participant, label, is_test, 784 features."""
    a = np.load(paths["blobs.npy"])
    return Dataset("toy_blobs", a[:, 3:], a[:, 1].astype(np.int64), np.where(a[:, 2] > 0, "test", "train"),
                   {"participant": a[:, 0].astype(np.int64)}, {"classes": [0, 1, 2]})


def toy_workers(ds: Dataset, opts: dict) -> worker_data.WorkerData:
    """The toy's worker split: participant -> worker, through the shared sensor steps."""
    worker = np.asarray(ds.groups["participant"])
    return worker_data._sensor_worker_data("toy3", np.asarray(ds.X, dtype=np.float64), ds.y, worker, ["p0", "p1"],
                                           ds.meta["classes"], [f"f{j}" for j in range(ds.X.shape[1])], opts)


def test_one_registration_is_enough_for_a_new_dataset(registrations, tmp_path):
    rng = np.random.default_rng(0)
    n = 48
    table = np.column_stack([np.arange(n) % 2, np.arange(n) // 2 % 3, np.arange(n) % 4 == 0, rng.random((n, 784))])
    mirror = tmp_path / "mirror"
    (mirror / "toy_blobs").mkdir(parents=True)
    np.save(mirror / "toy_blobs" / "blobs.npy", table)
    sha = hashlib.sha256((mirror / "toy_blobs" / "blobs.npy").read_bytes()).hexdigest()
    split = WorkerSplit("toy3", 99, toy_workers, {"test_frac": 0.25},
                        {"quick": "aspire_logistic", "paper": "aspire_logistic"}, (36, 12, 2))
    registrations(DatasetSpec(
        name="toy_blobs", title="toy", files={"blobs.npy": FileSpec("blobs.npy", sha, (
            Source("mirror", "toy_blobs/blobs.npy", sha),))},
        variants={"npy": Variant(("blobs.npy",), toy_blobs)}, default_variant="npy", raw_format="npy",
        expected_shape={"train": (36, 784), "test": (12, 784)}, urls=("https://example.invalid/toy",),
        licence="none", citation="none", normalize=(0.5, 0.25), worker_split=split))

    # data layer: fetch, load, the derived tables
    ds = load_dataset("toy_blobs", tmp_path / "cache", mirror, download=False)
    assert ds.meta["loader"] == "toy_blobs" and ds.X.shape == (n, 784)
    assert load("toy_blobs", fetch("toy_blobs", tmp_path / "cache", mirror, download=False)).meta["variant"] == "npy"
    assert LOADERS["toy_blobs"] is toy_blobs and NORMALIZATIONS["toy_blobs"] == (0.5, 0.25)
    assert WORKER_SPLITS["toy3"] is split and WORKER_SOURCES["toy3"] == "toy_blobs"
    processed = tmp_path / "processed"
    processed.mkdir()
    ds.save(processed / "toy_blobs")
    wd = worker_data.build_worker_data("toy3", processed, cache_dir=False)
    assert wd.n_workers == 2 and wd.n_classes == 3 and wd.meta["source"] == "toy_blobs"
    assert worker_data.with_backdoor(wd).malicious == 2            # the backdoor streams use its key too

    # problems layer: the normalisation and the worker dataset with its default models
    problem = build_neural({"model": "mlp1", "dataset": "toy_blobs", "m": 2}, seed=0, dataset=ds)
    train = np.flatnonzero(ds.split == "train")
    np.testing.assert_array_equal(np.sort(problem.X, axis=0),
                                  np.sort((ds.X[train].astype(np.float32) - np.float32(0.5)) / np.float32(0.25), axis=0))
    assert worker_spec_defaults({"dataset": "toy3"})["model"] == "aspire_logistic"
    wp = build_worker_neural({"dataset": "toy3", "model": "paper"}, seed=0, data_dir=processed)
    assert wp.m == 2 and wp.model.name == "aspire_logistic"
    assert resources.worker_cell_cost({"problem": {"name": "worker_neural", "dataset": "toy3"},
                                           "algorithm": "aspire"})["runtime_min"] > 0
