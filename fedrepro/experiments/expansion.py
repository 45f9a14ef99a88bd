"""Experiments: config blocks -> sweep cells (grid expansion, cell construction and checking).

An *experiment* is one block of ``experiments:`` in a paper fragment
(``fedrepro/papers/<paper>/experiments.yaml``) or in the user's ``config.yaml``. It expands
into *cells*: one algorithm x one grid point x one seed, each run as one
Snakemake job. A cell is a plain JSON-able dict; its id is a hash of its
content, so editing a block changes exactly the ids of the cells it changes
and never overwrites results of another setting.

Grid keys
---------
``k0``, ``rho``, ``max_rounds``, ``eval_every``   run settings
``problem.<key>``                                  problem spec entries
``problem.<a>.<b>``                                 a nested entry (``problem.partition.alpha``)
``mechanism.<key>``, ``attack.<key>``,             privacy mechanism / attack / aggregator spec entries
``aggregator.<key>``                               (the client-to-server channel, fedrepro.sim.channel)
``<algorithm>.<param>``                            one algorithm's parameter
A list value inside ``algorithms: {name: {param: [...]}}`` is swept for that
algorithm only.
A run setting (``k0``, ``rho``, ``max_rounds``, ``eval_every``, ``time_limit``) inside
``algorithms: {name: {...}}`` applies to that algorithm's cells only (LFRPG's frame length,
aspire's budget parity: the same gradient steps per worker in different round counts). No algorithm
has a parameter named like a run setting (tests/test_fedprox_fair.py): ``rho`` is always the
participation rate. FedProx's proximal coefficient is ``mu`` and FedADMM-Gong's penalty ``penalty``;
their former name ``rho`` in an algorithm block is refused with the name now
(:attr:`fedrepro.algorithms.base.Algorithm.renamed`), and a cell id hashes the parameters in their
former terms (:func:`id_params`), so that the papers' cells keep their ids.

Settings
--------
``settings: [{label: ..., <block keys>}, ...]`` runs the block once per entry, each
entry deep-merged into the block (so it may change the problem, an algorithm's
parameters or a run setting): a list of configurations rather than a product,
e.g. Table III's columns (dataset, m, partition, E, B together); a block whose ``method`` or
``name`` the entry changes is replaced, not merged (:func:`deep_merge`). The label is the
cells' ``setting`` column; the grid is expanded within every setting. The results column of a swept key is its last dotted component
(``mechanism.name`` -> ``mechanism``, ``attack.name`` -> ``attack``).

Every cell is checked when it is expanded: its algorithm and parameters must construct, its
problem must be registered, and the problem's class must provide what the algorithm needs
(:func:`fedrepro.algorithms.pairing.check_pairing`), so a bad pairing stops the workflow at
parse time, before any job starts.
"""
from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path

from fedrepro.core.context import RUN_DEFAULTS, RUN_OPTIONAL, check_run_settings
from fedrepro.core.params import ConfigError
from fedrepro.experiments.config import SCALES, resolve_scale, validate_experiment
from fedrepro.experiments.spec import TIMING_KEYS, RunSpec, cell_id, id_params
from fedrepro.experiments.yamlio import PAPERS, USER_PAPER, deep_merge, load_paper_fragment

__all__ = ["RUN_KEYS", "TIMING_KEYS", "SPEC_PREFIXES", "SCALES", "column_name", "cell_id", "id_params",
           "resolve_scale", "runs_at", "runs_in_build", "verify_leave_out", "check_timing", "check_cell", "expand", "reference_cell",
           "load_experiments", "apply_override", "all_cells"]

RUN_KEYS = tuple(RUN_DEFAULTS)           # run settings a grid may sweep

SPEC_PREFIXES = ("problem", "mechanism", "attack", "aggregator")


def column_name(key: str) -> str:
    """Results column of a swept key (``problem.m`` -> ``m``, ``attack.name`` -> ``attack``)."""
    parts = key.split(".")
    if len(parts) == 2 and parts[1] == "name" and parts[0] in ("mechanism", "attack", "aggregator"):
        return parts[0]
    return parts[-1]



