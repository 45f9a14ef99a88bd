"""Purpose-separated random streams.

Every random draw in fedrepro comes from a generator derived from
``(seed, purpose, *keys)`` -- e.g. ``stream(seed, "sampling", round)`` -- so that
adding draws for one purpose never shifts the numbers of another, and the same
config gives the same numbers whatever the job order. No global state is used.
"""
from __future__ import annotations

import hashlib

import numpy as np

PURPOSES = (
    "data",        # synthetic data generation
    "partition",   # assignment of samples to clients
    "init",        # model initialisation
    "sampling",    # client participation / minibatch sampling
    "noise",       # privacy noise
    "attack",      # Byzantine behaviour
    "minibatch",   # stochastic gradients
    "split",       # train/test splits
    "delay",       # asynchronous delays
    "epochs",      # random local epoch counts E_i ~ U{1..E}
    "dropout",     # dropout masks of local training
    "subset",      # reduced-scale data subsets
    "loss_batch",  # minibatches of reported losses (aspire: F_j; AFL / DRFA-Prox: loss queries)
    "drfa_tprime",  # DRFA(-Prox): the snapshot step t' ~ U{1..tau} of each round
    "drfa_sample",  # DRFA(-Prox) participation "sampled": phase-1 draws from lambda, phase-2 uniform
    "client_order",  # order in which a round's selected clients train (FedADMM-Gong's early code, sequential)
)


def _purpose_word(purpose: str) -> int:
    digest = hashlib.sha256(purpose.encode()).digest()
    return int.from_bytes(digest[:4], "little")


def stream(seed: int, purpose: str, *keys: int) -> np.random.Generator:
    """Return an independent ``numpy.random.Generator`` for ``(seed, purpose, *keys)``.

    Parameters
    ----------
    seed : int
        The experiment seed (non-negative).
    purpose : str
        One of :data:`PURPOSES`; unknown purposes raise ``ValueError`` so typos
        cannot silently share a stream.
    *keys : int
        Further non-negative integers (round, client, instance ...).
    """
    if purpose not in PURPOSES:
        raise ValueError(f"unknown random-stream purpose {purpose!r}; allowed: {', '.join(PURPOSES)}")
    if seed < 0 or any(int(k) < 0 for k in keys):
        raise ValueError(f"seed and keys must be non-negative integers, got seed={seed}, keys={keys}")
    entropy = [int(seed), _purpose_word(purpose), *[int(k) for k in keys]]
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))
