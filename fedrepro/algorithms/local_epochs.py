"""Local training harness: every selected client runs E_i epochs of minibatch SGD (FIDELITY SH-8, SH-9).

The shared client side of FedAvg (McMahan et al. 2017) and its relatives on neural problems
(spec 003 §3: FedSGD, FedProx, SCAFFOLD, FedADMM-Gong). In round r client i of the selected
set S:

    w <- start point (default: the broadcast global model) ; fresh SGD optimiser (v <- 0)
    E_i = E, or E_i ~ U{1..E} (random_epochs; one draw per client from the stream ("epochs", r))
    for each of the E_i * ceil(n_i / B) minibatches (epochs shuffled from ("minibatch", r, i)):
        g <- grad of the minibatch mean loss at w (dropout masks from ("dropout", r, i))
        g <- g + extra term of the local objective        (hook local_gradient: prox, control variates)
        w <- SGD step (torch.optim.SGD semantics, momentum)
    upload <- client_upload(w)                            (default w)

Heterogeneous local work lives inside the one loop: a client that has done its E_i·⌈n_i/B⌉
steps is finished (the active set shrinks); the number of steps each client took is kept in
``state.steps``. Clients are processed one after another (measured faster than stacking the
clients' parameters for the models here, see benchmarks/README.md); every stream is keyed by
(round, client), so the order of processing cannot change a result.

Subclasses set ``aggregate`` / ``receive`` (the server) and may override the hooks
:meth:`start_point`, :meth:`local_gradient`, :meth:`client_upload`.
"""
from __future__ import annotations

from dataclasses import dataclass
from numbers import Real

import numpy as np

from fedrepro.algorithms.base import Algorithm, State
from fedrepro.core.params import POSITIVE, POSITIVE_INT, Boolean, Interval, Options
from fedrepro.nn.optim import SGD
from fedrepro.problems.protocols import EPOCHS


@dataclass(slots=True)
class LocalEpochsState(State):
    uploads: np.ndarray | None = None     # (|S|, upload_dim) received in the last round
    senders: np.ndarray | None = None     # the clients of those uploads
    epochs: np.ndarray | None = None      # E_i of the last round's clients
    steps: np.ndarray | None = None       # local SGD steps each of them took
    local_steps: int = 0                  # SGD steps of all clients so far (trace column local_steps)
    local_samples: int = 0                # per-sample gradients of all clients so far (local_samples)


@dataclass
class LocalEpochs(Algorithm):
    """Parameters
    ----------
    lr : local SGD step size. momentum : SGD momentum (PyTorch semantics; reset every round).
    E : local epochs (fixed), or the upper end of U{1..E} with ``random_epochs``.
    B : minibatch size, or ``"full"`` (one batch of all local samples per epoch).
    random_epochs : draw E_i ~ U{1..E} per client and round.
    """

    lr: float = 0.1
    momentum: float = 0.0
    E: int = 1
    B: int | str = 50
    random_epochs: bool = False

    name = "local_epochs"
    requires = (EPOCHS,)
    client_vectors = 0                     # per-client (m, dim) stores kept (memory estimate)
    state_class = LocalEpochsState
    constraints = {"lr": [POSITIVE], "momentum": [Interval(Real, 0, 1, closed="left")], "E": [POSITIVE_INT],
                   "B": [POSITIVE_INT, Options("full")], "random_epochs": [Boolean]}

    def init(self, problem, ctx):
        return self.state_class(w=problem.init_params(ctx.rng("init")))

    # ---- hooks -----------------------------------------------------------------------
    def local_epochs(self, ctx, clients: np.ndarray, r: int) -> np.ndarray:
        """E_i of every client of round r (fixed E, or U{1..E} from the stream ("epochs", r))."""
        if self.random_epochs:
            return ctx.rng("epochs", r).integers(1, self.E + 1, size=len(clients))
        return np.full(len(clients), self.E, dtype=np.int64)

    def start_point(self, state, problem, ctx, j: int, client: int, r: int) -> np.ndarray:
        """The client's initial local model (a fresh array it may modify); default the global model."""
        return np.array(state.w, copy=True)

    def local_gradient(self, state, problem, ctx, j: int, client: int, w: np.ndarray, g: np.ndarray) -> None:
        """Add the local objective's extra gradient term to the minibatch gradient ``g`` in place
        (e.g. rho (w - theta) for a proximal term); default none."""

    def client_upload(self, state, problem, ctx, j: int, client: int, w: np.ndarray, steps: int) -> np.ndarray:
        """What client ``client`` (position j in S) sends after its ``steps`` local steps; default w."""
        return w

    # ---- the local work of a round ---------------------------------------------------------
    def client_update(self, state, problem, ctx, clients, r):
        clients = np.asarray(clients, dtype=np.int64)
        state.epochs = self.local_epochs(ctx, clients, r)
        state.steps = np.zeros(len(clients), dtype=np.int64)
        uploads = None
        g = None
        for j, c in enumerate(clients):
            w = self.start_point(state, problem, ctx, j, int(c), r)
            if g is None or g.dtype != w.dtype:
                g = np.empty_like(w)
            opt = SGD(self.lr, self.momentum)
            dropout = ctx.rng("dropout", r, int(c))
            steps = 0
            for idx in problem.epoch_batches(ctx.rng("minibatch", r, int(c)), int(c), self.B, state.epochs[j]):
                problem.batch_loss_grad(w, idx, rng=dropout, out=g)
                self.local_gradient(state, problem, ctx, j, int(c), w, g)
                opt.step(w, g)
                steps += 1
                state.local_samples += len(idx)
            state.steps[j] = steps
            state.local_steps += steps
            up = self.client_upload(state, problem, ctx, j, int(c), w, steps)
            if uploads is None:
                uploads = np.empty((len(clients), up.size), dtype=up.dtype)
            uploads[j] = up
        return uploads

    def round_metrics(self, state, problem, ctx):
        """Cumulative local work: SGD steps and per-sample gradients of all clients (the papers'
        "local computation", e.g. Gong et al.'s FedADMM vs FedAvg comparison)."""
        return {"local_steps": state.local_steps, "local_samples": state.local_samples}

    def receive(self, state, problem, ctx, clients, uploads, r):
        state.uploads = uploads
        state.senders = np.asarray(clients, dtype=np.int64)
