"""'depends' as a verdict of its own (issue #43 point 4): a claim decided across a sweep of a parameter the paper
does not state that holds at some values and fails at others is ``depends``, counted apart from ``undecided``,
with the per-value table; an open value keeps it undecided; every value holding (failing) holds (fails)."""
import pandas as pd
import pytest

from fedrepro.claims import Depends, NotTestable, Outcome, Replicates, evaluate, status_table, to_markdown
from fedrepro.claims import sweep

CLAIM = {"id": "c", "kind": "paper", "source": {"place": "Sec. 1", "quote": "ours is better"},
         "text": "our gain over the baseline is positive", "check": "gain", "compare": "gt", "paper_value": 0}


@pytest.fixture(autouse=True)
def _rule(monkeypatch):
    """The claims file of the toy paper: check ``gain`` decided gt 0."""
    monkeypatch.setattr(sweep, "claims_by_check", lambda paper: {"gain": CLAIM})


def _rep(centre, label="gain", n=6):
    return [Replicates([centre + 0.01 * i for i in range(n)], label=label)]


POS, NEG, OPEN = _rep(1.0), _rep(-1.0), [Replicates([-1.0, 1.2, -0.8, 1.1, 0.1, -0.2], label="gain")]


def _evaluate(out):
    return evaluate([CLAIM], {"gain": lambda frames, summaries: out}, {}, {}, paper="toy").iloc[0]


def test_holding_at_one_value_and_failing_at_another_is_depends_with_the_table():
    out = sweep.across("toy", "gain", [("default", POS, None), ("ρ1 = 2", NEG, "ρ1"), ("η_h = 0.05", POS, "η_h")],
                       name="the unstated ρ1, η_h")
    assert isinstance(out, Depends)
    assert out.reason == "depends on the unstated ρ1: holds at default, η_h = 0.05, fails at ρ1 = 2"
    assert out.table.startswith("default: holds gain: 1.025") and "ρ1 = 2: fails gain: -0.975" in out.table
    assert out.replicates == 6
    row = _evaluate(out)
    assert row["verdict"] == "depends" and row["our_value"] == out.table
    assert row["why"] == f"{out.reason} — {out.table}" and row["replicates"] == 6


def test_every_value_holding_holds_and_every_value_failing_fails():
    out = sweep.across("toy", "gain", [("default", POS), ("ρ1 = 2", _rep(2.0))], name="ρ1")
    assert isinstance(out, Outcome) and out.why.startswith("holds at every swept value of ρ1 (2)")
    assert _evaluate(out)["verdict"] == "holds"
    out = sweep.across("toy", "gain", [("default", NEG), ("ρ1 = 2", _rep(-2.0))], name="ρ1")
    assert _evaluate(out)["verdict"] == "fails"


def test_an_open_value_keeps_it_undecided_even_where_others_hold_and_fail():
    out = sweep.across("toy", "gain", [("default", POS), ("ρ1 = 2", NEG), ("η_h = 0.05", OPEN)], name="ρ1, η_h")
    assert isinstance(out, NotTestable) and out.reason.startswith("undecided at η_h = 0.05")
    assert "ρ1 = 2: fails" in out.reason
    row = _evaluate(out)
    assert row["verdict"] == "undecided" and row["why"] == out.reason


def test_a_sweep_left_open_gives_the_plan_its_replicates_and_need():
    """The verify plan adds seeds only to claims with replicates and a bounded need: a sweep left open must carry
    them (the open values' fewest replicates, the most any open value needs), or it is never planned."""
    from fedrepro.claims.plan import plan

    small = [Replicates([0.3, 0.5, 0.2, 0.6], label="gain")]          # n = 4, positive but not decided at 4
    out = sweep.across("toy", "gain", [("default", POS), ("ρ1 = 2", small, "ρ1")], name="ρ1")
    assert isinstance(out, NotTestable) and out.replicates == 4 and out.needed and out.needed > 4
    row = _evaluate(out)
    assert row["verdict"] == "undecided" and row["replicates"] == 4 and row["replicates_needed"] == out.needed
    table = pd.DataFrame([row])
    p = plan({"toy": table}, {"toy": {"c": ("sweep",)}}, {"toy": {"sweep": (4, 10.0)}}, budget_cpu_s=1e6)
    assert p.seeds == {("toy", "sweep"): out.needed}
    # an open value with no bounded need (a zero effect) leaves the sweep unbounded: nothing planned
    flat = [Replicates([0.0, 0.0, 0.0, 0.0], label="gain")]
    out = sweep.across("toy", "gain", [("default", POS), ("ρ1 = 2", small, "ρ1"), ("η = 1", flat, "η")], name="ρ1, η")
    assert isinstance(out, NotTestable) and out.replicates == 4 and out.needed is None
    assert _evaluate(out)["replicates_needed"] == 0


def test_depends_at_a_scale_the_claim_is_not_decided_at_is_undecided():
    out = sweep.across("toy", "gain", [("default", POS), ("ρ1 = 2", NEG)], name="ρ1")
    table = evaluate([{**CLAIM, "testable_at": ["paper"], "untestable_reason": "needs the paper's seeds"}],
                     {"gain": lambda frames, summaries: out}, {}, {}, paper="toy", scale="quick")
    assert table.iloc[0]["verdict"] == "undecided" and table.iloc[0]["why"] == "needs the paper's seeds"


def test_depends_is_counted_apart_in_claims_md_and_the_status_block(tmp_path):
    outs = {"a": Depends("depends on ρ1: holds at x, fails at y", "x: holds; y: fails", 6),
            "b": NotTestable("undecided at z"), "c": Outcome(POS)}
    claims = [{**CLAIM, "id": k, "check": k} for k in outs]
    checks = {k: (lambda v: lambda frames, summaries: v)(v) for k, v in outs.items()}
    table = evaluate(claims, checks, {}, {}, paper="toy")
    assert list(table["verdict"]) == ["depends", "undecided", "holds"]
    assert "Verdicts: holds 1, depends 1, undecided 1" in to_markdown(table, "toy")
    (tmp_path / "toy").mkdir()
    table.to_parquet(tmp_path / "toy" / "claims.parquet")
    row = status_table(tmp_path).set_index("paper").loc["toy"]
    assert (row["holds"], row["depends"], row["undecided"], row["statements"]) == (1, 1, 1, 3)
    assert list(status_table(tmp_path).columns[:4]) == ["paper", "holds", "fails", "depends"]


def test_a_sweep_inside_a_check_decides_at_the_engines_level():
    """A verify look evaluates at 0.025: the sweep's values are decided there too, not at 0.05 (six
    replicates decide at 95% but not at 97.5%, which needs seven)."""
    def check(frames, summaries):
        return sweep.across("toy", "gain", [("default", POS), ("ρ1 = 2", NEG)], name="ρ1")

    at_95 = evaluate([CLAIM], {"gain": check}, {}, {}, paper="toy").iloc[0]
    at_975 = evaluate([CLAIM], {"gain": check}, {}, {}, paper="toy", alpha=0.025).iloc[0]
    assert at_95["verdict"] == "depends"
    assert at_975["verdict"] == "undecided" and at_975["why"].startswith("undecided at default, ρ1 = 2")
    assert sweep.level() == 0.05   # restored after the evaluation
