"""Claims built alone (issue #43): the cells one claim's reading needs, at the scale that decides it, and their
CPU bill.

A claim's *target* runs the cells of the experiments it names (``experiments:`` in claims.yaml), expanded at the
scale its ``testable_at`` names (the cheapest of them; verify when it names none; a ``scale`` given with
``--config`` wins), and nothing else::

    snakemake -j 2 --config claim=fedadmm_gong/q1_table3_fedadmm_fewest
    snakemake --profile workflow/profiles/slurm --config claim=fedadmm_gong/table3_fedadmm_rounds

It writes ``results/<paper>/claims/<id>.md`` (and ``.parquet``): the claim's verdict, from the aggregates of its
cells under ``results/<paper>/claims/<id>/`` (:func:`fedrepro.papers.registry.evaluate_alone`: the paper's checks
are loaded there; this module does not import the registry); the normal build's results are neither read nor written.

A claim whose reading is written as data on the run frames and names the algorithms of each quantity
(``where: {algorithm: ...}``, :func:`reading_algorithms`) runs those algorithms' cells only. A paper narrows a
claim's cells further in ``fedrepro/papers/<paper>/claim_targets.py`` (``TARGETS``:
``{claim id: ClaimTarget}``): the algorithms of each experiment the reading reads (an experiment mapped to ``[]``
contributes no cells: the reading takes none of its rows), and ``adjust``, which changes a cell's run settings
(e.g. a round cap at the edge of the claim's band and a stop once the target accuracy is reached: a run stops as
soon as its claim's question is answered). An adjusted cell is a new cell (its id is its content's hash), so it
never overwrites a cell of the normal build.

The bill (:func:`bill`) sums the cells' CPU seconds: the measured paper-scale bill
(:data:`fedrepro.experiments.resources.MEASURED_BILL_FILE`: a sampled kind's extrapolation or a calibrated work
model) where the cell's kind is there, else (paper scale) a work model calibrated here on the bill's samples of the
cell's calibration group, as the bill's script calibrates, else the work model (:func:`fedrepro.experiments.resources.modelled_cell_seconds`),
each cell at its round cap (an upper bound when a stop rule may end it earlier); cells that copy an earlier
experiment's run cost nothing. ``python -m fedrepro.papers.bill <paper> <claim>`` prints it.
"""
from __future__ import annotations

import copy
import functools
import importlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from fedrepro.core.params import ConfigError
from fedrepro.experiments.build_plan import same_runs
from fedrepro.experiments.expansion import (SCALES, check_cell, expand, load_experiments, reference_cell,
                                            runs_at)
from fedrepro.experiments.spec import RunSpec, as_spec
from fedrepro.experiments.yamlio import PAPERS, read_yaml

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SCALE = "verify"


@dataclass(frozen=True)
class ClaimTarget:
    """How a paper narrows one claim's cells (``fedrepro/papers/<paper>/claim_targets.py``, ``TARGETS``).

    ``algorithms``: ``{experiment: [algorithm, ...]}``, the algorithms whose cells the reading reads (an
    experiment not named keeps all its cells; ``[]``: none). ``scale``: the scale that decides the claim (default:
    the cheapest of its ``testable_at``). ``adjust``: ``RunSpec -> RunSpec`` (another run, e.g. with a round cap
    and a stop rule: :meth:`fedrepro.experiments.spec.RunSpec.replace`; None: the cell is left out) at ``scale``. ``why``: one sentence shown with the target."""

    algorithms: dict = field(default_factory=dict)
    scale: str | None = None
    adjust: Callable | None = None
    why: str = ""


@dataclass
class ClaimBuild:
    """One claim's target: its cells by experiment and the scale they are expanded at."""

    paper: str
    claim: dict
    scale: str
    cells: dict                     # {(paper, experiment): [cells]}
    target: ClaimTarget

    @property
    def id(self) -> str:
        return self.claim["id"]

    @property
    def name(self) -> str:
        return f"{self.paper}/{self.id}"

    def experiments_with_cells(self) -> list[str]:
        return [e for (_, e), cells in self.cells.items() if cells]


