"""Multinomial (softmax) logistic regression with l2, split over Q workers (FRPG, spec 004 sec. 3.0, 5).

Model W in R^{C x p} flattened to w of dimension d = C p (row-major, class-major).
Worker n's local objective on its local index set D_n:

    f_n(w) = (1/|D_n|) sum_{i in D_n} [ logsumexp(W x_i) - (W x_i)_{y_i} ] + (delta/2) ||w||^2

The server term is f_0(w) = (delta/2)||w||^2. The global ``objective`` is the
penalised loss at consensus over the *reliable* workers,
``loss_server = sum_{n reliable} f_n(w) + f_0(w)`` (spec A10); faulty workers get
weight 0. Workers train on ``train_labels`` (label-flipping attacks replace the
faulty workers' entries, see :mod:`fedrepro.sim.attacks`); metrics use the true labels.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from fedrepro.core.kept import Kept
from fedrepro.core.params import NONNEGATIVE, POSITIVE, POSITIVE_INT, Anything, Boolean, Interval, Real
from fedrepro.problems.base import FederatedProblem, client_class_counts, problem_spec

# Lipschitz constants the paper uses in the step sizes (16)/(27) (Sec. V), per dataset.
PAPER_LIPSCHITZ = {"usps": 156.0, "mnist": 295.0, "fashion_mnist": 524.0}


def _softmax_rows(Z: np.ndarray) -> np.ndarray:
    Z = Z - Z.max(axis=-1, keepdims=True)
    np.exp(Z, out=Z)
    Z /= Z.sum(axis=-1, keepdims=True)
    return Z


def _ce(Z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-sample cross-entropy logsumexp(z) - z_y with the max shift; Z (n, C)."""
    zmax = Z.max(axis=1)
    lse = zmax + np.log(np.exp(Z - zmax[:, None]).sum(axis=1))
    return lse - Z[np.arange(Z.shape[0]), y]


