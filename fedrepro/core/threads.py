"""Threads of the compiled (numba) kernels: the problems' row-fused gradients
(:mod:`fedrepro.problems.glm_kernels`) and FedADMM's local step (:mod:`fedrepro.algorithms.ops.admm_step`).

Every kernel exists twice, sequential and parallel over clients (``numba.prange``); :func:`pick`
takes the parallel one only when numba may use more than one thread (``NUMBA_NUM_THREADS``: the
Snakefile gives each job its declared ``threads``, 1 by default; ``fedrepro run --threads`` sets
it for a run of its own). Results never depend on the thread count: every client's arithmetic is
done by one thread in a fixed order.
"""
from __future__ import annotations

import numba


def kernel_threads() -> int:
    """Threads the kernels use: numba's current setting (``NUMBA_NUM_THREADS``, or
    :func:`set_kernel_threads`)."""
    return numba.get_num_threads()


def set_kernel_threads(n: int) -> None:
    """Use ``n`` threads (1 .. the cores numba was started with) in the kernels."""
    numba.set_num_threads(int(n))


def pick(seq, par, k: int):
    """The parallel twin ``par`` for ``k`` > 1 clients when more than one thread is allowed, else ``seq``."""
    return par if k > 1 and kernel_threads() > 1 else seq
