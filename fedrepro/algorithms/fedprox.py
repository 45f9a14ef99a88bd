"""FedProx adapted as in Zhou & Li Sec. 5.3 (spec 3.3): each local iteration takes ``inner_steps``
gradient steps on f_i(u) + (mu_p/2)||u - w||^2 from the current local iterate; averaging (17)."""
from __future__ import annotations

from dataclasses import dataclass

from fedrepro.algorithms._local_gd import LocalGD
from fedrepro.core.params import NONNEGATIVE, POSITIVE_INT


@dataclass
class FedProx(LocalGD):
    """step_c : eta = step_c / r_max. mu_rel : mu_p = mu_rel * mean_i r_i. inner_steps : J_p."""

    step_c: float = 0.5
    averaging: str = "selected"
    mu_rel: float = 0.1
    inner_steps: int = 1

    name = "fedprox"
    constraints = {"mu_rel": [NONNEGATIVE], "inner_steps": [POSITIVE_INT]}

    def _init_extra(self, state, problem, ctx):
        state.mu_p = self.mu_rel * state.r_mean

    def _step(self, state, problem, clients, t):
        for j in range(int(self.inner_steps)):
            G = self._grads(state, problem, state.V, clients, fresh=t > 0 or j > 0)
            state.V -= state.eta * (G + state.mu_p * (state.V - state.w))