def runs_at(block: dict, scale: str) -> bool:
    """Whether the experiment runs at ``scale``: its ``run_at`` (a list of scales) names it, or it has none.
    An experiment that cannot decide anything at a scale (a sweep whose claims need more seeds than the
    scale has) says ``run_at: [verify, paper]``; at the other scales it has no cells, its claims are
    ``undecided`` with the reason (:func:`fedrepro.claims.evaluate.evaluate`) and nothing is computed.
    :func:`runs_in_build` also asks the verify build's ``verify.leave_out``."""
    return scale in (block.get("run_at") or (scale,))


def runs_in_build(paper: str, exp_id: str, block: dict, config: dict) -> bool:
    """Whether the experiment has cells in the build of ``config``: it runs at the build's scale
    (:func:`runs_at`) and the verify build does not leave it out (:func:`verify_leave_out`)."""
    return runs_at(block, config.get("scale", "quick")) and exp_id not in (verify_leave_out(config).get(paper) or ())


def why_no_cells(run_at: tuple = (), left_out: bool = False) -> str:
    """Why an experiment has no cells in a build, as a predicate after its name (figures' ``not_built``,
    claims' ``why``): the verify build leaves it out (:func:`verify_leave_out`), or its ``run_at`` leaves
    the build's scale out."""
    if left_out:
        return "is left out of the verify build (config verify.leave_out)"
    if run_at:
        return f"runs at scale {' and '.join(run_at)} only (run_at)"
    return "has no cells in this build"


def why_not_in_build(paper: str, exp_id: str, block: dict, config: dict) -> str | None:
    """None when the experiment has cells in the build of ``config`` (:func:`runs_in_build`), else
    :func:`why_no_cells`."""
    left = exp_id in (verify_leave_out(config).get(paper) or ())
    if not left and runs_at(block, config.get("scale", "quick")):
        return None
    return why_no_cells(tuple(block.get("run_at") or ()), left)


def verify_leave_out(config: dict) -> dict:
    """``{paper: [experiment, ...]}`` the verify build leaves out (config ``verify.leave_out``), in its
    looks only (``scale: verify`` with ``verify.look`` 1 or 2, set by scripts/verify.sh): a plain
    ``--config scale=verify`` build and a claim's own target run every experiment."""
    v = config.get("verify") or {}
    if config.get("scale") != "verify" or not int(v.get("look", 0) or 0):
        return {}
    return v.get("leave_out") or {}


def _listify(v):
    return v if isinstance(v, list) else [v]


def _set_dotted(cell: dict, key: str, value) -> None:
    """Set the grid key ``key`` in ``cell``: ``problem.m``, or a nested path such as
    ``problem.partition.alpha`` (each level a mapping; a partition written as a rule name is read as
    ``{method: NAME}``)."""
    head, _, rest = key.partition(".")
    if head in SPEC_PREFIXES:
        cell[head] = copy.deepcopy(cell.get(head) or {})
        node, path = cell[head], rest.split(".")
        for depth, part in enumerate(path[:-1]):
            inner = node.get(part)
            if inner is None:
                inner = {}
            elif isinstance(inner, str) and part == "partition":
                inner = {"method": inner}
            elif not isinstance(inner, dict):
                where = ".".join([head, *path[:depth + 1]])
                raise ConfigError(f"grid key {key!r}: {where} is {inner!r}, not a mapping, so it has no key "
                                  f"{path[depth + 1]!r}; write {where} as a mapping or sweep {where} itself")
            node[part] = inner
            node = inner
        node[path[-1]] = value
    else:
        raise ConfigError(f"grid key {key!r}: unknown prefix {head!r}; use one of {list(SPEC_PREFIXES)}, "
                          f"an algorithm name, or a run setting {list(RUN_KEYS)}")