def targets(paper: str) -> dict:
    """The paper's ``TARGETS`` (``fedrepro/papers/<paper>/claim_targets.py``; ``{}`` without one)."""
    name = f"fedrepro.papers.{paper}.claim_targets"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name == name:
            return {}
        raise
    return dict(getattr(module, "TARGETS", {}))


def find_claim(paper: str, claim_id: str, root: str | Path | None = None) -> dict:
    from fedrepro.claims.evaluate import load_claims

    if paper not in PAPERS:
        raise ConfigError(f"claim={paper}/{claim_id}: {paper!r} is not a paper; papers: {', '.join(PAPERS)}")
    claims = load_claims(paper, root)
    for claim in claims:
        if isinstance(claim, dict) and claim.get("id") == claim_id:
            return claim
    raise ConfigError(f"claim={paper}/{claim_id}: fedrepro/papers/{paper}/claims.yaml has no claim {claim_id!r}; "
                      f"its ids: {', '.join(str(c.get('id')) for c in claims if isinstance(c, dict))}")


def split_name(name: str) -> tuple[str, str]:
    """``"<paper>/<claim id>"`` -> (paper, claim id)."""
    paper, sep, claim_id = str(name).partition("/")
    if not sep or not paper or not claim_id or "/" in claim_id:
        raise ConfigError(f"claim={name!r}: name one claim as <paper>/<claim id>, e.g. "
                          "claim=fedadmm_gong/table3_fedadmm_rounds")
    return paper, claim_id


def claim_scale(claim: dict, target: ClaimTarget | None = None, given: str | None = None) -> str:
    """The scale a claim is built at: ``given`` (``--config scale=``), else its target's, else the cheapest scale
    its ``testable_at`` names, else :data:`DEFAULT_SCALE`."""
    if given:
        return given
    if target is not None and target.scale:
        return target.scale
    named = claim.get("testable_at") or []
    return next((s for s in SCALES if s in named), DEFAULT_SCALE)


def _algorithms_of(where) -> set | None:
    """The algorithms a reading's ``where:`` keeps (None: it does not restrict ``algorithm``)."""
    want = (where or {}).get("algorithm")
    if want is None or callable(want):
        return None
    return {str(a) for a in want} if isinstance(want, (list, tuple, set)) else {str(want)}


def reading_algorithms(reading: dict | None) -> set | None:
    """The algorithms whose rows a claim's ``reading:`` (:func:`fedrepro.claims.query.compile_reading`) reads, or
    None when it may read any: only a reading of the run frames themselves (``frame: trace`` or ``summary``; a
    view of claims.py may combine rows in its own ways) whose every quantity (``of``, ``minus``, ``over``,
    ``reduction``, in every component) is restricted to named algorithms, by its own ``where:``, its part's or the
    reading's. Rows of other algorithms then never reach the reading: neither a quantity nor a setting of
    ``per`` (a setting only they have gives no component), so the target leaves their cells out."""
    from fedrepro.claims.query import OPS

    if not isinstance(reading, dict) or reading.get("frame", "trace") not in ("trace", "summary"):
        return None
    top = _algorithms_of(reading.get("where"))
    base = {k: v for k, v in reading.items() if k not in ("components", "where")}
    parts = [dict(base, **c) for c in reading.get("components", [])] or [base]
    out: set = set()
    for part in parts:
        outer = _algorithms_of(part.get("where"))
        for key in ("of", *OPS):
            if key not in part:
                continue
            spec = part[key]
            inner = _algorithms_of(spec.get("where") if isinstance(spec, dict) else None)
            kept = [a for a in (top, outer, inner) if a is not None]
            if not kept:
                return None
            out |= set.intersection(*kept)
    return out or None


