"""LFRPG: local FRPG (Dong et al., Algorithm 2, eqs. (19)-(21), (27)-(28)).

One communication round (CR) i = one frame of T slots: the server does
(19a)-(19b) once, every worker runs T local FRPG steps against the fixed
broadcast w0^i with the frame's step sizes (27)-(28), and uploads the frame
average (1/T) sum_k g^i_{n,k}; the server applies (19c). The run must use
k0 = T (one ``local_step`` per slot).

``lfrpg_momentum``:
  * ``literal`` -- (21a) as printed: u^i_{n,k} = (1-beta) w^{i-1}_{n,k} + beta v^i_{n,k-1}
    (the worker's model of the same slot in the previous frame; T models are stored);
  * ``chain`` -- u^i_{n,k} = (1-beta) w^i_{n,k-1} + beta v^i_{n,k-1}, w^i_{n,0} = w^{i-1}_{n,T}.
v_n runs as one chain across slots and frames (App. F). With T = 1 both equal FRPG.
"""
from __future__ import annotations

from dataclasses import dataclass

from fedrepro.algorithms.frpg import FRPG
from fedrepro.core.params import POSITIVE_INT, Options


@dataclass
class LFRPG(FRPG):
    """FRPG parameters plus T (slots per frame, 10) and ``lfrpg_momentum``."""

    T: int = 10
    lfrpg_momentum: str = "literal"

    name = "lfrpg"
    constraints = {"T": [POSITIVE_INT], "lfrpg_momentum": [Options("literal", "chain")]}

    def _slots(self) -> int:
        return int(self.T)

    def _memory_slot(self, t: int) -> int:
        return t if self.lfrpg_momentum == "literal" else (t - 1) % int(self.T)
