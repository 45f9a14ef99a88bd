"""Registered readings (issue #42): every claim's reading is registered; a changed reading fails the check
unless it carries a revision with the verdict under the old reading; claims.md shows the revision."""
import shutil

import pandas as pd
import pytest
import yaml

from fedrepro.claims import registration as reg
from fedrepro.claims.evaluate import check_name, load_claims, to_markdown, evaluate
from fedrepro.experiments.yamlio import PAPERS, paper_file
from fedrepro.papers.registry import checks as paper_checks

PAPER_LIST = [p for p in PAPERS if p != "custom"]


@pytest.mark.parametrize("paper", PAPER_LIST)
def test_every_reading_matches_its_registration(paper):
    assert reg.problems(paper, paper_checks(paper)) == []


def _copy_paper(tmp_path, paper):
    dst = tmp_path / "fedrepro" / "papers" / paper
    dst.mkdir(parents=True)
    for name in ("claims.yaml", reg.REGISTRY_NAME):
        shutil.copy(paper_file(paper, "claims").with_name(name), dst / name)
    return dst / "claims.yaml"


def test_a_deliberate_edit_fails_until_it_is_a_revision(tmp_path):
    paper = "fedepm"
    path = _copy_paper(tmp_path, paper)
    assert reg.problems(paper, paper_checks(paper), root=tmp_path) == []
    claims = yaml.safe_load(path.read_text())["claims"]
    # a claim whose reading has no revision but same-values ones (a refactor such as issue #42's port)
    target = next(c for c in claims if c.get("compare") in ("lt", "gt", "le", "ge") and "tolerance" not in c
                  and all(r.get("same_values") for r in c.get("revisions") or []))
    cid = target["id"]
    # the edit a build's "fails" tempts: widen the band
    text = path.read_text()
    block_start = text.index(f"- id: {cid}\n")
    line_at = text.index("paper_value:", block_start)
    text = text[:line_at] + "tolerance: 0.5\n    tolerance_why: widened\n    " + text[line_at:]
    path.write_text(text)
    found = reg.problems(paper, paper_checks(paper), root=tmp_path)
    assert len(found) == 1 and cid in found[0] and (
        "differs from the last revision" if target.get("revisions") else "differs from the registration") in found[0]
    # recorded as a revision (with the verdict before it), the reading is accepted and shown
    edited = next(c for c in load_claims(paper, tmp_path) if c["id"] == cid)
    entry = {"date": "2026-11-28", "changed": "tolerance 0 -> 0.5", "why": "test", "verdict_before": "fails",
             "value_before": "-0.1 [-0.2, 0.0] (3)", "build_before": "a test build", "seen_before": True,
             "fingerprint": reg.fingerprint(edited, paper_checks(paper), paper)}
    reg.insert_revision(path, path.read_text(), cid, entry, has_revisions=bool(target.get("revisions")))
    assert reg.problems(paper, paper_checks(paper), root=tmp_path) == []
    revised = next(c for c in load_claims(paper, tmp_path) if c["id"] == cid)
    assert reg.revised_after_verdict(revised) and "before: fails" in reg.revision_summary(revised)
    # a revision lacking the old verdict is refused
    text = "".join(ln for ln in path.read_text().splitlines(keepends=True) if "verdict_before:" not in ln)
    path.write_text(text)
    assert any("lacks ['verdict_before']" in p for p in reg.problems(paper, paper_checks(paper), root=tmp_path))


def test_a_change_of_the_check_code_changes_the_fingerprint(monkeypatch):
    paper = "fedepm"
    claim = next(c for c in load_claims(paper) if "check" in c)
    checks = dict(paper_checks(paper))
    before = reg.fingerprint(claim, checks, paper)
    assert before == reg.fingerprint(dict(claim), dict(checks), paper)          # deterministic

    def other(frames, summaries):
        return None
    other.__module__ = f"fedrepro.papers.{paper}.claims"
    checks[check_name(claim)] = other
    assert reg.fingerprint(claim, checks, paper) != before


def test_the_command_line_checks_every_paper():
    from fedrepro.papers import readings
    assert readings.main(["check"]) == 0