def check_timing(cell: dict, algorithm) -> None:
    """The virtual-clock keys (``delays``, ``tau``, ``time_budget``) of a cell: a valid delay model,
    staleness and budget; asynchronous rules need a delay model and take no mechanism or attack."""
    from fedrepro.experiments.runner import cell_schedule
    from fedrepro.sim.delays import build_delays

    delays = build_delays(cell.get("delays"))
    budget = cell.get("time_budget")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float)) or not budget > 0):
        raise ValueError(f"time_budget={budget!r} must be a positive number of virtual seconds")
    if budget is not None and delays is None:
        raise ValueError("time_budget needs a delay model: add delays: {...} to the experiment")
    cell_schedule(cell, algorithm)          # the algorithm's schedule takes the cell's keys (or says which not)


def _check_metrics(cell: dict, cls) -> None:
    """``metrics:`` names only what the cell's problem class can evaluate (its ``METRIC_CATALOGUE``)."""
    metrics = cell.get("metrics")
    if cls is None or metrics is None:
        return
    unknown = cls.unknown_metrics(metrics)
    if unknown:
        raise ValueError(f"metrics: {unknown} are not metrics of problem {cell['problem'].get('name')!r}; "
                         f"allowed: {', '.join(cls.METRIC_CATALOGUE)} (<j>: a worker index)")


def _assign(cell: dict, key: str, value, alg_name: str) -> None:
    """Set a swept ``key`` on ``cell``: a run setting (RUN_KEYS), the algorithm's own parameter
    (``<alg_name>.<param>``), or a dotted path into the cell (``problem.partition.alpha``)."""
    if key in RUN_KEYS:
        cell[key] = value
    elif key.split(".")[0] == alg_name:
        cell["params"][key.split(".", 1)[1]] = value
    else:
        _set_dotted(cell, key, value)


def _get_dotted(block: dict, key: str, own: str | None = None):
    """The block's own value of grid key ``key`` (``(True, value)``), or ``(False, None)`` when the block
    does not set it: a run setting, ``<spec>.<path>`` or ``<own algorithm>.<param>``."""
    head, _, rest = key.partition(".")
    if not rest:
        return (key in block, block.get(key))
    node = (block.get("algorithms") or {}).get(head) if head == own else block.get(head)
    for part in rest.split(".") if head != own else [rest]:
        if part == "method" and isinstance(node, str):
            return True, node
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _check_shadowed(cell: dict, block: dict, keys: list[str], alg_name: str, checked: dict) -> None:
    """A value the block sets and a grid sweeps over never reaches a cell; it is still checked (a
    malformed base ``mechanism.epsilon: -1`` under ``grid: {mechanism.epsilon: [...]}`` is an error,
    not silently unused): the cell with that one key set back to the block's value must pass."""
    for key in keys:
        present, value = _get_dotted(block, key, alg_name)
        if not present or isinstance(value, list):
            continue
        shadow = copy.deepcopy(cell)
        _assign(shadow, key, value, alg_name)
        try:
            check_cell(shadow, checked)
        except ConfigError as err:
            raise ConfigError(f"{err} (the value of {key} written in the block, {value!r}, which grid: "
                              f"{{{key}: [...]}} overrides; fix or remove it)") from None


