
import numpy as np
import pandas as pd
import pytest

from scipy import stats

from fedrepro.claims import (NotTestable, Outcome, Replicates, accepted_range, decide, evaluate, to_markdown,
                            validate_claims)
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
    assert "attack_spec" not in df.columns                    # no attack block: no column


def test_run_frame_records_the_attack_block():
    # the adversary's block (e.g. aspire's Table 4 backdoor, no longer in the problem column) is in the results
    p = Quadratic(5.0 + np.random.default_rng(0).normal(size=(6, 2)))
    res = simulate(p, LocalGD(), k0=2, rho=0.5, max_rounds=2, seed=0)
    attack = {"name": "backdoor", "poison_fraction": 0.1, "loss_scale": 10.0}
    df = run_frame({"algorithm": "local_gd", "problem": {"name": "quadratic"}, "attack": attack}, res, p.describe(), {})
    assert (df["attack_spec"] == '{"loss_scale": 10.0, "name": "backdoor", "poison_fraction": 0.1}').all()


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


def _claim(**kw):
    base = {"id": "c", "kind": "paper", "source": {"place": "Sec. 1", "quote": "A beats B."},
            "text": "paired difference A - B below 0", "check": "d", "compare": "lt", "paper_value": 0,
            "experiments": ["e"]}
    return {**base, **kw}


def test_interval_decides_holds_fails_undecided():
    """Six or more replicates on one side decide (the engine's own tests: tests/test_verdicts.py)."""
    assert decide(Replicates([-1.0, -2.0, -1.5, -1.2, -1.1, -1.7]), 0, "lt").verdict == "holds"
    assert decide(Replicates([1.0, 2.0, 1.5, 1.2, 1.1, 1.7]), 0, "lt").verdict == "fails"
    d = decide(Replicates([-0.1, 0.2, -0.3, 0.05, -0.2, -0.15]), 0, "lt")
    assert d.verdict == "undecided" and d.needed > 6
    assert "replicates at the measured spread would decide it" in d.reason()


def test_accepted_ranges_and_bad_compares():
    assert accepted_range(5, "lt") == (-np.inf, 5.0, True, True)
    assert accepted_range(5, "ge", 1) == (4.0, np.inf, False, True)
    assert accepted_range(10, "band", 3)[:2] == (10 / 3, 30.0)
    with pytest.raises(ValueError, match="ratio tolerance"):
        accepted_range(1, "band", 0.5)
    with pytest.raises(ValueError, match="numeric"):
        accepted_range(1, "roughly")
    with pytest.raises(ValueError, match="non-finite"):
        Replicates([1.0, np.nan])


def test_evaluate_claims_from_results():
    df = small_run()
    claims = [
        _claim(id="c1"),
        _claim(id="c2", compare="approx", paper_value=5, tolerance=0.5, tolerance_why="rounds are integers",
               check="rounds"),
        _claim(id="c3", experiments=["x"]),
        _claim(id="c4", kind="check", compare="true", check="dec"),
    ]
    checks = {"d": lambda f, s: Replicates([-1.0, -1.2, -0.8, -1.1, -0.9, -1.05]),
              "rounds": lambda f, s: Replicates([int(s["e"]["rounds"].iloc[0])], deterministic=True),
              "dec": lambda f, s: bool(f["e"]["objective"].iloc[-1] < f["e"]["objective"].iloc[0])}
    validate_claims(claims, "p", checks, experiments={"e", "x"})
    table = evaluate(claims, checks, {"e": df}, {"e": summarize(df)}, "p", skipped={"x": ["real_sim"]})
    assert table["verdict"].tolist() == ["holds", "holds", "unavailable", "holds"]
    assert "real_sim" in table["why"].iloc[2]
    assert table["kind"].tolist() == ["paper", "paper", "paper", "check"]
    assert table["quote"].iloc[0] == "A beats B." and table["replicates"].iloc[0] == 6
    md = to_markdown(table, "p")
    assert "## Paper statements" in md and "## Checks of our implementation" in md and "| c2 |" in md


