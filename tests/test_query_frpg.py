"""The query-layer functions added for the frpg port (issue #42): informative, gaps, stays_from, memo_frame,
beside, listing; saved (measure kinds saved, stays_from), filled, read_filled, notes, read_beside, read_across."""
import numpy as np
import pandas as pd

from fedrepro.claims import Depends, Outcome
from fedrepro.claims.query import (PerSeed, beside, filled, gaps, informative, listing, measure, memo_frame, notes,
                                   read_across, read_beside, read_filled, rounds_to, saved, stays_from)


def _runs(curves):
    """{seed: [(round, value)]} -> a tidy frame with seed, round, m."""
    return pd.DataFrame([{"seed": s, "round": r, "m": v} for s, pts in curves.items() for r, v in pts])


def test_informative_drops_only_the_replicates_bounded_on_both_sides():
    a = rounds_to(_runs({0: [(0, 0.1), (10, 0.9)], 1: [(0, 0.1), (10, 0.2)], 2: [(0, 0.1), (10, 0.2)]}), "m", 0.5)
    b = rounds_to(_runs({0: [(0, 0.1), (5, 0.9)], 1: [(0, 0.6)], 2: [(0, 0.1), (20, 0.2)]}), "m", 0.5)
    d = a - b                              # seed 1: a capped (lb); seed 2: both capped (lb and ub)
    assert d.lb.tolist() == [False, True, True] and d.ub.tolist() == [False, False, True]
    kept = informative(d)
    assert kept.seeds == [0, 1] and kept.v.tolist() == [5.0, 11.0] and kept.lb.tolist() == [False, True]
    assert len(informative(PerSeed.exact({}))) == 0


def test_gaps_pairs_curves_by_seed_at_the_common_rounds():
    a = _runs({0: [(0, 1.0), (10, 3.0), (20, 5.0)], 1: [(0, 2.0)], 3: [(0, 1.0)]})
    b = _runs({0: [(0, 0.5), (20, 1.0), (30, 9.0)], 1: [(0, 2.5)], 2: [(0, 1.0)]})
    g = gaps(a, b, "m")
    assert list(g) == [0, 1]
    assert g[0].index.tolist() == [0.0, 20.0] and g[0].tolist() == [0.5, 4.0]
    assert g[1].tolist() == [-0.5]
    assert gaps(a, b.iloc[0:0], "m") == {}


def test_stays_from_is_the_first_round_from_which_the_level_holds_to_the_end():
    df = _runs({0: [(0, 0.8), (10, 0.5), (20, 0.8), (30, 0.9)], 1: [(0, 0.8), (10, 0.5)], 2: [(0, 0.9), (5, 0.95)]})
    st = stays_from(df, "m", 0.71)
    assert st.v.tolist() == [20.0, 11.0, 0.0] and st.lb.tolist() == [False, True, False]
    # rounds_to gives the first crossing instead (0 for seed 0)
    assert rounds_to(df, "m", 0.71).v.tolist() == [0.0, 0.0, 0.0]
    assert stays_from(df, "m", 0.6, below=True).v.tolist() == [31.0, 10.0, 6.0]


def test_memo_frame_builds_once_per_identical_parts():
    calls = []

    def build(df):
        calls.append(len(df))
        return df.assign(x=1)

    p, q = pd.DataFrame({"a": [1, 2]}), pd.DataFrame({"a": [3]})
    first = memo_frame([p, q], build)
    assert memo_frame([p, q], build) is first and calls == [3]
    assert first["a"].tolist() == [1, 2, 3] and (first["x"] == 1).all()
    assert memo_frame([p, q.copy()], build) is not first and calls == [3, 3]     # another object: rebuilt


def test_beside_decides_the_side_settings_under_the_claims_rule_and_shows_them():
    from fedrepro.claims import Replicates

    assert beside("frpg", "sgd_lf_limited", []) is None
    stated = [Replicates([1.0, 2.0, 3.0], label="stated")]
    # 6 side replicates: the fewest with which one comparison can be decided at 95% (docs/verdicts.md)
    out = beside("frpg", "sgd_lf_limited", stated, side=[("a=0.3", [Replicates([-30.0, -31.0, -32.0, -33.0, -34.0,
                                                                                -35.0], label="s")]),
                                                         ("none", [])], why="notes")
    assert isinstance(out, Outcome) and out.value == stated
    assert out.detail.startswith("beside (not the verdict): a=0.3: fails") and "none" not in out.detail
    assert out.why.startswith("notes; beside: a=0.3: fails")
    plain = beside("frpg", "sgd_lf_limited", stated)
    assert plain.detail == "" and plain.why == ""


def test_listing_marks_bounds():
    p = PerSeed.bounded({0: 25.0, 1: 1501.0, 2: 300.4}, lower={1: True})
    assert listing(p) == "25, ≥1501, 300"
    assert listing(p, capped="never") == "25, never, 300"
    assert listing(PerSeed.exact({0: 0.75}), "{:.3f}") == "0.750"
    assert np.isnan(PerSeed.exact({}).v.mean()) and listing(PerSeed.exact({})) == ""


