"""Tiny problem and algorithm used to test the plumbing independently of any paper."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fedrepro.algorithms.base import Algorithm, State
from fedrepro.problems.base import FederatedProblem


class Quadratic(FederatedProblem):
    """f_i(w) = 0.5 * ||w - c_i||^2 * s_i; optimum of sum_i f_i/m is the s-weighted mean of c_i."""

    name = "quadratic"

    def __init__(self, centers, scales=None):
        self.c = np.asarray(centers, float)
        self.m, self.dim = self.c.shape
        self.s = np.ones(self.m) if scales is None else np.asarray(scales, float)
        self.client_sizes = np.ones(self.m, dtype=int)
        self.weights = np.full(self.m, 1.0 / self.m)

    def client_losses(self, W, clients=None):
        idx = self._clients(clients, self.m)
        D = W - self.c[idx]
        return 0.5 * self.s[idx] * np.einsum("ij,ij->i", D, D)

    def client_grads(self, W, clients=None):
        idx = self._clients(clients, self.m)
        return self.s[idx, None] * (W - self.c[idx])

    def lipschitz(self):
        return self.s.copy()

    def optimum(self):
        return (self.s @ self.c) / self.s.sum()


@dataclass
class LocalGD(Algorithm):
    """Local gradient descent with averaging of the sampled clients' models."""

    name = "local_gd"
    step: float = 0.5

    def init(self, problem, ctx):
        state = State(w=np.zeros(problem.dim))
        state.W = np.zeros((problem.m, problem.dim))
        return state

    def aggregate(self, state, problem, r):
        return state.w if r == 0 else state.server_mean

    def begin_round(self, state, problem, clients, r):
        state.W[clients] = state.w

    def local_step(self, state, problem, clients, r, t):
        state.W[clients] -= self.step * problem.client_grads(state.W[clients], clients)

    def upload(self, state, problem, clients, r):
        return state.W[clients].copy()

    def receive(self, state, problem, clients, uploads, r):
        state.server_mean = uploads.mean(axis=0)
        state.metrics["uploaded"] = len(clients)



@dataclass
class RecordingGD(LocalGD):
    """LocalGD that logs on the object (a test probe) every ``init`` call as ``"init"`` and the
    clients of every round as ``(r, [ids])``."""

    name = "recording_gd"
    log: list = field(default_factory=list)

    def init(self, problem, ctx):
        self.log.append("init")
        return super().init(problem, ctx)

    def begin_round(self, state, problem, clients, r):
        self.log.append((r, [int(i) for i in clients]))
        super().begin_round(state, problem, clients, r)
