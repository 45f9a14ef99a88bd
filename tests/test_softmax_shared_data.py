"""The softmax problem reads its data once per job: decoded arrays kept across cells, metric rows
gathered once; both give the numbers a fresh build gives."""
import numpy as np
import pytest

from fedrepro.data.dataset import Dataset, PixelArray
from fedrepro.problems import softmax
from fedrepro.problems.softmax import build_softmax

SPEC = {"dataset": "tiny", "partition": "iid", "Q": 4, "batch": 3, "L": 10.0}


@pytest.fixture
def data_dir(tmp_path):
    rng = np.random.default_rng(0)
    n = 120
    pixels = rng.integers(0, 256, (n, 6), dtype=np.uint8)
    split = np.where(np.arange(n) < 90, "train", "test")
    Dataset("tiny", PixelArray(pixels), rng.integers(0, 3, n), split, {}, {}).save(tmp_path / "tiny")
    Dataset("tiny2", PixelArray(pixels[::-1].copy()), rng.integers(0, 3, n), split, {}, {}).save(tmp_path / "tiny2")
    softmax._SHARED_DESIGN.clear()
    yield tmp_path
    softmax._SHARED_DESIGN.clear()


def test_cells_of_a_job_share_the_decoded_arrays(data_dir):
    a = build_softmax(dict(SPEC, bias=True), seed=1, data_dir=data_dir)
    b = build_softmax(dict(SPEC, bias=True), seed=2, data_dir=data_dir)
    assert a.X is b.X and a.X_test is b.X_test                       # decoded once
    assert not a.X.flags.writeable and not a.X_test.flags.writeable  # so no cell can change another's data
    with pytest.raises(ValueError):
        a.X[0, 0] = 1.0
    other = build_softmax(dict(SPEC, bias=False), seed=1, data_dir=data_dir)
    assert other.X is not a.X and other.X.shape[1] == a.X.shape[1] - 1
    fresh = build_softmax(dict(SPEC, bias=True), seed=1, dataset=Dataset.load(data_dir / "tiny"))
    np.testing.assert_array_equal(fresh.X, a.X)
    np.testing.assert_array_equal(fresh.X_test, a.X_test)
    assert fresh.X.flags.writeable                                   # a Dataset passed in is not kept


def test_cells_alternating_between_two_datasets_decode_each_once(data_dir, monkeypatch):
    monkeypatch.setattr(softmax._SHARED_DESIGN, "size", 2)
    first = [build_softmax(dict(SPEC, dataset=d), seed=1, data_dir=data_dir) for d in ("tiny", "tiny2")]
    again = [build_softmax(dict(SPEC, dataset=d), seed=2, data_dir=data_dir) for d in ("tiny", "tiny2")]
    assert all(a.X is b.X for a, b in zip(first, again))
    assert not np.array_equal(first[0].X, first[1].X)


@pytest.mark.parametrize("eval_fraction", [0.5, 1.0])
def test_metric_rows_gathered_once_give_the_same_losses(data_dir, eval_fraction):
    prob = build_softmax(dict(SPEC, eval_fraction=eval_fraction), seed=3, data_dir=data_dir)
    W = np.random.default_rng(4).standard_normal((prob.m, prob.dim))
    want = np.array([softmax._ce(prob.X[p] @ W[j].reshape(prob.C, prob.p).T, prob.y[p]).mean()
                     + 0.5 * prob.delta * W[j] @ W[j] for j, p in enumerate(prob.eval_parts)])
    for _ in range(2):                                               # first use gathers, the second reuses
        np.testing.assert_array_equal(prob.reliable_losses(W), want)
    held = [rows is not None for rows in prob._eval_X]
    assert all(held) if eval_fraction < 1 else not any(held)         # X is never held twice


def test_one_kept_design_is_dropped_before_the_next_is_decoded(data_dir):
    assert softmax._SHARED_DESIGN.size == 1                           # a job holds one cell's data
    a = build_softmax(SPEC, seed=1, data_dir=data_dir)
    b = build_softmax(dict(SPEC, dataset="tiny2"), seed=1, data_dir=data_dir)
    assert len(softmax._SHARED_DESIGN) == 1 and b.X is not a.X
    assert build_softmax(SPEC, seed=2, data_dir=data_dir).X is not a.X   # decoded again (same values)
