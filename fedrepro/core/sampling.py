"""Client sampling: which clients take part in round r.

The loop asks the run context for the round's clients (``ctx.clients(r)``); the context holds a
*sampler*, a callable ``r -> int array of distinct client ids``, keyed by the round only, so any part
of the run (an algorithm that aggregates over the clients of the coming round, e.g. SFedAvg's
literal eq. (34)) gets exactly the loop's draw without re-deriving it. The array's order is the
order the round's clients were selected in; the default sampler returns them ascending, a replayed
selection in the file's order, and nothing in the run may assume ascending ids (a per-client quantity
is found by the client's id or its position in this array, never by ``np.searchsorted``). Samplers:

- :class:`UniformSampler` (default): a uniform subset without replacement, independent across
  rounds, drawn from the stream ``(seed, "sampling", r)``; its size is ``ceil(rho m)``
  (``count="ceil"``, Zhou & Li's code ``sort(randperm(m)(1:m0))``) or ``max(floor(rho m), 1)``
  (``count="floor"``, FedAvg's C-fraction as in Gong et al.).
- a replayed selection (:meth:`fedrepro.sim.replay.Replay.clients`), in the file's order;
- :class:`RecordingSampler`: any of these, with every round's clients kept in the order served
  (``fedrepro run --record-selections``; :func:`fedrepro.sim.replay.write_selections` writes them).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fedrepro.core.rng import stream

COUNTS = ("ceil", "floor")


def participants(m: int, rho: float, count: str = "ceil") -> int:
    """Number of clients per round: ceil(rho m) or max(floor(rho m), 1)."""
    if not 0 < rho <= 1:
        raise ValueError(f"participation rate rho={rho} must be in (0, 1]")
    if count == "ceil":
        return min(m, int(math.ceil(rho * m - 1e-12)))
    if count == "floor":
        return min(m, max(int(math.floor(rho * m + 1e-12)), 1))
    raise ValueError(f"sampler count={count!r} is not allowed; choose one of {list(COUNTS)}")


def sample_clients(m: int, rho: float, seed: int, r: int, count: str = "ceil") -> np.ndarray:
    """Clients of round r: ``participants(m, rho, count)`` distinct ids, uniform without
    replacement, independent across rounds, sorted."""
    m0 = participants(m, rho, count)
    if m0 >= m:
        return np.arange(m)
    return np.sort(stream(seed, "sampling", r).permutation(m)[:m0])


@dataclass(frozen=True)
class UniformSampler:
    """The default sampler (see the module docstring). Parameters are validated on construction."""

    m: int
    rho: float
    seed: int
    count: str = "ceil"

    def __post_init__(self):
        participants(self.m, self.rho, self.count)          # validates rho and count

    def __call__(self, r: int) -> np.ndarray:
        return sample_clients(self.m, self.rho, self.seed, r, self.count)


class RecordingSampler:
    """A sampler that serves ``sampler``'s clients and keeps them: the first call for round r asks
    ``sampler(r)`` and remembers the ids in the order served; every call returns a copy of them (a
    sampler is keyed by the round only, so asking again cannot change the draw). ``selections`` is
    ``{round: ids}`` of every round the run asked for, ascending rounds: the ``round,client`` rows of
    :func:`fedrepro.sim.replay.write_selections`, which replay the run draw for draw."""

    def __init__(self, sampler):
        if not callable(sampler):
            raise TypeError(f"RecordingSampler needs a sampler (a callable r -> client ids), got {sampler!r}")
        self.sampler = sampler
        self._served: dict[int, np.ndarray] = {}

    def __call__(self, r: int) -> np.ndarray:
        r = int(r)
        ids = self._served.get(r)
        if ids is None:
            ids = self._served[r] = np.array(self.sampler(r), dtype=np.int64).ravel()
        return ids.copy()

    @property
    def selections(self) -> dict[int, np.ndarray]:
        """``{round: client ids in the order served}`` of the rounds asked for so far, ascending rounds."""
        return {r: self._served[r].copy() for r in sorted(self._served)}