def test_a_helper_reached_by_the_check_is_part_of_the_reading():
    paper = "fedepm"
    checks = paper_checks(paper)
    claim = next(c for c in load_claims(paper) if "check" in c)
    code = reg._reached(checks[check_name(claim)], f"fedrepro.papers.{paper}")
    assert len(code) > 1 and all(k.startswith(f"fedrepro.papers.{paper}") for k in code)


def test_new_claims_are_registered_and_registered_ones_never_rewritten(tmp_path):
    paper = "fedepm"
    path = _copy_paper(tmp_path, paper)
    regfile = path.with_name(reg.REGISTRY_NAME)
    entries = yaml.safe_load(regfile.read_text())["readings"]
    first = sorted(entries)[0]
    kept = dict(entries[first])
    del entries[first]
    # a new claim has no revisions: drop the first claim's (every fedepm reading carries same-values revisions
    # since issue #42's port); its reading is then the one of its last revision
    data = yaml.safe_load(path.read_text())
    claim = next(c for c in data["claims"] if c["id"] == first)
    if claim.get("revisions"):
        kept["fingerprint"] = claim.pop("revisions")[-1]["fingerprint"]
        path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    regfile.write_text(yaml.safe_dump({"fingerprint_version": reg.FINGERPRINT_VERSION, "readings": entries}))
    assert any("not registered" in p for p in reg.problems(paper, paper_checks(paper), root=tmp_path))
    assert reg.register(paper, paper_checks(paper), root=tmp_path, today="2026-11-28") == [first]
    again = yaml.safe_load(regfile.read_text())["readings"]
    assert again[first]["fingerprint"] == kept["fingerprint"] and again[first]["registered"] == "2026-11-28"
    others = {k: v for k, v in again.items() if k != first}
    assert others == entries                                   # the registered ones untouched
    assert reg.register(paper, paper_checks(paper), root=tmp_path) == []


def test_claims_markdown_and_status_count_the_revised_readings():
    claim = {"id": "c1", "kind": "paper", "source": {"place": "Sec. 1", "quote": "q"}, "text": "t", "check": "k",
             "compare": "lt", "paper_value": 0,
             "revisions": [{"date": "2026-11-28", "changed": "band", "why": "w", "verdict_before": "fails",
                            "value_before": "0.3", "build_before": "b", "seen_before": True, "fingerprint": "x"}]}
    from fedrepro.claims.verdicts import Replicates
    table = evaluate([claim], {"k": lambda f, s: Replicates([-1.0, -2.0, -1.5])}, {}, {}, paper="p")
    assert bool(table.loc[0, "revised_after_verdict"]) and "before: fails" in table.loc[0, "revisions"]
    md = to_markdown(table, "p")
    assert "1 of them rest on a reading revised after a verdict" in md and "(revised 2026-11-28: band" in md


def test_a_same_values_revision_is_shown_but_not_counted_as_revised():
    rev = {"date": "2026-11-28", "changed": "variant label added", "why": "w", "verdict_before": "holds",
           "value_before": "1", "build_before": "b", "seen_before": True, "fingerprint": "x"}
    assert reg.revised_after_verdict({"revisions": [rev]})
    assert not reg.revised_after_verdict({"revisions": [{**rev, "same_values": True}]})
    assert "variant label added" in reg.revision_summary({"revisions": [{**rev, "same_values": True}]})


def test_a_claim_that_judges_one_variant_says_which_in_claims_md():
    claims = {c["id"]: c for c in load_claims("fedadmm_gong")}
    assert "early code" in claims["table3_fedadmm_rounds"]["variant"]
    assert "Algorithm 1" in claims["table3_fedadmm_rounds_alg1"]["variant"]
    from fedrepro.claims.verdicts import Replicates
    c = {**claims["table3_fedadmm_rounds"], "experiments": [], "check": "k"}
    md = to_markdown(evaluate([c], {"k": lambda f, s: Replicates([1.0, 2.0])}, {}, {}, paper="g"), "g")
    assert "**variant: the authors' early code" in md


def _base_a(frames, summaries):
    return 1.0


def _base_b(frames, summaries):
    return 2.0


def _factory(check):
    def run(frames, summaries):
        return check(frames, summaries)
    run.__module__ = "fedrepro.papers.zz.claims"
    return run


