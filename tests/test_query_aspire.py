"""The query layer's primitives added for the aspire port (issue #42): oriented paired advantages, starting
values, closed-form quantities, group substitution, decisions across a sweep and times to a common target."""
import pandas as pd
import pytest

from fedrepro.claims import NotTestable, Outcome
from fedrepro.claims import query as q


def _finals():
    """Final records: two methods x three seeds (b's loss lower, a's accuracy higher), a run of c on seed 9 only."""
    rows = [{"algorithm": alg, "seed": s, "acc": acc + s, "loss": loss - 0.1 * s}
            for alg, acc, loss in (("a", 60.0, 1.0), ("b", 50.0, 0.5)) for s in (1, 2, 3)]
    return pd.DataFrame(rows + [{"algorithm": "c", "seed": 9, "acc": 1.0, "loss": 9.0}])


def test_ahead_orients_the_paired_difference_as_an_advantage():
    x, y = q.PerSeed.exact({1: 3.0, 2: 5.0}), q.PerSeed.bounded({1: 1.0, 2: 2.0, 3: 7.0}, lower={2: True})
    up, down = q.ahead(x, y), q.ahead(x, y, lower=True)
    assert up.v.tolist() == [2.0, 3.0] and down.v.tolist() == [-2.0, -3.0]       # paired on seeds 1, 2
    assert up.ub.tolist() == [False, True] and down.lb.tolist() == [False, True]  # y's lower bound travels


def test_initial_is_the_first_evaluated_value_per_replicate():
    df = pd.DataFrame({"seed": [1, 1, 1, 2, 2], "round": [4, 0, 2, 0, 1], "m": [3.0, 1.0, None, 5.0, 6.0]})
    assert q.initial(df, "m").v.to_dict() == {1: 1.0, 2: 5.0}
    assert q.initial(df, "m", head=2).v.to_dict() == {1: 2.0, 2: 5.5}          # the NaN point is not evaluated


def test_fixed_is_a_deterministic_single_value():
    r = q.fixed(2.5, "closed form", "log")
    assert list(r.values) == [2.5] and r.deterministic and r.scale == "log" and r.label == "closed form"


def test_advantages_pairs_by_seed_orients_scales_and_labels():
    fin = _finals()
    acc, loss, scaled, none = (
        *q.advantages(fin, [("a", "b")], ("acc", "loss"), lower={"loss"}, names={"acc": "Acc", "a": "A", "b": "B"}),
        *q.advantages(fin, [("a", "b")], ("acc",), scale={"acc": 4.0}),
        *q.advantages(fin, [("a", "c")], ("acc",)))
    assert list(acc.values) == [10.0, 10.0, 10.0] and acc.label == "Acc: A ahead of B"
    assert list(loss.values) == pytest.approx([-0.5] * 3) and loss.label == "loss: A ahead of B"   # lower is better
    assert list(scaled.values) == [2.5] * 3 and scaled.label == "acc: a ahead of b / 4"
    assert none is None                                                           # a and c share no seed


def test_substitute_replaces_only_the_groups_the_alternative_has():
    fin = _finals()
    alt = pd.DataFrame({"algorithm": ["b"], "seed": [1], "acc": [0.0], "loss": [0.0]})
    out = q.substitute(fin, alt)
    assert (out["algorithm"] == "b").sum() == 1 and out.loc[out["algorithm"] == "b", "acc"].item() == 0.0
    assert (out["algorithm"] == "a").sum() == 3 and list(out.index) == list(range(len(out)))


def test_decided_across_passes_not_testable_and_marks_a_lone_reference(monkeypatch):
    import fedrepro.claims.sweep as sweep

    comps = lambda frame: frame                                                   # noqa: E731
    alone = q.decided_across("p", "c", [("ref", ["x"], None)], comps, "the unstated y")
    assert isinstance(alone, Outcome) and alone.value == ["x"] and "not swept" in alone.detail
    nt = NotTestable("no runs")
    assert q.decided_across("p", "c", [("ref", ["x"], None), ("y=2", nt, "y")], comps, "y") is nt
    assert q.decided_across("p", "c", [], comps, "y") is None
    seen = {}
    monkeypatch.setattr(sweep, "across", lambda paper, check, got, name: seen.update(got=got, name=name) or "ok")
    assert q.decided_across("p", "c", [("ref", ["x"], None), ("y=2", ["z"], "y")], comps, "y") == "ok"
    assert seen == {"got": [("ref", ["x"], None), ("y=2", ["z"], "y")], "name": "y"}


def test_times_to_target_uses_each_seeds_worst_final_value():
    rows = []
    for alg, drop in (("fast", 2.0), ("slow", 6.0)):
        for seed in (1, 2):
            for t in range(0, 11, 2):
                final = 1.0 if alg == "fast" else 1.5 + 0.1 * seed
                rows.append({"algorithm": alg, "seed": seed, "virtual_time": float(t),
                             "loss": 3.0 if t < drop + seed else final})
    t = q.times_to_target(pd.DataFrame(rows), "loss")
    assert list(t.columns) == ["fast", "slow"] and list(t.index) == [1, 2]
    assert t.loc[1, "fast"] == 4.0 and t.loc[2, "fast"] == 4.0 and t.loc[2, "slow"] == 8.0
    flat = pd.DataFrame(rows).assign(loss=1.0)                                    # every run starts at the target
    assert q.times_to_target(flat, "loss").empty


def test_initial_is_a_measure_kind_of_readings_as_data():
    # {initial: metric, head: 1}: the first evaluated value along x, the mirror of {final: ...} (aspire's Fig. 1 (c)/(d):
    # the complexity at the smallest eps' over that at the largest)
    df = pd.DataFrame({"seed": [0, 0, 0, 1, 1], "x": [1e-1, 1e-10, 1e-5, 2.0, 1.0], "c": [2.0, 8.0, 4.0, 3.0, 6.0]})
    assert q.measure(df, {"initial": "c", "x": "x"}).v.to_dict() == {0: 8.0, 1: 6.0}
    assert q.measure(df, {"initial": "c", "head": 2, "x": "x"}).v.to_dict() == {0: 6.0, 1: 4.5}
    check = q.compile_reading({"of": {"initial": "c", "x": "x"}, "over": {"final": "c", "x": "x"}, "scale": "log",
                               "deterministic": True, "label": "first over last"})
    (rep,) = check({"e": df}, {})
    assert rep.values.tolist() == [4.0, 2.0] and rep.scale == "log" and rep.deterministic
