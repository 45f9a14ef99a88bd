"""The query layer (issue #42): per-replicate quantities with bound flags, and readings written as data."""
import math

import numpy as np
import pandas as pd
import pytest

from fedrepro.claims import query as q
from fedrepro.claims import registration as reg
from fedrepro.claims.evaluate import evaluate, validate_claims
from fedrepro.claims.verdicts import FAILS, HOLDS


def _runs(seeds=(0, 1, 2)):
    """Three algorithms x two k0 x ``seeds`` (three by default); accuracy rises by `speed` a round; `slow` never
    reaches 0.5."""
    rows = []
    for alg, speed in (("fast", 0.1), ("mid", 0.05), ("slow", 0.01)):
        for k0 in (4, 20):
            for seed in seeds:
                for r in range(0, 21, 2):
                    rows.append({"algorithm": alg, "k0": k0, "seed": seed, "round": r,
                                 "accuracy": min(1.0, speed * r * (1 + 0.01 * seed) * (1 if k0 == 4 else 1.5))})
    return pd.DataFrame(rows)


def test_rounds_to_a_level_caps_a_run_that_never_gets_there_as_a_lower_bound():
    df = q.select(_runs(), k0=4)
    fast = q.rounds_to(q.select(df, algorithm="fast"), "accuracy", 0.5)
    slow = q.rounds_to(q.select(df, algorithm="slow"), "accuracy", 0.5)
    assert fast.v.tolist() == [6.0, 6.0, 6.0] and not fast.lb.any()       # 0.1 * 6 >= 0.5 at the first even round
    assert slow.v.tolist() == [21.0] * 3 and slow.lb.all()                 # last round + 1, a bound
    d = fast - slow                                                        # bounded b: an upper bound of a - b
    assert d.ub.all() and not d.lb.any() and d.v.tolist() == [-15.0] * 3
    r = d.rep("fast - slow")
    assert r.upper_bound is not None and r.interval()[0] == -math.inf
    red = fast.reduction(slow)                                             # 100 (b - a) / b, b a lower bound
    assert red.lb.all() and np.allclose(red.v, 100 * 15 / 21)


def test_extreme_keeps_the_flags_the_bounds_leave():
    a = q.PerSeed.bounded({0: 10.0, 1: 5.0}, lower={0: True})
    b = q.PerSeed.bounded({0: 12.0, 1: 5.0}, lower={1: True})
    low = q.extreme([a, b], lowest=True)
    assert low.v.tolist() == [10.0, 5.0]
    assert low.lb.tolist() == [True, False]      # seed 0: the min is a's bound; seed 1: b's 5 is exact
    high = q.extreme([a, b], lowest=False)
    assert high.v.tolist() == [12.0, 5.0] and high.lb.tolist() == [True, True]


def test_select_matches_lists_floats_and_missing_values():
    df = pd.DataFrame({"a": [0.1, 0.2, 0.30000000000000004, None], "b": ["x", "y", "z", "x"]})
    assert len(q.select(df, a=0.3)) == 1 and len(q.select(df, b=["x", "y"])) == 3
    assert len(q.select(df, a=None)) == 1 and q.select(df, c=1).empty


def test_final_value_at_and_mean_over_read_the_right_points():
    df = q.select(_runs(), algorithm="mid", k0=4, seed=0)
    assert q.final(df, "accuracy").v.tolist() == [1.0]
    assert np.isclose(q.final(df, "accuracy", tail=2).v.iloc[0], (0.9 + 1.0) / 2)
    assert np.isclose(q.value_at(df, "accuracy", 7).v.iloc[0], 0.3)           # round 6: the last <= 7
    assert np.isclose(q.mean_over(df, "accuracy", 2, 4).v.iloc[0], 0.15)


