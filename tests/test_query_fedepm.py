"""Query-layer primitives added with the fedepm port (issue #42): per-replicate fitted trends, values at a
replicate's own round, per-group statistics tables, the conservative minimum, trends per setting."""
import math

import numpy as np
import pandas as pd

from fedrepro.claims import query as q


def test_trend_is_the_fitted_ratio_per_replicate_with_bound_flags():
    x = [4, 8, 12, 16, 20]
    parts = {k: q.PerSeed.exact({0: 10 * 0.5 ** ((k - 4) / 16), 1: 7.0}) for k in x}
    f = q.trend(parts)
    assert np.allclose(f.v.to_numpy(), [0.5, 1.0]) and not f.lb.any() and not f.ub.any()
    # the same numbers as the least-squares line of numpy's polyfit
    y = np.log([10 * 0.5 ** ((k - 4) / 16) for k in x])
    assert math.isclose(f.v.iloc[0], math.exp(np.polyfit(x, y, 1)[0] * (max(x) - min(x))))
    # a lower bound right of the mean x: the ratio is a lower bound; left of it: an upper bound; at the mean: neither
    for at, lb, ub in ((20, True, False), (4, False, True), (12, False, False)):
        p = dict(parts)
        p[at] = q.PerSeed.bounded(parts[at].v.to_dict(), lower={0: True})
        g = q.trend(p)
        assert (bool(g.lb.loc[0]), bool(g.ub.loc[0])) == (lb, ub) and not g.lb.loc[1] and not g.ub.loc[1]
    # an upper bound mirrors it; replicates are paired (only those at every x); one x gives no replicates
    p = dict(parts)
    p[20] = q.PerSeed.bounded({0: 1.0}, upper={0: True})
    g = q.trend(p)
    assert g.seeds == [0] and g.ub.loc[0] and not g.lb.loc[0]
    assert len(q.trend({4: parts[4]})) == 0


def test_value_at_each_reads_each_replicate_at_its_own_round():
    df = pd.DataFrame({"seed": [0] * 4 + [1] * 4, "round": [0, 2, 4, 6] * 2,
                       "loss": [4.0, 3.0, 2.0, 1.0, 8.0, 6.0, 4.0, 2.0]})
    v = q.value_at_each(df, "loss", {0: 3, 1: 6})
    assert v.v.to_dict() == {0: 3.0, 1: 2.0}
    stop = q.PerSeed.exact({0: 4.0, 1: -1.0, 2: 0.0})        # seed 1 before its first point, seed 2 has no curve
    assert q.value_at_each(df, "loss", stop).v.to_dict() == {0: 2.0}


def test_stats_table_and_lowest_any_keep_the_capped_runs():
    df = pd.DataFrame({"alg": ["a", "a", "b", "b"] * 2, "repeat": [0] * 4 + [1] * 4,
                       "t": [1.0, 3.0, 2.0, 2.0, 1.5, 2.5, 5.0, 7.0],
                       "capped": [False, False, True, False, False, False, False, False]})
    st = q.stats_table(df, "t", ["alg", "repeat"], "mean", capped="capped")
    assert st["t"].tolist() == [2.0, 2.0, 2.0, 6.0] and st["capped"].tolist() == [False, False, True, False]
    med = q.stats_table(df, "t", ["alg", "repeat"], "median")
    assert list(med.columns) == ["alg", "repeat", "t"]
    a = q.column(q.select(st, alg="a"), "t", by="repeat", capped="capped")
    b = q.column(q.select(st, alg="b"), "t", by="repeat", capped="capped")
    low = q.lowest_any([a, b])
    assert low.v.tolist() == [2.0, 2.0] and low.lb.tolist() == [True, False]   # repeat 0: a tie with a bound
    assert q.extreme([a, b]).lb.tolist() == [False, False]                       # extreme: only the achieving one
    assert len(q.lowest_any([])) == 0


def test_trends_per_setting_with_the_means_of_the_fit():
    rows = pd.DataFrame([{"alg": a, "rho": r, "seed": s, "cr": (20 if a == "x" else 10) * (1 - 0.4 * r) + s}
                         for a in ("x", "y") for r in (0.2, 0.6, 1.0) for s in (0, 1)])
    out = q.trends(rows, "rho", ["alg"], lambda g: q.column(g, "cr"))
    assert [s for s, _, _ in out] == [{"alg": "x"}, {"alg": "y"}]
    setting, fit, means = out[0]
    assert len(fit) == 2 and (fit.v < 1).all()
    assert np.allclose(means, [(18.4 + 19.4) / 2, (15.2 + 16.2) / 2, (12 + 13) / 2])
    assert q.trends(rows[rows["rho"] == 0.2], "rho", ["alg"], lambda g: q.column(g, "cr")) == []
