"""The run context: what the loop tells every hook of an algorithm (and every mechanism and
attack) about the run -- local work per round, participation, the client sampler, seeded
streams keyed by purpose, replayed noise. It is passed to the hooks as an argument; nothing
keeps a reference to it between runs."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrepro.core.rng import stream
from fedrepro.core.store import ClientStore, make_store


@dataclass
class RunContext:
    """What the loop tells an algorithm about the run.

    Attributes
    ----------
    k0 : int            local iterations per communication round
    rho : float         participation rate (fraction of clients per round)
    seed : int          run seed; derive streams with :meth:`rng`
    max_rounds : int    round cap of the run
    sampler :           ``r -> sorted client ids`` of round r (:mod:`fedrepro.core.sampling`); read it
                        through :meth:`clients`
    replay_noise :      a :class:`fedrepro.sim.replay.NoiseCursor` when the run replays recorded
                        unit-scale noise (see :meth:`unit_noise`), else None
    algorithm : str     name of the algorithm being run (for messages of mechanisms and attacks)
    store :             how per-client state is held: ``"dense"`` or ``"lazy"`` (:mod:`fedrepro.core.store`)
    """

    k0: int = 1
    rho: float = 1.0
    seed: int = 0
    max_rounds: int = 100
    replay_noise: object = None
    sampler: object = None
    algorithm: str = ""
    store: str = "dense"

    def rng(self, purpose: str, *keys: int) -> np.random.Generator:
        return stream(self.seed, purpose, *keys)

    def client_store(self, m: int, dim: int, fill=0.0) -> ClientStore:
        """A per-client store of m rows of length dim, every row initially ``fill``, of the run's kind."""
        return make_store(self.store, m, dim, fill=fill)

    def clients(self, r: int) -> np.ndarray:
        """The clients of round r as the loop draws them (sorted ids; :mod:`fedrepro.core.sampling`)."""
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
