"""The paper registry: every folder ``fedrepro/papers/<paper>/`` with an ``experiments.yaml`` is a
paper (:data:`PAPERS`, :func:`discover_papers`; USER_PAPER names a user's own experiments). The discovery
itself lives in :mod:`fedrepro.experiments.yamlio`, since the experiments layer expands the papers'
experiments and may not import from this layer (tests/test_layout.py); the layers above ask here.
Each paper exposes, through this module only, its figure and table specs (``figures.py``: ``FIGURES``, ``TABLES``) and its claim checks (``claims.py``:
``CHECKS``); the workflow asks here for what a paper builds."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

from fedrepro.claims.evaluate import evaluate, load_claims, load_results, to_markdown, validate_claims
from fedrepro.core.params import ConfigError
from fedrepro.experiments.yamlio import PAPERS, USER_PAPER, discover_papers, paper_file  # noqa: F401 (the papers)


def _paper_module(paper: str, part: str):
    """``fedrepro.papers.<paper>.<part>`` (``None`` when the paper has no such module)."""
    if paper not in PAPERS:
        raise ConfigError(f"{paper!r} is not a paper; papers: {', '.join(PAPERS)}")
    name = f"{__package__}.{paper}.{part}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name == name:
            return None
        raise


def figure_module(paper: str):
    """The paper's figure module (``None`` when it has none yet)."""
    return _paper_module(paper, "figures")


def checks(paper: str, root: str | Path | None = None) -> dict:
    """``{check name: function}``: the paper's ``claims.py`` ``CHECKS`` and, under ``reading:<id>``, the
    readings its claims.yaml writes as data, compiled with the ``VIEWS`` of claims.py
    (:func:`fedrepro.claims.query.compile_reading`)."""
    from fedrepro.claims.evaluate import check_name
    from fedrepro.claims.query import compile_reading

    module = _paper_module(paper, "claims")
    out = dict(getattr(module, "CHECKS", {}))
    views = getattr(module, "VIEWS", {})
    for claim in load_claims(paper, root):
        if isinstance(claim, dict) and isinstance(claim.get("reading"), dict):
            out[check_name(claim)] = compile_reading(claim["reading"], views, name=claim.get("id", "reading"))
    return out


def figure_spec(paper: str, fig: str):
    module = figure_module(paper)
    specs = {**getattr(module, "FIGURES", {}), **getattr(module, "TABLES", {})} if module else {}
    if fig not in specs:
        raise ValueError(f"{paper} has no figure or table {fig!r}; it has {sorted(specs)}")
    return specs[fig]


def paper_outputs(config: dict, cells_by_exp: dict, skipped: dict, root: str | Path = ".") -> dict:
    """Per paper: the files ``snakemake <paper>`` builds, the figures skipped for missing
    data, the figures not built because an experiment they need does not run in this build
    (``not_built``: its ``run_at`` leaves this scale out, or the verify build leaves it out), and the
    experiments the claims need."""
    from fedrepro.experiments.expansion import load_experiments, why_no_cells, why_not_in_build

    out = {}
    experiments = {}
    for (paper, exp) in cells_by_exp:
        experiments.setdefault(paper, []).append(exp)
    for paper, exps in experiments.items():
        ok = [e for e in exps if (paper, e) not in skipped]
        targets = [f"results/{paper}/{e}{s}" for e in ok for s in (".parquet", ".summary.parquet")]
        if ok:        # per-client label counts of the partitions, and their figures (rule partitions)
            targets += [f"results/{paper}/partitions.parquet", f"figures/{paper}/partitions"]
        info = {"figures": {}, "tables": {}, "skipped_figures": {}, "not_built": {}, "claim_experiments": []}
        # experiments defined but without cells in this build: {experiment: why}
        blocks = load_experiments({**config, "papers": [paper], "experiments": None}, root).get(paper, {}) \
            if paper != "custom" else {}
        idle = {e: why_not_in_build(paper, e, b, config) or why_no_cells() for e, b in blocks.items() if e not in exps}
        if paper == "custom":
            targets += [f"figures/custom/{e}_{k}{s}" for e in ok for k in ("rounds", "sweep") for s in (".pdf", ".png")]
        module = figure_module(paper) if paper != "custom" else None
        for kind, attr, suffixes in (("figure", "FIGURES", (".pdf", ".png")), ("table", "TABLES", (".md", ".csv", ".tex", ".html"))):
            for fig, spec in (getattr(module, attr, {}) if module else {}).items():
                missing = sorted({d for e in spec.experiments for d in skipped.get((paper, e), [])})
                unknown = [e for e in (*spec.experiments, *spec.optional) if e not in exps and e not in idle]
                if unknown:
                    raise ConfigError(f"{paper} {kind} {fig} needs experiment(s) {unknown} that "
                                      f"fedrepro/papers/{paper}/experiments.yaml does not define")
                if missing:
                    info["skipped_figures"][fig] = missing
                    continue
                absent = [e for e in spec.experiments if e in idle]
                if absent:
                    info["not_built"][fig] = "; ".join(f"experiment {e} {idle[e]}" for e in absent)
                    continue
                info["figures" if kind == "figure" else "tables"][fig] = spec
                targets += [f"figures/{paper}/{fig}{s}" for s in suffixes]
        claims = load_claims(paper, root)
        if claims:
            needed = sorted({e for c in claims for e in (c.get("experiments") or []) if e in ok})
            info["claim_experiments"] = needed
            targets += [f"results/{paper}/claims{s}" for s in (".parquet", ".md", ".html")]
        info["targets"] = targets
        out[paper] = info
    return out