READING = {"where": {"k0": [4, 20]}, "per": ["k0"],
           "of": {"where": {"algorithm": "fast"}, "rounds_to": 0.5, "metric": "accuracy"},
           "minus": {"where": {"algorithm": ["mid", "slow"]}, "rounds_to": 0.5, "metric": "accuracy",
                     "best": "lowest", "among": "algorithm"},
           "label": "fast - best other rounds to 0.5"}


def test_a_reading_written_as_data_gives_one_component_per_setting():
    # 8 seeds: a verdict needs at least 6 replicates, and failing one of 2 components needs 7 (docs/verdicts.md)
    runs = _runs(seeds=range(8))
    check = q.compile_reading(READING, name="fastest")
    comps = check({"fig": runs}, {})
    assert [c.label for c in comps] == ["fast - best other rounds to 0.5, k0=4", "fast - best other rounds to 0.5, k0=20"]
    assert comps[0].values.tolist() == [6.0 - 10.0] * 8    # mid reaches 0.5 at round 10
    claim = {"id": "fastest", "kind": "paper", "source": {"place": "Fig. 1", "quote": "fast is fastest"},
             "text": "t", "reading": READING, "compare": "lt", "paper_value": 0, "experiments": ["fig"]}
    validate_claims([claim], "toy", {"reading:fastest": check})
    table = evaluate([claim], {"reading:fastest": check}, {"fig": runs}, {"fig": pd.DataFrame()}, "toy")
    assert table["verdict"].tolist() == [HOLDS]
    flipped = dict(claim, compare="gt")
    assert evaluate([flipped], {"reading:fastest": check}, {"fig": runs}, {}, "toy")["verdict"].tolist() == [FAILS]


def test_a_malformed_reading_is_refused_with_the_key():
    with pytest.raises(ValueError, match="unknown reading key"):
        q.compile_reading({**READING, "median": True})
    with pytest.raises(ValueError, match="at most one of"):
        q.compile_reading({**READING, "over": READING["minus"]})
    with pytest.raises(ValueError, match="neither trace"):
        q.compile_reading({**READING, "frame": "tidy"})
    claim = {"id": "x", "kind": "paper", "source": {"place": "p", "quote": "q"}, "text": "t", "check": "c",
             "reading": READING, "compare": "lt", "paper_value": 0}
    with pytest.raises(ValueError, match="exactly one of 'check'"):
        validate_claims([claim], "toy")


def test_a_readings_fingerprint_covers_its_data_and_its_views_code():
    def tidy(frames, summaries):
        return pd.concat(frames.values())
    tidy.__module__ = "fedrepro.papers.toy.claims"
    claim = {"id": "fastest", "reading": {**READING, "frame": "tidy"}}
    checks = {"reading:fastest": q.compile_reading(claim["reading"], {"tidy": tidy})}
    fp = reg.fingerprint(claim, checks)
    assert fp == reg.fingerprint(dict(claim), checks)
    moved = {**claim, "reading": {**claim["reading"], "of": {**READING["of"], "rounds_to": 0.4}}}
    assert reg.fingerprint(moved, {"reading:fastest": q.compile_reading(moved["reading"], {"tidy": tidy})}) != fp

    def tidy2(frames, summaries):
        return pd.concat(list(frames.values())[:1])
    tidy2.__module__ = "fedrepro.papers.toy.claims"
    assert reg.fingerprint(claim, {"reading:fastest": q.compile_reading(claim["reading"], {"tidy": tidy2})}) != fp
    code = reg._shared_code(checks["reading:fastest"])
    assert any(k.endswith("query.rounds_to") for k in code) and any(k.endswith("query.extreme") for k in code)


def test_a_reading_labels_its_components_from_the_setting_and_passes_on_a_views_not_testable():
    from fedrepro.claims.evaluate import NotTestable
    check = q.compile_reading({**READING, "label": "fast - best other at k0 = {k0}"}, name="x")
    assert [c.label for c in check({"fig": _runs()}, {})] == ["fast - best other at k0 = 4", "fast - best other at k0 = 20"]
    why = NotTestable("needs the timing pass")
    gated = q.compile_reading({**READING, "frame": "timed"}, {"timed": lambda frames, summaries: why}, name="y")
    assert gated({"fig": _runs()}, {}) is why


