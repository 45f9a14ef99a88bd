"""Every claim of the five papers is a quoted statement: a kind, a place and a sentence that occurs
verbatim in the paper's text (``../shared/seeds``); checks of our own code quote the paper or its
reproduction spec (``../shared/papers``). The claims files validate against their checks, their
experiments and the scales."""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from fedrepro.claims.evaluate import validate_claims
from fedrepro.papers.registry import checks as paper_checks
from fedrepro.experiments.expansion import SCALES
from fedrepro.experiments.yamlio import PAPERS, load_paper_fragment
from fedrepro.claims.evaluate import load_claims
from tests.conftest import unavailable

SHARED = Path(__file__).resolve().parents[2] / "shared"
SEEDS = {"fedadmm_zhou": "000_", "fedepm": "001_", "aspire": "002_", "fedadmm_gong": "003_", "frpg": "004_"}
SPECS = {"fedadmm_zhou": "000-", "fedepm": "001-", "aspire": "002-", "fedadmm_gong": "003-", "frpg": "004-"}


def normalize(text: str) -> str:
    """Case, Unicode forms, quote and dash styles and white space do not matter; words split by a
    line-end hyphen are joined."""
    t = unicodedata.normalize("NFKC", text)
    t = t.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    t = re.sub(r"[\u2010-\u2015\u2212]", "-", t)
    t = re.sub(r"(\w)-\s*\n\s*(\w)", r"\1\2", t)
    return re.sub(r"\s+", " ", t).strip().lower()


def occurs(quote: str, text: str) -> bool:
    """The quote's fragments (split at '...' / '…') occur in the text, in order."""
    pos = 0
    for frag in re.split(r"\s*(?:\.\.\.|…)\s*", normalize(quote)):
        if not frag:
            continue
        at = text.find(frag, pos)
        if at < 0:
            return False
        pos = at + len(frag)
    return True


def _read(folder: str, prefix: str) -> str:
    files = sorted((SHARED / folder).glob(prefix + "*"))
    if not files:
        unavailable(f"{SHARED / folder} has no {prefix}* (the papers' text lives in shared/, beside the clone)")
    return normalize(files[0].read_text(encoding="utf-8", errors="replace"))


@pytest.mark.parametrize("paper", PAPERS)
def test_claims_file_validates_against_checks_experiments_and_scales(paper):
    claims = load_claims(paper)
    experiments = set((load_paper_fragment(paper).get("experiments") or {}))
    validate_claims(claims, paper, paper_checks(paper), experiments=experiments, scales=SCALES)


@pytest.mark.parametrize("paper", PAPERS)
def test_every_claim_quotes_the_paper(paper):
    paper_text, spec_text = _read("seeds", SEEDS[paper]), _read("papers", SPECS[paper])
    missing = []
    for c in load_claims(paper):
        quote = c["source"]["quote"]
        if not (occurs(quote, paper_text) or (c["kind"] == "check" and occurs(quote, spec_text))):
            missing.append(f"{c['id']}: {quote!r}")
    assert not missing, f"quotes not found verbatim in {paper}'s text:\n" + "\n".join(missing)


def test_the_quote_matcher_is_strict():
    text = normalize("FedEPM declines the fastest and hence uses the fewest CR.\nBigger k0 gives fewer CR.")
    assert occurs("FedEPM declines the fastest ... fewest CR", text)
    assert occurs("bigger  k0 gives\nfewer CR", text)
    assert not occurs("FedEPM declines the slowest", text)
    assert not occurs("fewer CR ... FedEPM declines", text)          # fragments in order
