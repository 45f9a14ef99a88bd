"""The run spec: one run, typed and frozen.

A :class:`RunSpec` holds what a run computes, namespaced:

* ``problem``: the problem spec (``{name: ..., ...}``, :func:`fedrepro.problems.build_problem`);
* ``algorithm``: an :class:`AlgorithmSpec`, the algorithm's name and *its own* parameters
  (FedProx's ``mu`` lives here; it is never a run setting);
* ``run``: the :class:`RunSettings` (``run.rho`` is the participation rate, ``k0``, ``max_rounds``,
  ``eval_every``, ``time_limit``; the optional settings and the virtual clock's keys when given);
* ``channel``: a :class:`ChannelSpec`, the client-to-server channel (mechanism, attack, aggregator);
* ``stop``: the stop rule; ``seed`` and ``instance`` (the experiment's seed index);

and a :class:`Label` that names it in its experiment (paper, experiment, swept columns, shared grid
point, the experiment's datasets), which the run does not read. :attr:`RunSpec.id` is the run's id.

Two constructors: :meth:`RunSpec.from_cell` (a config block's expanded cell,
:func:`fedrepro.experiments.expansion.expand`) and :meth:`RunSpec.from_cli` (``fedrepro run``'s flags).
:meth:`RunSpec.to_dict` gives the cell dict back exactly (its keys and values, so the ids, the hash of
that dict, :func:`cell_id`, do not change); the workflow's files (batches, job parameters) carry that dict.
:meth:`RunSpec.replace` makes another run of one (other run settings, stop rule or algorithm parameters; a
new id), as a claim target's ``adjust`` does (:mod:`fedrepro.papers.alone`). Readers take the spec
(:func:`as_spec` converts a cell dict at the boundary); this module and the expansion are the only modules
of ``fedrepro/``, ``workflow/`` (scripts, the rules' Python and the Snakefile) and ``benchmarks/`` that read
a cell by key (tests/test_run_spec.py scans for ``cell``, ``source``, ``ref`` and the variables of loops
over cells, in their own scope).

The fields holding specs (``problem``, the parameters, the channel's blocks) are private copies: the
dataclasses are frozen, and nothing mutates those dicts (they are hashed for the id).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import cached_property

from fedrepro.core.context import RUN_DEFAULTS, RUN_OPTIONAL
from fedrepro.experiments.yamlio import config_hash

#: virtual-clock keys (fedrepro.sim.delays): run settings given only for runs on the virtual clock
TIMING_KEYS = ("delays", "tau", "time_budget")
#: the keys of a cell dict that are the channel's
CHANNEL_KEYS = ("mechanism", "attack", "aggregator")
#: the keys of a cell dict that only label it (not read by the run)
LABEL_FIELDS = ("paper", "experiment", "columns", "shared", "datasets")
#: the keys of the CLI's run (:meth:`RunSpec.from_cli`), in order
_KEEP = object()     # RunSpec.replace: a field left as it is
CLI_KEYS = ("paper", "experiment", "cell", "algorithm", "params", "seed", "instance", "k0", "rho", "max_rounds",
            "eval_every", "metrics", "stop", "mechanism", "attack", "store", "sample_count", "problem")


@dataclass(frozen=True)
class AlgorithmSpec:
    """An algorithm and its own parameters (:func:`fedrepro.algorithms.make_algorithm`)."""

    name: str
    params: dict = field(default_factory=dict)

    def build(self):
        from fedrepro.algorithms import make_algorithm

        return make_algorithm(self.name, **self.params)


@dataclass(frozen=True)
class RunSettings:
    """The run settings (:data:`fedrepro.core.context.RUN_DEFAULTS`, always set; ``RUN_OPTIONAL`` and
    the virtual-clock keys :data:`TIMING_KEYS` only when given: ``given``). ``rho`` is the participation
    rate."""

    k0: int = RUN_DEFAULTS["k0"]
    rho: float = RUN_DEFAULTS["rho"]
    max_rounds: int = RUN_DEFAULTS["max_rounds"]
    eval_every: int = RUN_DEFAULTS["eval_every"]
    time_limit: float | None = RUN_DEFAULTS["time_limit"]
    given: dict = field(default_factory=dict)        # RUN_OPTIONAL / TIMING_KEYS entries that were given

    def __post_init__(self):
        unknown = sorted(set(self.given) - set(RUN_OPTIONAL) - set(TIMING_KEYS))
        if unknown:
            raise ValueError(f"run settings {unknown} are not optional run settings; allowed: "
                             f"{sorted([*RUN_OPTIONAL, *TIMING_KEYS])}")

    def get(self, key: str, default=None):
        """A setting's value: a default one, a given optional one, else ``default``."""
        if key in RUN_DEFAULTS:
            return getattr(self, key)
        return self.given.get(key, default)

    def settings(self) -> dict:
        """Every run setting of :data:`RUN_DEFAULTS` and :data:`RUN_OPTIONAL`, defaults filled in."""
        return {**{k: getattr(self, k) for k in RUN_DEFAULTS},
                **{k: self.given.get(k, d) for k, d in RUN_OPTIONAL.items()}}

    @property
    def metrics(self):
        return self.given.get("metrics")

    @property
    def delays(self):
        return self.given.get("delays")

    @property
    def tau(self):
        return self.given.get("tau")

    @property
    def time_budget(self):
        return self.given.get("time_budget")

    @property
    def sample_count(self):
        return self.given.get("sample_count", RUN_OPTIONAL["sample_count"])


