"""The replicate of a CPU-time claim is the instance (issue #43): a timing pass re-runs every cell R times; per
instance the time is the median over its repetitions (they only reduce timer noise within an instance), and the
interval is over instances, as the paper's averages are (fedrepro.claims.query.per_instance)."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fedrepro.claims import query as q

# instances that differ a lot (x1 .. x30), repetitions nearly identical (0.1 % jitter)
SCALE = {0: 1.0, 1: 4.0, 2: 30.0, 3: 2.0, 4: 9.0, 5: 0.5}


def _timing(times, repeats=5, jitter=1e-3, seed=0, outlier=None):
    """A timing pass: per (algorithm, instance), ``repeats`` rows of ``times(alg, instance)`` with log-normal
    jitter; ``outlier``: (alg, instance, repeat, factor) multiplies one row."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(repeats):
        for alg in ("a", "b"):
            for i in SCALE:
                t = times(alg, i) * float(np.exp(rng.normal(0, jitter)))
                if outlier and outlier[:3] == (alg, i, r):
                    t *= outlier[3]
                rows.append({"algorithm": alg, "instance": i, "repeat": r, "cell": f"{alg}{i}", "t": t,
                             "capped": False})
    return pd.DataFrame(rows)


def _t_interval(logs, alpha=0.05):
    x = np.asarray(logs, float)
    h = stats.t.ppf(1 - alpha / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return math.exp(x.mean() - h), math.exp(x.mean() + h)


def test_the_interval_is_over_instances_not_instances_times_repeats():
    # 6 repetitions, so that the old per-repetition reading below has the 6 replicates an interval needs
    tm = _timing(lambda a, i: SCALE[i], repeats=6)
    runs = q.per_instance(tm, "t", ["algorithm"], capped="capped")
    assert len(runs) == 2 * len(SCALE) and set(runs["repeats"]) == {6}
    rep = q.column(q.select(runs, algorithm="a"), "t", by="instance", capped="capped").rep("time a", "log")
    assert rep.n == len(SCALE)                                      # not 6 instances x 6 repeats = 36
    lo, hi = rep.interval()
    # the engine's interval (docs/verdicts.md) is the hull of the t-interval on the geometric mean and the
    # order-statistic interval on the median, [x_(1), x_(6)] with 6 replicates: both over the 6 instances
    times = [SCALE[i] for i in sorted(SCALE)]
    t_lo, t_hi = _t_interval(np.log(times))
    want = (min(t_lo, min(times)), max(t_hi, max(times)))
    assert lo == pytest.approx(want[0], rel=1e-2) and hi == pytest.approx(want[1], rel=1e-2)
    assert hi / lo > 10                                             # the instance spread is in the interval
    # read per repetition (the old reading) the same data gives 6 values whose spread is the timer jitter only:
    # the interval misses most of the variation the paper's averages are over
    old = q.column(q.stats_table(q.select(tm, algorithm="a"), "t", ["repeat"], "median"), "t", by="repeat").rep(
        "old", "log")
    assert old.n == 6 and old.interval()[1] / old.interval()[0] < 1.01


def test_repetitions_are_reduced_by_their_median():
    tm = _timing(lambda a, i: SCALE[i], jitter=0.0, outlier=("a", 2, 3, 100.0))   # one slow repetition
    runs = q.per_instance(tm, "t", ["algorithm"]).set_index(["algorithm", "instance"])
    assert runs.loc[("a", 2), "t"] == pytest.approx(30.0)           # the median ignores the outlier
    assert runs.loc[("a", 1), "t"] == pytest.approx(4.0)
    mean = q.per_instance(tm, "t", ["algorithm"], reduce_repeats="mean").set_index(["algorithm", "instance"])
    assert mean.loc[("a", 2), "t"] == pytest.approx((4 * 30.0 + 3000.0) / 5)    # the mean does not
    # an even number of repetitions: the middle two averaged
    even = q.per_instance(_timing(lambda a, i: SCALE[i], repeats=2, jitter=0.0, outlier=("a", 0, 1, 3.0)),
                          "t", ["algorithm"]).set_index(["algorithm", "instance"])
    assert even.loc[("a", 0), "t"] == pytest.approx(2.0)


def test_a_ratio_of_two_methods_is_paired_by_instance():
    # b costs 2x a on every instance; the instances themselves differ 60-fold
    tm = _timing(lambda a, i: SCALE[i] * (2.0 if a == "b" else 1.0), jitter=0.01)
    runs = q.per_instance(tm, "t", ["algorithm"])
    a, b = (q.column(q.select(runs, algorithm=x), "t", by="instance") for x in ("a", "b"))
    r = b.ratio(a)
    assert list(r.v.index) == sorted(SCALE) and np.allclose(r.v, 2.0, rtol=0.05)
    rep = r.rep("b / a", "log")
    lo, hi = rep.interval()
    assert rep.n == len(SCALE) and 1.9 < lo < 2.0 < hi < 2.1         # paired: the instance spread cancels
    # unpaired (instances shuffled) the same numbers would not decide anything near 2
    shuffled = q.PerSeed.exact(dict(zip(sorted(SCALE), b.v.to_numpy()[::-1])))
    lo2, hi2 = shuffled.ratio(a).rep("shuffled", "log").interval()
    assert hi2 / lo2 > 10
    # only the instances both methods have are paired
    part = q.per_instance(tm[~((tm["algorithm"] == "b") & (tm["instance"] == 2))], "t", ["algorithm"])
    pa, pb = (q.column(q.select(part, algorithm=x), "t", by="instance") for x in ("a", "b"))
    assert 2 not in pb.ratio(pa).v.index and len(pb.ratio(pa)) == len(SCALE) - 1


def test_capped_runs_stay_bounds_and_bad_frames_are_named():
    tm = _timing(lambda a, i: SCALE[i])
    tm.loc[(tm["algorithm"] == "b") & (tm["instance"] == 1) & (tm["repeat"] == 0), "capped"] = True
    runs = q.per_instance(tm, "t", ["algorithm"], capped="capped")
    b = q.column(q.select(runs, algorithm="b"), "t", by="instance", capped="capped")
    assert b.lb.to_dict() == {i: i == 1 for i in sorted(SCALE)}
    with pytest.raises(ValueError, match=r"no column\(s\) \['seed'\]"):
        q.per_instance(tm, "t", ["algorithm"], instance="seed")
    with pytest.raises(ValueError, match="do not identify a run"):
        q.per_instance(tm, "t", [])                                 # a and b share (instance, repeat)
    with pytest.raises(ValueError, match="reduce_repeats='max'"):
        q.per_instance(tm, "t", ["algorithm"], reduce_repeats="max")


# ---- the papers' CPU-time claims read per instance ---------------------------------------------------------
def test_fedepm_time_ratio_has_one_replicate_per_trial():
    from fedrepro.papers.fedepm.claims import time_ratio

    rows = [{"algorithm": a, "m": 50, "k0": 4, "instance": i, "cell": f"{a}{i}", "rounds": 10, "repeat": r,
             "status": "converged", "run_cpu_time": SCALE[i] * (3.0 if a == "sfedavg" else 1.0) * (1 + 1e-3 * r),
             "run_local_cpu_time": 1.0}
            for a in ("sfedavg", "fedepm") for i in SCALE for r in range(4)]
    out = time_ratio({}, {"table1.timing": pd.DataFrame(rows)}, "table1", "TCT", {"algorithm": "sfedavg"},
                     [{"algorithm": "fedepm"}], "SFedAvg / FedEPM TCT")
    (rep,) = out.value
    assert rep.n == len(SCALE) and rep.scale == "log" and np.allclose(rep.values, 3.0, rtol=1e-2)
    assert "6 trials, the replicates" in out.detail


def test_zhou_time_reading_has_one_replicate_per_instance():
    from fedrepro.claims.evaluate import load_claims
    from fedrepro.papers.registry import checks

    summary, timing = [], []
    for alg in ("fedadmm", "fedavg", "fedprox", "fedalt", "fedsim"):
        for m in (400, 800):
            for i in SCALE:
                cell = f"{alg}-{m}-{i}"
                summary.append({"algorithm": alg, "m": m, "instance": i, "seed": i, "cell": cell, "rounds": 20,
                                "run_cpu_time": 1.0, "reached": True, "status": "converged", "objective": 1.0,
                                "step_c": None if alg == "fedadmm" else 0.25, "k0": 10})
                for r in range(3):
                    timing.append({"cell": cell, "repeat": r, "run_cpu_time": SCALE[i] * (6.0 if alg == "fedavg"
                                                                                         else 1.0) * (1 + 1e-3 * r)})
    summaries = {"fig5_ls": pd.DataFrame(summary), "fig5_ls.timing": pd.DataFrame(timing)}
    claim = next(c for c in load_claims("fedadmm_zhou") if c["id"] == "fig5_time_fedavg")
    (rep,) = checks("fedadmm_zhou")["reading:fig5_time_fedavg"]({}, summaries)
    assert claim["reading"]["components"][0]["of"]["by"] == "instance"
    assert rep.n == len(SCALE) and np.allclose(rep.values, 6.0, rtol=1e-2)


def test_frpg_local_cost_ratio_replicates_are_seeds():
    from fedrepro.papers.frpg.claims import lfrpg_local_cost_ratio

    rows = [{"algorithm": a, "params": json.dumps({}), "dataset": "mnist", "seed": s, "cell": f"{a}{s}",
             "repeat": r, "rounds": 10,
             "run_local_cpu_time": SCALE[s] * (10.0 if a == "lfrpg" else 1.0) * (1 + 1e-3 * r)}
            for a in ("frpg", "lfrpg") for s in SCALE for r in range(3)]
    out = lfrpg_local_cost_ratio({}, {"label_flip": pd.DataFrame(rows[:1]), "label_flip.timing": pd.DataFrame(rows)})
    (rep,) = out.value
    assert rep.n == len(SCALE) and np.allclose(rep.values, 10.0, rtol=1e-2)
    assert "median over its timing repetitions" in out.detail
