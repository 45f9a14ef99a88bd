
import numpy as np
import pandas as pd
import pytest

from fedrepro.claims import evaluate, to_markdown, verdict
from fedrepro.results import read_metadata, run_frame, summarize, write_parquet
from fedrepro.simulation import simulate
from tests.toys import LocalGD, Quadratic


def small_run(seed=0):
    p = Quadratic(5.0 + np.random.default_rng(0).normal(size=(6, 2)))
    res = simulate(p, LocalGD(), k0=2, rho=0.5, max_rounds=5, seed=seed)
    cell = {"paper": "p", "experiment": "e", "cell": f"c{seed}", "algorithm": "local_gd", "seed": seed,
            "k0": 2, "rho": 0.5, "problem": {"name": "quadratic"}, "columns": {"k0": 2}}
    return run_frame(cell, res, p.describe(), LocalGD().params())


def test_run_frame_is_tidy_with_identifiers_and_settings():
    df = small_run()
    assert list(df.columns[:6]) == ["paper", "experiment", "cell", "algorithm", "instance", "seed"]
    assert len(df) == 6 and df["round"].tolist() == list(range(6))
    for col in ("k0", "rho", "m", "status", "rounds", "objective", "grad_norm2", "wall_time", "uploaded", "swept"):
        assert col in df.columns
    assert df["status"].nunique() == 1 and df["rounds"].iloc[0] == 5


def test_atomic_write_keeps_old_file_on_failure(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    path = tmp_path / "out.parquet"
    df = small_run()
    write_parquet(df, path, {"config_hash": "abc"})
    meta = read_metadata(path)
    assert meta["config_hash"] == "abc"
    pd.testing.assert_frame_equal(pd.read_parquet(path), df)

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(pq, "write_table", boom)
    with pytest.raises(OSError):
        write_parquet(df.head(1), path, {"config_hash": "new"})
    assert read_metadata(path)["config_hash"] == "abc"          # old result untouched
    assert [p.name for p in tmp_path.iterdir()] == ["out.parquet"]  # no partial file left


def test_summary_one_row_per_run():
    df = pd.concat([small_run(0), small_run(1)], ignore_index=True)
    s = summarize(df)
    assert len(s) == 2 and (s["round"] == 5).all() and not s["reached"].any()


def test_verdicts_are_computed():
    assert verdict(True, None, "true") == "holds"
    assert verdict(0, None, "true") == "fails"
    assert verdict(None, 3, "approx", 1) == "n/a"
    assert verdict(3.4, 3, "approx", 0.5) == "holds" and verdict(3.6, 3, "approx", 0.5) == "fails"
    assert verdict(105, 100, "rel", 0.1) == "holds" and verdict(120, 100, "rel", 0.1) == "fails"
    assert verdict(5, 4, "le") == "fails" and verdict(5, 4, "ge") == "holds"
    with pytest.raises(ValueError, match="compare"):
        verdict(1, 1, "roughly")


def test_evaluate_claims_from_results():
    df = small_run()
    claims = [
        {"id": "c1", "text": "objective decreases", "check": "dec", "compare": "true", "experiments": ["e"]},
        {"id": "c2", "text": "final rounds", "check": "rounds", "compare": "approx", "paper_value": 5,
         "tolerance": 0, "experiments": ["e"]},
        {"id": "c3", "text": "needs other data", "check": "rounds", "compare": "true", "experiments": ["x"]},
    ]
    checks = {"dec": lambda f, s: bool(f["e"]["objective"].iloc[-1] < f["e"]["objective"].iloc[0]),
              "rounds": lambda f, s: int(s["e"]["rounds"].iloc[0])}
    table = evaluate(claims, checks, {"e": df}, {"e": summarize(df)}, "p", skipped={"x": ["real_sim"]})
    assert table["verdict"].tolist() == ["holds", "holds", "skipped"]
    assert "real_sim" in table["note"].iloc[2]
    md = to_markdown(table, "p")
    assert "| c2 |" in md and "**holds**" in md
