"""The one interface every federated algorithm implements (cf. Flower strategies).

The simulation loop (:func:`fedrepro.sim.loop.simulate`) owns time, rounds,
client sampling, evaluation, stopping, privacy mechanisms and attacks; an
algorithm only says how the server aggregates and how clients update:

    round r = 0, 1, ...:
        w = algo.aggregate(state, r)               # server: global model from stored uploads
        <evaluate w, record, stop test>            # loop
        S = <sample clients for round r>           # loop (same draws for every algorithm)
        algo.begin_round(state, S, r)              # broadcast w to S (cache per-round quantities)
        for t in range(k0):
            algo.local_step(state, S, r, t)        # one local iteration of every client in S
        U = algo.upload(state, S, r)               # (len(S), upload_dim) vectors sent to the server
        U = mechanism(U) ; U = attack(U)           # loop: privacy noise, Byzantine corruption
        algo.receive(state, S, U, r)               # server stores the uploads

Clients not in S keep their state (and their stale uploads on the server).
All per-client work is vectorized over the rows of S (state arrays are
(m, dim) with client i in row i).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from fedrepro.core.context import RunContext
from fedrepro.problems.base import FederatedProblem


@dataclass
class State:
    """Mutable algorithm state. ``w`` is the current global model (dim,);
    algorithms add their own arrays as attributes (``W``, ``Pi``, ``Z`` ...)."""

    w: np.ndarray
    extra: dict = field(default_factory=dict)
    # per-round quantities an algorithm exposes to mechanisms (e.g. FedEPM noise):
    upload_info: dict = field(default_factory=dict)
    # metrics the algorithm wants recorded in the trace this round:
    metrics: dict = field(default_factory=dict)


@dataclass
class Algorithm:
    """Base class: subclass as a dataclass whose fields are the algorithm's
    parameters (with paper defaults) and set ``name``.

    Variants (paper vs authors' code choices) are plain string parameters whose
    allowed values :meth:`variants` lists; they are validated on construction
    and recorded with every run.

    ``requires`` lists the problem capabilities (:mod:`fedrepro.problems.protocols`) the
    algorithm reads beyond :class:`FederatedProblem`; the run rejects a problem without them
    before it starts. Needs that depend on a parameter go in :meth:`requirements`.
    """

    name = "base"
    requires = ()

    def __post_init__(self):
        for key, allowed in type(self).variants().items():
            value = getattr(self, key)
            if value not in allowed:
                raise ValueError(f"{self.name}: {key}={value!r} is not allowed; choose one of {sorted(allowed)}")

    @classmethod
    def variants(cls) -> dict:
        """Parameter -> allowed values; override in subclasses."""
        return {}

    def requirements(self) -> tuple:
        """Problem capabilities this instance needs (default: the class's ``requires``)."""
        return tuple(type(self).requires)

    def params(self) -> dict:
        """The algorithm's parameters as a flat dict (recorded in results)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init}

    # ---- interface -------------------------------------------------------------
    def init(self, problem: FederatedProblem, ctx: RunContext) -> State:
        raise NotImplementedError

    def aggregate(self, state: State, problem: FederatedProblem, r: int) -> np.ndarray:
        """Server step at the start of round r; returns the new global model."""
        raise NotImplementedError

    def begin_round(self, state: State, problem: FederatedProblem, clients: np.ndarray, r: int) -> None:
        """Broadcast to ``clients``; default nothing."""

    def local_step(self, state: State, problem: FederatedProblem, clients: np.ndarray, r: int, t: int) -> None:
        """Local iteration t (0..k0-1) of every client in ``clients``."""
        raise NotImplementedError

    def upload(self, state: State, problem: FederatedProblem, clients: np.ndarray, r: int) -> np.ndarray:
        """Vectors the clients send, shape (len(clients), upload_dim)."""
        raise NotImplementedError

    def receive(self, state: State, problem: FederatedProblem, clients: np.ndarray, uploads: np.ndarray, r: int) -> None:
        """Server stores the (possibly perturbed) uploads."""
        raise NotImplementedError

    def round_metrics(self, state: State, problem: FederatedProblem) -> dict:
        """Extra per-round metrics (e.g. the FRPG loss with worker models)."""
        return {}
