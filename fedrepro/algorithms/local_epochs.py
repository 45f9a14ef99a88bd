"""Local training harness: every selected client runs local minibatch SGD (FIDELITY SH-8, SH-9).

The shared client side of FedAvg (McMahan et al. 2017) and its relatives on neural problems
(spec 003 §3: FedSGD, FedProx, SCAFFOLD, FedADMM-Gong; spec 002 §3.4-3.7: FedAvg with local steps,
DRFA-Prox, Ind_j). In round r client i of the selected set S:

    w <- start point (default: the broadcast global model) ; fresh SGD optimiser (v <- 0)
    for each minibatch of client_batches (from the stream ("minibatch", r, i)):
        g <- grad of the minibatch mean loss at w (dropout masks from ("dropout", r, i))
        g <- g + extra terms of the local objective       (hook local_gradient, any; hook local_terms:
                                                           rho (w - anchor) + shift, inside the step's pass)
        w <- SGD step (torch.optim.SGD semantics, momentum; one compiled pass, fedrepro.nn.optim)
        after_step(w)                                     (hook: box projection, snapshots)
    upload <- client_upload(w)                            (default w)

:func:`local_sgd` is that loop for one client (ASPIRE's workers run it too, with their own step,
gradient and streams); :class:`LocalSGD` runs it for every client of the round. The minibatches are
the subclass's:

* :class:`LocalEpochs`: E_i = E, or E_i ~ U{1..E} (random_epochs; one draw per client from the
  stream ("epochs", r)), passes over the local data shuffled from ("minibatch", r, i), the
  E_i * ceil(n_i / B) batches of B with the last partial batch kept;
* :class:`LocalSteps`: ``local_steps`` fresh minibatches of min(B, n_i) samples drawn without
  replacement from ("minibatch", r, i), with a box projection clip(w, +-alpha1) after each step.

Heterogeneous local work lives inside the one loop: a client that has done its steps is finished
(the active set shrinks); the number of steps each client took is kept in ``state.steps``.
Clients are processed one after another (measured faster than stacking the clients' parameters
for the models here, see benchmarks/README.md); every stream is keyed by (round, client), so the
order of processing cannot change a result.

Subclasses set ``aggregate`` / ``receive`` (the server) and may override the hooks
:meth:`~LocalSGD.start_point`, :meth:`~LocalSGD.local_terms`, :meth:`~LocalSGD.local_gradient`,
:meth:`~LocalSGD.after_step`, :meth:`~LocalSGD.client_upload`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from itertools import repeat
from numbers import Real

import numpy as np

from fedrepro.algorithms.base import State
from fedrepro.algorithms.sync_base import SyncAlgorithm
from fedrepro.core.params import POSITIVE, POSITIVE_INT, Boolean, Interval, Options
from fedrepro.nn.optim import SGD
from fedrepro.problems.protocols import EPOCHS, MINIBATCH


@dataclass(slots=True)
class LocalSGDState(State):
    uploads: np.ndarray | None = None     # (|S|, upload_dim) received in the last round
    senders: np.ndarray | None = None     # the clients of those uploads
    steps: np.ndarray | None = None       # local SGD steps each of the last round's clients took
    local_steps: int = 0                  # SGD steps of all clients so far (trace column local_steps)
    local_samples: int = 0                # per-sample gradients of all clients so far (local_samples)
    upload_rows: np.ndarray | None = None  # the array client_update writes the uploads into, kept across rounds


@dataclass(slots=True)
class LocalEpochsState(LocalSGDState):
    epochs: np.ndarray | None = None      # E_i of the last round's clients


def local_sgd(problem, w: np.ndarray, batches, optimizer, grad: np.ndarray, dropout, local_gradient=None,
              after_step=None, terms: dict | None = None) -> tuple[int, int]:
    """The client-side loop (module docstring) on the model ``w``, updated in place: for each index
    array of ``batches``, the minibatch gradient into ``grad`` with the next generator of ``dropout``
    (an iterable, one per step), ``local_gradient(w, grad)`` (the local objective's gradient from the
    minibatch one, in place), ``optimizer.step(w, grad, **terms)`` (``terms``: the local objective's
    rho, anchor, shift, added inside the step) and ``after_step(w, step)`` (step 1-based).
    Returns (steps, per-sample gradients). Shared by :class:`LocalSGD` and ASPIRE's workers."""
    steps = samples = 0
    terms = terms or {}
    for idx, rng in zip(batches, dropout):
        problem.batch_loss_grad(w, idx, rng=rng, out=grad)
        if local_gradient is not None:
            local_gradient(w, grad)
        optimizer.step(w, grad, **terms)
        steps += 1
        samples += len(idx)
        if after_step is not None:
            after_step(w, steps)
    return steps, samples


