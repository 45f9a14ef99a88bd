"""Upload-side Byzantine attacks as pure functions on one round's update vectors (model deltas).

Rows of ``U`` are updates (n, d); each function returns what the faulty workers upload.
Nothing here draws from a global RNG or touches a problem or an algorithm; the attack
classes in :mod:`fedrepro.sim.attacks` (or any other caller) decide who is faulty and
where the result goes.

* :func:`sign_flip` -- -c U (the faulty workers' own honest updates, negated and scaled).
* :func:`scaling` -- c U.
* :func:`alie_z`, :func:`alie` -- "A Little Is Enough" (Baruch, Baruch & Goldberg 2019).
* :func:`ipm` -- inner product manipulation (Xie, Koyejo & Gupta 2020).
* :func:`gaussian_models` -- c xi, xi ~ N(0, I).
"""
from __future__ import annotations

import numpy as np


def sign_flip(U: np.ndarray, c: float = 1.0) -> np.ndarray:
    """Sign flipping: a faulty worker uploads -c u in place of its honest update u; U (k, d) -> (k, d)."""
    return -c * np.asarray(U, dtype=float)


def scaling(U: np.ndarray, c: float) -> np.ndarray:
    """Scaling: a faulty worker uploads c u in place of its honest update u; U (k, d) -> (k, d)."""
    return c * np.asarray(U, dtype=float)


def alie_supporters(n: int, f: int) -> int:
    """ALIE's s = floor(n/2 + 1) - f: the honest workers the f faulty ones need on their side to
    form a majority (Baruch, Baruch & Goldberg 2019, Algorithm 1, with their m = f)."""
    n, f = int(n), int(f)
    if n < 1:
        raise ValueError(f"alie: n must be >= 1, got n={n}")
    if f < 0 or f >= n:
        raise ValueError(f"alie: the number of faulty workers must satisfy 0 <= f < n, got n={n}, f={f}")
    return n // 2 + 1 - f          # floor(n/2 + 1) for integer n >= 0


def alie_z(n: int, f: int) -> float:
    """z_max of "A Little Is Enough" (Baruch, Baruch & Goldberg, NeurIPS 2019, Algorithm 1):

        s     = floor(n/2 + 1) - f
        z_max = Phi^{-1}((n - s) / n)         (Phi the standard normal CDF; scipy.stats.norm.ppf)

    n workers, f of them faulty (the paper's m). z_max < 0 when s > n/2 (few faulty workers),
    as the formula gives. ValueError when f < 0 or f >= n, or when (n - s)/n is not in (0, 1):
    s <= 0 (the faulty workers are already a majority, z unbounded) or s >= n (n <= 2, f = 0)."""
    s = alie_supporters(n, f)
    if s <= 0:
        raise ValueError(f"alie: f={f} faulty of n={n} are a majority already (s = {s} <= 0); z_max is unbounded")
    if s >= n:
        raise ValueError(f"alie: s = {s} >= n = {n} (n={n}, f={f}); Phi^-1((n - s)/n) = -inf")
    from scipy.stats import norm      # here, not at import: scipy.stats costs every run job ~0.5 CPU-s

    return float(norm.ppf((n - s) / n))


def alie(U_benign: np.ndarray, z: float, *, ddof: int = 0) -> np.ndarray:
    """ALIE's malicious update (Baruch, Baruch & Goldberg 2019, Algorithm 1): every faulty worker
    uploads mu - z sigma, with mu_j and sigma_j the mean and standard deviation of coordinate j
    over the benign rows. U_benign (k, d) -> (d,).

    sigma is the population standard deviation (``ddof=0``) by default: the paper's Algorithm 1
    says "standard deviation" without a correction, and ddof=0 is the standard deviation of the
    rows as given. ``ddof=1`` gives the sample standard deviation (torch.std's default, which
    reimplementations built on torch use)."""
    U = np.asarray(U_benign, dtype=float)
    if U.ndim != 2 or U.shape[0] - ddof < 1:
        raise ValueError(f"alie: needs a (k, d) array with k > ddof={ddof} benign rows, got shape {U.shape}")
    return U.mean(axis=0) - z * U.std(axis=0, ddof=ddof)


def ipm(U_benign: np.ndarray, eps: float) -> np.ndarray:
    """Inner product manipulation (Xie, Koyejo & Gupta, UAI 2020, "Fall of empires: breaking
    Byzantine-tolerant SGD by inner product manipulation"): every faulty worker uploads
    -eps * (1/k) sum_i u_i, the benign mean reversed and scaled. U_benign (k, d) -> (d,)."""
    U = np.asarray(U_benign, dtype=float)
    if U.ndim != 2 or U.shape[0] < 1:
        raise ValueError(f"ipm: needs a (k, d) array with k >= 1 benign rows, got shape {U.shape}")
    return -eps * U.mean(axis=0)


def gaussian_models(rng: np.random.Generator, shape, c: float) -> np.ndarray:
    """c xi, xi ~ N(0, I) of the given shape, drawn from ``rng`` (the ``gaussian`` attack's models,
    FRPG spec 004 sec. 3.7)."""
    return c * rng.standard_normal(shape)


UPLOAD_ATTACKS_OPS = {"sign_flip": sign_flip, "scaling": scaling, "alie": alie, "ipm": ipm,
                      "gaussian_models": gaussian_models}
