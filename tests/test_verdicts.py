"""The verdict engine (fedrepro.claims.verdicts): intervals valid for the data (issue #43, point 1).

One test per case of the issue: zero spread, ties and discrete values, too few replicates, censored
(capped) runs, universal claims decided by their components, the p-values behind the verdicts and
the paper-level false-discovery control."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from fedrepro.claims.verdicts import (FAILS, HOLDS, UNDECIDED, Replicates, accepted_range, decide, fdr_control,
                                      min_replicates, order_rank)


# --- zero spread, ties, discrete values -------------------------------------------------------------

def test_zero_spread_does_not_collapse_the_interval():
    """The review's cases: two equal values no longer 'hold at 95%', three zeros no longer 'fail'."""
    d = decide(Replicates([-1.0, -1.0]), 0, "lt")
    assert d.verdict == UNDECIDED and d.components[0].interval == (-math.inf, math.inf)
    assert "needs at least 6" in d.reason()
    assert decide(Replicates([0.0, 0.0, 0.0]), 0, "lt").verdict == UNDECIDED
    # six equal values: the sign test's smallest p-value, 2 * 0.5**6, is below 5%
    six = decide(Replicates([-1.0] * 6), 0, "lt")
    assert six.verdict == HOLDS and six.p_value == pytest.approx(2 / 64)
    assert six.components[0].interval == (-1.0, -1.0)


def test_a_tie_is_not_a_win():
    assert decide(Replicates([0.0] * 6), 0, "lt").verdict == FAILS       # every replicate on the strict edge
    assert decide(Replicates([0.0] * 6), 0, "le").verdict == HOLDS
    assert decide(Replicates([1.0, 1.0], deterministic=True), 1, "gt").verdict == FAILS


def test_minimum_replicates_follow_from_the_exact_sign_test():
    assert min_replicates(0.05) == 6 and min_replicates(0.01) == 8
    assert order_rank(5, 0.05) == 0 and order_rank(6, 0.05) == 1 and order_rank(10, 0.05) == 2
    for n in range(6, 40):           # the order-statistic interval's coverage is at least 95%
        k = order_rank(n, 0.05)
        assert 1 - 2 * stats.binom.cdf(k - 1, n, 0.5) >= 0.95
        assert 1 - 2 * stats.binom.cdf(k, n, 0.5) < 0.95 or k == (n + 1) // 2
    # five clearly separated continuous replicates: the t-interval alone would decide; the claim waits
    d = decide(Replicates([-1.0, -1.2, -0.9, -1.1, -1.05]), 0, "lt")
    assert d.verdict == UNDECIDED and d.needed == 6


def test_integer_round_counts_on_a_grid_are_not_decided_from_ties():
    """Round counts on a 25-round evaluation grid, three seeds all at 75 against a paper value of 100:
    the old t-interval was [75, 75]."""
    assert decide(Replicates([75.0, 75.0, 75.0]), 100, "lt").verdict == UNDECIDED
    assert decide(Replicates([75.0, 75.0, 50.0, 75.0, 75.0, 75.0]), 100, "lt").verdict == HOLDS


def test_false_holds_on_discrete_data_stay_below_alpha():
    """Monte Carlo: replicates from a symmetric distribution on {-1, 0, 1} (mean and median 0), claim
    'below 0': a holds is a false verdict. The old t-interval gave it whenever all three were -1
    (1/27, above the 2.5% a two-sided 95% interval allows); the hull stays below."""
    rng = np.random.default_rng(0)
    for n in (3, 6, 10):
        holds = sum(decide(Replicates(rng.choice([-1.0, 0.0, 1.0], size=n)), 0, "lt").verdict == HOLDS
                    for _ in range(2000))
        assert holds / 2000 <= 0.025 + 0.01, (n, holds)


# --- the interval: hull of the t-interval on the mean and the order-statistic interval ---------------

