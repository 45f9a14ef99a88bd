"""SFedProx: FedProx with noisy uploads (FedEPM paper, Algorithm 3 "[SFedProx]" + Algorithm 4)."""
from __future__ import annotations

from dataclasses import dataclass

from fedrepro.algorithms.sfedavg import SFedAvg
from fedrepro.core.params import NONNEGATIVE, POSITIVE_INT


@dataclass
class SFedProx(SFedAvg):
    """SFedAvg with the local step of Algorithm 4: ``ell`` gradient steps on
    f_i(v) + (mu_prox/2)||v - w||^2 with step (38),

        v <- v - gamma_i (grad f_i(v) + mu_prox (v - w)),

    starting from w at k in K (first inner gradient = G_i, reused) and from w_i^k otherwise.

    Parameters
    ----------
    mu_prox : proximal weight (paper's mu = 1e-5; unrelated to FedEPM's mu, spec 7-A23).
    ell : inner steps per local iteration (3).
    """

    mu_prox: float = 1e-5
    ell: int = 3

    name = "sfedprox"
    constraints = {"mu_prox": [NONNEGATIVE], "ell": [POSITIVE_INT]}

    def _update(self, state, problem, ctx, S, r, t, gap):
        gamma = self._gamma(state, ctx, S, r, t)[:, None]
        v = state.w if t == 0 else state.W[S]
        for j in range(int(self.ell)):
            g = state.G[S] if (t == 0 and j == 0) else problem.client_grads(v, S)
            v = v - gamma * (g + self.mu_prox * (v - state.w))
        return v
