
import numpy as np
import pandas as pd
import pytest

from fedrepro.claims import NotTestable, Outcome, evaluate, to_markdown, validate_claims, verdict
from fedrepro.experiments.results import read_metadata, run_frame, summarize, write_parquet
from fedrepro.sim.loop import simulate
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
    assert verdict(None, 3, "approx", 1) == "not testable here"
    assert verdict(3.4, 3, "approx", 0.5) == "holds" and verdict(3.6, 3, "approx", 0.5) == "fails"
    assert verdict(105, 100, "rel", 0.1) == "holds" and verdict(120, 100, "rel", 0.1) == "fails"
    assert verdict(5, 4, "le") == "fails" and verdict(5, 4, "ge") == "holds"
    assert verdict(30, 10, "band", 3) == "holds" and verdict(31, 10, "band", 3) == "fails"
    assert verdict(3.4, 10, "band", 3) == "holds" and verdict(3.3, 10, "band", 3) == "fails"
    with pytest.raises(ValueError, match="compare"):
        verdict(1, 1, "roughly")
    with pytest.raises(ValueError, match="ratio tolerance"):
        verdict(1, 1, "band", 0.5)


def test_noise_turns_only_undecidable_verdicts_into_not_testable():
    """A value whose noise range (x/(1+n), x(1+n)) straddles an edge of the accepted range is not
    decided; one clear of every edge keeps its verdict, on either side (the check can still fail)."""
    # fedepm Table I, SFedAvg/FedEPM LCT at k0 = 20: paper 6.43, band x2 -> [3.215, 12.86]; two
    # identical builds measured 3.06 and 3.38
    for ours in (3.06, 3.38):
        assert verdict(ours, 6.43, "band", 2) in ("holds", "fails")
        assert verdict(ours, 6.43, "band", 2, noise=0.2) == "not testable here"
    assert verdict(4.0, 6.43, "band", 2, noise=0.2) == "holds"           # 3.33-4.8: inside
    assert verdict(2.5, 6.43, "band", 2, noise=0.2) == "fails"           # 2.08-3.0: below 3.215
    assert verdict(4.72, 2.09, "band", 1.5, noise=0.2) == "fails"        # fedepm LCT growth: clearly outside
    assert verdict(9.7, 6.5, "ge", 5.5, noise=0.2) == "holds"            # >= 1 with room
    assert verdict(1.1, 6.5, "ge", 5.5, noise=0.2) == "not testable here"
    assert verdict(0.5, 6.5, "ge", 5.5, noise=0.2) == "fails"
    assert verdict(-1.0, 0, "approx", 0.5, noise=0.2) == "fails"         # negative values: sorted range
    assert verdict(True, None, "true", noise=0.2) == "holds"            # boolean checks: noise has no say


def test_absolute_noise_widens_the_value_by_plus_minus_noise_abs():
    """A difference of final accuracies (pp) against 0 with ± 1 pp of build-to-build noise: decided
    only with more than 1 pp of room (fedadmm_gong Fig. 6: -0.25 and +0.22 pp in two builds that
    differ only in float rounding)."""
    for ours in (-0.25, 0.22, 0.99, -0.99):
        assert verdict(ours, 0, "ge", noise_abs=1.0) == "not testable here"
    assert verdict(1.01, 0, "ge", noise_abs=1.0) == "holds"
    assert verdict(-1.01, 0, "ge", noise_abs=1.0) == "fails"
    assert verdict(0.22, 0, "ge") == "holds" and verdict(-0.25, 0, "ge") == "fails"   # without it: noise decides
    assert verdict(5.0, 5.5, "band", 1.05, noise=0.2, noise_abs=0.5) == "not testable here"   # both: 3.67-6.5
    assert verdict(True, None, "true", noise_abs=1.0) == "holds"
    claim = {"id": "diff", "text": "t", "check": "d", "compare": "ge", "paper_value": 0, "noise_abs": 1.0,
             "experiments": ["e"]}
    df = small_run()
    t = evaluate([claim], {"d": lambda f, s: 0.22}, {"e": df}, {"e": summarize(df)}, "p").set_index("claim")
    assert t.loc["diff", "verdict"] == "not testable here"
    assert "± 1" in t.loc["diff", "why"] and "-0.78 to 1.22" in t.loc["diff", "why"] and "more seeds" in t.loc["diff", "why"]
    for bad in (0, -1, True, "1", float("inf")):
        with pytest.raises(ValueError, match="noise_abs"):
            validate_claims([dict(claim, noise_abs=bad)], "p")
    with pytest.raises(ValueError, match="numeric compare"):
        validate_claims([dict(claim, compare="true")], "p")
    validate_claims([claim], "p")