def _workflow_config(root: str | Path | None) -> dict:
    path = Path(root or ROOT) / "config.yaml"
    return (read_yaml(path) or {}) if path.exists() else {"seed": 0}


@functools.lru_cache(maxsize=64)
def _expanded(paper: str, exp: str, block_json: str, scale: str, seed: int) -> tuple:
    return tuple(expand(paper, exp, json.loads(block_json), scale, seed))


def claim_build(paper: str, claim_id: str, scale: str | None = None, config: dict | None = None,
                root: str | Path | None = None) -> ClaimBuild:
    """The cells of claim ``paper/claim_id``'s target (see the module docstring). ``config``: the workflow's
    (its ``seed`` and ``paper_overrides``; default the checkout's config.yaml)."""
    claim = find_claim(paper, claim_id, root)
    target = targets(paper).get(claim_id, ClaimTarget())
    scale = claim_scale(claim, target, scale)
    if scale not in SCALES:
        raise ConfigError(f"claim={paper}/{claim_id}: scale={scale!r} is not allowed; use {', '.join(SCALES)}")
    config = dict(_workflow_config(root) if config is None else config)
    seed = int(config.get("seed", 0))
    blocks = load_experiments({**config, "papers": [paper], "experiments": {}, "scale": scale},
                              root or ROOT).get(paper, {})
    exps = claim.get("experiments") or []
    if not exps:
        raise ConfigError(f"claim={paper}/{claim_id} names no experiments (it reads no results: {claim.get('check')}); "
                          "it is decided by any build")
    unknown = sorted(set(target.algorithms) - set(exps))
    if unknown:
        raise ConfigError(f"fedrepro/papers/{paper}/claim_targets.py: claim {claim_id!r} restricts {unknown}, which "
                          f"it does not read (its experiments: {exps})")
    from_reading = None if target.algorithms else reading_algorithms(claim.get("reading"))
    cells = {}
    for exp in exps:
        if exp not in blocks:
            raise ConfigError(f"claim={paper}/{claim_id}: experiment {exp!r} is not in "
                              f"fedrepro/papers/{paper}/experiments.yaml")
        if not runs_at(blocks[exp], scale):
            raise ConfigError(f"claim={paper}/{claim_id}: its experiment {exp!r} runs at scale "
                              f"{' and '.join(blocks[exp]['run_at'])} only (run_at in fedrepro/papers/{paper}/"
                              f"experiments.yaml), so scale={scale} cannot decide it; use --config "
                              f"scale={blocks[exp]['run_at'][0]}")
        every = [copy.deepcopy(c) for c in _expanded(paper, exp, json.dumps(blocks[exp], sort_keys=True, default=str),
                                                      scale, seed)]
        kept = every
        if exp in target.algorithms:
            wanted = set(target.algorithms[exp])
            algorithm = {id(c): as_spec(c).algorithm.name for c in every}
            absent = sorted(wanted - set(algorithm.values()))
            if absent:
                raise ConfigError(f"fedrepro/papers/{paper}/claim_targets.py: claim {claim_id!r} keeps algorithm(s) "
                                  f"{absent} of {exp}, which runs {sorted(set(algorithm.values()))}")
            kept = [c for c in every if algorithm[id(c)] in wanted]
            for c in kept:                   # a kept cell's reference run (a `target` stop rule) is kept too
                ref = reference_cell(c, every)
                if ref is not None and algorithm[id(ref)] not in wanted:
                    raise ConfigError(f"fedrepro/papers/{paper}/claim_targets.py: claim {claim_id!r} keeps "
                                      f"{algorithm[id(c)]} of {exp}, which stops at {algorithm[id(ref)]}'s "
                                      f"objective; keep {algorithm[id(ref)]} too")
        elif from_reading is not None:          # a reading that names its algorithms: theirs only
            algorithm = {id(c): as_spec(c).algorithm.name for c in every}
            kept = [c for c in every if algorithm[id(c)] in from_reading]
            refs = {as_spec(ref).name: ref for c in kept if (ref := reference_cell(c, every)) is not None}
            kept += [r for r in refs.values() if algorithm[id(r)] not in from_reading]
        if target.adjust is not None:
            kept = [_adjusted(c, target.adjust) for c in kept]
            kept = [c for c in kept if c is not None]
        cells[(paper, exp)] = kept
    return ClaimBuild(paper=paper, claim=claim, scale=scale, cells=cells, target=target)


