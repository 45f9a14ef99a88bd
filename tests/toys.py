"""The tests' toy problem (one quadratic for every test), tiny algorithms used to test the plumbing
independently of any paper, and the numpy SGD step the compiled one replaced (the reference of its tests)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.linalg.blas import daxpy, saxpy

from fedrepro.algorithms.base import State
from fedrepro.algorithms.sync_base import SyncAlgorithm
from fedrepro.core.params import POSITIVE, Anything
from fedrepro.core.store import ClientStore
from fedrepro.problems.base import FederatedProblem


class Quadratic(FederatedProblem):
    """The tests' one toy problem: f_i(w) = s_i/2 ||w - c_i||^2 (Lipschitz constant s_i).

    The optimum of sum_i weight_i f_i is the (weight_i s_i)-weighted mean of the c_i. Defaults:
    s_i = 1, client sizes 1, weights 1/m. ``local_grad_calls`` counts the calls of ``client_grads``
    at per-client points (a 2-D ``W``: local steps; the server block evaluates at one point).
    """

    name = "quadratic"

    def __init__(self, centers, scales=None, client_sizes=None, weights=None):
        self.c = np.asarray(centers, float)
        self.m, self.dim = self.c.shape
        self.s = np.ones(self.m) if scales is None else np.asarray(scales, float)
        self.client_sizes = np.ones(self.m, dtype=int) if client_sizes is None else np.asarray(client_sizes)
        self.weights = np.full(self.m, 1.0 / self.m) if weights is None else np.asarray(weights, float)
        self.local_grad_calls = 0

    @classmethod
    def random(cls, m=8, dim=5, seed=0):
        """Random instance with client sizes d_i in [20, 200), s_i = u_i / d_i (u_i ~ U[0.5, 1.5]: the
        curvature of a mean-type loss, so that FedEPM's step (38) gamma_i = 2 d_i / sqrt(.) is stable),
        centres 3 N(0, I) and weights 1 (f = sum_i f_i, as the FedEPM problems)."""
        rng = np.random.default_rng(seed)
        sizes = rng.integers(20, 200, m)
        scales = rng.uniform(0.5, 1.5, m) / sizes
        centers = rng.normal(size=(m, dim)) * 3
        return cls(centers, scales, client_sizes=sizes, weights=np.ones(m))

    def client_losses(self, W, clients=None):
        idx = self._clients(clients, self.m)
        D = np.asarray(W) - self.c[idx]
        return 0.5 * self.s[idx] * np.einsum("ij,ij->i", D, D)

    def client_grads(self, W, clients=None):
        idx = self._clients(clients, self.m)
        self.local_grad_calls += np.ndim(W) == 2
        return self.s[idx, None] * (np.asarray(W) - self.c[idx])

    def lipschitz(self):
        return self.s.copy()

    def optimum(self):
        ws = self.weights * self.s
        return (ws @ self.c) / ws.sum()


@dataclass(slots=True)
class LocalGDState(State):
    W: ClientStore = None               # client models
    server_mean: np.ndarray = None      # mean of the last uploads


@dataclass
class LocalGD(SyncAlgorithm):
    """Local gradient descent with averaging of the sampled clients' models."""

    name = "local_gd"
    step: float = 0.5
    constraints = {"step": [POSITIVE]}
    state_class = LocalGDState

    def init(self, problem, ctx):
        state = LocalGDState(w=np.zeros(problem.dim))
        state.W = ctx.client_store(problem.m, problem.dim)
        return state

    def aggregate(self, state, problem, ctx, r):
        return state.w if r == 0 else state.server_mean

    def begin_round(self, state, problem, ctx, clients, r):
        state.W[clients] = state.w

    def local_step(self, state, problem, ctx, clients, r, t):
        state.W[clients] -= self.step * problem.client_grads(state.W[clients], clients)

    def upload(self, state, problem, ctx, clients, r):
        return state.W[clients].copy()

    def receive(self, state, problem, ctx, clients, uploads, r):
        state.server_mean = uploads.mean(axis=0)
        state.metrics["uploaded"] = len(clients)



@dataclass
class RecordingGD(LocalGD):
    """LocalGD that logs on the object (a test probe) every ``init`` call as ``"init"`` and the
    clients of every round as ``(r, [ids])``."""

    name = "recording_gd"
    log: list = field(default_factory=list)
    constraints = {"log": [Anything("a list")]}

    def init(self, problem, ctx):
        self.log.append("init")
        return super().init(problem, ctx)

    def begin_round(self, state, problem, ctx, clients, r):
        self.log.append((r, [int(i) for i in clients]))
        super().begin_round(state, problem, ctx, clients, r)


def worker_blobs(counts, test_counts, *, n_classes: int = 3, dim: int = 6, seed: int = 0,
                 noise_growth: float = 0.5, init: str = "zeros", **problem_kwargs):
    """A WorkerNeuralProblem of Gaussian blobs on a linear softmax model: worker j has ``counts[j]``
    training and ``test_counts[j]`` test samples, mostly (0.8) of class j % n_classes, with noise
    1 + noise_growth * j (the workers differ: a worst case exists). ``problem_kwargs`` go to the problem
    (``malicious``, ``backdoor``)."""
    from fedrepro.nn import ModelSpec, build_model
    from fedrepro.nn.layers import dense
    from fedrepro.problems.worker_neural import WorkerNeuralProblem

    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(n_classes, dim)) * 2

    def make(sizes):
        X, y, parts, start = [], [], [], 0
        for j, count in enumerate(sizes):
            probs = np.full(n_classes, 0.1)
            probs[j % n_classes] = 0.8
            lab = rng.choice(n_classes, count, p=probs / probs.sum())
            X.append(centers[lab] + rng.normal(size=(count, dim)) * (1 + noise_growth * j))
            y.append(lab)
            parts.append(np.arange(start, start + count))
            start += count
        return np.concatenate(X).astype(np.float32), np.concatenate(y), parts

    X, y, parts = make(counts)
    Xt, yt, tparts = make(test_counts)
    model = build_model(ModelSpec((dim,), (dense(n_classes),), init, "logits_ce", "tiny",
                                  dim * n_classes + n_classes))
    return WorkerNeuralProblem(model, X, y, parts, Xt, yt, tparts, **problem_kwargs)