def test_a_claim_within_noise_says_so():
    df = small_run()
    claim = {"id": "ratio", "text": "t", "check": "rounds", "compare": "band", "paper_value": 5.5, "tolerance": 1.05,
             "noise": 0.2, "experiments": ["e"]}
    t = evaluate([claim], {"rounds": lambda f, s: 5.0}, {"e": df}, {"e": summarize(df)}, "p").set_index("claim")
    assert t.loc["ratio", "verdict"] == "not testable here"
    assert "within measurement noise" in t.loc["ratio", "why"] and "4.167 to 6" in t.loc["ratio", "why"]
    for bad in (0, 1.5, True, "0.2"):
        with pytest.raises(ValueError, match="noise"):
            validate_claims([dict(claim, noise=bad)], "p")
    with pytest.raises(ValueError, match="numeric compare"):
        validate_claims([dict(claim, compare="true")], "p")
    validate_claims([claim], "p")


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
    assert table["verdict"].tolist() == ["holds", "holds", "not testable here"]
    assert "real_sim" in table["why"].iloc[2]
    assert table["why"].iloc[0] == "" and table["why"].iloc[1] == ""
    md = to_markdown(table, "p")
    assert "| c2 |" in md and "**holds**" in md


def test_every_row_that_does_not_hold_says_why():
    df = small_run()
    claims = [
        {"id": "numbers", "text": "t", "check": "rounds", "compare": "approx", "paper_value": 50, "tolerance": 1,
         "experiments": ["e"]},
        {"id": "explained", "text": "t", "check": "explained", "compare": "true", "experiments": ["e"]},
        {"id": "capped", "text": "t", "check": "capped", "compare": "true", "experiments": ["e"]},
        {"id": "paper_only", "text": "t", "check": "rounds", "compare": "approx", "paper_value": 5,
         "experiments": ["e"], "testable_at": ["paper"], "untestable_reason": "needs paper scale: max_rounds 4000"},
        {"id": "static_why", "text": "t", "check": "rounds", "compare": "le", "paper_value": 1,
         "experiments": ["e"], "why": "the paper's step is unstated"},
    ]
    checks = {"rounds": lambda f, s: int(s["e"]["rounds"].iloc[0]),
              "explained": lambda f, s: Outcome(False, "FedAlt hit its cap"),
              "capped": lambda f, s: NotTestable("needs paper scale: 3 of 4 runs hit max_rounds = 60")}
    t = evaluate(claims, checks, {"e": df}, {"e": summarize(df)}, "p", scale="quick").set_index("claim")
    assert t.loc["numbers", "verdict"] == "fails" and "ours 5 vs paper 50" in t.loc["numbers", "why"]
    assert t.loc["explained", "verdict"] == "fails" and t.loc["explained", "why"] == "FedAlt hit its cap"
    assert t.loc["capped", "verdict"] == "not testable here" and "max_rounds = 60" in t.loc["capped", "why"]
    assert t.loc["capped", "our_value"] == "—"
    assert t.loc["paper_only", "verdict"] == "not testable here" and "paper scale" in t.loc["paper_only", "why"]
    assert t.loc["paper_only", "our_value"] == "5"                 # computed and shown all the same
    assert t.loc["static_why", "why"] == "the paper's step is unstated"
    # at paper scale the scale-gated claim is judged
    t = evaluate(claims, checks, {"e": df}, {"e": summarize(df)}, "p", scale="paper").set_index("claim")
    assert t.loc["paper_only", "verdict"] == "holds" and t.loc["paper_only", "why"] == ""