def test_every_row_that_does_not_hold_says_why():
    df = small_run()
    claims = [
        _claim(id="fails"),
        _claim(id="open"),
        _claim(id="capped", check="capped"),
        _claim(id="verify_only", testable_at=["verify", "paper"], untestable_reason="needs 5 seeds: scale verify"),
        _claim(id="static_why", check="explained", why="the paper's step is unstated"),
    ]
    up = [1.0, 1.2, 0.8, 1.1, 0.9, 1.05, 1.15]
    checks = {"d": lambda f, s: Replicates(up),
              "capped": lambda f, s: NotTestable("3 of 4 runs hit max_rounds = 60"),
              "explained": lambda f, s: Outcome(Replicates([0.1, -0.3, 0.2, 0.1, -0.3, 0.2]), "FedAlt hit its cap")}
    t = evaluate(claims, checks, {"e": df}, {"e": summarize(df)}, "p", scale="quick").set_index("claim")
    assert t.loc["fails", "verdict"] == "fails" and "outside the accepted range" in t.loc["fails", "why"]
    assert t.loc["capped", "verdict"] == "undecided" and "max_rounds = 60" in t.loc["capped", "why"]
    assert t.loc["verify_only", "verdict"] == "undecided" and "scale verify" in t.loc["verify_only", "why"]
    assert t.loc["verify_only", "our_value"].startswith("1.029 [")      # computed and shown all the same
    assert t.loc["static_why", "verdict"] == "undecided"
    assert "FedAlt hit its cap" in t.loc["static_why", "why"] and "sits on the edge" in t.loc["static_why", "why"]
    t = evaluate(claims, checks, {"e": df}, {"e": summarize(df)}, "p", scale="verify").set_index("claim")
    assert t.loc["verify_only", "verdict"] == "fails"


def test_verdicts_are_kept_under_the_papers_false_discovery_control():
    """Benjamini-Hochberg over the statements a build tested (docs/verdicts.md): one statement decided
    at p = 2/64 among five tested, the others open, does not stand; among five decided ones it does.
    Checks of our code are outside the family."""
    df = small_run()
    six = Replicates([-1.0] * 6)                      # holds at p = 2 * 0.5**6 = 0.03125
    open_ = Replicates([-1.0, 1.0, -0.5, 0.5, -0.2, 0.3])
    claims = [_claim(id="c0")] + [_claim(id=f"o{i}", check="open") for i in range(4)] + [
        _claim(id="k", kind="check", compare="true", check="dec")]
    checks = {"d": lambda f, s: six, "open": lambda f, s: open_, "dec": lambda f, s: True}
    t = evaluate(claims, checks, {"e": df}, {"e": summarize(df)}, "p").set_index("claim")
    assert t.loc["c0", "verdict"] == "undecided" and "Benjamini-Hochberg" in t.loc["c0", "why"]
    assert t.loc["c0", "p_value"] == pytest.approx(2 / 64) and t.loc["k", "verdict"] == "holds"
    checks["open"] = lambda f, s: six
    t = evaluate(claims, checks, {"e": df}, {"e": summarize(df)}, "p").set_index("claim")
    assert (t["verdict"] == "holds").all()


def test_a_statement_the_false_discovery_control_holds_back_names_the_replicates_that_would_keep_it():
    """Held back by Benjamini-Hochberg, a statement is not unbounded: more replicates lower its p-value.
    Its replicates_needed are those that reach q / m (kept whatever the others' p-values), so the verify
    plan adds them; the values decided at that count stand under the control."""
    from fedrepro.claims.plan import plan

    df = small_run()
    six = Replicates([-1.0, -0.8, -1.2, -0.9, -1.1, -1.0])    # holds at its own level, p = 2 / 64
    open_ = Replicates([-1.0, 1.0, -0.5, 0.5, -0.2, 0.3])
    claims = [_claim(id="c0")] + [_claim(id=f"o{i}", check="open") for i in range(4)]
    checks = {"d": lambda f, s: six, "open": lambda f, s: open_}
    t = evaluate(claims, checks, {"e": df}, {"e": summarize(df)}, "p").set_index("claim")
    row = t.loc["c0"]
    assert row["verdict"] == "undecided" and row["replicates"] == 6
    need = int(row["replicates_needed"])
    # the sign test reaches 0.05 / 5 = 0.01 at 8 replicates all on one side (2 / 256), not at 7 (2 / 128)
    assert need == 8 and f"about {need} replicates" in row["why"] and "q / 5" in row["why"]
    # the plan adds the seeds (it took such a statement for unbounded before)
    p = plan({"p": t.reset_index()}, {"p": {"c0": ("e",)}}, {"p": {"e": (6, 10.0)}}, budget_cpu_s=1e6)
    assert p.seeds == {("p", "e"): 8}
    # at that count, the same spread: it stands under the control
    eight = Replicates([-1.0, -0.8, -1.2, -0.9, -1.1, -1.0, -0.95, -1.05])
    checks["d"] = lambda f, s: eight
    t = evaluate(claims, checks, {"e": df}, {"e": summarize(df)}, "p").set_index("claim")
    assert t.loc["c0", "verdict"] == "holds"
    # the open statements keep what they had: no need from the control
    assert (t.loc[[f"o{i}" for i in range(4)], "verdict"] == "undecided").all()


