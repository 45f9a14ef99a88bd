"""Two builds' verdicts compared (issue #24: another `seed:` must not turn holds into fails)."""
import pandas as pd

from fedrepro.claims.compare import compare_verdicts, main


def _write(root, rows):
    for paper, g in pd.DataFrame(rows, columns=["paper", "claim", "kind", "verdict"]).groupby("paper"):
        (root / paper).mkdir(parents=True)
        g.to_parquet(root / paper / "claims.parquet")


def test_a_flip_is_a_decided_verdict_turned_around(tmp_path):
    old = [("p", "a", "paper", "holds"), ("p", "b", "paper", "holds"), ("p", "c", "paper", "fails"),
           ("p", "d", "check", "holds"), ("q", "e", "paper", "undecided")]
    new = [("p", "a", "paper", "holds"), ("p", "b", "paper", "undecided"), ("p", "c", "paper", "holds"),
           ("p", "d", "check", "holds"), ("q", "e", "paper", "holds")]
    counts, changes = compare_verdicts(pd.DataFrame(old, columns=["paper", "claim", "kind", "verdict"]),
                                       pd.DataFrame(new, columns=["paper", "claim", "kind", "verdict"]))
    assert changes.set_index("claim")["flip"].to_dict() == {"b": False, "c": True, "e": False}
    p_old = counts[(counts["paper"] == "p") & (counts["build"] == "old")].iloc[0]
    assert (p_old["holds"], p_old["fails"], p_old["undecided"]) == (2, 1, 0)     # the check is not counted
    _write(tmp_path / "old", old)
    _write(tmp_path / "new", new)
    assert main([str(tmp_path / "old"), str(tmp_path / "new")]) == 1
    assert main([str(tmp_path / "old"), str(tmp_path / "old")]) == 0
    assert main([str(tmp_path / "old"), str(tmp_path / "none")]) == 2