def test_interval_is_the_hull_of_t_and_order_statistics():
    x = np.array([-0.1, -0.5, -0.3, -0.35, -0.2, -0.4, -0.45, -0.25])
    rep = Replicates(x)
    h = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
    k = order_rank(len(x), 0.05)
    srt = np.sort(x)
    lo, hi = rep.interval()
    assert lo == pytest.approx(min(x.mean() - h, srt[k - 1])) and hi == pytest.approx(max(x.mean() + h, srt[-k]))


def test_log_scale_t_part_is_on_the_geometric_mean():
    rep = Replicates([2.0, 8.0, 4.0, 4.0, 2.0, 8.0], scale="log")
    assert rep.estimate == pytest.approx(4.0)
    lo, hi = rep.t_interval()
    assert lo * hi == pytest.approx(16.0) and lo < 4 < hi
    with pytest.raises(ValueError, match="positive"):
        Replicates([1.0, -1.0], scale="log")
    assert decide(Replicates([5.0, 5.5, 6.0, 5.2, 5.8, 6.1], scale="log"), 6.43, "band", 2).verdict == HOLDS
    assert decide(Replicates([1.5, 1.6, 1.4, 1.55, 1.5, 1.45], scale="log"), 6.43, "band", 2).verdict == FAILS
    assert decide(Replicates([2.3, 3.4, 2.9, 3.5, 2.6, 3.3], scale="log"), 6.43, "band", 2).verdict == UNDECIDED


def test_replicates_needed_decides_at_the_measured_spread_and_share():
    """The number named gives, at the same mean, spread and share of replicates on the estimate's side,
    a decided verdict."""
    x = np.array([-0.1, 0.2, -0.3, 0.05, -0.2, -0.15, -0.25, -0.1])
    d = decide(Replicates(x), 0, "lt")
    n = d.needed
    assert d.verdict == UNDECIDED and n is not None and n > len(x)
    m, s = x.mean(), x.std(ddof=1)
    assert stats.t.ppf(0.975, n - 1) * s / np.sqrt(n) < abs(m)
    q = np.mean(x < 0)                                     # 6 of 8 on the estimate's side
    assert order_rank(n, 0.05) > round((1 - q) * n)
    # half the replicates on each side: no number of replicates decides it
    assert decide(Replicates([-1.0, 1.0, -1.0, 1.0, -0.5, 0.6]), 0, "lt").needed is None


# --- censored (capped) runs -------------------------------------------------------------------------

def test_capped_runs_are_censored_not_averaged():
    """A baseline that hit its round cap: its rounds are a lower bound. The capped values do not enter a
    mean or a spread: the interval is the order-statistic one, open on the censored side."""
    capped = Replicates([60.0] * 6, lower_bound=[True] * 6, label="fedavg/fedadmm")
    assert capped.interval() == (60.0, math.inf)
    assert decide(capped, 6.5, "ge").verdict == HOLDS
    d = decide(capped, 64.5, "le")
    assert d.verdict == UNDECIDED and "higher round cap" in d.reason() and d.needed is None
    # the review's case: a low mean of a mix of capped and finite values bounded the interval from below
    mixed = Replicates([100.0, 120.0, 120.0, 110.0, 120.0, 95.0], lower_bound=[False, True, True, False, True, False])
    assert mixed.t_interval() == (-math.inf, math.inf)
    assert mixed.interval() == (95.0, math.inf) and mixed.estimate == pytest.approx(115.0)


def test_censored_lower_end_keeps_its_coverage():
    """Monte Carlo: rounds ~ exponential (median ln2 * 100), capped at 80; the interval's lower end is
    above the true median in at most 2.5% (+ MC slack) of draws."""
    rng = np.random.default_rng(1)
    med = 100 * math.log(2)
    above = 0
    for _ in range(2000):
        x = rng.exponential(100, size=10)
        rep = Replicates(np.minimum(x, 80.0), lower_bound=x > 80)
        above += rep.interval()[0] > med
    assert above / 2000 <= 0.025 + 0.01


# --- universal claims: components -------------------------------------------------------------------

