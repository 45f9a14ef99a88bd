"""Robust aggregation rules over the rows of V (n vectors of dimension d).

Reusable by any algorithm: ``mean``, ``coordinate_median``, ``krum`` (Blanchard
et al. 2017) and ``geometric_median`` (Weiszfeld iteration started from the
coordinate-wise median, as FRPG spec 004 sec. 3.5 prescribes); ``weighted_mean``,
``trimmed_mean`` (Yin et al. 2018), ``multi_krum`` (Blanchard et al. 2017; El Mhamdi
et al. 2018) and ``centered_clipping`` (Karimireddy, He & Jaggi 2021).
"""
from __future__ import annotations

import numpy as np


def mean(V: np.ndarray) -> np.ndarray:
    """Arithmetic mean of the rows; V (n, d) -> (d,)."""
    return V.mean(axis=0)


def coordinate_median(V: np.ndarray) -> np.ndarray:
    """Coordinate-wise median; V (n, d) -> (d,): ``np.median(V, axis=0)``, bit for bit, from one sort of
    the columns (numpy's median partitions each strided column: 3.7 ms against 0.7 for FRPG's (20, 7850)).
    As np.median: the middle value, or the mean (a + b) / 2 of the two middle ones; NaN where a column has one."""
    V = np.asarray(V)
    if V.ndim != 2 or V.shape[0] == 0 or V.dtype.kind != "f":
        return np.median(V, axis=0)
    n = V.shape[0]
    S = np.sort(V, axis=0)                      # NaN sorts last
    k = n // 2
    med = S[k].copy() if n % 2 else (S[k - 1] + S[k]) / 2
    med[np.isnan(S[-1])] = np.nan
    return med


def pairwise_sq_dists(V: np.ndarray) -> np.ndarray:
    """||V_i - V_j||^2 for all pairs, (n, n), via the Gram matrix (exact zeros on the diagonal)."""
    sq = np.einsum("nd,nd->n", V, V)
    D = sq[:, None] + sq[None, :] - 2.0 * (V @ V.T)
    np.maximum(D, 0.0, out=D)
    np.fill_diagonal(D, 0.0)
    return D


def krum_scores(V: np.ndarray, f: int) -> np.ndarray:
    """score(i) = sum of the n - f - 2 smallest ||V_i - V_j||^2 over j != i; (n,)."""
    n = V.shape[0]
    k = n - f - 2
    if k < 1:
        raise ValueError(f"krum needs n - f - 2 >= 1 neighbours, got n={n}, f={f}")
    D = pairwise_sq_dists(V)
    np.fill_diagonal(D, np.inf)
    return np.sort(D, axis=1)[:, :k].sum(axis=1)


def krum(V: np.ndarray, f: int) -> tuple[np.ndarray, int]:
    """Krum: the row with the smallest score (ties -> lowest index).

    Returns (V[i*], i*)."""
    i = int(np.argmin(krum_scores(V, f)))
    return V[i].copy(), i


def geometric_median(V: np.ndarray, *, tol: float = 1e-7, max_iter: int = 1000, eps: float = 1e-8,
                     init: str = "coord_median") -> tuple[np.ndarray, int]:
    """argmin_z sum_n ||z - V_n|| by the Weiszfeld iteration.

        d_n = max(||V_n - z||, eps),  z <- sum_n V_n/d_n / sum_n 1/d_n
        stop when ||z_new - z|| <= tol * max(1, ||z||)

    init : ``"coord_median"`` (robust start, default) or ``"mean"`` (public RSA code).
    Returns (z (d,), iterations used).
    """
    if init == "coord_median":
        z = coordinate_median(V)
    elif init == "mean":
        z = mean(V)
    else:
        raise ValueError(f"geometric_median: init={init!r} is not allowed; choose coord_median or mean")
    for it in range(1, max_iter + 1):
        diff = V - z
        wts = 1.0 / np.maximum(np.sqrt(np.einsum("nd,nd->n", diff, diff)), eps)
        z_new = wts @ V / wts.sum()
        step = np.linalg.norm(z_new - z)
        z = z_new
        if step <= tol * max(1.0, np.linalg.norm(z)):
            return z, it
    return z, max_iter