def check_cell(cell: dict, _seen: dict | None = None) -> None:
    """Raise :class:`ConfigError` when the cell's algorithm cannot be built with its parameters,
    its problem block, run settings, mechanism or attack are invalid, or the algorithm cannot run
    on the problem's class (checked from the problem builder's declared class and spec, without
    loading data)."""
    from fedrepro.algorithms import make_algorithm
    from fedrepro.problems import problem_class, problem_workers, validate_problem_spec
    from fedrepro.algorithms.pairing import check_pairing
    from fedrepro.sim.channel import build_channel
    from fedrepro.sim.stopping import validate_stop_spec

    problem = cell.get("problem") or {}
    pname = problem.get("name")
    pairing = (cell["algorithm"], json.dumps(cell.get("params") or {}, sort_keys=True, default=str), pname)
    keys = {"pairing": pairing, "problem": json.dumps(problem, sort_keys=True, default=str),
            "rest": json.dumps([pairing, *(cell.get(k) for k in (*RUN_DEFAULTS, *RUN_OPTIONAL, *TIMING_KEYS,
                                                                 "mechanism", "attack", "aggregator", "stop")),
                                problem_workers(problem) if (cell.get("attack") or {}).get("name") else None],
                               sort_keys=True, default=str)}
    seen = _seen if _seen is not None else {}
    try:
        if ("pairing", keys["pairing"]) not in seen or ("rest", keys["rest"]) not in seen:
            algorithm = make_algorithm(cell["algorithm"], **(cell.get("params") or {}))
            cls = problem_class(pname)
            if cls is not None:
                check_pairing(algorithm, cls, problem_name=pname)
        if ("problem", keys["problem"]) not in seen:
            validate_problem_spec(problem)
        if ("rest", keys["rest"]) not in seen:
            check_run_settings(**{k: cell[k] for k in (*RUN_DEFAULTS, *RUN_OPTIONAL) if k in cell})
            _check_metrics(cell, cls)
            check_timing(cell, algorithm)
            validate_stop_spec(cell.get("stop"))
            channel = build_channel(RunSpec.from_cell(cell).channel)          # privacy, adversary, aggregator: refused here, with the reason
            channel.check(algorithm, cls, schedule="async" if algorithm.asynchronous else "sync")
            workers = problem_workers(problem)
            if channel.attack is not None and workers is not None:
                channel.attack.check_workers(*workers)     # faulty ids and B against the worker count
    except (ValueError, TypeError) as err:
        raise ConfigError(f"experiment {cell['paper']}/{cell['experiment']}: {err}") from None
    seen.update({(kind, key): True for kind, key in keys.items()})


def expand(paper: str, exp_id: str, block: dict, scale: str = "quick", base_seed: int = 0) -> list[dict]:
    """Expand one experiment block into its cells (see module docstring)."""
    block = resolve_scale(block, scale)
    if "settings" not in block:
        return _expand_block(paper, exp_id, block, base_seed)
    settings = block["settings"]
    if not isinstance(settings, list) or not settings or not all(isinstance(s, dict) for s in settings):
        raise ConfigError(f"experiment {paper}/{exp_id}: 'settings' must be a non-empty list of mappings "
                          "(each with a 'label' and the block keys it overrides)")
    labels = [s.get("label") for s in settings]
    if not all(isinstance(lab, str) and lab for lab in labels) or len(set(labels)) != len(labels):
        raise ConfigError(f"experiment {paper}/{exp_id}: every entry of 'settings' needs a distinct non-empty "
                          f"'label'; got {labels}")
    base = {k: v for k, v in block.items() if k != "settings"}
    cells = []
    for setting in settings:
        over = {k: v for k, v in setting.items() if k != "label"}
        if "settings" in over or "scales" in over:
            raise ConfigError(f"experiment {paper}/{exp_id}: setting {setting['label']!r} cannot override "
                              "'settings' or 'scales'")
        cells += _expand_block(paper, exp_id, deep_merge(base, over), base_seed, setting=setting["label"])
    ids = [c["cell"] for c in cells]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"experiment {paper}/{exp_id}: two settings give cells with identical settings; "
                          "make the settings differ")
    return cells