@pytest.mark.parametrize("bad, match", [
    ({"noise": 0.2}, "unknown key"),
    ({"noise_abs": 1.0}, "unknown key"),
    ({"kind": None}, "kind"),
    ({"kind": "claim"}, "kind"),
    ({"source": None}, "source"),
    ({"source": {"place": "Fig. 3"}}, "source"),
    ({"source": {"place": "Fig. 3", "quote": " "}}, "source"),
    ({"text": ""}, "text"),
    ({"check": None}, "check"),
    ({"compare": "true"}, "paper statement"),
    ({"compare": "roughly"}, "compare"),
    ({"compare": "approx", "tolerance": 1}, "tolerance_why"),
    ({"compare": "band", "tolerance": 2, "tolerance_why": "x2: two platforms", "paper_value": None}, "paper_value"),
    ({"tolerance": -1}, "tolerance"),
    ({"tolerance": float("inf")}, "tolerance"),
    ({"testable_at": ["verify"]}, "untestable_reason"),
    ({"testable_at": "verify", "untestable_reason": "x"}, "testable_at"),
    ({"experiments": "e"}, "experiments"),
    ({"check": "nope"}, "not defined"),
    ({"experiments": ["nope"]}, "not defined"),
])
def test_claims_files_are_validated(bad, match):
    with pytest.raises(ValueError, match=match):
        validate_claims([_claim(**bad)], "p", {"d": None}, experiments={"e"}, scales=("quick", "verify", "paper"))


def test_claims_file_shape_and_duplicates_are_rejected():
    with pytest.raises(ValueError, match="duplicate claim id"):
        validate_claims([_claim(), _claim()], "p")
    with pytest.raises(ValueError, match="must be a list"):
        validate_claims({"c": _claim()}, "p")
    with pytest.raises(ValueError, match="no 'id'"):
        validate_claims([{k: v for k, v in _claim().items() if k != "id"}], "p")
    validate_claims([_claim(kind="check", compare="true")], "p")       # checks may be booleans


def test_status_block_generated_from_claims_parquet(tmp_path):
    from fedrepro.claims.status import BEGIN, END, main

    for paper, verdicts in {"fedepm": ["holds", "holds", "fails", "holds"], "frpg": ["holds", "undecided"]}.items():
        (tmp_path / "results" / paper).mkdir(parents=True)
        kinds = ["paper"] * 3 + ["check"] if paper == "fedepm" else ["paper", "paper"]
        pd.DataFrame({"claim": [f"c{i}" for i in range(len(verdicts))], "kind": kinds, "verdict": verdicts}).to_parquet(
            tmp_path / "results" / paper / "claims.parquet")
    doc = tmp_path / "README.md"
    doc.write_text(f"intro\n{BEGIN}\nold counts\n{END}\noutro\n")
    results = str(tmp_path / "results")
    assert main(["--check", "--results", results, str(doc)]) == 1
    assert main(["--results", results, str(doc)]) == 0
    text = doc.read_text()
    assert "| fedepm | 2 | 1 | 0 | 0 | 0 | 0 | 3 | 0 | 1 | 0 | 0 |" in text and "| frpg | 1 | 0 | 0 | 1 | 0 | 0 | 2 | 0 | 0 | 0 | 0 |" in text
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
    # a renamed cell (same run, new id): only-old / only-new rows unless the rename is given
    renamed = df.assign(cell=df["cell"] + "x", problem="moved")
    renamed.to_parquet(tmp_path / "new" / "p" / "e.parquet")
    assert mod.main([str(tmp_path / "old"), str(tmp_path / "new")]) == 1
    tsv = tmp_path / "renames.tsv"
    pd.DataFrame({"old_cell": df["cell"].unique(), "new_cell": df["cell"].unique() + "x"}).to_csv(tsv, sep="\t",
                                                                                                   index=False)
    args = [str(tmp_path / "old"), str(tmp_path / "new"), "--renames", str(tsv)]
    assert mod.main(args) == (1 if "problem" in df.columns else 0)
    assert mod.main(args + ["--ignore", "problem"]) == 0