def weighted_mean(V: np.ndarray, weights) -> np.ndarray:
    """sum_i w_i V_i / sum_i w_i; V (n, d), weights (n,) non-negative with a positive sum -> (d,)."""
    V = np.asarray(V, dtype=float)
    w = np.asarray(weights, dtype=float)
    if w.shape != (V.shape[0],):
        raise ValueError(f"weighted_mean: weights of shape {w.shape} for n={V.shape[0]} rows")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"weighted_mean: weights must be finite and >= 0, got {w.tolist()}")
    total = w.sum()
    if total <= 0:
        raise ValueError("weighted_mean: the weights sum to 0")
    return w @ V / total


def trimmed_mean(V: np.ndarray, f: int) -> np.ndarray:
    """Coordinate-wise trimmed mean (Yin, Chen, Ramchandran & Bartlett 2018, "Byzantine-robust
    distributed learning: towards optimal statistical rates", Definition 2 with beta = f/n):
    in every coordinate drop the f largest and the f smallest of the n values and average the
    remaining n - 2f. V (n, d) -> (d,); f = 0 is the mean, f = (n-1)/2 (n odd) the median."""
    V = np.asarray(V, dtype=float)
    n = V.shape[0]
    f = int(f)
    if f < 0 or n - 2 * f < 1:
        raise ValueError(f"trimmed_mean needs 0 <= f and n - 2f >= 1, got n={n}, f={f}")
    return np.sort(V, axis=0)[f:n - f].mean(axis=0)


def multi_krum(V: np.ndarray, f: int, m_select: int) -> tuple[np.ndarray, np.ndarray]:
    """Multi-Krum (Blanchard et al. 2017; El Mhamdi, Guerraoui & Rouault 2018): the
    m_select rows with the lowest :func:`krum_scores` (ties -> lower index, a stable order),
    averaged. Returns (mean of the selected rows (d,), selected indices sorted ascending).
    m_select = 1 is :func:`krum`'s row."""
    n = V.shape[0]
    m_select = int(m_select)
    if not 1 <= m_select <= n:
        raise ValueError(f"multi_krum needs 1 <= m_select <= n, got m_select={m_select}, n={n}")
    scores = krum_scores(V, f)
    sel = np.sort(np.argsort(scores, kind="stable")[:m_select])
    return V[sel].mean(axis=0), sel


def centered_clipping(V: np.ndarray, center, tau: float, iters: int = 1) -> np.ndarray:
    """Centered clipping (Karimireddy, He & Jaggi 2021, "Learning from history for Byzantine
    robust optimization", the CC rule): starting from v = center, ``iters`` times

        v <- v + (1/n) sum_i (V_i - v) min(1, tau / ||V_i - v||)

    (a row equal to v contributes 0). V (n, d), center (d,), tau > 0 -> v (d,)."""
    V = np.asarray(V, dtype=float)
    if not tau > 0:
        raise ValueError(f"centered_clipping needs tau > 0, got tau={tau}")
    if int(iters) < 1:
        raise ValueError(f"centered_clipping needs iters >= 1, got iters={iters}")
    v = np.array(center, dtype=float)
    if v.shape != V.shape[1:]:
        raise ValueError(f"centered_clipping: center of shape {v.shape} for rows of shape {V.shape[1:]}")
    for _ in range(int(iters)):
        diff = V - v
        norms = np.sqrt(np.einsum("nd,nd->n", diff, diff))
        scale = np.zeros_like(norms)
        nz = norms > 0
        scale[nz] = np.minimum(1.0, tau / norms[nz])
        v = v + (diff * scale[:, None]).mean(axis=0)
    return v


AGGREGATORS = {"mean": mean, "coordinate_median": coordinate_median, "krum": krum,
               "geometric_median": geometric_median, "weighted_mean": weighted_mean,
               "trimmed_mean": trimmed_mean, "multi_krum": multi_krum,
               "centered_clipping": centered_clipping}
