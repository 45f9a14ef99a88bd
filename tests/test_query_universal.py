"""Universal claims decided by their components (issue #43): the measure kind lowest_margin, one component
per setting, so that one decided counterexample fails the claim (a share of the settings could only leave it
undecided)."""
import numpy as np
import pandas as pd
import pytest

from fedrepro.claims import query as q
from fedrepro.claims.verdicts import decide

ALGS = ["a", "b", "c"]          # "a" the target, "b" and "c" the others


def _rows(cr, capped=(), n=10):
    """One row per (algorithm, k0, seed): ``cr(alg, k0, seed)`` rounds; (alg, k0) in ``capped`` hit their cap."""
    return pd.DataFrame([{"algorithm": a, "k0": k0, "seed": s, "cr": float(cr(a, k0, s)), "capped": (a, k0) in capped}
                         for a in ALGS for k0 in (1, 4, 8) for s in range(n)])


def _reading(**over):
    spec = {"frame": "t", "per": ["k0"], "label": "a - fewest other CR at k0 = {k0}",
            "of": {"lowest_margin": "a", "group": "algorithm", "value": "cr", "capped": "capped", "complete": 2}}
    spec["of"].update(over)
    return q.compile_reading(spec, {"t": lambda f, s: f["t"]})


def _noise(s):
    return 0.3 * np.sin(s + 1.0)      # a spread, paired by seed (the same for every algorithm)


def test_all_good_settings_give_every_component_on_the_right_side():
    df = _rows(lambda a, k0, s: (10 if a == "a" else 14 + (a == "c")) + _noise(s) + 0.2 * (s % 3) * (a != "a"))
    comps = _reading()({"t": df}, {})
    assert [c.label for c in comps] == [f"a - fewest other CR at k0 = {k}" for k in (1, 4, 8)]
    assert all((c.values < 0).all() and c.lower_bound is None and c.upper_bound is None for c in comps)
    assert decide(comps, 0, "lt").verdict == "holds"


def test_one_clear_counterexample_setting_is_its_own_failing_component():
    # the target is the lowest at k0 = 1 and 8, and 5 rounds above "b" at k0 = 4 on every seed
    df = _rows(lambda a, k0, s: {"a": 10 if k0 != 4 else 19, "b": 14, "c": 16}[a] + _noise(s) + 0.1 * s * (a == "b"))
    comps = _reading()({"t": df}, {})
    bad = comps[1]
    assert bad.label == "a - fewest other CR at k0 = 4" and (bad.values > 3).all()
    d = decide(comps, 0, "lt")
    assert d.verdict == "fails" and [c.verdict for c in d.components] == ["holds", "fails", "holds"]
    # the share reading of the same runs: 2/3 at every seed, an interval on a mean share, not a counterexample
    share = q.lowest_share(df, "a", "algorithm", "k0", "cr", capped="capped", complete=2)
    assert np.allclose(share.v, 2 / 3)


def test_a_tie_is_not_lower():
    df = _rows(lambda a, k0, s: 12 + _noise(s) if a != "c" else 20)
    comps = _reading()({"t": df}, {})
    assert all(np.allclose(c.values, 0) for c in comps)
    assert decide(comps, 0, "lt").verdict == "fails"


def test_capped_runs_carry_bound_flags():
    # k0 = 1: the target capped (a lower bound) above an uncapped other: a decided loss (value a lower bound > 0)
    # k0 = 4: every other capped above the target: a decided win (an upper bound < 0)
    # k0 = 8: the other achieving the minimum capped below the target: open (an upper bound >= 0)
    cr = {1: {"a": 30, "b": 20, "c": 25}, 4: {"a": 10, "b": 40, "c": 40}, 8: {"a": 30, "b": 25, "c": 40}}
    df = _rows(lambda a, k0, s: cr[k0][a] + _noise(s), capped={("a", 1), ("b", 4), ("c", 4), ("b", 8)})
    one, four, eight = (q.lowest_margin(g, "a", "algorithm", "cr", capped="capped") for _, g in df.groupby("k0"))
    assert one.lb.all() and not one.ub.any() and (one.v > 0).all()
    assert four.ub.all() and not four.lb.any() and (four.v < 0).all()
    assert eight.ub.all() and not eight.lb.any() and (eight.v > 0).all()
    comps = _reading()({"t": df}, {})
    assert comps[0].lower_bound is not None and comps[1].upper_bound is not None and comps[2].upper_bound is not None
    d = decide(comps, 0, "lt")
    assert [c.verdict for c in d.components] == ["fails", "holds", "undecided"] and d.verdict == "fails"
    # both the target and the lowest other capped: unknown in both directions
    both = q.lowest_margin(_rows(lambda a, k0, s: 50, capped={("a", 1), ("b", 1), ("c", 1)}).query("k0 == 1"),
                           "a", "algorithm", "cr", capped="capped")
    assert both.lb.all() and both.ub.all()


def test_ratio_above_and_complete():
    df = _rows(lambda a, k0, s: (10 if a == "a" else 20) + _noise(s))
    comps = _reading(ratio=True, over="k0", above=1)({"t": df}, {})
    assert [c.label for c in comps] == ["a - fewest other CR at k0 = 4", "a - fewest other CR at k0 = 8"]
    assert all(np.all((c.values > 0.45) & (c.values < 0.55)) for c in comps)
    # a setting where only one other ran does not count with complete: 2 (a component is never read on a subset)
    partial = df[~((df["k0"] == 8) & (df["algorithm"] == "c"))]
    assert [c.label[-6:] for c in _reading()({"t": partial}, {})] == ["k0 = 1", "k0 = 4"]
    # a replicate one of the groups lacks is left out (paired)
    assert len(q.lowest_margin(df[~((df.algorithm == "b") & (df.seed == 3))].query("k0 == 4"), "a", "algorithm",
                               "cr")) == 9
    with pytest.raises(ValueError, match="'above: 1' needs 'over:'"):
        q.lowest_margin(df, "a", "algorithm", "cr", above=1)
    assert len(q.lowest_margin(None, "a", "algorithm", "cr")) == 0
