"""The run context: what the loop tells every hook of an algorithm (and every mechanism and
attack) about the run -- local work per round, participation, the client sampler, seeded
streams keyed by purpose, replayed noise. It is passed to the hooks as an argument; nothing
keeps a reference to it between runs."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrepro.core.params import (NONNEGATIVE_INT, POSITIVE, POSITIVE_INT, Anything, Interval, Options, Real,
                                  validate_params)
from fedrepro.core.rng import stream
from fedrepro.core.sampling import COUNTS
from fedrepro.core.store import DEFAULT_STORE_BUDGET_MB, RUN_STORE_KINDS, ClientStore, make_store

# Run settings, defined once: the loop's keyword defaults, the experiments' cell defaults and the CLI's.
RUN_DEFAULTS = {"k0": 1, "rho": 1.0, "max_rounds": 100, "eval_every": 1, "time_limit": None}
# Settings a cell carries only when given (so existing cells keep their ids).
RUN_OPTIONAL = {"metrics": None, "store": "dense", "diverge_factor": 1e12, "store_budget_mb": DEFAULT_STORE_BUDGET_MB, "sample_count": "ceil"}
RUN_CONSTRAINTS = {
    "k0": [POSITIVE_INT],                           # local iterations per round
    "rho": [Interval(Real, 0, 1, closed="right")],  # participation rate
    "max_rounds": [NONNEGATIVE_INT],
    "eval_every": [POSITIVE_INT],
    "time_limit": [None, POSITIVE],                 # wall seconds
    "metrics": [None, Anything("a list of the problem's metric names")],
    "store": [Options(*RUN_STORE_KINDS)],           # auto: dense if it fits store_budget_mb, else memmap
    "store_budget_mb": [POSITIVE],
    "sample_count": [Options(*COUNTS)],             # clients per round: ceil(rho m) | max(floor(rho m), 1)
    "seed": [NONNEGATIVE_INT],
    # a run diverges when |objective| exceeds diverge_factor * max(1, |objective at round 0|)
    "diverge_factor": [None, Interval(Real, 1, None, closed="neither")],
}


def check_run_settings(**settings) -> None:
    """Validate run settings (:data:`RUN_CONSTRAINTS`); a ValueError names the key and what is allowed."""
    validate_params("run", settings, RUN_CONSTRAINTS)


@dataclass
class RunContext:
    """What the loop tells an algorithm about the run.

    Attributes
    ----------
    k0 : int            local iterations per communication round
    rho : float         participation rate (fraction of clients per round)
    seed : int          run seed; derive streams with :meth:`rng`
    max_rounds : int    round cap of the run
    sampler :           ``r -> client ids`` of round r in the order selected (ascending under the
                        default sampler; :mod:`fedrepro.core.sampling`); read it through :meth:`clients`
    replay_noise :      a :class:`fedrepro.sim.replay.NoiseCursor` when the run replays recorded
                        unit-scale noise (see :meth:`unit_noise`), else None
    algorithm : str     name of the algorithm being run (for messages of mechanisms and attacks)
    store :             how per-client state is held: ``"dense"``, ``"lazy"`` or ``"memmap"``
                        (:mod:`fedrepro.core.store`; a run's ``"auto"`` is resolved before the run)
    time_budget :       virtual seconds after which no master iteration starts (asynchronous runs
                        with a time budget; None otherwise): a rule may derive schedule lengths from it
    """

    k0: int = RUN_DEFAULTS["k0"]
    rho: float = RUN_DEFAULTS["rho"]
    seed: int = 0
    max_rounds: int = RUN_DEFAULTS["max_rounds"]
    replay_noise: object = None
    sampler: object = None
    algorithm: str = ""
    store: str = RUN_OPTIONAL["store"]
    time_budget: float | None = None

    def rng(self, purpose: str, *keys: int) -> np.random.Generator:
        return stream(self.seed, purpose, *keys)

    def client_store(self, m: int, dim: int, fill=0.0, dtype=None) -> ClientStore:
        """A per-client store of m rows of length dim, every row initially ``fill``, of the run's kind
        (``dtype``: default float64 dense, float32 lazy/memmap; a neural model may ask float32)."""
        return make_store(self.store, m, dim, fill=fill, dtype=dtype)

    def clients(self, r: int) -> np.ndarray:
        """The clients of round r as the loop draws them, in the order selected (ascending ids under the
        default sampler, the file's order under replayed selections; :mod:`fedrepro.core.sampling`)."""
        if self.sampler is None:
            raise ValueError("this RunContext has no client sampler (simulate sets one)")
        return self.sampler(r)

    def unit_noise(self, draw, shape, purpose: str, *keys: int) -> np.ndarray:
        """Unit-scale noise of ``shape`` (last axis: model entries): ``draw(self.rng(purpose, *keys),
        shape)``, or the next rows of the replayed draws when the run replays noise."""
        if self.replay_noise is not None:
            where = f"round {keys[0]}" if purpose == "noise" and keys else f"the initial noise ({purpose!r})"
            return self.replay_noise.take(shape, where)
        return draw(self.rng(purpose, *keys), shape)