def figure_experiments(paper: str, fig: str, skipped: dict, cells_by_exp: dict | None = None) -> list[str]:
    """The experiments a figure or table reads: its required ones and its optional ones not skipped (and,
    given the build's ``cells_by_exp``, run in this build)."""
    spec = figure_spec(paper, fig)
    return [*spec.experiments, *(e for e in spec.optional if (paper, e) not in skipped
                                 and (cells_by_exp is None or (paper, e) in cells_by_exp))]


def id_pattern(outputs: dict, kind: str) -> str:
    """Regex of the figure (or table) ids of all papers, for wildcard constraints."""
    key = "figures" if kind == "figure" else "tables"
    ids = sorted({fig for info in outputs.values() for fig in info.get(key, {})})
    return "|".join(re.escape(i) for i in ids) if ids else "(?!x)x"


def look_alpha(config: dict | None) -> float:
    """The level a build decides at: 0.05, or the level of this look of a verify build in two looks
    (config ``verify: {look, alpha_per_look}``, :mod:`fedrepro.claims.plan`)."""
    from fedrepro.claims.plan import ALPHA_PER_LOOK
    from fedrepro.claims.verdicts import ALPHA

    v = (config or {}).get("verify") or {}
    look = int(v.get("look", 0) or 0)
    if look == 0:
        return ALPHA
    return float(list(v.get("alpha_per_look", ALPHA_PER_LOOK))[look - 1])


def evaluate_paper(paper: str, results_dir: str | Path = "results", skipped: dict | None = None,
                   root: str | Path | None = None, scale: str | None = None, config: dict | None = None,
                   alpha: float | None = None):
    """Evaluate the paper's claims file against the results of a build; returns (table, markdown).

    With the build's ``config`` (and its ``scale``), every claim is checked for completeness against
    the cells its experiments expand to (:mod:`fedrepro.claims.completeness`): a claim missing any is
    ``incomplete``, not decided on the cells present."""
    claims = load_claims(paper, root)
    paper_checks = checks(paper, root) if claims else {}
    validate_claims(claims, paper, paper_checks)
    experiments = sorted({e for c in claims for e in (c.get("experiments") or [])})
    frames, summaries = load_results(paper, experiments, results_dir)
    expected = None
    if config is not None:
        from fedrepro.claims.completeness import expected_for_paper
        expected = expected_for_paper(paper, experiments, scale or config.get("scale", "quick"), config,
                                      root or ".")
    if alpha is None:
        alpha = look_alpha(config)
    table = evaluate(claims, paper_checks, frames, summaries, paper, skipped, scale, expected, alpha)
    return table, to_markdown(table, paper, alone=undecided_alone(table, paper, root))


def undecided_alone(table, paper: str, root: str | Path | None = None) -> dict:
    """``{claim id: (command, bill)}`` of the table's undecided (or incomplete) claims built alone
    (:func:`fedrepro.papers.alone.undecided_bills`), for claims.md."""
    from fedrepro.claims import verdicts
    from fedrepro.papers.alone import undecided_bills

    open_ = {verdicts.UNDECIDED, verdicts.INCOMPLETE}
    ids = [c for c, v in zip(table["claim"], table["verdict"]) if v in open_] if not table.empty else []
    return undecided_bills(paper, ids, root) if ids else {}


def evaluate_alone(build, folder: str | Path, skipped: dict | None = None,
                   root: str | Path | None = None):
    """(table, markdown): the verdict of one claim built alone (``build``: its
    :class:`~fedrepro.papers.alone.ClaimBuild`) from its target's aggregates in ``folder``."""
    from fedrepro.papers.alone import bill, bill_text, load_frames

    exps = build.claim.get("experiments") or []
    empty = [e for e in exps if not build.cells.get((build.paper, e))]
    frames, summaries = load_frames(folder, [e for e in exps if e not in empty], empty)
    table = evaluate([build.claim], checks(build.paper, root), frames, summaries, build.paper, skipped, build.scale)
    b = bill(build)
    kept = "; ".join(f"{e}: {len(build.cells[(build.paper, e)])} cells"
                     + (f" ({', '.join(build.target.algorithms[e]) or 'none'})" if e in build.target.algorithms else "")
                     for e in exps)
    head = [f"Built alone at scale {build.scale}: `{b['command']}`", "",
            f"Cells: {kept}. Bill: {bill_text(b)}." + (f" {build.target.why}" if build.target.why else ""), ""]
    md = to_markdown(table, f"{build.paper} / {build.id}")
    title, _, rest = md.partition("\n")
    return table, "\n".join([title, "", *head, rest.lstrip("\n")])