def test_one_decided_counterexample_fails_a_universal_claim():
    good = [Replicates([-1.0, -1.1, -0.9, -1.2, -0.8, -1.05, -0.95, -1.0], label=f"k0={k}") for k in (1, 5, 10)]
    bad = Replicates([1.0, 1.2, 0.9, 1.1, 1.3, 0.95, 1.05, 1.0], label="k0=50")
    assert decide(good, 0, "lt").verdict == HOLDS
    d = decide([*good, bad], 0, "lt")
    assert d.verdict == FAILS and "k0=50" in d.reason() and "Bonferroni over 4" in d.reason()


def test_holds_needs_each_component_at_alpha_fails_needs_alpha_over_k():
    """Intersection-union: all components holding at 95% decide the claim at 95% (the intervals are the
    single ones); a component that is outside at 95% but not at 1 - 0.05/k leaves the claim open."""
    a = Replicates([-1.0, -0.2, -0.6, -0.9, -0.3, -0.5, -0.4, -0.7])
    single, pair = decide(a, 0, "lt"), decide([a, a], 0, "lt")
    assert single.verdict == pair.verdict == HOLDS
    assert pair.components[0].interval == single.components[0].interval
    six_out = Replicates([1.0] * 6)          # p = 2/64: outside at 95%, not at 1 - 0.05/2
    d = decide([a, six_out], 0, "lt")
    assert d.verdict == UNDECIDED and "not at the" in d.reason()
    assert decide([a, Replicates([1.0] * 7)], 0, "lt").verdict == FAILS      # p = 2/128 <= 0.025


def test_component_paper_values_override_the_claims():
    reps = [Replicates([6.0, 6.2, 6.1, 6.05, 6.15, 6.1], paper_value=6.1),
            Replicates([60.0, 61.0, 59.0, 60.5, 59.5, 60.0], paper_value=60.0)]
    assert decide(reps, None, "rel", 0.1).verdict == HOLDS


# --- p-values and the paper-level error control -----------------------------------------------------

_values = st.lists(st.floats(-3, 3, allow_nan=False).map(lambda v: round(v, 1)), min_size=1, max_size=14)


@settings(max_examples=300, deadline=None)
@given(_values, st.sampled_from(["lt", "gt", "le", "ge", "approx"]), st.floats(-1, 1).map(lambda v: round(v, 1)))
def test_p_value_is_the_level_at_which_the_verdict_is_reached(values, compare, edge):
    """The verdict at level a is the p-value's: decided at a >= p, not decided below (a consistency check
    of the analytic p-values against the intervals)."""
    tol = 0.5 if compare == "approx" else None
    rep = Replicates(values)
    rng = accepted_range(edge, compare, tol)
    for p, inside in ((rep.p_inside(*rng), True), (rep.p_outside(*rng), False)):
        if p >= 1 or p <= 0:
            continue
        for a, expect in ((min(1.0, p * 1.0001 + 1e-12), True), (p * 0.9999, False)):
            lo, hi = rep.interval(a)
            ok = _all_inside(lo, hi, rng) if inside else _all_outside(lo, hi, rng)
            assert ok == expect, (values, compare, edge, inside, p, a, (lo, hi))


def _acc(x, rng):
    lo, hi, lo_open, hi_open = rng
    if math.isinf(x):
        return (x > 0 and hi == math.inf) or (x < 0 and lo == -math.inf)
    return (x > lo if lo_open else x >= lo) and (x < hi if hi_open else x <= hi)


def _all_inside(lo, hi, rng):
    return _acc(lo, rng) and _acc(hi, rng)


def _all_outside(lo, hi, rng):
    a, b, a_open, b_open = rng
    return hi < a or (hi == a and a_open) or lo > b or (lo == b and b_open)


def test_fdr_control_is_benjamini_hochberg():
    p = [0.001, 0.03125, 0.04, 1.0, 0.2]
    kept = fdr_control(p, 0.05)
    adj = stats.false_discovery_control(p, method="bh")
    assert kept.tolist() == (adj <= 0.05).tolist()
    assert kept.tolist() == [True, False, False, False, False]
    assert fdr_control([0.03125] * 10).all()      # ten statements each at 2/64: all stand
