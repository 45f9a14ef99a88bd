"""The query layer's primitives added for fedadmm_gong's checks (issue #42): mean_of, explain, outcome,
outcome_of, against_paper."""
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
