"""The query layer's primitives added for fedadmm_gong's checks (issue #42): mean_of, explain, outcome,
outcome_of, against_paper; reaches and the measure kinds reaches, percent."""
import pytest

from fedrepro.claims import NotTestable, Outcome, Replicates
from fedrepro.claims.query import EMPTY, PerSeed, against_paper, explain, mean_of, outcome, outcome_of


def test_mean_of_pairs_by_replicate_and_carries_any_bound():
    a = PerSeed.bounded({0: 10.0, 1: 20.0, 2: 30.0}, lower={1: True})
    b = PerSeed.bounded({0: 30.0, 1: 40.0}, upper={0: True})
    m = mean_of([a, b])
    assert m.seeds == [0, 1]                                   # seed 2 is not in both
    assert list(m.v) == [20.0, 30.0]
    assert list(m.lb) == [False, True] and list(m.ub) == [True, False]
    assert mean_of([]) is EMPTY and not len(mean_of(iter([])))
    assert list(mean_of(p for p in [a]).v) == [10.0, 20.0, 30.0]


def test_explain_shows_bounds_per_label():
    a = PerSeed.bounded({0: 1.0, 1: 2.25}, lower={1: True})
    b = PerSeed.bounded({0: -3.0}, upper={0: True})
    assert explain([("A", a), ("B", b)], " pp") == "A: per seed 1.0, 2.2+ pp; B: per seed -3.0- pp"
    assert explain([("A", a)], prefix="", fmt="{:.2f}") == "A: 1.00, 2.25+"
    assert explain([]) == ""


def test_outcome_drops_empty_components():
    r = Replicates([1.0, 2.0], label="x")
    out = outcome([r, None], detail="d", why="w")
    assert isinstance(out, Outcome) and out.value == [r] and (out.detail, out.why) == ("d", "w")
    assert outcome(r).value is r
    assert outcome([None]) is None and outcome([]) is None and outcome(None) is None


def test_outcome_of_labels_components_and_details():
    a, b = PerSeed.exact({0: 1.0, 1: 3.0}), PerSeed.bounded({0: 2.0}, lower={0: True})
    out = outcome_of([("A", a), ("B", b), ("C", EMPTY)], "{}: diff, pp", " pp", " (note)", scale="log")
    assert [r.label for r in out.value] == ["A: diff, pp", "B: diff, pp"]          # C has no value
    assert out.value[0].scale == "log" and list(out.value[1].lower_bound) == [True]
    assert out.detail == "A: per seed 1.0, 3.0 pp; B: per seed 2.0+ pp; C: per seed  pp (note)"
    assert outcome_of([]) is None and outcome_of([("C", EMPTY)]) is None


def test_against_paper_ratios_on_log_scale():
    ours = PerSeed.bounded({0: 20.0, 1: 10.0}, lower={0: True})
    out = against_paper([("A", ours, 10), ("B", ours, None), ("C", EMPTY, 5)], "rounds", " (n)")
    assert len(out.value) == 1
    r = out.value[0]
    assert r.label == "A: rounds ours/paper (10)" and r.scale == "log"
    assert list(r.values) == pytest.approx([2.0, 1.0]) and list(r.lower_bound) == [True, False]
    assert out.detail == "A: 20.0+, 10.0 (paper 10); B: 20.0+, 10.0 (paper None); C:  (paper 5) (n)"
    none = against_paper([("B", ours, None)], "rounds")
    assert isinstance(none, NotTestable) and "no cell" in none.reason


def test_reaches_level_of_the_run_from_start_with_slack():
    import pandas as pd

    from fedrepro.claims.query import MEASURE_KINDS, measure, quantity, reaches
    df = pd.DataFrame({"seed": [0] * 4 + [1] * 4 + [1] * 4, "round": [0, 1, 2, 3] * 3,
                       "acc": [0.9, 0.2, 0.5, 0.8, 0.1, 0.3, 0.4, 0.5, 0.1, 0.5, 0.6, 0.7], "target": 0.5})
    r = reaches(df, "acc", "target", start=1, slack=1e-12)
    assert list(r.v) == [2.0, 2.0] and not r.lb.any()              # seed 1: mean of its two rows per round
    assert list(reaches(df, "acc", "target").v) == [0.0, 2.0]       # without start, round 0 counts
    high = reaches(df.assign(target=0.95), "acc", "target", start=1)
    assert list(high.v) == [4.0, 4.0] and high.lb.all()              # never reached: last round + 1, a lower bound
    assert reaches(df.iloc[0:0], "acc", "target") is EMPTY and reaches(None, "acc", "target") is EMPTY
    spec = {"reaches": "acc", "level": "target", "start": 1, "slack": 1e-12}
    assert list(measure(df, spec).v) == list(r.v) and "reaches" in MEASURE_KINDS
    two = pd.concat([df.assign(g="a"), df.assign(g="b", acc=df["acc"] + 0.3)], ignore_index=True)
    best = quantity(two, {**spec, "best": "lowest", "among": "g"})     # per replicate, the fewer rounds of a, b
    assert list(best.v) == [1.0, 1.0] and list(quantity(two, {**spec, "where": {"g": "a"}}).v) == [2.0, 2.0]


def test_percent_kind_is_final_in_percent():
    import pandas as pd

    from fedrepro.claims.query import final, measure
    df = pd.DataFrame({"seed": [0, 0, 0, 1, 1, 1], "round": [1, 2, 3] * 2, "acc": [0.1, 0.2, 0.4, 0.5, 0.6, 0.9]})
    p = measure(df, {"percent": "acc", "tail": 2})
    assert list(p.v) == list(final(df, "acc", 2).scaled(100).v) == pytest.approx([30.0, 75.0])
    assert list(measure(df, {"percent": "acc"}).v) == pytest.approx([40.0, 90.0])