@dataclass
class LocalSGD(SyncAlgorithm):
    """The client side of a round: :func:`local_sgd` for every client of it; subclasses say which
    minibatches a client visits (:meth:`client_batches`: epochs, or a fixed number of random
    minibatches) and set the server side. lr : local SGD step size. momentum : SGD momentum (PyTorch semantics; reset every
    round)."""

    lr: float = 0.1
    momentum: float = 0.0

    client_vectors = 0                     # per-client (m, dim) stores kept (memory estimate)
    state_class = LocalSGDState
    constraints = {"lr": [POSITIVE], "momentum": [Interval(Real, 0, 1, closed="left")]}

    # ---- hooks -----------------------------------------------------------------------
    def client_batches(self, state, problem, ctx, j: int, client: int, r: int):
        """The index arrays (into the problem's X) of the minibatches client ``client`` (position j
        in S) visits in round r, in order; drawn from ``ctx.rng("minibatch", r, client)``."""
        raise NotImplementedError

    def start_point(self, state, problem, ctx, j: int, client: int, r: int) -> np.ndarray:
        """The client's initial local model (a fresh array it may modify); default the global model."""
        return np.array(state.w, copy=True)

    def local_terms(self, state, problem, ctx, j: int, client: int) -> dict:
        """The local objective's extra gradient terms rho (w - anchor) + shift for all of the client's
        steps, as keyword arguments of :meth:`fedrepro.nn.optim.SGD.step` (``rho``, ``anchor``,
        ``shift``; e.g. a proximal term, a dual, control variates): added inside the step's one pass.
        Called after :meth:`start_point`; default none."""
        return {}

    def local_gradient(self, state, problem, ctx, j: int, client: int, w: np.ndarray, g: np.ndarray) -> None:
        """Change the minibatch gradient ``g`` in place before the step (any local objective's term
        that :meth:`local_terms` cannot express); default nothing."""

    def after_step(self, state, problem, ctx, j: int, client: int, w: np.ndarray, step: int) -> None:
        """Called after the client's ``step``-th SGD step (1-based) with its model ``w`` (modify in
        place, e.g. a box projection); default nothing."""

    def client_upload(self, state, problem, ctx, j: int, client: int, w: np.ndarray, steps: int) -> np.ndarray:
        """What client ``client`` (position j in S) sends after its ``steps`` local steps; default w."""
        return w

    # ---- the local work of a round ---------------------------------------------------------
    def client_update(self, state, problem, ctx, clients, r, rows=None):
        """Every client of ``clients`` trains, in that order; client ``clients[j]``'s upload is row
        ``rows[j]`` of the returned (|S|, upload_dim) array (default row j).

        The array is the one the previous round's uploads were written into once the server has released
        them (``state.uploads`` no longer holds it, nor a view of it): a round's uploads (|S| x d float64, 105 MB for
        CIFAR-10's MLP-2 at |S| = 20) lie above glibc's largest mmap threshold (32 MB,
        :mod:`fedrepro.core.allocator`), so a fresh array each round is fresh pages, each zeroed by the
        kernel on its first write. An algorithm that keeps the uploads past its ``aggregate`` keeps them
        in ``state.uploads`` (or copies them)."""
        clients = np.asarray(clients, dtype=np.int64)
        rows = np.arange(len(clients)) if rows is None else np.asarray(rows, dtype=np.int64)
        state.steps = np.zeros(len(clients), dtype=np.int64)
        uploads = None
        g = None
        for j, c in enumerate(clients):
            c = int(c)
            w = self.start_point(state, problem, ctx, j, c, r)
            if g is None or g.dtype != w.dtype:
                g = np.empty_like(w)
            steps, samples = local_sgd(problem, w, self.client_batches(state, problem, ctx, j, c, r),
                                       SGD(self.lr, self.momentum), g, dropout=repeat(ctx.rng("dropout", r, c)),
                                       local_gradient=partial(self.local_gradient, state, problem, ctx, j, c),
                                       after_step=partial(self.after_step, state, problem, ctx, j, c),
                                       terms=self.local_terms(state, problem, ctx, j, c))
            state.steps[j] = steps
            state.local_steps += steps
            state.local_samples += samples
            up = self.client_upload(state, problem, ctx, j, c, w, steps)
            if uploads is None:
                uploads = self._upload_rows(state, (len(clients), up.size), up.dtype)
            uploads[rows[j]] = up
        return uploads

    @staticmethod
    def _upload_rows(state, shape, dtype) -> np.ndarray:
        kept = state.upload_rows
        if (kept is None or kept.shape != shape or kept.dtype != dtype
                or (state.uploads is not None and np.may_share_memory(kept, state.uploads))):   # still held
            kept = state.upload_rows = np.empty(shape, dtype=dtype)
        return kept

    RECORDS = ("local_steps", "local_samples")

    def round_metrics(self, state, problem, ctx):
        """Cumulative local work: SGD steps and per-sample gradients of all clients (the papers'
        "local computation", e.g. Gong et al.'s FedADMM vs FedAvg comparison)."""
        return {"local_steps": state.local_steps, "local_samples": state.local_samples}

    def receive(self, state, problem, ctx, clients, uploads, r):
        state.uploads = uploads
        state.senders = np.asarray(clients, dtype=np.int64)


