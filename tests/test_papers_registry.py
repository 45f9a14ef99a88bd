"""A paper is one folder, fedrepro/papers/<paper>/: discovered from its experiments.yaml, its figures and
checks reached only through fedrepro.papers.registry (FIGURES / TABLES in figures.py, CHECKS in claims.py)."""
from __future__ import annotations

import pytest

from fedrepro.claims.evaluate import check_name, load_claims
from fedrepro.experiments.yamlio import PAPERS, discover_papers, load_paper_fragment, paper_file
from fedrepro.papers import registry


def test_a_folder_with_experiments_yaml_is_a_paper(tmp_path):
    (tmp_path / "new_paper").mkdir()
    (tmp_path / "new_paper" / "experiments.yaml").write_text("experiments: {}\n")
    (tmp_path / "notes").mkdir()                      # a folder without experiments.yaml is not a paper
    assert discover_papers(tmp_path) == ("new_paper",)
    assert len(PAPERS) == 5 and PAPERS == discover_papers()


@pytest.mark.parametrize("paper", PAPERS)
def test_each_paper_folder_holds_its_files_and_declares_its_plugins(paper):
    for what in ("experiments", "claims", "fidelity"):
        path = paper_file(paper, what)
        assert path.is_file(), path
    experiments = load_paper_fragment(paper, None)["experiments"]
    module = registry.figure_module(paper)
    specs = {**module.FIGURES, **module.TABLES}
    assert specs, f"{paper} declares no figure or table"
    for fig, spec in specs.items():
        assert set(spec.experiments) | set(spec.optional) <= set(experiments), (paper, fig)
    checks = registry.checks(paper)
    assert {check_name(c) for c in load_claims(paper)} <= set(checks)


def test_the_registry_refuses_an_unknown_paper():
    with pytest.raises(ValueError, match="not a paper"):
        registry.checks("no_such_paper")