def backdoor_blobs(poisoned: bool = True, N: int = 6, n: int = 24, n_test: int = 8, target: int = 0, seed: int = 0):
    """:func:`worker_blobs` of N workers plus a malicious worker N (n samples, no test split) in the layout of
    :func:`fedrepro.data.worker_data.with_backdoor` (sensor data), in small: with ``poisoned`` half of its
    samples carry the trigger (last feature 3.0) and the label ``target``; without, the same worker holds
    its clean samples (the attack-free reference). The triggered benign test samples of another class are
    the backdoor test set (``attack_success``)."""
    base = worker_blobs([n] * (N + 1), [n_test] * N + [0], seed=seed, malicious=N)
    X, y = base.X.copy(), base.y.copy()
    Xt, yt = base.X_test, base.y_test
    X_bd = Xt[yt != target].copy()
    X_bd[:, -1] = 3.0
    if poisoned:
        bad = base.parts[N][::2]
        X[bad, -1] = 3.0
        y[bad] = target
    from fedrepro.problems.worker_neural import WorkerNeuralProblem

    return WorkerNeuralProblem(base.model, X, y, base.parts, Xt, yt, base.test_parts, malicious=N,
                               backdoor=(X_bd, target))


class NumpySGD:
    """The SGD step before the one-pass kernel (issue #28), written out: numpy passes, then the
    BLAS axpy w += (-lr) d (fused) or the product rounded first, w -= lr d (unfused)."""

    def __init__(self, lr, momentum=0.0, weight_decay=0.0, dampening=0.0, nesterov=False, fused=True):
        self.lr, self.momentum, self.weight_decay = lr, momentum, weight_decay
        self.dampening, self.nesterov, self.fused, self.buf = dampening, nesterov, fused, None

    def step(self, w, grad):
        d = grad
        if self.weight_decay:
            d = grad + self.weight_decay * w
        if self.momentum:
            if self.buf is None:
                self.buf = np.array(d, copy=True)
            else:
                self.buf *= self.momentum
                if self.dampening:
                    self.buf += (1.0 - self.dampening) * d
                else:
                    self.buf += d
            d = d + self.momentum * self.buf if self.nesterov else self.buf
        if not self.lr:
            return w
        if self.fused:
            assert (saxpy if w.dtype == np.float32 else daxpy)(d, w, a=-self.lr) is w    # in place
        else:
            w -= np.multiply(d, self.lr)
        return w


def softmax_toy(m: int = 8, n_per: int = 12, p: int = 5, C: int = 10, seed: int = 0):
    """A tiny :class:`~fedrepro.problems.softmax.SoftmaxProblem`: m workers of ``n_per`` random samples
    (p features, C classes), the first 10 samples as its test set (attacks, the channel, capabilities)."""
    from fedrepro.problems.softmax import SoftmaxProblem

    rng = np.random.default_rng(seed)
    X = rng.random((m * n_per, p))
    y = rng.integers(0, C, m * n_per)
    parts = [np.arange(i * n_per, (i + 1) * n_per) for i in range(m)]
    return SoftmaxProblem(X, y, parts, X[:10], y[:10], batch=4, L=2.0)


def write_logreg_npz(folder):
    """A 6-client logistic-regression npz for ``fedrepro run --problem logreg`` (240 rows, 4 features, 40 per
    client): (path, X, y)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(240, 4))
    y = (X @ rng.normal(size=4) + 0.5 * rng.normal(size=240) > 0).astype(float)
    path = folder / "logreg.npz"
    np.savez(path, X=X, y=y, client=np.repeat(np.arange(6), 40))
    return path, X, y