def test_claims_files_are_validated():
    with pytest.raises(ValueError, match="duplicate claim id"):
        validate_claims([{"id": "a", "check": "x"}, {"id": "a", "check": "y"}], "p")
    with pytest.raises(ValueError, match="unknown key"):
        validate_claims([{"id": "a", "check": "x", "tolerence": 1}], "p")
    with pytest.raises(ValueError, match="untestable_reason"):
        validate_claims([{"id": "a", "check": "x", "testable_at": ["paper"]}], "p")


def test_status_block_generated_from_claims_parquet(tmp_path):
    from fedrepro.claims.status import BEGIN, END, main

    for paper, verdicts in {"fedepm": ["holds", "holds", "fails"], "frpg": ["holds", "not testable here"]}.items():
        (tmp_path / "results" / paper).mkdir(parents=True)
        pd.DataFrame({"claim": [f"c{i}" for i in range(len(verdicts))], "verdict": verdicts}).to_parquet(
            tmp_path / "results" / paper / "claims.parquet")
    doc = tmp_path / "README.md"
    doc.write_text(f"intro\n{BEGIN}\nold counts\n{END}\noutro\n")
    results = str(tmp_path / "results")
    assert main(["--check", "--results", results, str(doc)]) == 1
    assert main(["--results", results, str(doc)]) == 0
    text = doc.read_text()
    assert "| fedepm | 2 | 1 | 0 | 3 |" in text and "| frpg | 1 | 0 | 1 | 2 |" in text
    assert text.startswith("intro\n") and text.endswith("outro\n") and "old counts" not in text
    assert main(["--check", "--results", results, str(doc)]) == 0


def test_compare_results_ignores_timing_and_finds_changes(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("compare_results", "scripts/compare_results.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    df = small_run()
    for side in ("old", "new"):
        (tmp_path / side / "p").mkdir(parents=True)
    df.to_parquet(tmp_path / "old" / "p" / "e.parquet")
    slower = df.assign(wall_time=df["wall_time"] + 1.0, run_cpu_time=9.0, new_metric=1.0)
    slower.to_parquet(tmp_path / "new" / "p" / "e.parquet")
    assert mod.main([str(tmp_path / "old"), str(tmp_path / "new")]) == 0
    changed = df.copy()
    changed.loc[changed.index[-1], "objective"] *= 1 + 1e-12
    changed.to_parquet(tmp_path / "new" / "p" / "e.parquet")
    assert mod.main([str(tmp_path / "old"), str(tmp_path / "new")]) == 1
    assert mod.main([str(tmp_path / "old"), str(tmp_path / "new"), "--rtol", "1e-10"]) == 0


def test_markdown_rows_keep_their_cells_when_values_contain_a_pipe():
    from fedrepro.claims import Outcome, evaluate, to_markdown

    claims = [{"id": "c", "text": "a | b", "check": "f", "compare": "true", "experiments": []}]
    table = evaluate(claims, {"f": lambda fr, su: Outcome(False, why="x | y", detail="mean |A^t| 3")}, {}, {})
    row = [line for line in to_markdown(table, "p").splitlines() if line.startswith("| c ")][0]
    assert row.count("|") - row.count("\\|") == 8


def test_provenance_lists_python_and_every_library_version():
    from fedrepro.experiments.results import PROVENANCE_LIBRARIES, provenance

    prov = provenance("abc", cells=3)
    assert prov["python"].count(".") == 2 and prov["cells"] == 3
    assert all(prov[name] and prov[name] != "not installed" for name in PROVENANCE_LIBRARIES)
