"""FedAvg as in Zhou & Li Algorithm 2: k0 full-batch local GD steps from the broadcast w and the
average over ALL clients with stale iterates of the non-selected ones (eq. (18))."""
from __future__ import annotations

from dataclasses import dataclass

from fedrepro.algorithms._local_gd import LocalGD


@dataclass
class FedAvg(LocalGD):
    """step_c : eta = step_c / r_max. averaging : "all" (paper, eq. (18)) | "selected" (McMahan)."""

    step_c: float = 0.5
    averaging: str = "all"

    name = "fedavg"

    def _step(self, state, problem, clients, t):
        state.V -= state.eta * self._grads(state, problem, state.V, clients, fresh=t > 0)
