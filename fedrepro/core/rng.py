"""Purpose-separated random streams.

Every random draw in fedrepro comes from a generator derived from
``(seed, purpose, *keys)`` -- e.g. ``stream(seed, "sampling", round)`` -- so that
adding draws for one purpose never shifts the numbers of another, and the same
config gives the same numbers whatever the job order. No global state is used.
"""
from __future__ import annotations

import hashlib
from functools import lru_cache

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
    "dp_noise",    # the Gaussian mechanism's noise on a round's clipped mean (fedrepro.sim.privacy.GaussianDP)
)


_WORD = 2 ** 32


@lru_cache(maxsize=None)
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
    words = (int(seed), _purpose_word(purpose), *[int(k) for k in keys])
    if min(words) < 0:
        raise ValueError(f"seed and keys must be non-negative integers, got seed={seed}, keys={keys}")
    # SeedSequence turns a list of ints into the concatenation of their 32-bit words (one word for an
    # int below 2**32); handing it those words as a uint32 array is the same entropy, without the
    # per-int coercion (a third of a stream's cost; tests/test_rng.py checks the two agree)
    entropy = np.array(words, dtype=np.uint32) if max(words) < _WORD else list(words)
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))