class SoftmaxProblem(FederatedProblem):
    """Federated softmax regression.

    Parameters
    ----------
    X : (n, p) training features; y : (n,) int labels in 0..C-1.
    parts : list of m index arrays into X (worker data, disjoint).
    X_test, y_test : test split for ``accuracy``.
    delta : l2 weight (delta_n = delta_0).
    n_classes : C.
    batch : default minibatch size b of the workers.
    L : Lipschitz constant used by the step sizes (paper's per-dataset value).
    eval_fraction : fraction of each worker's data used by the *metrics*
        ``loss_F``/``loss_server`` (a fixed seeded subsample; 1.0 = all).
    """
    METRIC_CATALOGUE = ("objective", "grad_norm2", "loss_server", "w0_norm", "accuracy")

    name = "softmax"
    # instance attributes read by algorithms (see fedrepro.problems.protocols)
    delta: float
    L: float

    def __init__(self, X, y, parts, X_test=None, y_test=None, *, delta=0.003, n_classes=10, batch=15,
                 L=None, eval_fraction=1.0, seed=0, dataset="", bias=False):
        from fedrepro.core.rng import stream

        self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.y = np.asarray(y, dtype=np.int64)
        self.train_labels = self.y.copy()
        self.parts = [np.asarray(p, dtype=np.int64) for p in parts]
        self.X_test = None if X_test is None else np.ascontiguousarray(X_test, dtype=np.float64)
        self.y_test = None if y_test is None else np.asarray(y_test, dtype=np.int64)
        self.delta = float(delta)
        self.C = int(n_classes)
        self.p = self.X.shape[1]
        self.m = len(self.parts)
        self.dim = self.C * self.p
        self.batch = int(batch)
        self.dataset = dataset
        self.bias = bool(bias)
        self.L = float(L) if L is not None else float(np.max(np.einsum("np,np->n", self.X, self.X)))
        self.client_sizes = np.array([len(p) for p in self.parts], dtype=np.int64)
        self.faulty = np.zeros(self.m, dtype=bool)
        self.silent = False
        self.weights = np.ones(self.m)
        if not 0 < eval_fraction <= 1:
            raise ValueError(f"softmax: eval_fraction={eval_fraction} must be in (0, 1]")
        self.eval_fraction = float(eval_fraction)
        if eval_fraction < 1:
            rng = stream(seed, "split", 4)
            self.eval_parts = [np.sort(rng.permutation(p)[:max(1, int(round(eval_fraction * len(p))))])
                               for p in self.parts]
        else:
            self.eval_parts = self.parts
        self._eval_X = [None] * self.m     # each worker's metric rows of X, gathered on first use
        # padded local index table for vectorized minibatch draws: (m, max size)
        self._table = np.zeros((self.m, int(self.client_sizes.max())), dtype=np.int64)
        for i, p in enumerate(self.parts):
            self._table[i, :len(p)] = p

    # ---- faulty workers / attacks ---------------------------------------------
    def set_faulty(self, ids, silent: bool = False) -> None:
        """Mark workers ``ids`` faulty: the metrics (``objective``, ``loss_server``, the worker losses)
        use the reliable workers only; with ``silent`` their uploads are also ignored by the server
        (no-attack baseline). Resets the training labels to the true ones. The training weights
        ``weights`` are not touched: a faulty worker still takes part in the protocol with its weight
        (an algorithm that averages with ``problem.weights`` -- FedAvg, FedADMM -- must not drop it)."""
        self.faulty = np.zeros(self.m, dtype=bool)
        self.faulty[np.asarray(ids, dtype=np.int64)] = True
        self.silent = bool(silent)
        self.train_labels = self.y.copy()          # a fresh attack starts from the true labels

    @property
    def reliable(self) -> np.ndarray:
        return np.flatnonzero(~self.faulty)

    def senders(self, clients: np.ndarray) -> np.ndarray:
        """Boolean mask over ``clients``: whose uploads the server uses."""
        clients = np.asarray(clients)
        return ~self.faulty[clients] if self.silent else np.ones(clients.size, dtype=bool)

    def flip_labels(self, ids, mapping) -> None:
        """Replace the training labels workers ``ids`` use by ``mapping(y)`` (metrics keep true labels)."""
        for i in np.asarray(ids, dtype=np.int64):
            idx = self.parts[i]
            self.train_labels[idx] = mapping(self.y[idx])

    # ---- minibatches -------------------------------------------------------------
    def sample_minibatch(self, rng: np.random.Generator, clients: np.ndarray, b: int | None = None) -> np.ndarray:
        """b local indices per client, uniformly without replacement, all clients at once.

        Returns (len(clients), b) indices into X. A row with a repeated index is
        redrawn (same stream) as the b smallest of uniform keys over its local set."""
        b = self.batch if b is None else int(b)
        clients = np.asarray(clients)
        sizes = self.client_sizes[clients]
        if np.any(sizes < b):
            raise ValueError(f"softmax: minibatch b={b} exceeds a worker's local size {sizes.min()}")
        pos = (rng.random((clients.size, b)) * sizes[:, None]).astype(np.int64)
        s = np.sort(pos, axis=1)
        bad = np.flatnonzero((s[:, 1:] == s[:, :-1]).any(axis=1))
        if bad.size:        # redraw those rows exactly without replacement: b smallest random keys
            keys = rng.random((bad.size, self._table.shape[1]))
            keys[np.arange(self._table.shape[1])[None, :] >= sizes[bad, None]] = np.inf
            pos[bad] = np.argpartition(keys, b - 1, axis=1)[:, :b] if b < keys.shape[1] else np.argsort(keys, axis=1)[:, :b]
        return self._table[clients[:, None], pos]

    def minibatch_grads(self, W: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """q(u; I) = (1/b) sum_{i in I} (softmax(U x_i) - e_{y_i}) x_i^T + delta u, per worker.

        W : (n, d) one model per row; idx : (n, b) sample indices (``sample_minibatch``).
        Uses the workers' training labels. Returns (n, d)."""
        n, b = idx.shape
        Xb = self.X[idx]                                   # (n, b, p)
        Wm = W.reshape(n, self.C, self.p)
        P = _softmax_rows(np.matmul(Xb, Wm.transpose(0, 2, 1)))          # (n, b, C) logits -> probs
        P[np.arange(n)[:, None], np.arange(b)[None, :], self.train_labels[idx]] -= 1.0
        G = np.matmul(P.transpose(0, 2, 1), Xb) / b                       # (n, C, p)
        return G.reshape(n, self.dim) + self.delta * W

    # ---- full local objectives -----------------------------------------------
    def _local(self, W, clients, parts, labels, grad):
        clients = self._clients(clients, self.m)
        shared = W.ndim == 1
        losses = np.empty(clients.size)
        grads = np.empty((clients.size, self.dim)) if grad else None
        for j, c in enumerate(clients):        # ragged local sets: one BLAS call per worker
            w = W if shared else W[j]
            Wm = w.reshape(self.C, self.p)
            idx = parts[c]
            Xc = self._metric_rows(c) if parts is self.eval_parts and self.eval_fraction < 1 else self.X[idx]
            Z = Xc @ Wm.T
            yc = labels[idx]
            losses[j] = _ce(Z, yc).mean() + 0.5 * self.delta * (w @ w)
            if grad:
                P = _softmax_rows(Z)
                P[np.arange(idx.size), yc] -= 1.0
                grads[j] = (P.T @ Xc).ravel() / idx.size + self.delta * w
        return losses, grads

    def _metric_rows(self, c: int) -> np.ndarray:
        """X[eval_parts[c]] for eval_fraction < 1, gathered once: the metrics read the same rows at every
        evaluation (the copies hold that fraction of X; with eval_fraction 1 every use gathers anew,
        so X is never held twice)."""
        if self._eval_X[c] is None:
            rows = self.X[self.eval_parts[c]]
            rows.flags.writeable = False
            self._eval_X[c] = rows
        return self._eval_X[c]

    def client_losses(self, W, clients=None):
        """f_n at W on the worker's full local set and training labels; (len(clients),)."""
        return self._local(W, clients, self.parts, self.train_labels, False)[0]

    def client_grads(self, W, clients=None):
        """grad f_n; (len(clients), d)."""
        return self._local(W, clients, self.parts, self.train_labels, True)[1]

    def reliable_losses(self, W, clients=None):
        """f_n with the TRUE labels on the metric subsample (``eval_fraction``); used by loss_F."""
        return self._local(W, clients, self.eval_parts, self.y, False)[0]

    def server_loss(self, w: np.ndarray) -> float:
        """f_0(w) = (delta/2) ||w||^2."""
        return 0.5 * self.delta * float(w @ w)

    def _consensus(self, w, grad):
        rel = self.reliable
        losses, grads = self._local(w, rel, self.eval_parts, self.y, grad)
        f = float(losses.sum()) + self.server_loss(w)
        g = grads.sum(axis=0) + self.delta * w if grad else None
        return f, g

    def objective(self, w):
        """loss_server = sum_{reliable n} f_n(w) + f_0(w) (true labels)."""
        return self._consensus(w, False)[0]

    def gradient(self, w):
        return self._consensus(w, True)[1]

    @property
    def extra_metric_names(self):
        return ("loss_server", "w0_norm") + (("accuracy",) if self.X_test is not None else ())

    def evaluate(self, w, metrics=None):
        want = self.check_metrics(metrics)
        f, g = self._consensus(w, True)              # one pass for loss and gradient
        out = {"objective": f, "grad_norm2": float(g @ g), "loss_server": f}
        if "w0_norm" in want or "accuracy" in want:
            out.update(self.extra_metrics(w))
        return {k: v for k, v in out.items() if k in want}

    def accuracy(self, w: np.ndarray, X=None, y=None) -> float:
        """Top-1 accuracy (ties -> lowest class index, np.argmax)."""
        X = self.X_test if X is None else X
        y = self.y_test if y is None else y
        return float(np.mean(np.argmax(X @ w.reshape(self.C, self.p).T, axis=1) == y))

    def extra_metrics(self, w):
        out = {"w0_norm": float(np.linalg.norm(w))}
        if self.X_test is not None:
            out["accuracy"] = self.accuracy(w)
        return out

    def lipschitz(self):
        """Per-worker bound 0.5 max_i ||x_i||^2 + delta (softmax-CE Hessian <= 1/2 ||x||^2)."""
        return np.array([0.5 * np.max(np.einsum("np,np->n", self.X[p], self.X[p])) + self.delta
                         for p in self.parts])

    def label_counts(self) -> tuple:
        """Each worker's counts of the classes 0..C-1 (the true labels; a label-flipping attack changes
        what a worker trains on, not its data)."""
        return client_class_counts(self.y, self.parts, self.C)

    def describe(self):
        out = super().describe()
        sq = np.einsum("np,np->n", self.X, self.X)
        out.update(dataset=self.dataset, n_classes=self.C, n_features=self.p, delta=self.delta,
                   batch=self.batch, L_steps=self.L, max_sq_norm=float(sq.max()),
                   n_test=0 if self.X_test is None else int(self.X_test.shape[0]),
                   faulty=[int(i) for i in np.flatnonzero(self.faulty)], bias=self.bias)
        return out


def _design(dataset, drop_classes, bias: bool):
    """(X_train, y_train, X_test, y_test) of ``dataset``: float64 features, ``drop_classes`` removed,
    a column of ones appended when ``bias``; the test pair is None without a split."""
    train, test = dataset.subset("train"), dataset.subset("test")
    Xtr, ytr = np.asarray(train.X, dtype=np.float64), np.asarray(train.y, dtype=np.int64)
    Xte, yte = np.asarray(test.X, dtype=np.float64), np.asarray(test.y, dtype=np.int64)
    if dataset.split is None:
        Xte = yte = None
    drop = list(drop_classes)
    if drop:
        keep = ~np.isin(ytr, drop)
        Xtr, ytr = Xtr[keep], ytr[keep]
        if yte is not None:
            keep = ~np.isin(yte, drop)
            Xte, yte = Xte[keep], yte[keep]
    if bias:
        Xtr = np.hstack([Xtr, np.ones((Xtr.shape[0], 1))])
        if Xte is not None:
            Xte = np.hstack([Xte, np.ones((Xte.shape[0], 1))])
    return Xtr, ytr, Xte, yte


# _shared_design: (dataset, drop_classes, bias) -> read-only arrays. One kept: a job's memory request is
# that of one cell (decoded MNIST is 377 MB); a quick frpg job alternating MNIST and FMNIST cells with
# two kept peaked at 1,233 MB against its 1,068 MB request (695 MB with one), for 6 of its ~120 CPU-s.
_SHARED_DESIGN = Kept(1)


def _shared_design(dataset, drop_classes, bias: bool):
    """:func:`_design` of a :meth:`Dataset.load_shared` dataset, kept for the next cells of the job with
    the same dataset and options (the pixels are decoded once per run of such cells, not once per cell;
    the last ``_SHARED_DESIGN.size`` are kept, and one is dropped before the next is decoded). The arrays
    are read-only: a problem never writes its data."""

    def decode():
        arrays = _design(dataset, drop_classes, bias)
        for arr in arrays:
            if arr is not None:
                arr.flags.writeable = False
        return dataset, arrays

    key = (id(dataset), tuple(int(c) for c in drop_classes), bool(bias))
    return _SHARED_DESIGN.get(key, decode, valid=lambda kept: kept[0] is dataset)[1]     # an id can be reused


def softmax_partition(spec: dict) -> dict:
    """The softmax problem's partition in the one form ``{method, ...params}`` (default ``pair_digit``):
    ``partition: {method: NAME, ...params}``, or the older ``partition: NAME`` with ``partition_params``."""
    from fedrepro.data.partition import partition_spec

    return partition_spec(spec.get("partition"), spec.get("partition_params"), default="pair_digit",
                          where="problem.partition")


def _check_softmax(spec: dict) -> None:
    from fedrepro.data.partition import check_partition_spec

    if "data" in spec:
        if "partition" in spec or "partition_params" in spec:
            raise ValueError("problem 'softmax' with data: the npz's client column is the partition; "
                             "remove problem.partition")
        return
    if not spec.get("dataset"):
        raise ValueError("problem 'softmax' needs problem.dataset (usps | mnist | fashion_mnist) or problem.data "
                         "(a client npz)")
    check_partition_spec(softmax_partition(spec), where="problem.partition")


@problem_spec(check=_check_softmax,
              dataset=[Anything("usps | mnist | fashion_mnist (a processed dataset name)")],
              data=[Anything("path of a client npz (instead of dataset)")],
              partition=[Anything("{method: <rule>, ...params} or a rule name")],
              partition_params=[Anything("the rule's parameters (older form; write them inside partition)")],
              Q=[POSITIVE_INT], delta=[NONNEGATIVE], batch=[POSITIVE_INT], L=[None, POSITIVE], bias=[Boolean],
              drop_classes=[Anything("a list of classes")], eval_fraction=[Interval(Real, 0, 1, closed="right")],
              n_classes=[POSITIVE_INT])
def build_softmax(spec: dict, seed: int, data_dir=None, dataset=None, **kwargs) -> SoftmaxProblem:
    """Builder for ``problem: {name: softmax, ...}``.

    spec keys: ``dataset`` (usps | mnist | fashion_mnist), ``partition`` (default
    ``pair_digit``; any :mod:`fedrepro.data.partition` rule), ``partition_params`` (dict),
    ``Q`` (workers, 20), ``delta`` (0.003), ``batch`` (15), ``L`` (default the
    paper's constant for the dataset), ``bias`` (False), ``drop_classes`` ([]),
    ``eval_fraction`` (1.0). ``dataset`` may also be passed as a loaded
    :class:`fedrepro.data.dataset.Dataset` (tests).
    """
    from fedrepro.data.partition import partition

    if "data" in spec:                  # the user's own npz (fedrepro run --problem softmax)
        from fedrepro.problems.user_data import load_client_npz

        from fedrepro.problems.user_data import class_labels

        X, y, client, extra = load_client_npz(spec["data"])
        y = class_labels(y, spec["data"], "softmax", spec.get("n_classes"))
        parts = [np.flatnonzero(client == i) for i in range(int(client.max()) + 1)]
        return SoftmaxProblem(X, y, parts, extra.get("X_test"), extra.get("y_test"),
                              n_classes=int(spec.get("n_classes", int(y.max()) + 1)),
                              delta=float(spec.get("delta", 0.003)), batch=int(spec.get("batch", 15)),
                              L=spec.get("L"), eval_fraction=float(spec.get("eval_fraction", 1.0)), seed=seed,
                              dataset=Path(spec["data"]).name, bias=bool(spec.get("bias", False)))
    if dataset is None:
        from fedrepro.data.dataset import Dataset, processed_path

        if data_dir is None:
            raise ValueError("softmax: data_dir (processed data folder) is required")
        dataset = Dataset.load_shared(processed_path(data_dir, spec["dataset"]))
        Xtr, ytr, Xte, yte = _shared_design(dataset, spec.get("drop_classes", []), spec.get("bias", False))
    else:
        Xtr, ytr, Xte, yte = _design(dataset, spec.get("drop_classes", []), spec.get("bias", False))
    name = spec.get("dataset", dataset.name)
    Q = int(spec.get("Q", 20))
    params = softmax_partition(spec)
    rule = params.pop("method")
    parts = partition(rule, labels=ytr, seed=seed, m=Q, **params)
    L = spec.get("L", PAPER_LIPSCHITZ.get(name.split("-")[0]))     # "usps-h5" -> usps
    return SoftmaxProblem(Xtr, ytr, parts, Xte, yte, delta=float(spec.get("delta", 0.003)),
                          n_classes=int(spec.get("n_classes", 10)), batch=int(spec.get("batch", 15)),
                          L=L, eval_fraction=float(spec.get("eval_fraction", 1.0)), seed=seed,
                          dataset=name, bias=bool(spec.get("bias", False)))
