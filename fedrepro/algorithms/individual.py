"""Ind_j (aspire spec 002 §3.4): minibatch SGD on worker j's data alone, from the common initial
model; no communication. Each round worker ``worker`` takes ``local_steps`` (default 1, so G_w
rounds are G_w steps) SGD steps of min(B, n_j) samples from ("minibatch", r, j) on the harness
(:class:`~fedrepro.algorithms.local_epochs.LocalSteps`); the other workers do nothing (their upload
rows are zeros) and the model is worker j's. The problem's evaluation scores it on every worker's
test split (the table's max{Ind_j} picks the best j). The virtual clock prices worker j's job only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrepro.algorithms._mixture import client_rows, rows_for_clients
from fedrepro.algorithms.local_epochs import LocalSteps
from fedrepro.core.params import NONNEGATIVE_INT


@dataclass
class Individual(LocalSteps):
    """Parameters
    ----------
    worker : j, the worker that trains (0-based). lr : SGD step (lr_base). momentum : 0 (the spec).
    local_steps : SGD steps per round (1). B : minibatch size (64). alpha1 : box projection (inf: none).
    """

    lr: float = 0.05
    local_steps: int = 1
    worker: int = 0

    name = "individual"
    # one worker trains alone (the server only copies its model): no upload to attack, privatise or aggregate
    upload_kind = None
    constraints = {"worker": [NONNEGATIVE_INT]}

    def init(self, problem, ctx):
        if self.worker >= problem.m:
            raise ValueError(f"{self.name}: worker={self.worker} but the problem has {problem.m} workers "
                             f"(0..{problem.m - 1}); pick one of them")
        return super().init(problem, ctx)

    def _trains(self, clients) -> np.ndarray:
        return np.array([self.worker] if self.worker in np.asarray(clients) else [], dtype=np.int64)

    def client_update(self, state, problem, ctx, clients, r):
        j = self._trains(clients)
        if j.size == 0:
            return np.zeros((len(clients), problem.dim), dtype=state.w.dtype)
        return rows_for_clients(super().client_update(state, problem, ctx, j, r), j, clients)

    def receive(self, state, problem, ctx, clients, uploads, r):
        j = self._trains(clients)
        state.uploads = uploads[client_rows(j, clients)] if j.size else None

    def aggregate(self, state, problem, ctx, r):
        if state.uploads is None:
            return state.w
        w, state.uploads = state.uploads[0].copy(), None
        return w

    def round_phases(self, state, ctx, clients, r):
        return [(self._trains(clients), self.local_steps)]