def test_a_check_made_by_a_factory_is_fingerprinted_with_what_it_holds():
    # fedadmm_gong's alg1(check) holds the wrapped check in its closure: version 1 did not see it
    for fn in (_base_a, _base_b):
        fn.__module__ = "fedrepro.papers.zz.claims"
    claim = {"id": "c", "check": "k"}
    a, b = {"k": _factory(_base_a)}, {"k": _factory(_base_b)}
    assert reg.fingerprint(claim, a, version=1) == reg.fingerprint(claim, b, version=1)
    assert reg.fingerprint(claim, a, version=2) != reg.fingerprint(claim, b, version=2)


def test_migrating_fingerprints_is_refused_while_a_reading_differs(tmp_path):
    paper = "fedadmm_gong"
    path = _copy_paper(tmp_path, paper)
    regfile = path.with_name(reg.REGISTRY_NAME)
    # the registrations as version 1 computed them
    data = yaml.safe_load(regfile.read_text())
    claims = {c["id"]: c for c in load_claims(paper, tmp_path)}
    checks = paper_checks(paper)
    for cid, entry in data["readings"].items():
        if not claims[cid].get("revisions"):
            entry["fingerprint"] = reg.fingerprint(claims[cid], checks, paper, version=1)
    data["fingerprint_version"] = 1
    text = path.read_text()
    for cid, c in claims.items():
        if c.get("revisions"):
            text = text.replace(f'fingerprint: "{c["revisions"][-1]["fingerprint"]}"',
                                f'fingerprint: "{reg.fingerprint(c, checks, paper, version=1)}"')
    path.write_text(text)
    regfile.write_text(yaml.safe_dump(data))
    assert any("algorithm version 1" in p for p in reg.problems(paper, checks, root=tmp_path))
    edited = path.read_text().replace("    compare: lt\n", "    compare: le\n", 1)
    path.write_text(edited)
    with pytest.raises(ValueError, match="record them as revisions before migrating"):
        reg.migrate(paper, checks, root=tmp_path)
    path.write_text(text)
    assert reg.migrate(paper, checks, root=tmp_path) > 0
    assert reg.problems(paper, checks, root=tmp_path) == []


TARGETS = {"mnist": 0.29, "fmnist": 0.63}          # a plain-data constant a check names (version 3 covers it)


def _reads_a_constant(frames, summaries):
    return TARGETS["mnist"]


def test_a_constant_the_check_names_is_part_of_the_reading(monkeypatch):
    """Version 3: a target such as fedadmm_gong's MLP_TARGETS is part of the reading; version 2 missed it."""
    import sys

    claim, checks = {"id": "c", "check": "k"}, {"k": _reads_a_constant}
    module = sys.modules[__name__]
    v2, v3 = reg.fingerprint(claim, checks, version=2), reg.fingerprint(claim, checks, version=3)
    monkeypatch.setattr(module, "TARGETS", {"mnist": 0.41, "fmnist": 0.63})
    assert reg.fingerprint(claim, checks, version=2) == v2
    assert reg.fingerprint(claim, checks, version=3) != v3
    assert reg._constant({"b": {1, 2}, "a": (1.5, None)}) == reg._constant({"a": (1.5, None), "b": {2, 1}})
    assert reg._constant(pd.DataFrame()) is None


def test_the_measure_kinds_nested_in_a_reading_are_part_of_it(monkeypatch):
    """A gap's or saved's sides are measured by kinds looked up at run time: version 3 covers their code."""
    from fedrepro.claims import query

    claim = {"id": "c", "reading": {"of": {"gap": {"rounds_to": 0.9, "metric": "acc"}, "minus": {"final": "acc"}}}}
    checks = {"reading:c": query.compile_reading(claim["reading"], name="c")}
    v2, v3 = reg.fingerprint(claim, checks, version=2), reg.fingerprint(claim, checks, version=3)

    def _rounds_to(rows, spec, by, x):        # an edited measure function
        return None
    _rounds_to.__module__ = "fedrepro.claims.query"
    monkeypatch.setitem(query.MEASURE_KINDS, "rounds_to", _rounds_to)
    assert reg.fingerprint(claim, checks, version=2) == v2
    assert reg.fingerprint(claim, checks, version=3) != v3