def _expand_block(paper: str, exp_id: str, block: dict, base_seed: int, setting: str | None = None) -> list[dict]:
    algorithms = block.get("algorithms")
    if not algorithms:
        raise ConfigError(f"experiment {paper}/{exp_id}: 'algorithms' is missing or empty")
    if "problem" not in block or "name" not in (block["problem"] or {}):
        raise ConfigError(f"experiment {paper}/{exp_id}: 'problem.name' is missing")
    absent = sorted(set(block.get("stop_by_algorithm") or {}) - set(algorithms))
    if absent:
        raise ConfigError(f"experiment {paper}/{exp_id}: stop_by_algorithm names {absent}, which the experiment "
                          f"does not run (algorithms: {sorted(algorithms)}); remove them or add the algorithms")
    if block.get("tau") is not None and not any(_is_asynchronous(name) for name in algorithms):
        raise ConfigError(f"experiment {paper}/{exp_id}: tau (bounded staleness) is a setting of the asynchronous "
                          f"schedule, and none of {sorted(algorithms)} is asynchronous (synchronous rounds have no "
                          "stale uploads): remove tau")
    seeds = block.get("seeds", 1)
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    grid = block.get("grid", {}) or {}
    grid_keys = sorted(grid)
    cells, checked = [], {}
    for alg_name, alg_params in algorithms.items():
        alg_params = dict(alg_params or {})
        asynchronous = _is_asynchronous(alg_name)
        _check_renamed(paper, exp_id, alg_name, alg_params, grid)
        swept = {k: v for k, v in alg_params.items() if isinstance(v, list)}
        empty = sorted(k for k, v in swept.items() if not v)
        if empty:
            raise ConfigError(f"experiment {paper}/{exp_id}: algorithms.{alg_name}.{empty[0]} is an empty list, which "
                              f"would drop {alg_name} from the sweep; give at least one value")
        fixed = {k: v for k, v in alg_params.items() if not isinstance(v, list)}
        shared_grid = {k: v for k, v in grid.items() if k.split(".")[0] != alg_name
                       and k.split(".")[0] in algorithms}
        keys = [k for k in grid_keys if k not in shared_grid] + sorted(f"{alg_name}.{k}" for k in swept)
        values = [_listify(grid[k]) if k in grid else swept[k.split(".", 1)[1]] for k in keys]
        for point in itertools.product(*values):
            for seed in seed_list:
                cell = {
                    "paper": paper, "experiment": exp_id, "algorithm": alg_name,
                    "params": dict(fixed), "problem": copy.deepcopy(block["problem"]),
                    "mechanism": copy.deepcopy(block.get("mechanism")),
                    "attack": copy.deepcopy(block.get("attack")),
                    **({"aggregator": copy.deepcopy(block["aggregator"])} if block.get("aggregator") else {}),
                    "stop": copy.deepcopy((block.get("stop_by_algorithm") or {}).get(alg_name, block.get("stop"))),
                    **{key: block.get(key, default) for key, default in RUN_DEFAULTS.items()},
                    **{key: copy.deepcopy(block[key]) for key in RUN_OPTIONAL if key in block},
                    **{key: copy.deepcopy(block[key]) for key in TIMING_KEYS if key in block
                       and (key != "tau" or asynchronous)},     # staleness: the block's asynchronous rules
                    "datasets": list(block.get("datasets", []) or []),
                    "instance": seed, "seed": int(base_seed) + int(seed),
                }
                columns, shared = ({"setting": setting}, {"setting": setting}) if setting is not None else ({}, {})
                for key, value in zip(keys, point):
                    _assign(cell, key, value, alg_name)
                    columns[column_name(key)] = value
                    if key.split(".")[0] != alg_name:
                        shared[key] = value
                _cell_datasets(cell, block, paper, exp_id)
                for key in RUN_KEYS:             # per-algorithm run settings (LFRPG's k0, budget parity's rounds)
                    if key in cell["params"]:
                        cell[key] = cell["params"].pop(key)
                cell["columns"] = columns
                cell["shared"] = shared
                cell["cell"] = cell_id(cell)
                check_cell(cell, checked)
                if not cells or cells[-1]["algorithm"] != alg_name:     # once per algorithm
                    _check_shadowed(cell, block, [k for k in keys if k.split(".")[0] != alg_name
                                                  or k in grid], alg_name, checked)
                cells.append(cell)
    ids = [c["cell"] for c in cells]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"experiment {paper}/{exp_id}: two cells have identical settings; "
                          "remove the duplicated grid values")
    return cells


def _cell_datasets(cell: dict, block: dict, paper: str, exp_id: str) -> None:
    """The cell's ``datasets`` (its job's data dependencies): the experiment's ``datasets:`` when it has
    one, which must then hold every dataset the cell's problem reads, else inferred from the problem
    (:func:`fedrepro.problems.problem_datasets`: ``logreg`` on ``dataset: adult`` reads ``adult``)."""
    from fedrepro.problems import problem_datasets

    needed = problem_datasets(cell["problem"] or {})
    if block.get("datasets") is None:
        cell["datasets"] = needed
        return
    missing = [d for d in needed if d not in cell["datasets"]]
    if missing:
        raise ConfigError(f"experiment {paper}/{exp_id}: its problem reads dataset(s) {missing}, which datasets: "
                          f"{cell['datasets']} does not list; add them to datasets: (or remove datasets: and "
                          "the datasets are taken from the problem)")