def test_informative_gap_is_a_paired_difference_without_the_doubly_capped_replicates():
    from fedrepro.claims.query import informative_gap, measure

    df = pd.concat([_runs({0: [(0, 0.1), (10, 0.9)], 1: [(0, 0.1), (10, 0.2)], 2: [(0, 0.1), (10, 0.2)]}).assign(g="a"),
                    _runs({0: [(0, 0.1), (5, 0.9)], 1: [(0, 0.6)], 2: [(0, 0.1), (20, 0.2)]}).assign(g="b")])
    a, b = {"where": {"g": "a"}, "rounds_to": 0.5, "metric": "m"}, {"where": {"g": "b"}, "rounds_to": 0.5, "metric": "m"}
    d = informative_gap(df, a, b)          # seed 2: both capped, dropped; seed 1: a capped, a lower bound
    assert d.seeds == [0, 1] and d.v.tolist() == [5.0, 11.0] and d.lb.tolist() == [False, True]
    assert d.ub.tolist() == [False, False]
    via_kind = measure(df, {"gap": a, "minus": b})       # the measure kind of a reading's side
    assert via_kind.v.tolist() == d.v.tolist() and via_kind.lb.tolist() == d.lb.tolist()


def _two():
    """Two methods A (reaches 0.5 at 10) and B (at 20; seed 1 never: capped), seeds 0 and 1, with ``ds``."""
    a = _runs({0: [(0, 0.1), (10, 0.9)], 1: [(0, 0.1), (10, 0.9)]}).assign(series="A", ds="x")
    b = _runs({0: [(0, 0.1), (20, 0.9)], 1: [(0, 0.1), (30, 0.2)]}).assign(series="B", ds="x")
    return pd.concat([a, b], ignore_index=True)


def test_saved_and_the_measure_kinds_saved_and_stays_from():
    df, r = _two(), {"rounds_to": 0.5, "metric": "m"}
    s = saved(df, {"where": {"series": "A"}, **r}, {"where": {"series": "B"}, **r})
    assert s.v.tolist() == [0.5, 1 - 10 / 31] and s.lb.tolist() == [False, True] and not s.ub.any()
    k = measure(df, {"saved": {"where": {"series": "A"}, **r}, "versus": {"where": {"series": "B"}, **r}})
    assert k.v.tolist() == s.v.tolist() and k.lb.tolist() == s.lb.tolist()
    st = measure(df[df["series"] == "B"], {"stays_from": 0.5, "metric": "m"})
    assert st.v.tolist() == [20.0, 31.0] and st.lb.tolist() == [False, True]


def test_filled_replaces_only_the_given_placeholders():
    spec = {"where": {"series": "RSA λ={lam}"}, "label": "{setting} {name}", "n": [1, "{lam}"]}
    assert filled(spec, {"lam": 0.3, "name": "x"}) == {"where": {"series": "RSA λ=0.3"}, "label": "{setting} x",
                                                      "n": [1, "0.3"]}
    assert filled(spec) == spec


def test_read_filled_notes_and_read_beside():
    df = _two()
    views = {"v": lambda frames, summaries: df}
    reading = {"frame": "v", "where": {"series": "{s}"}, "of": {"rounds_to": 0.5, "metric": "m"}, "label": "{s} CR"}
    comps = read_filled(reading, {}, {}, {"s": "A"}, views)
    assert [c.label for c in comps] == ["A CR"] and comps[0].values.tolist() == [10.0, 10.0]
    assert read_filled(reading, {}, {}, {"s": "C"}, views) == []
    why = [{"text": "A ", "where": {"series": "A"}, "rounds_to": 0.5, "metric": "m"},
           {"text": "B ", "where": {"series": "B"}, "rounds_to": 0.5, "metric": "m"},
           {"text": "C ", "where": {"series": "C"}, "rounds_to": 0.5, "metric": "m"}]
    assert notes(df, why) == "A 10, 10; B 20, ≥31"
    out = read_beside("frpg", "sgd_lf_limited", {}, {}, reading, {"s": "A"},
                      side=[{"label": "B", "values": {"s": "B"}}], views=views, why=why[:1], note=" (n)",
                      why_in_detail=True)
    assert out.why.startswith("A 10, 10 (n); beside: B: ") and out.detail.startswith("A 10, 10 (n) | beside (not")
    assert read_beside("frpg", "sgd_lf_limited", {}, {}, reading, {"s": "C"}, views=views) is None


def test_read_across_decides_at_every_swept_value_with_the_side_beside():
    # six seeds (a verdict needs at least 6 replicates, docs/verdicts.md): A ends at 0.9, C at 2.0 / 2.1 alternately
    seeds = range(6)
    df = pd.concat([_runs({s: [(0, 0.1), (10, 0.9)] for s in seeds}).assign(series="A", ds="x"),
                    _runs({s: [(0, 2.0 + 0.1 * (s % 2))] for s in seeds}).assign(series="C", ds="x")],
                   ignore_index=True)
    views = {"v": lambda frames, summaries: df}
    reading = {"frame": "v", "of": {"where": {"series": "A"}, "final": "m"}, "minus": {"where": {"series": "{s}"},
               "final": "m"}, "label": "A−{s}"}
    out = read_across("frpg", "loss_below_rsa", {}, {}, reading, {"s": ["C", "A"]}, "s={s}", views=views,
                      side=[{"label": "shown", "values": {"s": "C"}}], name="the unstated s")
    assert isinstance(out, Depends) and out.reason == "depends on the unstated s: holds at s=C, fails at s=A"
    assert out.table.startswith("s=C: holds A−C: -1.15") and out.replicates == 6
    assert out.table.endswith("| beside (stated-parameter sensitivity): shown: holds A−C: -1.15 [-1.207, -1.093] "
                               "(n=6)")
    out = read_across("frpg", "loss_below_rsa", {}, {}, reading, {"s": ["C"]}, "s={s}", views=views, name="s")
    assert out.why.startswith("holds at every swept value of s (1): s=C")
    assert out.value[0].label == "A−C" and np.allclose(out.value[0].values, [-1.1, -1.2] * 3)
    assert read_across("frpg", "loss_below_rsa", {}, {}, reading, {"s": ["D"]}, "s={s}", views=views) is None