@dataclass
class LocalEpochs(LocalSGD):
    """Parameters
    ----------
    lr : local SGD step size. momentum : SGD momentum (PyTorch semantics; reset every round).
    E : local epochs (fixed), or the upper end of U{1..E} with ``random_epochs``.
    B : minibatch size, or ``"full"`` (one batch of all local samples per epoch).
    random_epochs : draw E_i ~ U{1..E} per client and round.
    batches : ``per_epoch`` (default: every epoch a fresh shuffle of the local data, as PyTorch's
        shuffling DataLoader) or ``once`` (the batches are made once per round and every epoch visits
        them in that order: Gong et al.'s Algorithm 1, line 17 "create batches" before the epoch loop).
    """

    E: int = 1
    B: int | str = 50
    random_epochs: bool = False
    batches: str = "per_epoch"

    name = "local_epochs"
    requires = (EPOCHS,)
    state_class = LocalEpochsState
    constraints = {"E": [POSITIVE_INT], "B": [POSITIVE_INT, Options("full")], "random_epochs": [Boolean],
                   "batches": [Options("per_epoch", "once")]}

    def local_epochs(self, ctx, clients: np.ndarray, r: int) -> np.ndarray:
        """E_i of every client of round r (fixed E, or U{1..E} from the stream ("epochs", r))."""
        if self.random_epochs:
            return ctx.rng("epochs", r).integers(1, self.E + 1, size=len(clients))
        return np.full(len(clients), self.E, dtype=np.int64)

    def client_batches(self, state, problem, ctx, j, client, r):
        """E_i passes over the client's data in batches of B (last partial batch kept): each pass shuffled
        anew (``batches: per_epoch``), or the first pass's batches visited E_i times (``once``)."""
        rng = ctx.rng("minibatch", r, client)
        if self.batches == "once":
            return list(problem.epoch_batches(rng, client, self.B, 1)) * int(state.epochs[j])
        return problem.epoch_batches(rng, client, self.B, state.epochs[j])

    def client_update(self, state, problem, ctx, clients, r, rows=None):
        state.epochs = self.local_epochs(ctx, np.asarray(clients, dtype=np.int64), r)
        return super().client_update(state, problem, ctx, clients, r, rows)


def random_batch(problem, rng: np.random.Generator, client: int, b: int) -> np.ndarray:
    """min(b, n_i) of client ``client``'s samples, uniform without replacement (all of them, undrawn,
    when b >= n_i); indices into the problem's X."""
    part = problem.parts[int(client)]
    b = min(int(b), part.size)
    return part if b == part.size else part[rng.choice(part.size, b, replace=False)]


@dataclass
class LocalSteps(LocalSGD):
    """Parameters
    ----------
    lr, momentum : :class:`LocalSGD`. local_steps : SGD steps per client and round, each on a fresh
    minibatch of min(B, n_i) samples drawn without replacement from ``ctx.rng("minibatch", r, i)``
    (aspire spec 002 §3.5: tau_local). B : minibatch size. alpha1 : box projection w <- clip(w, +-alpha1)
    after every step (inf: none).
    """

    local_steps: int = 5
    B: int = 64
    alpha1: float = float("inf")

    name = "local_steps"
    requires = (MINIBATCH,)
    constraints = {"local_steps": [POSITIVE_INT], "B": [POSITIVE_INT], "alpha1": [POSITIVE, Options(math.inf)]}

    def client_batches(self, state, problem, ctx, j, client, r):
        rng = ctx.rng("minibatch", r, client)
        for _ in range(self.local_steps):
            yield random_batch(problem, rng, client, self.B)

    def after_step(self, state, problem, ctx, j, client, w, step):
        if np.isfinite(self.alpha1):
            np.clip(w, -self.alpha1, self.alpha1, out=w)