def _is_asynchronous(name: str) -> bool:
    """Whether the registered algorithm ``name`` is an asynchronous update rule (False when unknown:
    the cell check then names the unknown algorithm)."""
    from fedrepro.algorithms import algorithm_class

    try:
        return bool(algorithm_class(name).asynchronous)
    except (ValueError, ImportError, AttributeError):
        return False


def _check_renamed(paper: str, exp_id: str, name: str, params: dict, grid: dict) -> None:
    """A parameter of algorithm ``name`` written under its former name (``algorithms.<name>.<old>`` or grid
    key ``<name>.<old>``; e.g. FedProx's proximal coefficient as ``rho``, the participation rate's name) is
    an error naming the key and the name now, before ``rho`` could be read as the run setting."""
    from fedrepro.algorithms import algorithm_class, renamed_message

    try:
        renamed = algorithm_class(name).renamed
    except (ValueError, ImportError, AttributeError):
        return                                  # unknown algorithm: the cell check names it
    for key, where in [(k, f"algorithms.{name}.{k}") for k in params] + \
                      [(k.split(".", 1)[1], f"grid key {k}") for k in grid if k.startswith(name + ".")]:
        if key in renamed:
            fix = None if where.startswith("algorithms.") else f"grid key {name}.{renamed[key][0]}"
            raise ConfigError(f"experiment {paper}/{exp_id}: {where}: "
                              f"{renamed_message(name, key, renamed[key], params.get(key), fix)}")


def reference_cell(cell: dict, cells: list[dict]) -> dict | None:
    """The cell whose final objective defines ``cell``'s ``target`` stop rule: same
    experiment, shared grid point and seed, algorithm ``stop.reference``."""
    stop = cell.get("stop") or {}
    if stop.get("rule") != "target":
        return None
    ref_alg = stop.get("reference")
    matches = [o for o in cells if o["algorithm"] == ref_alg and o["seed"] == cell["seed"]
               and o["shared"] == cell["shared"]]
    if len(matches) != 1:
        what = "no" if not matches else f"{len(matches)} (ambiguous: its parameters are swept)"
        raise ConfigError(f"experiment {cell['paper']}/{cell['experiment']}: algorithm {cell['algorithm']!r} "
                          f"stops at the final objective of {ref_alg!r}, but {what} {ref_alg!r} cell has the "
                          f"same settings; add {ref_alg!r} with fixed parameters to the experiment")
    return matches[0]


def load_experiments(config: dict, root: str | Path = ".") -> dict:
    """All experiments of the run: ``{paper: {exp_id: block}}`` from the paper fragments of
    ``config['papers']`` (with ``config['paper_overrides'][paper][exp_id]`` merged in) and the
    user's ``config['experiments']`` under the pseudo-paper ``custom``."""
    out = {}
    all_overrides = config.get("paper_overrides") or {}
    unknown = sorted(set(all_overrides) - set(PAPERS))
    if unknown:
        raise ConfigError(f"paper_overrides: {unknown} are not paper keys; allowed: {', '.join(PAPERS)}")
    leave_out = (config.get("verify") or {}).get("leave_out") or {}
    unknown = sorted(set(leave_out) - set(PAPERS))
    if unknown:
        raise ConfigError(f"verify.leave_out: {unknown} are not paper keys; allowed: {', '.join(PAPERS)}")
    for paper in config.get("papers", []):
        if paper not in PAPERS:
            raise ConfigError(f"papers: {paper!r} is not a known paper key; allowed: {', '.join(PAPERS)}")
        out[paper] = _overridden(paper, all_overrides.get(paper) or {}, root)
        absent = sorted(set(leave_out.get(paper) or []) - set(out[paper]))
        if absent:
            raise ConfigError(f"verify.leave_out.{paper}: {absent} are not experiments of {paper}; it has "
                              f"{sorted(out[paper])}")
    for paper in sorted(set(all_overrides) - set(config.get("papers", []))):
        # a paper that is not built: its overrides are still checked, so that enabling it later cannot fail
        for exp_id, block in _overridden(paper, all_overrides[paper] or {}, root).items():
            if exp_id in (all_overrides[paper] or {}):
                validate_experiment(block, f"paper_overrides.{paper}.{exp_id} (merged into {paper}/{exp_id}; "
                                           f"{paper} is not in papers:)")
    user = config.get("experiments") or {}
    if user:
        out[USER_PAPER] = dict(user)
    return out