def test_markdown_rows_keep_their_cells_when_values_contain_a_pipe():
    from fedrepro.claims import Outcome, evaluate, to_markdown

    claims = [_claim(text="a | b", check="f", kind="check", compare="true", experiments=[])]
    table = evaluate(claims, {"f": lambda fr, su: Outcome(False, why="x | y", detail="mean |A^t| 3")}, {}, {})
    row = [line for line in to_markdown(table, "p").splitlines() if line.startswith("| c ")][0]
    assert row.count("|") - row.count("\\|") == 10


def test_provenance_lists_python_and_every_library_version():
    from fedrepro.experiments.results import PROVENANCE_LIBRARIES, provenance

    prov = provenance("abc", cells=3)
    assert prov["python"].count(".") == 2 and prov["cells"] == 3
    assert all(prov[name] and prov[name] != "not installed" for name in PROVENANCE_LIBRARIES)



def test_readme_status_block_is_a_well_formed_verdict_table():
    # the block is generated (fedrepro.claims.status); a hand edit that breaks it fails here (issue #42)
    from pathlib import Path

    from fedrepro.claims import STATUS_COLUMNS, VERDICTS
    from fedrepro.claims.status import BEGIN, END
    from fedrepro.experiments.yamlio import PAPERS

    text = Path(__file__).resolve().parents[1].joinpath("README.md").read_text()
    block = text[text.index(BEGIN) + len(BEGIN):text.index(END)]
    rows = [ln for ln in block.splitlines() if ln.startswith("|")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    assert header == STATUS_COLUMNS
    body = [[c.strip() for c in r.strip("|").split("|")] for r in rows[2:]]
    assert sorted(r[0] for r in body) == sorted(p for p in PAPERS if p != "custom")
    for r in body:
        assert len(r) == len(STATUS_COLUMNS), r
        counts = dict(zip(STATUS_COLUMNS[1:], map(int, r[1:])))     # every count an integer
        assert sum(counts[v] for v in VERDICTS) == counts["statements"], r
        assert counts["revised after a verdict"] <= counts["statements"], r


def test_a_twin_is_shown_beside_its_statement_and_not_counted(tmp_path):
    """A sentence is counted once: its reading for another variant of the method (kind: twin, twin_of, variant)
    is evaluated and shown in its own section, and the status block counts only the paper statements."""
    df = small_run()
    claims = [_claim(id="c1", variant="early code"),
              _claim(id="c1_alg1", kind="twin", twin_of="c1", variant="Algorithm 1 as printed", check="worse")]
    checks = {"d": lambda f, s: Replicates([-1.0, -1.2, -0.8, -1.1, -0.9, -1.05, -1.0]),
              "worse": lambda f, s: Replicates([1.0, 1.2, 0.8, 1.1, 0.9, 1.05, 1.0])}
    validate_claims(claims, "p", checks, experiments={"e"})
    table = evaluate(claims, checks, {"e": df}, {"e": summarize(df)}, "p")
    assert table["verdict"].tolist() == ["holds", "fails"] and table["twin_of"].tolist() == ["", "c1"]
    md = to_markdown(table, "p")
    assert "## The same statements read for another variant" in md and "| c1_alg1 (twin of c1) |" in md
    (tmp_path / "p").mkdir()
    table.to_parquet(tmp_path / "p" / "claims.parquet")
    from fedrepro.claims.evaluate import status_table
    row = status_table(tmp_path).iloc[0]
    assert (row["holds"], row["fails"], row["statements"]) == (1, 0, 1)
    twin = claims[1]
    cases = [({**twin, "kind": "paper"}, "only a twin"),
             ({k: v for k, v in twin.items() if k != "twin_of"}, "names the counted claim"),
             ({**twin, "twin_of": "nope"}, "not a paper statement"),
             ({**twin, "variant": ""}, "says which variant")]
    for bad, match in cases:
        with pytest.raises(ValueError, match=match):
            validate_claims([claims[0], bad], "p")
