"""FedAlt (Pillutla et al. 2022) on the personalised objective of Zhou & Li Sec. 5.3 (spec 3.4):
h_i(w, v) = (1 - alpha) f_i(w) + alpha f_i(v) + (mu/2)||w - v||^2; the personal v_i never leaves
the client; averaging of the shared part over the selected clients (17)."""
from __future__ import annotations

from dataclasses import dataclass

from fedrepro.algorithms._local_gd import LocalGD
from fedrepro.core.params import NONNEGATIVE, Interval, Options, Real


@dataclass
class Personalized(LocalGD):
    """Shared parts of FedAlt / FedSim. alpha, mu : personalisation (paper 0.5, 0.001)."""

    step_c: float = 0.5
    averaging: str = "selected"
    alpha: float = 0.5
    mu: float = 1e-3

    grads_per_step = 2
    constraints = {"alpha": [Interval(Real, 0, 1)], "mu": [NONNEGATIVE]}

    def _init_extra(self, state, problem, ctx):
        state.Vp = ctx.client_store(problem.m, problem.dim)   # personal models v_i (persist)

    def _gw(self, state, problem, clients, t):
        return (1 - self.alpha) * self._grads(state, problem, state.V, clients, fresh=t > 0)

    def _gv(self, state, problem, clients, Vp):
        return self.alpha * self._grads(state, problem, Vp, clients, fresh=True)


@dataclass
class FedAlt(Personalized):
    """schedule : "interleaved" (one v-step then one w-step per local iteration) | "block" (k0 v-steps
    with w fixed, then k0 w-steps with v fixed; Pillutla et al.'s form)."""

    schedule: str = "interleaved"

    name = "fedalt"
    constraints = {"schedule": [Options("interleaved", "block")]}

    def _vstep(self, state, problem, clients):
        Vp = state.Vp[clients]
        Vp -= state.eta * (self._gv(state, problem, clients, Vp) - self.mu * (state.V - Vp))
        state.Vp[clients] = Vp
        return Vp

    def _wstep(self, state, problem, clients, Vp, t):
        state.V -= state.eta * (self._gw(state, problem, clients, t) + self.mu * (state.V - Vp))

    def _step(self, state, problem, clients, t):
        Vp = self._vstep(state, problem, clients)
        if self.schedule == "interleaved":
            self._wstep(state, problem, clients, Vp, t)

    def upload(self, state, problem, ctx, clients, r):
        if self.schedule == "block":
            Vp = state.Vp[clients]
            for t in range(ctx.k0):
                self._wstep(state, problem, clients, Vp, t)
        return state.V
