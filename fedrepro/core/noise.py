"""Unit-scale noise primitives shared by algorithms (initial noise) and privacy mechanisms
(upload noise). Draws always come from a stream passed in by the caller (:mod:`fedrepro.core.rng`)."""
from __future__ import annotations

import numpy as np

GENERATORS = ("code", "laplace")


def stdlap(rng: np.random.Generator, shape) -> np.ndarray:
    """The authors' ``randl``: Laplace(0, 1) draws log(u1/u2), standardised along
    the last axis to sample mean 0 and sample standard deviation 1 (ddof = 1).

    Every vector x along the last axis (length n >= 2) has sum(x) = 0 and
    ||x||_2 = sqrt(n - 1) exactly (up to rounding). Returns an array of ``shape``.
    """
    u1 = rng.random(shape)
    u2 = rng.random(shape)
    x = np.log(u1 / u2)
    x -= x.mean(axis=-1, keepdims=True)
    return x / x.std(axis=-1, ddof=1, keepdims=True)


def draw_noise(rng: np.random.Generator, shape, generator: str) -> np.ndarray:
    """Unit-scale noise of the named generator (``code``: :func:`stdlap`; ``laplace``: Laplace(0, 1))."""
    if generator == "code":
        return stdlap(rng, shape)
    if generator == "laplace":
        return unit_laplace(rng, shape)
    raise ValueError(f"noise generator {generator!r} is not allowed; choose one of {list(GENERATORS)}")


def unit_laplace(rng: np.random.Generator, shape) -> np.ndarray:
    """Plain Laplace(0, 1) draws of ``shape``."""
    return rng.laplace(0.0, 1.0, size=shape)