def _adjusted(cell: dict, adjust: Callable) -> dict | None:
    """The cell dict of ``adjust``'s run for ``cell``'s spec (its name: the id of its content), checked."""
    new = adjust(as_spec(cell))
    if new is None:
        return None
    if not isinstance(new, RunSpec):
        raise TypeError(f"a claim target's adjust gives a RunSpec (RunSpec.replace) or None, not {type(new).__name__}")
    out = new.to_dict()
    check_cell(out)
    return out


def build_from_config(config: dict, given_scale: str | None = None, root: str | Path | None = None) -> ClaimBuild:
    """The claim target named by ``config['claim']`` (the workflow's claim mode)."""
    paper, claim_id = split_name(config["claim"])
    return claim_build(paper, claim_id, given_scale, config, root)


# ---- the bill -------------------------------------------------------------------------------------------
def cell_cost(cell: dict, entries: dict | None = None, calibrate_at: str | None = None) -> tuple[float, str]:
    """(CPU seconds, how): from the measured bill (``measured``: the kind was sampled; ``calibrated``: a sampled
    kind's ratio to the work model), else, with ``calibrate_at="paper"``, calibrated here from the bill's samples
    of the cell's calibration group as ``benchmarks/paper_bill.py`` calibrates the kinds it knows
    (``calibrated here``: a kind the bill was written without, e.g. a newer experiment's), else the work model
    (``work model``); at the cell's round cap."""
    from fedrepro.experiments.resources import (cost_kind_id, load_measured_bill, measured_cpu_s,
                                                modelled_cell_seconds)

    given = entries is not None
    entries = load_measured_bill() if entries is None else entries
    entry = entries.get(cost_kind_id(cell))
    if entry is not None:
        return measured_cpu_s(cell, entry), ("calibrated" if "ratio" in entry else "measured")
    if calibrate_at == "paper" and not given:
        here = calibrated_entry(cell)
        if here is not None:
            return measured_cpu_s(cell, here), "calibrated here"
    return modelled_cell_seconds(cell), "work model"


@functools.lru_cache(maxsize=8)
def _sampled_by_group(paper: str) -> dict:
    """{calibration group: [(representative cell, sample)]} of the paper's paper-scale kinds sampled in the
    measured bill (the first cell of each kind, as ``benchmarks/paper_bill.py``)."""
    from fedrepro.experiments.resources import (MEASURED_BILL_FILE, calibration_group, cost_kind_id)

    path = Path(MEASURED_BILL_FILE)
    sampled = json.loads(path.read_text()).get("kinds", {}) if path.exists() else {}
    config = {**_workflow_config(None), "papers": [paper], "experiments": {}, "scale": "paper"}
    seed = int(config.get("seed", 0))
    out: dict = {}
    seen = set()
    for exp, block in load_experiments(config, ROOT).get(paper, {}).items():
        for c in _expanded(paper, exp, json.dumps(block, sort_keys=True, default=str), "paper", seed):
            kind = cost_kind_id(c)
            if kind in sampled and kind not in seen:
                seen.add(kind)
                out.setdefault(calibration_group(c), []).append((c, {**sampled[kind], "kind": kind}))
    return out