@dataclass(frozen=True)
class ChannelSpec:
    """The client-to-server channel's blocks (:func:`fedrepro.sim.channel.build_channel`): privacy
    mechanism, attack, robust aggregator (each ``{name: ..., ...}`` or None)."""

    mechanism: dict | None = None
    attack: dict | None = None
    aggregator: dict | None = None


@dataclass(frozen=True)
class Label:
    """What names a run in its experiment: not read by the run. ``columns``: the swept keys' values (the
    results' columns), ``shared``: the grid point the experiment's algorithms share, ``datasets``: every
    dataset the experiment reads (its jobs' data dependencies); None: not given (a CLI run).
    ``name``: the run's name in its results as its cell gave it (an expanded cell's is its id; the CLI's
    ``cli``); None: the id."""

    paper: str = "custom"
    experiment: str = "cli"
    columns: dict | None = None
    shared: dict | None = None
    datasets: list | None = None
    name: str | None = None


@dataclass(frozen=True)
class RunSpec:
    """One run (see the module docstring)."""

    problem: dict
    algorithm: AlgorithmSpec
    run: RunSettings = field(default_factory=RunSettings)
    channel: ChannelSpec = field(default_factory=ChannelSpec)
    stop: dict | None = None
    seed: int = 0
    instance: int = 0
    label: Label = field(default_factory=Label)

    # -- constructors -------------------------------------------------------------------------------------
    @classmethod
    def from_cell(cls, cell: dict) -> "RunSpec":
        """The spec of an expanded cell (:func:`fedrepro.experiments.expansion.expand`); ``to_dict`` gives it
        back. A key the spec has no place for is a ValueError naming it. A dict of labels only (no
        ``algorithm``: a run's rows relabelled, :func:`fedrepro.experiments.results.relabel_run`) gives a spec
        whose algorithm name is None; building its run fails at the algorithm."""
        known = {"cell", "algorithm", "params", "problem", "stop", "seed", "instance", *CHANNEL_KEYS,
                 *LABEL_FIELDS, *RUN_DEFAULTS, *RUN_OPTIONAL, *TIMING_KEYS}
        unknown = sorted(set(cell) - known)
        if unknown:
            raise ValueError(f"cell keys {unknown} are not keys of a run; allowed: {sorted(known)}")
        if "aggregator" in cell and cell["aggregator"] is None:
            raise ValueError("cell key 'aggregator' is None: leave it out when the server averages")
        c = copy.deepcopy(cell)
        run = RunSettings(**{k: c[k] for k in RUN_DEFAULTS if k in c},
                          given={k: c[k] for k in (*RUN_OPTIONAL, *TIMING_KEYS) if k in c})
        spec = cls(problem=c.get("problem"), algorithm=AlgorithmSpec(c.get("algorithm"), c.get("params") or {}),
                   run=run, channel=ChannelSpec(c.get("mechanism"), c.get("attack"), c.get("aggregator")),
                   stop=c.get("stop"), seed=c.get("seed", 0), instance=c.get("instance", 0),
                   label=Label(c.get("paper", "custom"), c.get("experiment", "cli"), c.get("columns"),
                               c.get("shared"), c.get("datasets"), c.get("cell")))
        object.__setattr__(spec, "_shape", tuple(c))          # the keys as given, in order (to_dict)
        return spec

    @classmethod
    def from_cli(cls, *, algorithm: str, params: dict, problem: dict, seed: int = 0, k0: int = RUN_DEFAULTS["k0"],
                 rho: float = RUN_DEFAULTS["rho"], max_rounds: int = RUN_DEFAULTS["max_rounds"],
                 eval_every: int = RUN_DEFAULTS["eval_every"], stop: dict | None = None,
                 mechanism: dict | None = None, attack: dict | None = None, metrics: list | None = None,
                 store: str | None = None, sample_count=None) -> "RunSpec":
        """The spec of ``fedrepro run``'s flags (:mod:`fedrepro.cli`): a run named ``cli`` of the pseudo-paper
        ``custom``; the optional settings only when given."""
        given = {k: v for k, v in (("metrics", metrics), ("store", store), ("sample_count", sample_count)) if v}
        spec = cls(problem=copy.deepcopy(problem), algorithm=AlgorithmSpec(algorithm, dict(params or {})),
                   run=RunSettings(k0=k0, rho=rho, max_rounds=max_rounds, eval_every=eval_every, given=given),
                   channel=ChannelSpec(copy.deepcopy(mechanism), copy.deepcopy(attack)),
                   stop=copy.deepcopy(stop), seed=seed, instance=0, label=Label("custom", "cli", name="cli"))
        object.__setattr__(spec, "_shape", CLI_KEYS)           # the CLI's run carries no time_limit
        return spec

    # -- views --------------------------------------------------------------------------------------------
    @cached_property
    def id(self) -> str:
        """The run's id: the hash of its content (:func:`cell_id`), the cell
        dict's as :meth:`to_dict` gives it."""
        return cell_id(self._shaped(self._content()))

    @property
    def name(self) -> str:
        """The name of the run in its results (the ``cell`` column): its id, or the label's name (``cli``)."""
        return self.label.name or self.id

    @property
    def paper(self) -> str:
        return self.label.paper

    @property
    def experiment(self) -> str:
        return self.label.experiment

    @property
    def columns(self) -> dict:
        return self.label.columns or {}

    def _content(self) -> dict:
        l, r, ch = self.label, self.run, self.channel
        return {"paper": l.paper, "experiment": l.experiment, "algorithm": self.algorithm.name,
                "params": self.algorithm.params, "problem": self.problem, "mechanism": ch.mechanism,
                "attack": ch.attack, **({"aggregator": ch.aggregator} if ch.aggregator is not None else {}),
                "stop": self.stop, **{k: getattr(r, k) for k in RUN_DEFAULTS},
                **{k: r.given[k] for k in (*RUN_OPTIONAL, *TIMING_KEYS) if k in r.given},
                **({"datasets": l.datasets} if l.datasets is not None else {}),
                "instance": self.instance, "seed": self.seed,
                **({"columns": l.columns} if l.columns is not None else {}),
                **({"shared": l.shared} if l.shared is not None else {})}

    def _shaped(self, out: dict) -> dict:
        """``out`` with the keys (and order) of the dict the spec was made from, when it was made from one."""
        shape = getattr(self, "_shape", None)
        return out if shape is None else {k: out[k] for k in shape if k in out}

    def to_dict(self) -> dict:
        """The cell dict (a deep copy): the keys of :func:`fedrepro.experiments.expansion.expand`'s cells, with
        ``cell`` the run's name; for a spec made by :meth:`from_cell` or :meth:`from_cli`, exactly the keys of
        the dict it was made from (and so its id)."""
        return copy.deepcopy(self._shaped({**self._content(), "cell": self.name}))

    def content_hash(self, without=()) -> str:
        """The hash (:func:`fedrepro.experiments.yamlio.config_hash`) of the cell dict :meth:`to_dict` gives,
        less the keys ``without`` (e.g. the labels: :func:`fedrepro.experiments.build_plan.run_key`)."""
        content = self._content()
        if "cell" not in without:
            content = {**content, "cell": self.name}
        return config_hash({k: v for k, v in self._shaped(content).items() if k not in without})

    def replace(self, *, stop=_KEEP, params=_KEEP, **settings) -> "RunSpec":
        """Another run: this one with its ``stop`` rule, its algorithm's own ``params`` (the whole dict; the
        algorithm stays) and/or run settings (``max_rounds=...``, ``rho=...``; the
        keys of :data:`RUN_DEFAULTS`, :data:`RUN_OPTIONAL` and :data:`TIMING_KEYS`) changed. Its label keeps the
        paper, experiment, columns, shared grid point and datasets, but not the name: a changed run is a new run,
        named by its id (the hash of its content). A setting that is not a run setting is a ValueError naming it.
        The cell dict of the new spec has this one's keys in their order (a key it lacked comes last)."""
        from dataclasses import replace

        allowed = (*RUN_DEFAULTS, *RUN_OPTIONAL, *TIMING_KEYS)
        unknown = sorted(set(settings) - set(allowed))
        if unknown:
            raise ValueError(f"RunSpec.replace: {unknown} are not run settings; allowed: stop, {', '.join(allowed)}")
        settings = copy.deepcopy(settings)
        run = replace(self.run, **{k: v for k, v in settings.items() if k in RUN_DEFAULTS},
                      given={**self.run.given, **{k: v for k, v in settings.items() if k not in RUN_DEFAULTS}})
        if params is not _KEEP and not isinstance(params, dict):
            raise ValueError(f"RunSpec.replace: params is the algorithm's parameters as a dict, not "
                             f"{type(params).__name__}")
        new = replace(self, run=run, stop=self.stop if stop is _KEEP else copy.deepcopy(stop),
                      algorithm=self.algorithm if params is _KEEP else replace(self.algorithm,
                                                                               params=copy.deepcopy(params)),
                      label=replace(self.label, name=None))
        shape = getattr(self, "_shape", None)
        if shape is not None:
            added = [k for k in (*settings, *(() if stop is _KEEP else ("stop",)),
                                 *(() if params is _KEEP else ("params",))) if k not in shape]
            object.__setattr__(new, "_shape", (*shape, *dict.fromkeys(added)))
        return new

    def replace_label(self, **changes) -> "RunSpec":
        """The same run under another label (a copied run's rows relabelled)."""
        from dataclasses import replace

        return replace(self, label=replace(self.label, **changes))


