"""Query-layer primitives added for fedadmm_zhou (issue #42): lowest_share and its measure kind."""
import pandas as pd

from fedrepro.claims import query as q


def _runs(rows):
    """rows: (algorithm, setting, seed, value, capped)."""
    return pd.DataFrame(rows, columns=["algorithm", "k0", "seed", "cr", "capped"])


def test_lowest_share_counts_strict_wins_and_leaves_capped_settings_open():
    df = _runs([
        ("a", 1, 0, 10, False), ("b", 1, 0, 20, False), ("c", 1, 0, 30, False),     # win
        ("a", 2, 0, 10, False), ("b", 2, 0, 10, False), ("c", 2, 0, 30, False),     # tie: not a win
        ("a", 3, 0, 10, False), ("b", 3, 0, 8, True), ("c", 3, 0, 30, False),       # capped b below a: open
        ("a", 1, 1, 10, False), ("b", 1, 1, 12, True), ("c", 1, 1, 30, False),      # capped b above a: a win
        ("a", 2, 1, 40, True), ("b", 2, 1, 20, False), ("c", 2, 1, 50, False),      # capped a above b: a loss
        ("a", 3, 1, 10, False), ("b", 3, 1, 20, False),                             # c missing: not counted
    ])
    s = q.lowest_share(df, "a", "algorithm", "k0", "cr", capped="capped", complete=2)
    assert s.v.to_dict() == {0: 1 / 3, 1: 1 / 2}
    assert s.lb.to_dict() == {0: True, 1: False} and not s.ub.any()
    r = s.rep("share")
    assert list(r.lower_bound) == [True, False]
    # complete=1: the setting without c counts; above: only settings with k0 > 1
    assert q.lowest_share(df, "a", "algorithm", "k0", "cr", capped="capped").v.to_dict() == {0: 1 / 3, 1: 2 / 3}
    above = q.lowest_share(df, "a", "algorithm", "k0", "cr", capped="capped", complete=2, above=1)
    assert above.v.to_dict() == {0: 0.0, 1: 0.0} and above.lb.to_dict() == {0: True, 1: False}
    # without caps every comparison is decided; several columns pool their settings
    two = pd.concat([df.assign(exp="x"), df.assign(exp="y")], ignore_index=True)
    pooled = q.lowest_share(two, "a", "algorithm", ["exp", "k0"], "cr", complete=2)
    assert pooled.v.to_dict() == {0: 2 / 6, 1: 2 / 4} and not pooled.lb.any()
    assert len(q.lowest_share(None, "a", "algorithm", "k0", "cr")) == 0


def test_lowest_share_as_a_measure_in_a_reading():
    df = _runs([("a", k0, s, 10 + k0, False) for k0 in (1, 2) for s in (0, 1)]
               + [("b", k0, s, 12 + (s if k0 == 1 else 2 * s), False) for k0 in (1, 2) for s in (0, 1)])
    spec = {"lowest_share": "a", "over": "k0", "value": "cr"}
    assert q.measure(df, spec).v.to_dict() == {0: 0.5, 1: 1.0}
    check = q.compile_reading({"frame": "runs", "of": {**spec, "above": 1}, "label": "share"},
                              {"runs": lambda frames, summaries: df}, name="x")
    r = check({}, {})
    assert [x.label for x in r] == ["share"] and list(r[0].values) == [0.0, 1.0]


def test_both_halves_never_decides_on_one_half():
    from fedrepro.claims import NotTestable, Replicates

    cr, tm = [Replicates([1.0, 2.0], label="cr a"), Replicates([3.0], label="cr b")], [Replicates([0.5], label="t")]
    assert q.both_halves(cr, tm) == cr + tm
    assert q.both_halves(cr, []) is None and q.both_halves([], tm) is None and q.both_halves(None, tm) is None
    out = q.both_halves(cr, NotTestable("no timing pass"))          # the half this build has is named
    assert isinstance(out, NotTestable) and out.reason == "no timing pass; CR half: cr a 1.5 (n=2); cr b 3 (n=1)"
    shown = q.both_halves(cr, NotTestable("x"), show=lambda r: r.label, sep=", ", name="first")
    assert shown.reason == "x; first: cr a, cr b"
    assert q.both_halves([], NotTestable("x")).reason == "x"          # nothing to name


def test_params_of_reads_the_first_matching_runs_configuration():
    df = pd.DataFrame({"algorithm": ["a", "b", "b"], "params": ['{"k0": 1}', '{"k0": 5, "rho": 0.5}', '{"k0": 9}'],
                       "problem": ['{"lam": 0.001}'] * 3})
    assert q.params_of(df, algorithm="b") == {"k0": 5, "rho": 0.5}          # the first of b's runs
    assert q.params_of(df) == {"k0": 1} and q.params_of(df, "problem") == {"lam": 0.001}
    assert q.params_of(df, algorithm="c") is None and q.params_of(None) is None
    assert q.params_of(df, "nothing") is None and q.params_of(df, k0=1) is None   # no such column
