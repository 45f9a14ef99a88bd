"""Federated generalized linear models: least squares and l2-regularised logistic regression.

Client i holds A_i (d_i, n) and b_i (d_i,) and the loss

    squared:   f_i(w) = ||A_i w - b_i||^2 / (2 d_i)                              + (lam_i/2)||w||^2
    logistic:  f_i(w) = (1/d_i) sum_t [ln(1 + exp(<a_t, w>)) - b_t <a_t, w>]      + (lam_i/2)||w||^2

with lam_i = lam (``reg_scaling="mean"``, Zhou & Li papers) or lam / d_i (``"per_sample"``,
the authors' MATLAB codes). The global objective is f(w) = sum_i weights_i f_i(w).

Storage (the speed of everything else rests on it):

* dense X: clients are grouped into *buckets* of similar size; bucket b stores its g_b clients as a
  zero-padded C-contiguous stack X_b of shape (g_b, D_b, n) (D_b = largest size in the bucket,
  padding <= 25 %). All per-client products are then batched matmuls over a chunk of a bucket, a
  Python loop runs over at most a few dozen buckets/chunks, and the shared-point gradient needs one
  pass over the data (each chunk is used twice while it is in cache).
* sparse X (CSR, never densified): rows sorted by client; per-client products use the gather trick
  ``data * W[client_of_row, indices]`` with ``np.bincount`` reductions.

The Example 5.1 generator (:func:`build_linreg_synthetic`) writes straight into the padded stacks,
so the m = 4000, n = 1000 instance (3.2 GB) exists in memory once.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from fedrepro.core.params import NONNEGATIVE, POSITIVE_INT, Anything, Options
from fedrepro.problems.base import FederatedProblem, client_class_counts, problem_spec

_WEIGHTS = [None, Anything("client weights, one per client")]

LOSSES = ("squared", "logistic")
REG_SCALINGS = ("mean", "per_sample")
LIPSCHITZ_RULES = ("exact", "code")
KERNELS = ("fused", "blas")
_CHUNK_BYTES = 4 << 20          # per-chunk working set (data of a chunk stays in cache for its 2nd use)
_LOOP_BYTES = 256 << 10        # per-client block size above which scattered clients are looped
_GRAM_MAX_DIM = 256             # least squares with n <= this uses per-client Gram matrices
_GRAM_MAX_BYTES = 256 << 20
_BUCKET_RATIO = 1.25            # max padded size / min size inside a bucket
_KEEP_MAX = 10_000_000          # most per-client gradient numbers one evaluation keeps (or computes at once)


def _choice(what, value, allowed):
    if value not in allowed:
        raise ValueError(f"{what}={value!r} is not allowed; choose one of {list(allowed)}")
    return value


# ---------------------------------------------------------------------------------------------
# dense padded layout
# ---------------------------------------------------------------------------------------------
@dataclass
class _Bucket:
    clients: np.ndarray   # (g,) client ids, ascending
    sizes: np.ndarray     # (g,) d_i
    X: np.ndarray         # (g, D, n) zero-padded
    y: np.ndarray         # (g, D) zero-padded
    mask: np.ndarray      # (g, D) 1.0 on real rows, 0.0 on padding

    @property
    def D(self):
        return self.X.shape[1]


def _bucket_plan(sizes: np.ndarray) -> list[np.ndarray]:
    """Group client ids by size: consecutive (in sorted size) runs with max/min <= _BUCKET_RATIO."""
    order = np.argsort(sizes, kind="stable")
    groups, start = [], 0
    s = sizes[order]
    for k in range(1, len(order) + 1):
        if k == len(order) or s[k] > _BUCKET_RATIO * s[start]:
            groups.append(np.sort(order[start:k]))
            start = k
    return groups


class _DenseLayout:
    """Clients of a dense data set in padded buckets (see module docstring)."""

    def __init__(self, buckets: list[_Bucket], m: int, n: int):
        self.buckets, self.m, self.n = buckets, m, n
        self.bucket_of = np.empty(m, dtype=np.int64)
        self.pos_of = np.empty(m, dtype=np.int64)
        for b, bk in enumerate(buckets):
            self.bucket_of[bk.clients] = b
            self.pos_of[bk.clients] = np.arange(len(bk.clients))

    @classmethod
    def empty(cls, sizes: np.ndarray, n: int) -> "_DenseLayout":
        sizes = np.asarray(sizes, dtype=np.int64)
        buckets = []
        for ids in _bucket_plan(sizes):
            sz = sizes[ids]
            D = int(sz.max())
            mask = (np.arange(D)[None, :] < sz[:, None]).astype(np.float64)
            buckets.append(_Bucket(ids, sz, np.zeros((len(ids), D, n)), np.zeros((len(ids), D)), mask))
        return cls(buckets, len(sizes), n)

    @classmethod
    def from_rows(cls, X: np.ndarray, y: np.ndarray, parts: list[np.ndarray]) -> "_DenseLayout":
        sizes = np.array([len(p) for p in parts], dtype=np.int64)
        lay = cls.empty(sizes, X.shape[1])
        for bk in lay.buckets:
            for j, c in enumerate(bk.clients):      # one-off copy at construction
                rows = parts[c]
                bk.X[j, :len(rows)] = X[rows]
                bk.y[j, :len(rows)] = y[rows]
        return lay

    def chunks(self, clients: np.ndarray):
        """Yield (bucket, positions in bucket, indices into ``clients``) in chunks of <= _CHUNK_BYTES."""
        b_of = self.bucket_of[clients]
        p_of = self.pos_of[clients]
        order = np.lexsort((p_of, b_of))
        bs = b_of[order]
        cuts = np.flatnonzero(np.diff(bs)) + 1
        for seg in np.split(order, cuts):
            if len(seg) == 0:
                continue
            bk = self.buckets[b_of[seg[0]]]
            per = max(1, _CHUNK_BYTES // (bk.D * self.n * 8))
            for s0 in range(0, len(seg), per):
                idx = seg[s0:s0 + per]
                yield bk, p_of[idx], idx


def _take(arr: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """arr[pos] as a view when ``pos`` is a consecutive range, else a gathered copy."""
    if pos[-1] - pos[0] == len(pos) - 1:
        return arr[pos[0]:pos[-1] + 1]
    return arr[pos]


# ---------------------------------------------------------------------------------------------
class LinearModelProblem(FederatedProblem):
    """Federated least squares / logistic regression.

    Parameters
    ----------
    X : ndarray (n_samples, dim) or scipy.sparse matrix (kept sparse, CSR)
    y : ndarray (n_samples,); logistic labels in {0, 1}
    client_ids : ndarray (n_samples,) of ints in 0..m-1, or a list of m index arrays
        (``fedrepro.data.partition`` output).
    loss : "squared" | "logistic"
    lam : float, l2 regularisation strength
    reg_scaling : "mean" (lam_i = lam; Zhou & Li papers) | "per_sample" (lam_i = lam / d_i; their codes)
    weights : (m,) client weights (default 1/m)
    lipschitz_rule : "exact" (r_i = lmax(A_i^T A_i)/(c d_i) + lam_i with c = 1 squared, 4 logistic)
        | "code" (FedADMM code's logistic rule lmax/(5 d_i) + lam/d_i)
    kernel : "fused" (default: :mod:`~fedrepro.problems.glm_kernels`, every row read once per
        evaluation) | "blas" (the two-pass BLAS computation, X w then s^T X; kept as the reference
        the fused kernels are tested and benchmarked against). They differ by rounding only.
    """
    METRIC_CATALOGUE = ("objective", "grad_norm2", "accuracy")

    loss: str           # read by FedADMM's r0_rule="code" (fedrepro.problems.protocols)

    def __init__(self, X=None, y=None, client_ids=None, loss: str = "squared", lam: float = 0.0,
                 reg_scaling: str = "mean", weights=None, name: str | None = None,
                 lipschitz_rule: str = "exact", kernel: str = "fused", *, _layout: _DenseLayout | None = None,
                 _sizes: np.ndarray | None = None):
        self.loss = _choice("loss", loss, LOSSES)
        self.reg_scaling = _choice("reg_scaling", reg_scaling, REG_SCALINGS)
        self.lipschitz_rule = _choice("lipschitz_rule", lipschitz_rule, LIPSCHITZ_RULES)
        self.kernel = _choice("kernel", kernel, KERNELS)
        self.lam = float(lam)
        self.name = name or f"{loss}_glm"
        self._lip = None
        self._cache_key = None          # (w, all client gradients at w) of the last evaluation
        self._gram = None               # (H_i, c_i) for small-n least squares, built on first use
        if _layout is not None:                                   # built by a generator
            self.sparse = False
            self._dense = _layout
            self.m, self.dim = _layout.m, _layout.n
            self.client_sizes = np.asarray(_sizes, dtype=np.int64)
        else:
            if X is None or y is None or client_ids is None:
                raise ValueError("LinearModelProblem needs X, y and client_ids")
            y = np.asarray(y, dtype=np.float64)
            n_samples = X.shape[0]
            if y.shape != (n_samples,):
                raise ValueError(f"y has shape {y.shape}, expected ({n_samples},)")
            parts = self._parts(client_ids, n_samples)
            self.m, self.dim = len(parts), X.shape[1]
            self.client_sizes = np.array([len(p) for p in parts], dtype=np.int64)
            if self.client_sizes.min() < 1:
                raise ValueError("every client needs at least one sample")
            if self.loss == "logistic" and not np.all((y == 0) | (y == 1)):
                found = np.unique(y)
                raise ValueError(f"logistic labels must be in {{0, 1}}; found {len(found)} distinct value(s): "
                                 f"{', '.join(f'{v:g}' for v in found[:10])}{', ...' if len(found) > 10 else ''}")
            if self.loss == "logistic":     # the partition's label counts (label_counts), before any reordering
                self._label_counts = client_class_counts(y.astype(np.int64), parts, 2)
            self.sparse = sp.issparse(X)
            if self.sparse:
                rows = np.concatenate(parts)
                self._X = sp.csr_matrix(X)[rows]
                self._X.sort_indices()
                if self.dim >= 2 ** 32:
                    raise ValueError("CSR data with 2^32 or more columns are not supported")
                self._cols = self._X.indices.astype(np.uint32)     # column indices for the fused kernel
                self._y = y[rows]
                self._starts = np.concatenate(([0], np.cumsum(self.client_sizes)))
                self._row_client = np.repeat(np.arange(self.m), self.client_sizes)
                self._sub_key, self._sub = None, None
            else:
                self._dense = _DenseLayout.from_rows(np.asarray(X, dtype=np.float64), y, parts)
        if weights is None:
            self.weights = np.full(self.m, 1.0 / self.m)
        else:
            self.weights = np.asarray(weights, dtype=np.float64)
            if self.weights.shape != (self.m,):
                raise ValueError(f"weights has shape {self.weights.shape}, expected ({self.m},)")
        self.lam_i = self.lam / self.client_sizes if self.reg_scaling == "per_sample" \
            else np.full(self.m, self.lam)
        if self.kernel == "fused":
            self._load_kernels()

    def _load_kernels(self):
        """Compile or load the fused kernels now, at set-up, so that a run's timed CPU seconds never
        include it (the first call in a process costs 0.3 s from the cache, 1-3 s to compile)."""
        few = np.arange(min(self.m, 2))
        self._fused(np.zeros((len(few), self.dim)), few, True)

    @staticmethod
    def _parts(client_ids, n_samples):
        if isinstance(client_ids, (list, tuple)):
            parts = [np.asarray(p, dtype=np.int64) for p in client_ids]
            allidx = np.concatenate(parts)
            if len(allidx) and (allidx.min() < 0 or allidx.max() >= n_samples):
                raise ValueError("client index arrays reference rows outside X")
            return parts
        ids = np.asarray(client_ids, dtype=np.int64)
        if ids.shape != (n_samples,):
            raise ValueError(f"client_ids has shape {ids.shape}, expected ({n_samples},)")
        if ids.min() < 0:
            raise ValueError("client ids must be >= 0 (unassigned rows are not allowed)")
        m = int(ids.max()) + 1
        order = np.argsort(ids, kind="stable")
        return np.split(order, np.cumsum(np.bincount(ids, minlength=m))[:-1])

    # ---- per-sample loss ---------------------------------------------------------------------
    def _loss_deriv(self, z, y, need_loss=True):
        """Per-sample loss value and derivative d loss / d z (same shapes as z)."""
        if self.loss == "squared":
            r = z - y
            return (0.5 * r * r if need_loss else None), r
        val = (np.logaddexp(0.0, z) - y * z) if need_loss else None
        return val, expit(z) - y

    # ---- primitives ----------------------------------------------------------------------------
    def client_losses(self, W, clients=None):
        return self._per_client(W, clients, need_loss=True, need_grad=False)[0]

    def client_grads(self, W, clients=None):
        W = np.asarray(W, dtype=np.float64)
        c = self._clients(clients, self.m)
        if W.ndim == 1 and self._cache_key is not None and np.array_equal(W, self._cache_key[0]):
            return self._cache_key[1][c]
        if W.ndim == 2 and self._use_gram():
            return self._gram_grads(W, c)
        return self._per_client(W, c, need_loss=False, need_grad=True)[1]

    # ---- small-n least squares: per-client Gram matrices -----------------------------------------
    def _use_gram(self):
        """Squared loss, dense, small n: grad f_i(w_i) = H_i w_i - c_i with H_i = A_i^T A_i / d_i
        (one batched matmul instead of two passes over the data; spec 4.1 notes n = 100)."""
        return (self.loss == "squared" and not self.sparse and self.dim <= _GRAM_MAX_DIM
                and self.m * self.dim * self.dim * 8 <= _GRAM_MAX_BYTES)

    def _build_gram(self):
        """H_i = A_i^T A_i / d_i (m, n, n), c_i = A_i^T b_i / d_i (m, n), e_i = ||b_i||^2 / (2 d_i)."""
        if self._gram is not None:
            return
        H = np.empty((self.m, self.dim, self.dim))
        cv = np.empty((self.m, self.dim))
        e = np.empty(self.m)
        for bk, pos, idx in self._dense.chunks(np.arange(self.m)):
            Xc, yc = _take(bk.X, pos), _take(bk.y, pos)
            dsz = bk.sizes[pos][:, None]
            H[idx] = np.matmul(Xc.transpose(0, 2, 1), Xc) / dsz[:, :, None]
            cv[idx] = np.matmul(yc[:, None, :], Xc)[:, 0, :] / dsz
            e[idx] = 0.5 * np.einsum("ij,ij->i", yc, yc) / dsz[:, 0]
        self._gram, self._gram_sel = (H, cv, e), (None, None)

    def _gram_global(self, w):
        """All client losses and gradients at a shared w from the Gram matrices:
        G_i = H_i w - c_i, f_i = w.(H_i w)/2 - c_i.w + e_i = (w.G_i - c_i.w)/2 + e_i."""
        self._build_gram()
        H, cv, e = self._gram
        m, n = self.m, self.dim
        G = (H.reshape(m * n, n) @ w).reshape(m, n)
        cw = cv @ w
        G -= cv
        losses = 0.5 * (G @ w - cw) + e
        return losses, G

    def _gram_grads(self, W, c):
        self._build_gram()
        key = c.tobytes()
        if self._gram_sel[0] != key:                    # same clients for the k0 steps of a round
            self._gram_sel = (key, (self._gram[0][c], self._gram[1][c]))
        Hs, cs = self._gram_sel[1]
        G = np.matmul(Hs, W[:, :, None])[:, :, 0]
        G -= cs
        lam = self.lam_i[c]
        if np.any(lam):
            G += lam[:, None] * W
        return G

    def _per_client(self, W, clients, need_loss, need_grad):
        """(losses (k,), grads (k, n)) of the requested clients at W ((n,) or (k, n))."""
        c = self._clients(clients, self.m)
        W = np.asarray(W, dtype=np.float64)
        shared = W.ndim == 1
        if not shared and W.shape != (len(c), self.dim):
            raise ValueError(f"W has shape {W.shape}, expected ({len(c)}, {self.dim}) or ({self.dim},)")
        k = len(c)
        if self.kernel == "fused" and k:
            losses, grads, _ = self._fused(W, c, need_grad, need_loss)
            losses = losses if need_loss else None
        else:
            losses = np.empty(k) if need_loss else None
            grads = np.empty((k, self.dim)) if need_grad else None
            if k and self.sparse:
                self._sparse_per_client(W, c, losses, grads)
            elif k:
                self._dense_per_client(W, c, losses, grads)
        lam = self.lam_i[c]
        if need_loss and np.any(lam):
            sq = float(W @ W) if shared else np.einsum("ij,ij->i", W, W)
            losses += 0.5 * lam * sq
        if need_grad and np.any(lam):
            grads += lam[:, None] * (W[None, :] if shared else W)
        return losses, grads

    def _dense_per_client(self, W, c, losses, grads):
        """The two-pass BLAS computation (``kernel="blas"``) of :meth:`_per_client` on dense data,
        filling ``losses`` / ``grads`` (either may be None)."""
        shared, need_loss, need_grad = W.ndim == 1, losses is not None, grads is not None
        for bk, pos, idx in self._dense.chunks(c):
            if pos[-1] - pos[0] != len(pos) - 1 and bk.D * self.dim * 8 >= _LOOP_BYTES:
                # scattered large clients (each block >= _LOOP_BYTES of BLAS work): per-client views
                # beat both gathering a copy and computing on the contiguous span (each reads the
                # data 2x; measured FedAvg at m = 1000, n = 1000: 0.34 s/round here vs 0.58 s)
                for p, i in zip(pos, idx):
                    Xi, di = bk.X[p, :bk.sizes[p]], bk.sizes[p]
                    val, s = self._loss_deriv(Xi @ (W if shared else W[i]), bk.y[p, :di], need_loss)
                    if need_loss:
                        losses[i] = val.sum() / di
                    if need_grad:
                        grads[i] = (s / di) @ Xi
                continue
            Xc = _take(bk.X, pos)
            g, D, n = Xc.shape
            if shared:
                z = (Xc.reshape(g * D, n) @ W).reshape(g, D)
            else:
                z = np.matmul(Xc, W[idx][:, :, None])[:, :, 0]
            val, s = self._loss_deriv(z, _take(bk.y, pos), need_loss)
            mask, dsz = _take(bk.mask, pos), bk.sizes[pos]
            if need_loss:
                losses[idx] = np.einsum("ij,ij->i", val, mask) / dsz
            if need_grad:
                s *= mask / dsz[:, None]
                grads[idx] = np.matmul(s[:, None, :], Xc)[:, 0, :]

    def _fused(self, W, c, need_grad, need_loss=True):
        """(losses (k,) (zeros unless ``need_loss``), grads (k, n) or None, correct counts (k,)) of
        clients ``c`` at W ((n,) or (k, n)) with the row-fused kernels, without the l2 term."""
        from fedrepro.problems import glm_kernels as kern

        shared = W.ndim == 1
        W2 = np.ascontiguousarray(W[None, :] if shared else W, dtype=np.float64)
        scale = 1.0 / self.client_sizes[c]
        kind = kern.SQUARED if self.loss == "squared" else kern.LOGISTIC
        if self.sparse:
            G, L, C = kern.sparse_clients(self._X, self._cols, self._y, self._starts, c, W2, shared, scale, kind,
                                          need_grad, need_loss)
        else:
            lay = self._dense
            b_of = lay.bucket_of[c]
            order = np.argsort(b_of, kind="stable")
            cuts = np.flatnonzero(np.diff(b_of[order])) + 1
            groups = [(int(b_of[seg[0]]), lay.pos_of[c[seg]], seg) for seg in np.split(order, cuts)]
            G, L, C = kern.dense_clients(lay.buckets, groups, W2, shared, scale, kind, need_grad, len(c), self.dim,
                                         need_loss)
        return L, G, C

    def _sparse_sub(self, c):
        """Rows of clients ``c`` (cached for the last client set): sub-CSR, labels, row -> local
        client, nnz -> row, flat gather index into a (len(c), n) array."""
        key = c.tobytes()
        if self._sub_key == key:
            return self._sub
        if len(c) == self.m and np.array_equal(c, np.arange(self.m)):
            Xs, ys, rl = self._X, self._y, self._row_client
        else:
            sz = self.client_sizes[c]
            rows = np.repeat(self._starts[c] - np.concatenate(([0], np.cumsum(sz)[:-1])), sz) \
                + np.arange(int(sz.sum()))
            Xs, ys = self._X[rows], self._y[rows]
            rl = np.repeat(np.arange(len(c)), sz)
        counts = np.diff(Xs.indptr)
        nnz_row = np.repeat(np.arange(Xs.shape[0]), counts)
        flat = rl[nnz_row] * self.dim + Xs.indices
        nonempty = np.flatnonzero(counts)
        self._sub_key, self._sub = key, (Xs, ys, rl, counts, flat, nonempty)
        return self._sub

    def _sparse_per_client(self, W, c, losses, grads):
        Xs, ys, rl, counts, flat, nonempty = self._sparse_sub(c)
        k = len(c)
        if W.ndim == 1:
            z = Xs @ W
        else:
            # z_row = <x_row, w_{client(row)}>: gather, then segment sums (reduceat: 10x bincount)
            z = np.zeros(Xs.shape[0])
            if len(nonempty):
                z[nonempty] = np.add.reduceat(Xs.data * W.ravel()[flat], Xs.indptr[nonempty])
        val, s = self._loss_deriv(z, ys, losses is not None)
        dsz = self.client_sizes[c].astype(np.float64)
        if losses is not None:
            losses[:] = np.bincount(rl, weights=val, minlength=k) / dsz
        if grads is not None:
            s = s / dsz[rl]
            grads[:] = np.bincount(flat, weights=Xs.data * np.repeat(s, counts),
                                   minlength=k * self.dim).reshape(k, self.dim)

    # ---- global quantities in one pass ---------------------------------------------------------
    def _global(self, w, keep_clients=True):
        """One pass over the data at the shared point w: (client losses (m,), grad f (n,),
        correctly classified samples). With ``keep_clients`` the per-client gradients are
        cached (when at most 1e7 numbers) for the algorithms' next ``client_grads(w, S)``."""
        w = np.asarray(w, dtype=np.float64)
        m, n = self.m, self.dim
        keep = keep_clients and m * n <= _KEEP_MAX and not self.sparse
        losses = np.empty(m)
        grad = np.zeros(n)
        G = np.empty((m, n)) if keep else None
        correct = 0.0
        if self._use_gram():
            losses, G = self._gram_global(w)
            grad = self.weights @ G
            keep = keep_clients
        elif self.kernel == "fused" and not self.sparse:
            # (CSR at a shared point stays with scipy's two products below: measured faster on QSAR,
            # 1.4 vs 1.7 ms, whose 10 MB of CSR data are re-read from cache anyway)
            if keep:
                losses, G, cnt = self._fused(w, np.arange(m), True)
                grad = self.weights @ G
            else:                           # not kept: per-client gradients in slices of <= 1e7 numbers
                cnt = np.empty(m)
                per = max(1, _KEEP_MAX // max(n, 1))
                for a in range(0, m, per):
                    sl = np.arange(a, min(m, a + per))
                    losses[sl], Gs, cnt[sl] = self._fused(w, sl, True)
                    grad += self.weights[sl] @ Gs
            correct = float(cnt.sum()) if self.loss == "logistic" else 0.0
        elif self.sparse:
            z = self._X @ w
            val, s = self._loss_deriv(z, self._y)
            dsz = self.client_sizes.astype(np.float64)
            losses[:] = np.bincount(self._row_client, weights=val, minlength=m) / dsz
            grad = self._X.T @ (s * (self.weights / dsz)[self._row_client])
            if self.loss == "logistic":
                correct = float(np.sum((z > 0) == (self._y > 0.5)))
        else:
            for bk, pos, idx in self._dense.chunks(np.arange(m)):
                Xc = _take(bk.X, pos)
                g, D, _ = Xc.shape
                Xf = Xc.reshape(g * D, n)
                z = (Xf @ w).reshape(g, D)
                yc, mask, dsz = _take(bk.y, pos), _take(bk.mask, pos), bk.sizes[pos]
                val, s = self._loss_deriv(z, yc)
                losses[idx] = np.einsum("ij,ij->i", val, mask) / dsz
                s *= mask / dsz[:, None]
                if keep:
                    G[idx] = np.matmul(s[:, None, :], Xc)[:, 0, :]
                else:
                    grad += (s * self.weights[idx][:, None]).reshape(-1) @ Xf
                if self.loss == "logistic":
                    correct += float(np.sum(((z > 0) == (yc > 0.5)) * mask))
            if keep:
                grad = self.weights @ G
        if np.any(self.lam_i):
            losses += 0.5 * self.lam_i * float(w @ w)
            grad = grad + float(self.weights @ self.lam_i) * w
            if keep:
                G += self.lam_i[:, None] * w[None, :]
        if keep or keep_clients:
            self._cache_key = (w.copy(), G) if keep else None
        return losses, grad, correct

    def objective(self, w):
        return float(self.weights @ self._global(w, keep_clients=False)[0])

    def gradient(self, w):
        return self._global(w, keep_clients=False)[1]

    @property
    def extra_metric_names(self):
        return ("accuracy",) if self.loss == "logistic" else ()

    def evaluate(self, w, metrics=None):
        want = self.check_metrics(metrics)
        losses, g, correct = self._global(w)             # one pass; keeps G for client_grads(w)
        out = {"objective": float(self.weights @ losses), "grad_norm2": float(g @ g)}
        if self.loss == "logistic":
            out["accuracy"] = correct / float(self.client_sizes.sum())
        return {k: v for k, v in out.items() if k in want}

    def extra_metrics(self, w):
        if self.loss != "logistic":
            return {}
        return {"accuracy": self._global(w)[2] / float(self.client_sizes.sum())}

    # ---- Lipschitz constants -------------------------------------------------------------------
    def gram_lmax(self) -> np.ndarray:
        """lambda_max(A_i^T A_i) for every client, shape (m,) (eigvalsh of the smaller Gram matrix;
        sparse: small Gram matrices from sparse products, eigsh for large clients)."""
        out = np.empty(self.m)
        if self.sparse:
            for i in range(self.m):               # one-off setup
                Ai = self._X[self._starts[i]:self._starts[i + 1]]
                di = Ai.shape[0]
                if min(di, self.dim) <= 1500:
                    K = (Ai @ Ai.T) if di <= self.dim else (Ai.T @ Ai)
                    out[i] = np.linalg.eigvalsh(K.toarray())[-1]
                else:
                    from scipy.sparse.linalg import svds
                    out[i] = svds(Ai, k=1, tol=1e-12, return_singular_vectors=False)[0] ** 2
            return out
        for bk, pos, idx in self._dense.chunks(np.arange(self.m)):
            Xc = _take(bk.X, pos)
            K = np.matmul(Xc, Xc.transpose(0, 2, 1)) if bk.D <= self.dim \
                else np.matmul(Xc.transpose(0, 2, 1), Xc)
            out[idx] = np.linalg.eigvalsh(K)[:, -1]
        return out

    def lipschitz(self) -> np.ndarray:
        """r_i, shape (m,): squared lmax/d_i + lam_i; logistic lmax/(4 d_i) + lam_i
        (``lipschitz_rule="code"``: lmax/(5 d_i) + lam/d_i, FedADMM code)."""
        if self._lip is None:
            lmax = self.gram_lmax() / self.client_sizes
            if self.loss == "squared":
                r = lmax + self.lam_i
            elif self.lipschitz_rule == "code":
                r = lmax / 5.0 + self.lam / self.client_sizes
            else:
                r = lmax / 4.0 + self.lam_i
            self._lip = r
        return self._lip.copy()

    # ---- reference solution --------------------------------------------------------------------
    def solve_exact(self, tol: float = 1e-12, max_iter: int = 10_000) -> np.ndarray:
        """Central minimiser of f: normal equations for squared loss, L-BFGS otherwise."""
        if self.loss == "squared":
            n = self.dim
            H = np.zeros((n, n))
            c = np.zeros(n)
            wsc = self.weights / self.client_sizes
            if self.sparse:
                Xw = sp.diags(np.sqrt(wsc[self._row_client])) @ self._X
                H = (Xw.T @ Xw).toarray()
                c = self._X.T @ (wsc[self._row_client] * self._y)
            else:
                for bk, pos, idx in self._dense.chunks(np.arange(self.m)):
                    Xc = _take(bk.X, pos)
                    g, D, _ = Xc.shape
                    Xs = (Xc * np.sqrt(wsc[idx])[:, None, None]).reshape(g * D, n)
                    H += Xs.T @ Xs
                    c += (_take(bk.y, pos) * wsc[idx][:, None]).reshape(-1) @ Xc.reshape(g * D, n)
            H += float(self.weights @ self.lam_i) * np.eye(n)
            return np.linalg.solve(H, c)
        from scipy.optimize import minimize

        def fg(w):
            losses, g, _ = self._global(w)
            return float(self.weights @ losses), g
        res = minimize(fg, np.zeros(self.dim), jac=True, method="L-BFGS-B",
                       options={"maxiter": max_iter, "ftol": 1e-15, "gtol": tol, "maxcor": 30})
        return res.x

    _label_counts = None                # (labels, counts) of a logistic problem; least squares: none

    def label_counts(self) -> tuple:
        """Logistic: the clients' counts of labels 0 and 1; least squares: each client's sample count."""
        return self._label_counts if self._label_counts is not None else super().label_counts()

    def describe(self) -> dict:
        out = super().describe()
        out.update(loss=self.loss, lam=self.lam, reg_scaling=self.reg_scaling,
                   sparse=bool(self.sparse), lipschitz_rule=self.lipschitz_rule, kernel=self.kernel)
        return out


# ---------------------------------------------------------------------------------------------
# builders
# ---------------------------------------------------------------------------------------------
_GEN_CHUNK_ROWS = 8192


def _mixture_rows(rng, types: np.ndarray, width: int, t_df: float = 5.0) -> np.ndarray:
    """Rows of i.i.d. entries: type 0 N(0,1), 1 Student-t(df), 2 Uniform[-5, 5]; shape (len, width)."""
    out = rng.standard_normal((len(types), width))
    for t, draw in ((1, lambda k: rng.standard_t(t_df, size=(k, width))),
                    (2, lambda k: rng.uniform(-5.0, 5.0, size=(k, width)))):
        sel = np.flatnonzero(types == t)
        if len(sel):
            out[sel] = draw(len(sel))
    return out


_KERNEL = [Options(*KERNELS)]


@problem_spec(m=[POSITIVE_INT], n=[POSITIVE_INT], d_low=[POSITIVE_INT], d_high=[POSITIVE_INT],
              generator=[Options("paper", "code")], weights=_WEIGHTS, kernel=_KERNEL)
def build_linreg_synthetic(spec: dict, seed: int, **kwargs) -> LinearModelProblem:
    """Zhou & Li Example 5.1 (spec 000 Sec. 4.1): d_i ~ U{50..150}; d samples (a, b) with all
    entries i.i.d. from N(0,1) (ceil(d/3) samples), t(5) (ceil(d/3)) or U[-5,5] (the rest), shuffled
    and split into the clients. ``generator: code`` uses the authors' code counts (ceil(m/3)
    t(5) rows and ceil(m/3) uniform rows, the rest N(0,1) — the code's m-for-d slip).

    spec keys: m (100), n (100), d_low (50), d_high (150), generator ("paper" | "code"),
    kernel ("fused" | "blas", see :class:`LinearModelProblem`).
    """
    from fedrepro.data.partition import uniform_client_sizes
    from fedrepro.core.rng import stream

    m = int(spec.get("m", 100))
    n = int(spec.get("n", 100))
    gen = _choice("generator", spec.get("generator", "paper"), ("paper", "code"))
    sizes = uniform_client_sizes(m, int(spec.get("d_low", 50)), int(spec.get("d_high", 150)), seed=seed)
    d = int(sizes.sum())
    rng = stream(seed, "data")
    k1 = math.ceil(d / 3) if gen == "paper" else math.ceil(m / 3)
    k2 = k1 if gen == "paper" else math.ceil(m / 3)
    types = np.zeros(d, dtype=np.int8)
    if gen == "paper":
        types[k1:k1 + k2] = 1
        types[k1 + k2:] = 2
    else:
        types[:k1] = 1
        types[k1:k1 + k2] = 2
    types = rng.permutation(types)          # the shuffle of step 3
    lay = _DenseLayout.empty(sizes, n)
    # rows are filled in bucket order; the row-type sequence is a uniform permutation, so
    # every client receives i.i.d. mixture rows exactly as "shuffle, then split".
    row = 0
    for bk in lay.buckets:
        flatmask = bk.mask.reshape(-1) > 0
        slots = np.flatnonzero(flatmask)
        Xf = bk.X.reshape(-1, n)
        yf = bk.y.reshape(-1)
        for s0 in range(0, len(slots), _GEN_CHUNK_ROWS):
            sl = slots[s0:s0 + _GEN_CHUNK_ROWS]
            draws = _mixture_rows(rng, types[row:row + len(sl)], n + 1)
            Xf[sl] = draws[:, :n]
            yf[sl] = draws[:, n]
            row += len(sl)
    return LinearModelProblem(loss="squared", lam=0.0, name=f"linreg_synthetic(n={n},m={m},{gen})",
                              _layout=lay, _sizes=sizes, weights=spec.get("weights"),
                              kernel=spec.get("kernel", "fused"))


def _col_l2(X):
    """Scale every column to unit Euclidean norm (zero columns stay zero); code Normalization(X,3)."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        nrm = np.sqrt(np.asarray(X.multiply(X).sum(axis=0)).ravel())
        scale = np.divide(1.0, nrm, out=np.zeros_like(nrm), where=nrm > 0)
        return X @ sp.diags(scale)
    X = np.asarray(X, dtype=np.float64)
    nrm = np.linalg.norm(X, axis=0)
    return X * np.divide(1.0, nrm, out=np.zeros_like(nrm), where=nrm > 0)


def _normalize(X, how):
    how = _choice("normalize", how, ("col_l2", "none"))
    return _col_l2(X) if how == "col_l2" else X


def logreg_from_arrays(X, y, spec: dict, seed: int, name: str) -> LinearModelProblem:
    """Normalise, partition (spec['partition'], default Zhou & Li random cuts) and build."""
    from fedrepro.data.partition import partition, partition_input

    y = np.asarray(y, dtype=np.float64)
    if set(np.unique(y)) <= {-1.0, 1.0} and np.any(y == -1):
        y = (y > 0).astype(np.float64)                        # -1 -> 0 (spec 4.2)
    X = _normalize(X, spec.get("normalize", "col_l2"))
    m = int(spec.get("m", 100))
    pspec = logreg_partition(spec)
    method = pspec.pop("method")
    # label rules (dirichlet, label_shards, ...) split by the class labels; the size rules by the row count
    labels = y.astype(np.int64) if partition_input(method) == "labels" else None
    parts = partition(method, n_samples=X.shape[0], labels=labels, seed=seed, m=m, **pspec)
    return LinearModelProblem(X, y, parts, loss="logistic", lam=float(spec.get("lam", 1e-3)),
                              reg_scaling=spec.get("reg_scaling", "mean"),
                              lipschitz_rule=spec.get("lipschitz_rule", "exact"),
                              weights=spec.get("weights"), name=name, kernel=spec.get("kernel", "fused"))


LOGREG_PARTITION = {"method": "random_cuts", "min_frac": 0.025}       # Zhou & Li's random cuts


def logreg_partition(spec: dict) -> dict:
    """The logistic problem's partition block in its one form ``{method, ...params}`` (default Zhou &
    Li's random cuts); any rule of :mod:`fedrepro.data.partition` on the sample count or the labels."""
    from fedrepro.data.partition import partition_spec

    return partition_spec(spec.get("partition"), default=LOGREG_PARTITION, where="problem.partition")


def _check_logreg(spec: dict) -> None:
    """Config-time checks of a logreg block: a dataset is named; the partition rule and its parameters."""
    from fedrepro.data.partition import check_partition_spec

    if not spec.get("dataset"):
        raise ValueError("problem 'logreg' needs problem.dataset: a processed dataset name (e.g. adult, "
                         "real_sim, qsar_oral_toxicity; `fedrepro list` names them)")
    check_partition_spec(logreg_partition(spec), where="problem.partition")


@problem_spec(check=_check_logreg,
              dataset=[Anything("a processed dataset name")], m=[POSITIVE_INT], lam=[NONNEGATIVE],
              reg_scaling=[Options(*REG_SCALINGS)], normalize=[Options("col_l2", "none")],
              partition=[Anything("a partition block {method: ..., ...}")], lipschitz_rule=[Options(*LIPSCHITZ_RULES)],
              split=[None, Options("train", "test")], weights=_WEIGHTS, kernel=_KERNEL)
def build_logreg(spec: dict, seed: int, data_dir=None, **kwargs) -> LinearModelProblem:
    """Zhou & Li Example 5.2: l2-regularised logistic regression on a processed dataset.

    spec keys: dataset (registry name), m, lam (1e-3), reg_scaling ("mean" paper | "per_sample"
    code), normalize ("col_l2" | "none"), partition ({method: random_cuts, min_frac: 0.025}),
    lipschitz_rule ("exact" | "code"), kernel ("fused" | "blas").
    """
    from fedrepro.data.dataset import Dataset, processed_path

    if data_dir is None:
        raise ValueError("build_logreg needs data_dir (the processed-data folder)")
    ds = Dataset.load_shared(processed_path(data_dir, spec["dataset"]))
    X, y = (ds.X if ds.is_sparse else np.asarray(ds.X)), ds.y
    if ds.split is not None and spec.get("split"):
        sub = ds.subset(spec["split"])
        X, y = sub.X, sub.y
    return logreg_from_arrays(X, y, spec, seed, name=f"logreg({spec['dataset']},m={spec.get('m', 100)})")


@problem_spec(data=[Anything("path of an npz with X, y, client")], X=[Anything("(N, n) data")],
              y=[Anything("(N,) targets")], client_ids=[Anything("(N,) client id per row")],
              loss=[Options(*LOSSES)], lam=[NONNEGATIVE], reg_scaling=[Options(*REG_SCALINGS)], weights=_WEIGHTS,
              lipschitz_rule=[Options(*LIPSCHITZ_RULES)], label=[Anything("a label")], kernel=_KERNEL)
def build_linreg(spec: dict, seed: int, data_dir=None, **kwargs) -> LinearModelProblem:
    """Least squares (or logistic, ``loss``) on user data: ``data`` = path of a client npz
    (:mod:`fedrepro.problems.user_data`), or the arrays ``X``, ``y``, ``client_ids``. ``weights``:
    None (1/m), ``"ones"`` (f = sum_i f_i) or one weight per client."""
    from fedrepro.problems.user_data import load_client_npz

    if "data" in spec:
        X, y, ids, _ = load_client_npz(spec["data"])
        label = spec.get("label", f"{'linreg' if spec.get('loss', 'squared') == 'squared' else 'logreg'}:"
                                  f"{Path(spec['data']).name}")
    else:
        X, y, ids = spec["X"], spec["y"], spec["client_ids"]
        label = spec.get("label", "linreg")
    loss = spec.get("loss", "squared")
    if loss == "logistic":
        from fedrepro.problems.user_data import binary_labels

        y = binary_labels(y, spec["data"] if "data" in spec else "problem.y")
    weights = spec.get("weights")
    if isinstance(weights, str):
        if weights != "ones":
            raise ValueError(f"problem weights={weights!r} is not allowed; use 'ones', a list or none (1/m)")
        weights = np.ones(len(np.unique(ids)) if not isinstance(ids, (list, tuple)) else len(ids))
    return LinearModelProblem(X, np.asarray(y, dtype=float), ids, loss=loss, lam=float(spec.get("lam", 0.0)),
                              reg_scaling=spec.get("reg_scaling", "mean"), weights=weights,
                              lipschitz_rule=spec.get("lipschitz_rule", "exact"), name=label,
                              kernel=spec.get("kernel", "fused"))
