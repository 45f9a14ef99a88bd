"""Neural-network classification on federated clients (spec 003 §4-5, 002 §5).

One shared training array ``X`` (n, features) float32 and int labels ``y``; client i holds
the index array ``parts[i]`` into it (never a copy of its data). The model is a
:class:`fedrepro.nn.Model`; its parameters are one flat float32 vector, so ``dim =
model.n_params`` and every algorithm works on vectors exactly as on the convex problems.

Local objective of client i (eval mode: no dropout)::

    f_i(w) = (1/n_i) sum_{j in parts[i]} loss(w; x_j, y_j)        (the model's head)

and ``f = sum_i weights_i f_i`` with ``weights = 1/m`` (default) or ``n_i / n``.

Minibatches (what local SGD reads, :mod:`fedrepro.algorithms.local_epochs`):
:meth:`NeuralProblem.epoch_batches` yields the index arrays of ``epochs`` passes over a
client's data; each pass is a fresh permutation drawn in sequence from the one stream the
caller gives (the harness uses ``ctx.rng("minibatch", r, client)``), cut into batches of B
with the last partial batch kept (PyTorch ``DataLoader(shuffle=True, drop_last=False)``);
``B = "full"`` is one batch of all n_i samples per epoch (no draw).
:meth:`NeuralProblem.batch_loss_grad` is one training-mode step (dropout masks from the
stream given, e.g. ``ctx.rng("dropout", r, client)``).

Training labels: the clients train on ``train_labels`` (the true labels ``y`` unless an attack rewrote a
faulty client's with :meth:`NeuralProblem.flip_labels`): every training read (``batch_loss_grad``,
``batch_loss``, ``minibatch_grads``, ``client_losses``, ``client_grads`` and so the minibatches of
``epoch_batches`` and ``sample_minibatch``) uses them; the metrics and the test split keep the true labels.

Metrics: ``objective`` (weighted train loss), ``grad_norm2`` (full-data gradient),
``train_accuracy`` and, with a test set, ``test_loss`` / ``test_accuracy``. A run evaluates
:meth:`default_metrics` unless told otherwise: the test metrics only (a full-data gradient
every round would cost as much as the round).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from fedrepro.core.params import POSITIVE_INT, Anything, Options, validate_params
from fedrepro.data.registry import NORMALIZATIONS
from fedrepro.nn import HEADS, INIT_RULES, MODELS, Model, build_model, evaluate
from fedrepro.nn.heads import get_head
from fedrepro.problems.base import FederatedProblem, client_class_counts, problem_spec

WEIGHTINGS = ("uniform", "data_size")


def batch_size(B, n: int) -> int:
    """The batch size of a client with n samples: B, or n for ``B = "full"``."""
    if isinstance(B, str):
        if B != "full":
            raise ValueError(f"batch size B={B!r} must be a positive integer or 'full'")
        return n
    if isinstance(B, bool) or not isinstance(B, (int, np.integer)) or B < 1:
        raise ValueError(f"batch size B={B!r} must be a positive integer or 'full'")
    return int(B)


def default_eval_batch(model: Model) -> int:
    """Examples per forward pass in full-data passes: 1000, or 250 for convolutional models
    (bounds the im2col temporaries, :func:`model_workspace_bytes`)."""
    from fedrepro.nn.layers import Conv2d

    return 250 if any(isinstance(layer, Conv2d) for layer in model.layers) else 1000


def steps_per_epoch(n: int, B) -> int:
    """ceil(n / B): batches of one pass over n samples (last partial batch kept)."""
    return math.ceil(n / batch_size(B, n))


class NeuralProblem(FederatedProblem):
    """Federated classification with a :class:`fedrepro.nn.Model`.

    Parameters
    ----------
    model : a built model (``fedrepro.nn.build_model(...)``).
    X : (n, features) training inputs (any per-example shape of the model's input size);
        stored once as C-contiguous float32 (model dtype). y : (n,) int labels.
    parts : m index arrays into X (the clients' data).
    X_test, y_test : optional test split (``test_loss``, ``test_accuracy``).
    weights : ``"uniform"`` (1/m), ``"data_size"`` (n_i/n) or an (m,) array.
    eval_batch : examples per forward pass in full-data losses/gradients and evaluation
        (default :func:`default_eval_batch`).
    dataset : label recorded in :meth:`describe`.
    """
    METRIC_CATALOGUE = ("objective", "grad_norm2", "train_accuracy", "test_loss", "test_accuracy")

    name = "neural"
    parts: list                     # m index arrays into X (instance attribute; MinibatchLossProblem)
    model: Model                    # the network (instance attribute; NetworkProblem)

    def __init__(self, model: Model, X, y, parts, X_test=None, y_test=None, *, weights="uniform",
                 eval_batch: int | None = None, dataset: str = ""):
        if not isinstance(model, Model):
            raise TypeError(f"neural: model must be a fedrepro.nn.Model, got {type(model).__name__}")
        self.model = model
        self.dtype = model.dtype
        self.X = self._inputs(X, "X")
        self.y = self._labels(y, len(self.X), "y")
        self.train_labels = self.y          # what the clients train on (a copy once flip_labels rewrites some)
        self.parts = [np.asarray(p, dtype=np.int64) for p in parts]
        if not self.parts or any(p.ndim != 1 or p.size == 0 for p in self.parts):
            raise ValueError("neural: parts must be a non-empty list of non-empty 1-D index arrays")
        if any(p.min() < 0 or p.max() >= len(self.X) for p in self.parts):
            raise ValueError(f"neural: client indices must lie in [0, {len(self.X)})")
        self.X_test = None if X_test is None else self._inputs(X_test, "X_test")
        self.y_test = None if y_test is None else self._labels(y_test, len(self.X_test), "y_test")
        self.m = len(self.parts)
        self.dim = model.n_params
        self.client_sizes = np.array([p.size for p in self.parts], dtype=np.int64)
        self.weights = self._weights(weights)
        self.weighting = weights if isinstance(weights, str) else "given"
        eval_batch = default_eval_batch(model) if eval_batch is None else eval_batch
        if isinstance(eval_batch, bool) or not isinstance(eval_batch, (int, np.integer)) or eval_batch < 1:
            raise ValueError(f"neural: eval_batch={eval_batch!r} must be a positive integer")
        self.eval_batch = int(eval_batch)
        self.dataset = dataset

    # ---- construction helpers ------------------------------------------------------
    def _inputs(self, X, what) -> np.ndarray:
        X = np.asarray(X)
        size = int(np.prod(self.model.input_shape))
        if X.ndim < 2 or int(np.prod(X.shape[1:])) != size:
            raise ValueError(f"neural: {what} must hold examples of {size} values "
                             f"(model input {self.model.input_shape}), got shape {X.shape}")
        return np.ascontiguousarray(X.reshape(len(X), size), dtype=self.dtype)

    def _labels(self, y, n, what) -> np.ndarray:
        y = np.asarray(y)
        if y.shape != (n,) or not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"neural: {what} must be {n} integer labels, got {y.dtype} array of shape {y.shape}")
        if n and (y.min() < 0 or y.max() >= self.model.n_classes):
            raise ValueError(f"neural: {what} must lie in [0, {self.model.n_classes}) for model "
                             f"{self.model.name!r}, got [{y.min()}, {y.max()}]")
        return y.astype(np.int64)

    def _weights(self, weights) -> np.ndarray:
        if isinstance(weights, str):
            if weights == "uniform":
                return np.full(self.m, 1.0 / self.m)
            if weights == "data_size":
                return self.client_sizes / self.client_sizes.sum()
            raise ValueError(f"neural: weights={weights!r} is not allowed; choose one of {list(WEIGHTINGS)} "
                             "or give an (m,) array")
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (self.m,) or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError(f"neural: weights must be {self.m} finite non-negative numbers, got shape {w.shape}")
        return w

    @property
    def n_classes(self) -> int:
        """Classes of the model's head (labels lie in 0..n_classes-1)."""
        return int(self.model.n_classes)

    # ---- faulty clients (RelabelProblem, fedrepro.sim.attacks.LabelFlip) ------------------------
    def flip_labels(self, ids, mapping) -> None:
        """Clients ``ids`` train on ``mapping(y)`` of their true labels ``y`` (a label flip attack): their
        training labels change everywhere the clients train (module docstring); the other clients', the
        metrics and the test split keep the true labels. Applied again, it maps the true labels anew."""
        if self.train_labels is self.y:
            self.train_labels = self.y.copy()
        for i in np.asarray(ids, dtype=np.int64).reshape(-1):
            idx = self.parts[int(i)]
            new = np.asarray(mapping(self.y[idx]))
            if new.shape != idx.shape or not np.issubdtype(new.dtype, np.integer) or \
                    (new.size and (new.min() < 0 or new.max() >= self.n_classes)):
                raise ValueError(f"neural: flip_labels mapping must give {idx.size} integer labels in "
                                 f"[0, {self.n_classes}) for client {int(i)}")
            self.train_labels[idx] = new

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        """Initial model drawn with the model's init rule (float32)."""
        return self.model.init(rng)

    # ---- minibatches (local training) -------------------------------------------------
    def epoch_batches(self, rng: np.random.Generator, client: int, B, epochs: int):
        """Index arrays (into X) of ``epochs`` passes over the client's data: each pass a
        permutation drawn from ``rng`` (successive passes in sequence), cut into batches of
        ``B`` with the last partial batch kept; ``B="full"``: the whole local set, no draw."""
        idx = self.parts[int(client)]
        n = idx.size
        b = batch_size(B, n)
        for _ in range(int(epochs)):
            order = idx if b >= n else idx[rng.permutation(n)]
            for a in range(0, n, b):
                yield order[a:a + b]

    def local_steps(self, clients, B, epochs) -> np.ndarray:
        """E_i * ceil(n_i / B): the SGD steps of ``epochs`` (per client or one int) passes."""
        n = self.client_sizes[np.asarray(clients, dtype=np.int64)]
        return np.asarray(epochs, dtype=np.int64) * np.array([steps_per_epoch(k, B) for k in n], dtype=np.int64)

    def batch_loss_grad(self, w: np.ndarray, idx: np.ndarray, rng: np.random.Generator | None = None,
                        out: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """Mean loss and gradient at ``w`` on the samples ``idx`` (training mode: dropout from ``rng``)."""
        return self.model.loss_and_grad(w, self.X[idx], self.train_labels[idx], rng=rng, out=out)

    def batch_loss(self, w: np.ndarray, idx: np.ndarray) -> float:
        """Mean loss at ``w`` on the samples ``idx`` (eval mode: no dropout)."""
        return self.model.loss(w, self.X[idx], self.train_labels[idx])

    # ---- StochasticProblem capability (minibatch algorithms: frpg, rsa, sgd_mean ...) --------
    def sample_minibatch(self, rng: np.random.Generator, clients: np.ndarray, b: int) -> np.ndarray:
        """b local indices per client, uniform without replacement; (len(clients), b) indices into X."""
        clients = np.asarray(clients, dtype=np.int64)
        b = int(b)
        if np.any(self.client_sizes[clients] < b):
            raise ValueError(f"neural: minibatch b={b} exceeds a client's local size "
                             f"{self.client_sizes[clients].min()}")
        return np.stack([self.parts[c][rng.choice(self.client_sizes[c], b, replace=False)] for c in clients])

    def minibatch_grads(self, W: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Gradient of the mean loss over each row's samples (eval mode); W (n, dim), idx (n, b)."""
        W = self._points(W, len(idx))
        out = np.empty((len(idx), self.dim), dtype=self.dtype)
        for j, rows in enumerate(idx):
            self.model.loss_and_grad(W[j], self.X[rows], self.train_labels[rows], out=out[j])
        return out

    # ---- full local objectives --------------------------------------------------------
    def _points(self, W, n) -> np.ndarray:
        W = np.asarray(W, dtype=self.dtype)
        if W.shape == (self.dim,):
            return np.broadcast_to(W, (n, self.dim))
        if W.shape != (n, self.dim):
            raise ValueError(f"neural: W must be ({self.dim},) or ({n}, {self.dim}), got {W.shape}")
        return W

    def _client_pass(self, w, client, grad: bool, out=None, labels=None):
        """(mean loss, correct count) and, with ``grad``, the mean gradient into ``out``, against ``labels``
        (default the true labels ``y``; the clients' own computations pass ``train_labels``)."""
        y = self.y if labels is None else labels
        idx = self.parts[client]
        n = idx.size
        head = get_head(self.model.head)
        loss = 0.0
        correct = 0
        if grad:
            out[:] = 0
            buf = np.empty(self.dim, dtype=self.dtype)
        for a in range(0, n, self.eval_batch):
            rows = idx[a:a + self.eval_batch]
            if grad:
                lb, g = self.model.loss_and_grad(w, self.X[rows], y[rows], out=buf)
                out += (rows.size / n) * g
                loss += lb * rows.size
            else:
                z = self.model.forward(w, self.X[rows])
                losses, _ = head(z, y[rows], grad=False)
                loss += float(losses.sum(dtype=np.float64))
                correct += int((z.argmax(axis=1) == y[rows]).sum())
        return loss / n, correct

    def client_losses(self, W, clients=None):
        """f_i at W (shared (dim,) or one row per client) on each client's full data and training labels;
        (len(clients),)."""
        clients = self._clients(clients, self.m)
        W = self._points(W, clients.size)
        return np.array([self._client_pass(W[j], c, False, labels=self.train_labels)[0]
                         for j, c in enumerate(clients)])

    def client_grads(self, W, clients=None):
        """grad f_i, (len(clients), dim) float32, full client data (training labels) in batches of
        ``eval_batch``."""
        clients = self._clients(clients, self.m)
        W = self._points(W, clients.size)
        out = np.empty((clients.size, self.dim), dtype=self.dtype)
        for j, c in enumerate(clients):
            self._client_pass(W[j], c, True, out[j], labels=self.train_labels)
        return out

    def objective(self, w):
        """sum_i weights_i f_i(w) with the true labels (the metric; equal to the weighted client losses
        unless a client's training labels were flipped)."""
        w = np.asarray(w, dtype=self.dtype)
        return float(self.weights @ np.array([self._client_pass(w, c, False)[0] for c in range(self.m)]))

    def gradient(self, w):
        """sum_i weights_i grad f_i(w) with the true labels (the metric ``grad_norm2``), accumulated client by
        client (never an (m, dim) array)."""
        w = np.asarray(w, dtype=self.dtype)
        total = np.zeros(self.dim, dtype=np.float64)
        g = np.empty(self.dim, dtype=self.dtype)
        for c in range(self.m):
            if self.weights[c]:
                self._client_pass(w, c, True, g)
                total += self.weights[c] * g
        return total

    # ---- evaluation ---------------------------------------------------------------------
    def metric_names(self) -> tuple:
        test = ("test_loss", "test_accuracy") if self.X_test is not None else ()
        return ("objective", "grad_norm2", "train_accuracy", *test)

    def default_metrics(self) -> tuple:
        """The test metrics (or the train loss and accuracy without a test set)."""
        return ("test_loss", "test_accuracy") if self.X_test is not None else ("objective", "train_accuracy")

    def evaluate(self, w, metrics=None):
        want = self.check_metrics(metrics)
        w = np.asarray(w, dtype=self.dtype)
        out = {}
        if "objective" in want or "train_accuracy" in want:
            passes = [self._client_pass(w, c, False) for c in range(self.m)]
            out["objective"] = float(self.weights @ np.array([p[0] for p in passes]))
            out["train_accuracy"] = sum(p[1] for p in passes) / float(self.client_sizes.sum())
        if "grad_norm2" in want:
            g = self.gradient(w)
            out["grad_norm2"] = float(g @ g)
        if "test_loss" in want or "test_accuracy" in want:
            res = evaluate(self.model, w, self.X_test, self.y_test, batch=self.eval_batch)
            out["test_loss"], out["test_accuracy"] = res["loss"], res["accuracy"]
        return {k: v for k, v in out.items() if k in want}

    def label_counts(self) -> tuple:
        """Each client's counts of the classes 0..n_classes-1 of the model's head (the true labels)."""
        return client_class_counts(self.y, self.parts, self.n_classes)

    def describe(self):
        out = super().describe()
        out.update(dataset=self.dataset, model=self.model.name, head=self.model.head,
                   n_test=0 if self.X_test is None else int(len(self.X_test)), weighting=self.weighting)
        return out

    def memory_bytes(self) -> int:
        """Bytes of the data this problem holds (train and test arrays, labels, index sets)."""
        arrays = [self.X, self.y, *self.parts] + ([self.X_test, self.y_test] if self.X_test is not None else [])
        if self.train_labels is not self.y:
            arrays.append(self.train_labels)
        return int(sum(a.nbytes for a in arrays))


def model_workspace_bytes(model: Model, batch: int) -> int:
    """Rough bound of the forward/backward temporaries of one batch: three copies of every
    activation plus each convolution's im2col matrix (output pixels x C_in k^2), in model dtype."""
    from fedrepro.nn.layers import Conv2d

    item = model.dtype.itemsize
    acts = sum(int(np.prod(s)) for s in model.shapes)
    cols = sum(int(np.prod(model.shapes[i + 1][1:])) * model.shapes[i][0] * layer.kernel_size ** 2
               for i, layer in enumerate(model.layers) if isinstance(layer, Conv2d))
    return int(batch) * (3 * acts + 2 * cols) * item


def neural_memory_bytes(spec: dict) -> dict:
    """Memory of a neural problem from its spec, without loading data: ``data`` (float32 train
    and test arrays at the registry's shapes, or the subset sizes), ``model`` (one vector),
    ``workspace`` (:func:`model_workspace_bytes` at ``eval_batch``), ``m``, ``dim`` for the
    per-client stores, and the ``n_train`` / ``n_test`` sizes it assumed."""
    from fedrepro.data import DATASETS

    spec = neural_spec_defaults(spec)
    model = build_model(spec["model"], head=spec.get("head"), init=spec.get("init"))
    ds = DATASETS.get(str(spec["dataset"]).split("-")[0])
    features = int(np.prod(model.input_shape))
    shapes = getattr(ds, "expected_shape", {}) or {}
    n_train = int(spec.get("train_size") or shapes.get("train", (60000,))[0])
    n_test = int(spec.get("test_size") or shapes.get("test", (0,))[0])
    data = (n_train + n_test) * (features * 4 + 8) + n_train * 8
    return {"data": data, "model": model.n_params * model.dtype.itemsize,
            "workspace": model_workspace_bytes(model, spec["eval_batch"] or default_eval_batch(model)),
            "m": int(spec["m"]), "dim": model.n_params, "n_train": n_train, "n_test": n_test}


# ---------------------------------------------------------------------------------- builder
PER_DATASET = ("model", "train_size", "test_size")     # keys that may be a {dataset: value} mapping
SPEC_CONSTRAINTS = {
    "model": [Options(*MODELS), Anything("a {dataset: model name} mapping")], "dataset": [Anything("a processed image dataset name (mnist, fashion_mnist, cifar10)")],
    "data": [Anything("path of a client npz (instead of dataset)")], "m": [POSITIVE_INT],
    "partition": [Anything("a rule name or {method: <rule>, ...params}")],
    "partition_params": [Anything("the rule's parameters (older form; write them inside partition)")],
    "head": [None, Options(*HEADS)],
    "init": [None, Options(*INIT_RULES)], "weights": [Anything("uniform | data_size | one weight per client")],
    "normalize": [Anything("[mean, std]")], "train_size": [None, POSITIVE_INT, Anything("a {dataset: size} mapping")],
    "test_size": [None, POSITIVE_INT, Anything("a {dataset: size} mapping")],
    "eval_batch": [None, POSITIVE_INT],
}


def neural_spec_defaults(spec: dict) -> dict:
    """The spec with unknown keys and bad values rejected and defaults filled (model mlp1, dataset
    mnist, m 100, iid)."""
    validate_params("problem 'neural'", {k: v for k, v in spec.items() if k != "name"}, SPEC_CONSTRAINTS, noun="key")
    out = {"model": "mlp1", "dataset": "mnist", "m": 100, "partition": {"method": "iid"}, "weights": "uniform",
           "eval_batch": None, **spec}
    base = str(out["dataset"]).split("-")[0]
    for key in PER_DATASET:               # {dataset: value}: the value for this cell's dataset
        if isinstance(out.get(key), dict):
            if base not in out[key]:
                raise ValueError(f"neural: {key} is a per-dataset mapping {out[key]!r} without an entry for "
                                 f"dataset {base!r}; add one")
            out[key] = out[key][base]
    validate_params("problem 'neural'", {k: out.get(k) for k in ("train_size", "test_size")},
                    {k: [None, POSITIVE_INT] for k in ("train_size", "test_size")}, noun="key")
    validate_params("problem 'neural'", {"model": out["model"]}, {"model": [Options(*MODELS)]}, noun="key")
    from fedrepro.data.partition import check_partition_spec, partition_spec

    out["partition"] = partition_spec(out["partition"], out.pop("partition_params", None), where="problem.partition")
    if "data" not in spec:
        check_partition_spec(out["partition"], where="problem.partition")
    return out


def _subset(rng, y, size, what):
    """A class-stratified random subset of ``size`` rows (sorted), or all rows when size is None."""
    if size is None:
        return np.arange(len(y))
    size = int(size)
    if not 0 < size <= len(y):
        raise ValueError(f"neural: {what}={size} must be in [1, {len(y)}]")
    picks = []
    classes, counts = np.unique(y, return_counts=True)
    quota = np.floor(counts * size / len(y)).astype(int)
    quota[np.argsort(-(counts * size / len(y) - quota), kind="stable")[:size - quota.sum()]] += 1
    for c, q in zip(classes, quota):
        rows = np.flatnonzero(y == c)
        picks.append(rows[rng.permutation(rows.size)[:q]])
    return np.sort(np.concatenate(picks))


@problem_spec(check=neural_spec_defaults, **SPEC_CONSTRAINTS)
def build_neural(spec: dict, seed: int, data_dir=None, dataset=None, **kwargs) -> NeuralProblem:
    """Builder for ``problem: {name: neural, ...}``.

    spec keys: ``model`` (a :data:`fedrepro.nn.MODELS` name, default mlp1), ``dataset`` (registry
    name of a processed dataset: mnist, fashion_mnist, cifar10 ...), ``m`` (clients, 100),
    ``partition`` ({method: <rule of fedrepro.data.partition>, ...params}, default iid),
    ``head`` / ``init`` (override the model's), ``weights`` (uniform | data_size),
    ``normalize`` ([mean, std]; default the dataset's registered ``normalize``, else none),
    ``train_size`` / ``test_size`` (reduced scale: class-stratified random subsets, before
    partitioning), ``eval_batch`` (default 1000, 250 for CNNs). ``model``, ``train_size`` and
    ``test_size`` may be mappings dataset -> value (e.g. ``model: {mnist: mlp1, cifar10: mlp2}``)
    so that one block can sweep datasets. ``dataset`` may also be passed as a loaded
    :class:`fedrepro.data.dataset.Dataset` (tests).
    """
    from fedrepro.core.rng import stream
    from fedrepro.data.partition import partition

    spec = neural_spec_defaults(spec)
    if "data" in spec:                  # the user's own npz (fedrepro run --problem mlp1 --data mine.npz)
        from fedrepro.problems.user_data import load_client_npz

        from fedrepro.problems.user_data import class_labels

        X, y, client, extra = load_client_npz(spec["data"])
        model = build_model(spec["model"], head=spec.get("head"), init=spec.get("init"))
        y = class_labels(y, spec["data"], f"neural ({spec['model']})", model.n_classes)
        if extra.get("y_test") is not None:
            extra["y_test"] = class_labels(extra["y_test"], f"{spec['data']} (y_test)", f"neural ({spec['model']})",
                                           model.n_classes)
        parts = [np.flatnonzero(client == i) for i in range(int(client.max()) + 1)]
        y_test = extra.get("y_test")
        return NeuralProblem(model, X, y.astype(np.int64), parts, extra.get("X_test"),
                             None if y_test is None else y_test.astype(np.int64), weights=spec["weights"],
                             eval_batch=spec["eval_batch"], dataset=Path(spec["data"]).name)
    if dataset is None:
        from fedrepro.data.dataset import Dataset, processed_path

        if data_dir is None:
            raise ValueError("neural: data_dir (processed data folder) is required")
        dataset = Dataset.load_shared(processed_path(data_dir, spec["dataset"]))
    name = str(spec.get("dataset", dataset.name))
    model = build_model(spec["model"], head=spec.get("head"), init=spec.get("init"))
    mean, std = spec.get("normalize", NORMALIZATIONS.get(name.split("-")[0], (0.0, 1.0)))
    if not std > 0:
        raise ValueError(f"neural: normalize std must be > 0, got {std}")
    # rows of each split as indices into the one array (no copy of the whole split)
    split = None if dataset.split is None else np.asarray(dataset.split)
    rows_tr = np.arange(dataset.n_samples) if split is None else np.flatnonzero(split == "train")
    y_all = np.asarray(dataset.y)
    tr = rows_tr[_subset(stream(seed, "subset", 0), y_all[rows_tr], spec.get("train_size"), "train_size")]
    Xtr = ((np.asarray(dataset.X[tr], dtype=np.float32) - np.float32(mean)) / np.float32(std))
    ytr = y_all[tr].astype(np.int64)
    Xte = yte = None
    if split is not None:
        rows_te = np.flatnonzero(split == "test")
        te = rows_te[_subset(stream(seed, "subset", 1), y_all[rows_te], spec.get("test_size"), "test_size")]
        Xte = (np.asarray(dataset.X[te], dtype=np.float32) - np.float32(mean)) / np.float32(std)
        yte = y_all[te].astype(np.int64)
    params = dict(spec["partition"])
    rule = params.pop("method")
    parts = partition(rule, labels=ytr, seed=seed, m=int(spec["m"]), **params)
    return NeuralProblem(model, Xtr, ytr, parts, Xte, yte, weights=spec["weights"],
                         eval_batch=spec["eval_batch"], dataset=name)


def neural_from_registry(options: dict, seed: int, data_dir) -> NeuralProblem:
    """A neural problem on a registry dataset without a user npz (``fedrepro run --problem mlp1`` without
    ``--data``): the processed folder ``<data_dir>/<dataset>``, else the raw files from the cache
    (data/raw) or the mirror (``FEDREPRO_DATA_MIRROR``)."""
    import os

    from fedrepro.data import fetch, load
    from fedrepro.data.dataset import MANIFEST, Dataset
    from fedrepro.data.spec import MIRROR_ENV

    spec = {"name": "neural", **options}
    name = str(spec.get("dataset", "mnist"))
    path = Path(data_dir) / name
    if (path / MANIFEST).is_file():
        dataset = Dataset.load(path)
    else:
        dataset = load(name, fetch(name, "data/raw", os.environ.get(MIRROR_ENV), download=False))
    return build_neural(spec, seed, dataset=dataset)