def calibrated_entry(cell: dict) -> dict | None:
    """A calibrated entry for a paper-scale cell whose kind the measured bill lacks
    (:func:`fedrepro.experiments.resources.calibrate` on the bill's samples of its group; None when it has none)."""
    from fedrepro.experiments.resources import calibrate, calibration_group

    group = _sampled_by_group(as_spec(cell).paper).get(calibration_group(cell))
    return calibrate(cell, group) if group else None


def runs(cells: dict) -> list[dict]:
    """The cells that run (not those that copy an earlier experiment's run)."""
    copies = same_runs(cells)
    return [c for cs in cells.values() for c in cs if as_spec(c).name not in copies]


def bill(build: ClaimBuild, entries: dict | None = None) -> dict:
    """``{"cpu_h", "cpu_s", "runs", "by": {how: runs}, "requested_h", "scale", "command"}`` of a claim's target."""
    from fedrepro.experiments.resources import cell_runtime_min

    ran = runs(build.cells)
    costs = [cell_cost(c, entries, calibrate_at=build.scale) for c in ran]
    by: dict[str, int] = {}
    for _, how in costs:
        by[how] = by.get(how, 0) + 1
    cpu_s = sum(s for s, _ in costs)
    return {"claim": build.name, "scale": build.scale, "runs": len(ran), "cpu_s": cpu_s, "cpu_h": cpu_s / 3600,
            "by": by, "requested_h": sum(cell_runtime_min(c, build.scale) for c in ran) / 60,
            "command": command(build)}


def command(build: ClaimBuild) -> str:
    """The command that builds the claim alone (the SLURM profile at paper scale)."""
    how = "--profile workflow/profiles/slurm" if build.scale == "paper" else "-j 2"
    default = claim_scale(build.claim, build.target)
    return f"snakemake {how} --config claim={build.name}" + ("" if build.scale == default else f" scale={build.scale}")


def bill_text(b: dict) -> str:
    """One line: CPU-hours, runs and how they were estimated, at which scale."""
    how = ", ".join(f"{n} {k}" for k, n in sorted(b["by"].items()))
    return (f"{b['cpu_h']:,.2f} CPU-hours, {b['runs']} runs at scale {b['scale']} ({how or 'none'}; each at its "
            f"round cap); SLURM requests {b['requested_h']:,.1f} h")


def undecided_bills(paper: str, claim_ids, root: str | Path | None = None) -> dict:
    """``{claim id: (command, bill text)}`` of the claims ``claim_ids`` (claims.md's section of undecided claims);
    a claim whose target cannot be built says why instead of a bill."""
    out = {}
    for claim_id in claim_ids:
        try:
            b = bill(claim_build(paper, claim_id, root=root))
            out[claim_id] = (b["command"], bill_text(b))
        except ConfigError as err:
            out[claim_id] = ("—", f"no target: {err}")
    return out


# ---- the frames of a claim built alone (its verdict: fedrepro.papers.registry.evaluate_alone) ----------
def load_frames(folder: str | Path, experiments, empty=()) -> tuple[dict, dict]:
    """Trace and summary frames of ``experiments`` from ``folder`` (``<experiment>(.summary).parquet``); each of
    ``empty`` (an experiment the target runs no cell of: the reading takes none of its rows) is an empty frame
    with the columns of the others."""
    import pandas as pd

    frames, summaries = {}, {}
    for e in experiments:
        t, s = Path(folder, f"{e}.parquet"), Path(folder, f"{e}.summary.parquet")
        if t.exists() and s.exists():
            frames[e], summaries[e] = pd.read_parquet(t), pd.read_parquet(s)
    if frames:
        some = next(iter(frames))
        for e in empty:
            frames[e], summaries[e] = frames[some].iloc[0:0], summaries[some].iloc[0:0]
    return frames, summaries


__all__ = ["ClaimTarget", "ClaimBuild", "claim_build", "reading_algorithms", "build_from_config", "claim_scale", "bill", "bill_text",
           "cell_cost", "command", "runs", "targets", "undecided_bills", "load_frames"]