def test_a_reading_of_several_components_shows_each_ones_values_as_its_detail():
    from fedrepro.claims.evaluate import Outcome
    spec = {"per": ["k0"], "label": "{k0}: fast - mid rounds",
            "components": [{"of": {**READING["of"]}, "minus": {**READING["of"], "where": {"algorithm": "mid"}}},
                           {"of": {**READING["of"]}, "minus": {**READING["of"], "where": {"algorithm": "slow"}},
                            "label": "{k0}: fast - slow rounds", "show": "{k0} vs slow"}],
            "detail": {"unit": " rounds", "fmt": "{:.0f}", "note": " (note)"}}
    out = q.compile_reading(spec, name="z")({"fig": _runs()}, {})
    assert isinstance(out, Outcome)
    assert [r.label for r in out.value] == ["4: fast - mid rounds", "20: fast - mid rounds",
                                            "4: fast - slow rounds", "20: fast - slow rounds"]
    # slow never reaches 0.5 in 20 rounds: 21, an upper bound of the difference ('-')
    assert out.detail == ("k0=4: per seed -4, -4, -4 rounds; k0=20: per seed -4, -4, -4 rounds; "
                          "4 vs slow: per seed -15-, -15-, -15- rounds; 20 vs slow: per seed -17-, -17-, -17- rounds (note)")
    with pytest.raises(ValueError, match="unknown component key"):
        q.compile_reading({**spec, "components": [{"of": READING["of"], "frame": "x"}]})
    peak = q.compile_reading({"of": {"column": "accuracy", "how": "max", "by": "k0"}, "deterministic": True,
                              "label": "peak"}, name="d")({"fig": _runs()}, {})
    assert peak[0].deterministic and peak[0].interval() == (1.0, 1.0)       # every k0 peaks at 1: no noise


def test_a_claims_args_are_passed_to_its_check_and_are_part_of_its_reading():
    def faster(frames, summaries, who="fast", than="mid"):
        df = frames["fig"]
        a, b = (q.rounds_to(q.select(df, algorithm=x, k0=4), "accuracy", 0.5) for x in (who, than))
        return (a - b).rep(f"{who} - {than}")
    faster.__module__ = "fedrepro.papers.toy.claims"
    claim = {"id": "f", "kind": "paper", "source": {"place": "p", "quote": "q"}, "text": "t", "check": "faster",
             "args": {"than": "slow"}, "compare": "lt", "paper_value": 0, "experiments": ["fig"]}
    validate_claims([claim], "toy", {"faster": faster})
    table = evaluate([claim], {"faster": faster}, {"fig": _runs()}, {}, "toy")
    assert "fast - slow" in table["our_value"].iloc[0]
    fp = reg.fingerprint(claim, {"faster": faster})
    assert reg.fingerprint({**claim, "args": {"than": "mid"}}, {"faster": faster}) != fp
    with pytest.raises(ValueError, match="'args' is a mapping"):
        validate_claims([{**claim, "args": ["slow"]}], "toy")


def test_an_objective_at_one_penalty_weight_from_its_recorded_parts():
    """{penalised: data, penalty: p, lam}: the final data part + lam x the final penalty, per seed (runs trained with
    other penalty weights compared on one objective, e.g. frpg's F at FRPG's lambda for RSA)."""
    df = pd.DataFrame({"seed": [0, 0, 1, 1], "round": [1, 2, 1, 2], "loss_data": [5.0, 4.0, 6.0, 3.0],
                       "loss_penalty": [1.0, 0.5, 2.0, 0.25]})
    got = q.measure(df, {"penalised": "loss_data", "penalty": "loss_penalty", "lam": 1.6})
    assert got.v.tolist() == pytest.approx([4.0 + 1.6 * 0.5, 3.0 + 1.6 * 0.25]) and not got.lb.any()
