"""FedSim (Pillutla et al. 2022): FedAlt's personalised objective with simultaneous updates of the
shared and personal parts (both gradients at the old (w_i, v_i)); averaging (17)."""
from __future__ import annotations

from dataclasses import dataclass

from fedrepro.algorithms.fedalt import Personalized


@dataclass
class FedSim(Personalized):
    name = "fedsim"

    def _step(self, state, problem, clients, t):
        Vp = state.Vp[clients]
        gw = self._gw(state, problem, clients, t) + self.mu * (state.V - Vp)
        gv = self._gv(state, problem, clients, Vp) - self.mu * (state.V - Vp)
        state.V -= state.eta * gw
        Vp -= state.eta * gv
        state.Vp[clients] = Vp
