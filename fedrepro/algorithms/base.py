"""What every federated algorithm is, synchronous or asynchronous (cf. Flower strategies).

An algorithm is a dataclass whose fields are its parameters. Two kinds share this base and nothing
else: a :class:`~fedrepro.algorithms.sync_base.SyncAlgorithm` runs in synchronous rounds (hooks
``aggregate``, ``client_update``, ``receive``); an :class:`~fedrepro.algorithms.async_base.AsyncAlgorithm`
is an update rule of the event-driven schedule (hooks ``worker_compute``, ``master_update``). The one
driver (:func:`fedrepro.sim.driver.drive`) runs both through the same contract, which each kind
implements from its hooks: ``client_job(state, problem, ctx, clients, r)`` returns the clients' uploads
(of the declared ``upload_kind``) and ``server_update(state, problem, ctx, clients, uploads, r, info)``
is the server's step with what the channel delivered. Both
receive the run context ``ctx`` (:class:`fedrepro.core.context.RunContext`: k0, seeded streams, the
client-state store ...) in every hook, and share what :class:`Algorithm` declares:

    algo.prepare(problem, ctx)              # once, before the run's clock starts
    state = algo.init(problem, ctx)         # state.w: the model the loop evaluates
    algo.round_metrics(state, problem, ctx) # extra trace columns at each evaluation, named in RECORDS

State: an algorithm declares the fields it keeps in a dataclass derived from :class:`State`
(``state_class``); states have ``__slots__``, so an undeclared field is an AttributeError at
the line that sets it. Parameters: the algorithm's dataclass fields, each with its constraint
declared once in ``constraints`` (:mod:`fedrepro.core.params`), checked on construction.
Per-client quantities live in stores made by ``ctx.client_store(m, dim)`` (:mod:`fedrepro.core.store`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from fedrepro.core.context import RunContext
from fedrepro.core.params import Options, validate_params
from fedrepro.problems.base import FederatedProblem


UNDECLARED_CLIENT_VECTORS = 3


def client_vectors(algorithm) -> int:
    """Per-client (m, dim) stores ``algorithm`` (instance or class) keeps: its declared
    ``client_vectors``, else :data:`UNDECLARED_CLIENT_VECTORS` (a conservative guess)."""
    n = getattr(algorithm, "client_vectors", None)
    return UNDECLARED_CLIENT_VECTORS if n is None else int(n)


@dataclass(slots=True)
class State:
    """Mutable algorithm state: ``w`` is the current global model (dim,). An algorithm that keeps
    more declares it in a subclass (``@dataclass(slots=True)``, every field with a default)."""

    w: np.ndarray
    # per-round quantities an algorithm exposes to mechanisms (e.g. FedEPM noise):
    upload_info: dict = field(default_factory=dict)
    # metrics the algorithm wants recorded in the trace this round:
    metrics: dict = field(default_factory=dict)


@dataclass
class Algorithm:
    """Base class of both kinds (module docstring): subclass one of them as a dataclass whose fields
    are the algorithm's parameters (with paper defaults) and set ``name``.

    ``constraints`` maps each parameter to its allowed values (a list of
    :mod:`fedrepro.core.params` constraints; merged along the class hierarchy); they are checked
    on construction. Variants (paper vs authors' code choices) are parameters constrained to
    :class:`~fedrepro.core.params.Options`; :meth:`variants` lists them and every run records them.

    ``requires`` lists the problem capabilities (:mod:`fedrepro.problems.protocols`) the
    algorithm reads beyond :class:`FederatedProblem`; the run rejects a problem without them
    before it starts. Needs that depend on a parameter go in :meth:`requirements`.

    ``asynchronous`` says which loop runs it; each kind sets it.
    """

    name = "base"
    asynchronous: ClassVar[bool]
    requires = ()
    # per-client (m, dim) stores the algorithm keeps (memory estimate and store "auto");
    # None: not declared (estimates assume UNDECLARED_CLIENT_VECTORS)
    client_vectors = None
    constraints = {}
    # {former parameter name: (its name now, why)}: a config that still uses the former name is refused with
    # both names (make_algorithm; cells: before a run setting's name in an algorithm block is read as the run's)
    renamed = {}
    # None, or {"names": {name now: former name}, "defaults": {parameter: its former default}}: the cell id
    # (fedrepro.experiments.expansion.cell_id) hashes the parameters as they were written before a rename or a
    # change of default, so that the same computation keeps its id and result file
    id_legacy = None
    state_class = State
    # What a client sends the server (fedrepro.sim.channel): "model" (its local model), "delta" (a model
    # update w_i - w), "gradient" (a descent direction the server steps against), "vector" (an
    # algorithm-specific vector; the algorithm overrides upload_to_update / update_to_upload) or None
    # (undeclared: no upload-side attack, clipping or aggregator can be applied, and the channel says so)
    upload_kind: ClassVar[str | None] = None
    # "mean": the server step averages the round's uploads (weighted or not), so a channel aggregator
    # (krum, trimmed mean ...) or the Gaussian mechanism's noised mean can stand in for that average;
    # "own": the server has its own rule (FRPG, RSA, Krum, ASPIRE ...), which aggregators do not replace
    server_rule: ClassVar[str] = "own"
    # What a client sends besides the declared upload, in words (None: nothing): SCAFFOLD's control-variate
    # change, the losses AFL / DRFA-Prox / ASPIRE workers report. Upload-side attacks and aggregators act on the
    # declared upload only; a privacy mechanism is refused (it would neither clip nor noise this part, so
    # the release it accounts for is not the whole message)
    upload_extra: ClassVar[str | None] = None
    # True: the algorithm reads problem.senders itself (a silent worker's upload is dropped inside it)
    reads_senders: ClassVar[bool] = False

    def __post_init__(self):
        validate_params(self.name, self.params(), self.parameter_constraints())

    @classmethod
    def parameter_constraints(cls) -> dict:
        """Parameter -> list of allowed-value constraints, merged over the class hierarchy."""
        merged = {}
        for klass in reversed(cls.__mro__):
            merged.update(klass.__dict__.get("constraints", {}))
        return merged

    @classmethod
    def variants(cls) -> dict:
        """Variant parameters -> allowed values (the parameters constrained to a set of strings)."""
        return {k: c[0].values for k, c in cls.parameter_constraints().items()
                if len(c) == 1 and isinstance(c[0], Options) and all(isinstance(v, str) for v in c[0].values)}

    def requirements(self) -> tuple:
        """Problem capabilities this instance needs (default: the class's ``requires``)."""
        return tuple(type(self).requires)

    def params(self) -> dict:
        """The algorithm's parameters as a flat dict (recorded in results)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}

    # ---- the upload's map to a model update (fedrepro.sim.channel) ---------------------------
    def upload_to_update(self, state: State, problem: FederatedProblem, clients: np.ndarray,
                         uploads: np.ndarray) -> np.ndarray:
        """The model updates d_i (rows, float64) the uploads stand for, relative to the broadcast model
        ``state.w``: model u_i -> u_i - w; delta -> u_i; gradient -> -u_i (the direction the server steps
        in). A "vector" algorithm overrides this and :meth:`update_to_upload`. Always a new array (the
        channel's stages write into it)."""
        if self.upload_kind == "model":      # one (|S|, d) float64 array, whatever the uploads' dtype
            return np.subtract(uploads, np.asarray(state.w)[None, :], dtype=np.float64)
        if self.upload_kind == "delta":
            return np.array(uploads, dtype=np.float64)
        if self.upload_kind == "gradient":
            return np.negative(uploads, dtype=np.float64)
        raise NotImplementedError(f"{self.name}: upload_kind {self.upload_kind!r} has no map to a model update")

    def update_to_upload(self, state: State, problem: FederatedProblem, clients: np.ndarray,
                         updates: np.ndarray, like: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`upload_to_update`, in the dtype of ``like`` (the original uploads)."""
        D = np.asarray(updates, dtype=np.float64)
        if self.upload_kind == "model":
            out = D + np.asarray(state.w, dtype=np.float64)[None, :]
        elif self.upload_kind == "delta":
            out = D
        elif self.upload_kind == "gradient":
            out = -D
        else:
            raise NotImplementedError(f"{self.name}: upload_kind {self.upload_kind!r} has no map from a model update")
        return out.astype(np.asarray(like).dtype, copy=False)

    # ---- the hooks both kinds share -----------------------------------------------------
    def prepare(self, problem: FederatedProblem, ctx: RunContext) -> None:
        """Once per run, before its clock starts: work a run must not time, e.g. loading compiled
        kernels (default: nothing)."""

    def init(self, problem: FederatedProblem, ctx: RunContext) -> State:
        """The run's initial state; default ``state_class`` at the problem's initial model,
        ``problem.init_params(ctx.rng("init"))`` (problems with a model initialiser: the capabilities
        EPOCHS, MINIBATCH, MINIBATCH_LOSS of :mod:`fedrepro.problems.protocols`)."""
        return self.state_class(w=problem.init_params(ctx.rng("init")))

    # the keys round_metrics returns (``<j>``: a worker index), known before any run: a plot of a
    # custom experiment may name them (checked when the config is parsed)
    RECORDS: ClassVar[tuple] = ()

    def round_metrics(self, state: State, problem: FederatedProblem, ctx: RunContext) -> dict:
        """Extra per-round metrics (e.g. the FRPG loss with worker models), named in ``RECORDS``."""
        return {}