def _overridden(paper: str, overrides: dict, root) -> dict:
    """The paper's experiments with ``paper_overrides.<paper>`` applied (:func:`apply_override`)."""
    exps = load_paper_fragment(paper, root).get("experiments", {}) or {}
    for exp_id, override in overrides.items():
        if exp_id not in exps:
            raise ConfigError(f"paper_overrides.{paper}.{exp_id}: no such experiment; {paper} has {sorted(exps)}")
        if not isinstance(override, dict):
            raise ConfigError(f"paper_overrides.{paper}.{exp_id} must be a mapping of the experiment's keys, "
                              f"got {override!r}")
    return {k: apply_override(v, overrides.get(k) or {}, f"paper_overrides.{paper}.{k}") for k, v in exps.items()}


def _leaf_paths(value, prefix: str) -> list[str]:
    if isinstance(value, dict) and value:
        return [p for k, v in value.items() for p in _leaf_paths(v, f"{prefix}.{k}")]
    return [prefix]


def apply_override(block: dict, override: dict, where: str = "paper_overrides") -> dict:
    """``override`` merged into an experiment block so that what it says holds at every scale and in
    every setting: a top-level key (``seeds: 1``) also replaces (a mapping: merges into) that key in
    each ``scales.<s>`` and ``settings`` entry of the block, which would otherwise win over it; its own
    ``scales: {quick: {...}}`` merges last. A key that the block's grid sweeps is refused (the grid
    would override it); override ``grid`` instead."""
    if not override:
        return block
    plain = {k: v for k, v in override.items() if k != "scales"}
    grids = [block.get("grid") or {}, *(((s or {}).get("grid") or {}) for s in (block.get("scales") or {}).values())]
    swept = sorted({p for k, v in plain.items() if k not in ("grid", "settings")
                    for p in _leaf_paths(v, k) if any(p in g for g in grids)})
    if swept:
        raise ConfigError(f"{where}: {swept} are swept by the experiment's grid, which overrides them; override "
                          f"the grid instead ({where}.grid: {{{swept[0]}: [...]}})")
    out = deep_merge(block, plain)

    def into(target: dict) -> dict:
        target = dict(target)
        for key, value in plain.items():
            if key in target and key not in ("settings", "scales", "label"):
                target[key] = (deep_merge({"x": target[key]}, {"x": value})["x"]
                               if isinstance(value, dict) and isinstance(target[key], dict) else copy.deepcopy(value))
        return target

    if isinstance(out.get("scales"), dict):
        out["scales"] = {s: into(b) if isinstance(b, dict) else b for s, b in out["scales"].items()}
    if isinstance(out.get("settings"), list) and "settings" not in plain:
        out["settings"] = [into(s) if isinstance(s, dict) else s for s in out["settings"]]
    if "scales" in override:
        out = deep_merge(out, {"scales": override["scales"]})
    return out


def all_cells(config: dict, root: str | Path = ".") -> dict:
    """``{(paper, exp_id): [cells]}`` for the whole config."""
    scale = config.get("scale", "quick")
    seed = int(config.get("seed", 0))
    result = {}
    for paper, exps in load_experiments(config, root).items():
        for exp_id, block in exps.items():
            if not runs_in_build(paper, exp_id, block, config):
                continue
            cells = expand(paper, exp_id, block, scale, seed)
            for c in cells:
                reference_cell(c, cells)     # validates references early
            result[(paper, exp_id)] = cells
    return result
