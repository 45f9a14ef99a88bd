"""Elastic-net aggregation (FedEPM, Zhou & Li, Lemma III.1/III.2, Algorithm 1).

For every coordinate j the server solves

    w_j = argmin_w h(w),   h(w) = sum_i [ lam |w - z_ij| + (eta/2) (w - z_ij)^2 ].

Sort one coordinate's values descending, z_(1) >= ... >= z_(m). On the piece
z_(s+1) <= w <= z_(s) (s values at or above w) the optimality condition
0 = lam (m - 2s) + eta (m w - sum_i z_i) gives

    w(s) = mean(z) + (lam/eta) (2s/m - 1)                      (corrected sign)

The paper's eq. (13)/(15) and Algorithm 1 print ``mean - (lam/eta)(2s/m - 1)``;
that is wrong (its proof (42) gives the s largest values sgn = +1 instead of
-1; spec 001 Sec. 3.1 / 7-A1). ``sign="paper"`` reproduces the printed formula
(with the same selection rule) for comparison only.

Selection without a fallback loop: w(s) - z_(s+1) is non-decreasing in s, so
the first piece s1 with w(s1) >= z_(s1+1) (z_(m+1) = -inf) is either the piece
holding the minimiser (then w(s1) <= z_(s1)) or the minimiser sits on the kink
z_(s1) (then w(s1) > z_(s1) while w(s1-1) < z_(s1)). Both cases are
``min(w(s1), z_(s1))``; ties (zero-width pieces) need no special care. Cost:
one sort, O(n m log m), plus O(n m) comparisons; no (n, m, m) tensor.
"""
from __future__ import annotations

import numpy as np

__all__ = ["ens", "elastic_net_objective", "soft_threshold"]


def soft_threshold(t: np.ndarray, a) -> np.ndarray:
    """soft(t, a) = sign(t) max(|t| - a, 0), elementwise (paper eq. (2)/(3))."""
    return np.sign(t) * np.maximum(np.abs(t) - a, 0.0)


def elastic_net_objective(w: np.ndarray, Z: np.ndarray, lam: float, eta: float) -> np.ndarray:
    """h(w_j) = sum_i lam |w_j - Z_ij| + eta/2 (w_j - Z_ij)^2 per coordinate.

    w : (n,) ; Z : (m, n) one row per client. Returns (n,).
    """
    D = np.asarray(w)[None, :] - np.asarray(Z)
    return lam * np.abs(D).sum(axis=0) + 0.5 * eta * (D * D).sum(axis=0)


def ens(Z: np.ndarray, lam: float, eta: float, sign: str = "corrected") -> np.ndarray:
    """Elastic-net aggregate of the uploads, coordinatewise.

    Parameters
    ----------
    Z : (m, n) array, one upload per row (client i in row i).
    lam, eta : elastic-net weights, lam >= 0, eta > 0.
    sign : ``"corrected"`` (exact minimiser) or ``"paper"`` (eq. (15) as printed; wrong).

    Returns
    -------
    w : (n,) array, ``w_j = argmin_w sum_i lam|w - Z_ij| + eta/2 (w - Z_ij)^2``.
    """
    if sign not in ("corrected", "paper"):
        raise ValueError(f"ens: sign={sign!r} is not allowed; choose 'corrected' or 'paper'")
    if not eta > 0 or not lam >= 0:
        raise ValueError(f"ens: need eta > 0 and lam >= 0, got eta={eta}, lam={lam}")
    Z = np.asarray(Z, dtype=float)
    if Z.ndim != 2 or Z.shape[0] == 0:
        raise ValueError(f"ens: Z must be (m, n) with m >= 1, got shape {Z.shape}")
    m = Z.shape[0]
    mean = Z.mean(axis=0)
    step = 2.0 * np.arange(1, m + 1) / m - 1.0            # 2s/m - 1, s = 1..m
    if sign == "paper":
        Zs = np.sort(Z.T, axis=1)[:, ::-1]                # (n, m) descending: Zs[:, s-1] = z_(s)
        below = np.empty_like(Zs)
        below[:, :-1] = Zs[:, 1:]
        below[:, -1] = -np.inf
        return _ens_paper(Z, Zs, below, mean[:, None] - (lam / eta) * step[None, :], lam, eta)
    # ascending sort, centred in place: A[:, j] = z_(m-j) - mean (no other (n, m) float array)
    A = np.sort(Z.T, axis=1)
    A -= mean[:, None]
    thr = (lam / eta) * step                              # w(s) - mean
    # piece s (1 <= s < m) is not entirely above w* iff w(s) >= z_(s+1), i.e. A[:, m-1-s] <= thr[s-1];
    # true exactly for j = m-1-s in a prefix j < count, so the first such piece is s1 = m - count
    count = np.count_nonzero(A[:, :-1] <= thr[::-1][1:][None, :], axis=1)   # thr[::-1][1:][j] = thr[m-2-j]
    s1 = m - count                                        # 1..m
    rows = np.arange(A.shape[0])
    return mean + np.minimum(thr[s1 - 1], A[rows, m - s1])


def _ens_paper(Z, Zs, below, cand, lam, eta):
    """Algorithm 1 as printed: the first s with z_(s) >= w(s) > z_(s+1) (wrong sign in w(s));
    where none passes, the authors' code fallback: the data value with the smallest h."""
    ok = (cand <= Zs) & (cand > below)
    ok[:, -1] = False                                     # no piece below z_(m)
    rows = np.arange(Zs.shape[0])
    first = np.argmax(ok, axis=1)
    D = Zs[:, :, None] - Zs[:, None, :]                   # (n, m, m): h at every data value
    h = lam * np.abs(D).sum(axis=2) + 0.5 * eta * (D * D).sum(axis=2)
    fallback = Zs[rows, np.argmin(h, axis=1)]
    return np.where(ok.any(axis=1), cand[rows, first], fallback)
