"""The one interface every federated algorithm implements (cf. Flower strategies).

The simulation loop (:func:`fedrepro.sim.loop.simulate`) owns time, rounds,
client sampling, evaluation, stopping, privacy mechanisms and attacks; an
algorithm only says how the server aggregates and how clients update. Every hook
receives the run context ``ctx`` (:class:`fedrepro.core.context.RunContext`: k0, rho,
seeded streams, the round's clients, the client-state store) as an argument:

    state = algo.init(problem, ctx)
    round r = 0, 1, ...:
        w = algo.aggregate(state, problem, ctx, r)          # server: global model from stored uploads
        <evaluate w, record, stop test>                     # loop
        S = ctx.clients(r)                                  # loop (same draws for every algorithm)
        U = algo.client_update(state, problem, ctx, S, r)   # local work of S, (len(S), upload_dim)
        U = mechanism(U) ; U = attack(U)                    # loop: privacy noise, Byzantine corruption
        algo.receive(state, problem, ctx, S, U, r)          # server stores the uploads

``client_update`` is the algorithm's: the default is

        algo.begin_round(state, problem, ctx, S, r)         # broadcast w to S (cache per-round quantities)
        for t in range(ctx.k0):
            algo.local_step(state, problem, ctx, S, r, t)   # one local iteration of every client in S
        return algo.upload(state, problem, ctx, S, r)

and an algorithm with heterogeneous local work (E_i epochs per client) overrides it.

Clients not in S keep their state (and their stale uploads on the server). Per-client
quantities live in stores made by ``ctx.client_store(m, dim)`` (:mod:`fedrepro.core.store`),
client i in row i; all per-client work is vectorized over the rows of S.

State: an algorithm declares the fields it keeps in a dataclass derived from :class:`State`
(``state_class``); states have ``__slots__``, so an undeclared field is an AttributeError at
the line that sets it. Parameters: the algorithm's dataclass fields, each with its constraint
declared once in ``constraints`` (:mod:`fedrepro.core.params`), checked on construction.
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
    """Base class: subclass as a dataclass whose fields are the algorithm's parameters (with
    paper defaults) and set ``name``.

    ``constraints`` maps each parameter to its allowed values (a list of
    :mod:`fedrepro.core.params` constraints; merged along the class hierarchy); they are checked
    on construction. Variants (paper vs authors' code choices) are parameters constrained to
    :class:`~fedrepro.core.params.Options`; :meth:`variants` lists them and every run records them.

    ``requires`` lists the problem capabilities (:mod:`fedrepro.problems.protocols`) the
    algorithm reads beyond :class:`FederatedProblem`; the run rejects a problem without them
    before it starts. Needs that depend on a parameter go in :meth:`requirements`.
    """

    name = "base"
    asynchronous = False        # True: an update rule of the event-driven loop (algorithms.async_base)
    requires = ()
    # per-client (m, dim) stores the algorithm keeps (memory estimate and store "auto");
    # None: not declared (estimates assume UNDECLARED_CLIENT_VECTORS)
    client_vectors = None
    constraints = {}
    state_class = State

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

    # ---- interface -------------------------------------------------------------
    def prepare(self, problem: FederatedProblem, ctx: RunContext) -> None:
        """Once per run, before its clock starts: work a run must not time, e.g. loading compiled
        kernels (default: nothing)."""

    def init(self, problem: FederatedProblem, ctx: RunContext) -> State:
        raise NotImplementedError

    def aggregate(self, state: State, problem: FederatedProblem, ctx: RunContext, r: int) -> np.ndarray:
        """Server step at the start of round r; returns the new global model."""
        raise NotImplementedError

    def client_update(self, state: State, problem: FederatedProblem, ctx: RunContext, clients: np.ndarray,
                      r: int) -> np.ndarray:
        """All local work of ``clients`` in round r; returns their uploads (len(clients), upload_dim).
        Default: :meth:`begin_round`, ``ctx.k0`` x :meth:`local_step`, :meth:`upload`."""
        self.begin_round(state, problem, ctx, clients, r)
        for t in range(ctx.k0):
            self.local_step(state, problem, ctx, clients, r, t)
        return self.upload(state, problem, ctx, clients, r)

    def begin_round(self, state: State, problem: FederatedProblem, ctx: RunContext, clients: np.ndarray,
                    r: int) -> None:
        """Broadcast to ``clients``; default nothing."""

    def local_step(self, state: State, problem: FederatedProblem, ctx: RunContext, clients: np.ndarray, r: int,
                   t: int) -> None:
        """Local iteration t (0..k0-1) of every client in ``clients``."""
        raise NotImplementedError

    def upload(self, state: State, problem: FederatedProblem, ctx: RunContext, clients: np.ndarray,
               r: int) -> np.ndarray:
        """Vectors the clients send, shape (len(clients), upload_dim)."""
        raise NotImplementedError

    def receive(self, state: State, problem: FederatedProblem, ctx: RunContext, clients: np.ndarray,
                uploads: np.ndarray, r: int) -> None:
        """Server stores the (possibly perturbed) uploads."""
        raise NotImplementedError

    # the keys round_metrics returns (``<j>``: a worker index), known before any run: a plot of a
    # custom experiment may name them (checked when the config is parsed)
    RECORDS: ClassVar[tuple] = ()

    def round_metrics(self, state: State, problem: FederatedProblem, ctx: RunContext) -> dict:
        """Extra per-round metrics (e.g. the FRPG loss with worker models), named in ``RECORDS``."""
        return {}

    def round_phases(self, state: State, ctx: RunContext, clients: np.ndarray, r: int) -> list:
        """The communication phases of round r as (workers, local steps) pairs, priced on the virtual
        clock when the loop is given a delay model (:mod:`fedrepro.sim.delays`); default one phase of
        the round's clients doing ``ctx.k0`` steps (DRFA-Prox: a model phase and a loss phase)."""
        return [(clients, ctx.k0)]