def cell_id(cell: dict) -> str:
    """Stable 12-hex-digit id of a cell's content (independent of dict order). The algorithm's parameters
    enter as :func:`id_params` writes them (a renamed parameter or a changed default keeps the ids)."""
    content = {k: v for k, v in cell.items() if k not in ("cell", "columns", "shared")}
    if "params" in content and "algorithm" in content:
        content["params"] = id_params(content["algorithm"], content["params"])
    return config_hash(content)[:12]


def id_params(algorithm: str, params: dict | None):
    """The parameters of a cell of ``algorithm`` as its id hashes them: as given, unless the algorithm
    declares ``id_legacy`` (:class:`fedrepro.algorithms.base.Algorithm`): then in the terms they had before a
    rename or a change of default, so that the same computation keeps its id. A parameter given at its
    former default is left out (it was the default), one left out whose default changed is written with
    its default now, and a renamed parameter takes its former name: two cells that compute the same
    thing under the two names share an id, two that differ never do."""
    legacy = _id_legacy(algorithm)
    if legacy is None or not isinstance(params, dict):
        return params
    from fedrepro.algorithms import algorithm_class

    fields = algorithm_class(algorithm).__dataclass_fields__
    out = {}
    for key, value in params.items():
        former = legacy["defaults"].get(key, _ABSENT)
        if value == former and type(value) is type(former):          # given at its former default
            continue
        out[legacy["names"].get(key, key)] = value
    for key in legacy["defaults"]:
        if key not in params:
            out[legacy["names"].get(key, key)] = fields[key].default
    return out


_ABSENT = object()


def _id_legacy(algorithm: str) -> dict | None:
    from fedrepro.algorithms import algorithm_class

    try:
        return algorithm_class(algorithm).id_legacy
    except (ValueError, ImportError, AttributeError, TypeError):
        return None


def as_spec(run) -> RunSpec:
    """``run`` as a :class:`RunSpec`: a spec as it is, a cell dict through :meth:`RunSpec.from_cell`."""
    if isinstance(run, RunSpec):
        return run
    if isinstance(run, dict):
        return RunSpec.from_cell(run)
    raise TypeError(f"a run is a RunSpec or a cell dict, not {type(run).__name__}")
