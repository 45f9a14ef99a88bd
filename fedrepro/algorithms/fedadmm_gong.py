"""FedADMM of Gong, Li & Freris (ICDE 2022), Algorithm 1 (spec 003 §3.1-3.2, §7 A; FIDELITY GO-1 to GO-5).

Client i keeps a local model w_i and a dual y_i (client stores). In round t every selected
client, from its start point w_old (below) and a fresh momentum buffer, runs E_i ~ U{1..E}
epochs of minibatch SGD on the local augmented Lagrangian (3)::

    g <- grad mean loss(w; b) + rho_t (w - theta^t) + y_i           (grad_w L_i(w, y_i, theta^t))
    v <- momentum v + g ;  w <- w - lr v

then ascends its dual and uploads the change of its augmented model (eq. (4))::

    y_i <- y_i + rho_t (w - theta^t)                                 (Alg. 1 line 24)
    Delta_i = (w - w_old) + (y_i^new - y_i^old)/rho_t = (w - w_old) + (w - theta^t)   (§3.1 line 18)
    w_i <- w

and the server adds the averaged messages (eq. (5))::  theta^{t+1} = theta^t + eta_t mean_S Delta_i.

Start point (``local_init``): ``local`` (Option I, the paper's default: warm start from the stored w_i;
a client's first visit starts from the first theta^t it downloads, ``first_visit_init: global``,
or from theta^0, ``theta0``, the literal w_i^0 = theta^0 of the proof); ``global`` (Option II,
the authors' HEAD code: w_old = theta^t, so Delta_i = 2 (w - theta^t)); ``sequential_shared``
(the early code's aliasing, §7 A3: within a round the clients, in the order processed, each start
from the model the previous one left, the first from theta^t).

Client order (``client_order``, FIDELITY GO-1, GO-15): under ``sequential_shared`` the order in which
the selected clients train changes the result. The early code iterates over ``np.random.choice``'s
output, a uniformly random order; ``random`` (the default of ``sequential_shared``) draws that order
as a permutation of the round's selected set from its own stream ("client_order", r), so the
selection, the minibatches and every other stream are unchanged. ``ascending`` trains them in
ascending id order (the earlier hybrid; the default sampler's order). ``selection`` trains them in
the order the round's clients were selected (``ctx.clients(r)``): to replay the early code's own
``np.random.choice`` order, give its selections to ``--replay-selections`` (the file's order is
kept, :mod:`fedrepro.sim.replay`) with ``client_order: selection``; under the default sampler it is
``ascending``. Under ``local`` / ``global`` the clients are independent and the order cannot change
a client's model (only which E_i ~ U{1..E} draw of the round it gets, by its position in the
training order): ``random`` is refused there.
Local epochs: ``random_epochs`` (E_i ~ U{1..E}, Algorithm 1 as printed) or fixed E (the early code's
``--fixed 1`` default, the only mode that snapshot could run for FedADMM, spec §7 A4).

Schedules (§3.1, 0-based rounds): eta_t = eta, or eta_2 from round ``eta_switch`` on (Fig. 6);
rho_t (the paper's penalty rho) = ``penalty``, or ``rho_2`` from round ``rho_switch`` on (Fig. 9; the
stored y_i are kept). The parameter is ``penalty``, not ``rho``: ``rho`` is the run's participation rate
(issue #44; cell ids are kept by :attr:`FedADMMGong.id_legacy`, as in :mod:`fedrepro.algorithms.fedprox_sgd`).
``dual_ascent: false`` holds y = 0 (then Delta_i = w - w_old; with Option II and eta = 1 this is
FedProx, and with penalty = 0 FedAvg: the paper's Section III-B reduction, §7 A2).

Delta_i is computed and uploaded in float64 from the model-dtype vectors (the exact
difference of float32 models; one float64 row per client = the two float32 rows the memory
estimate counts), so the server step loses nothing to cancellation and the reduction to
FedProx/FedAvg holds bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass
import numpy as np

from fedrepro.algorithms.fedprox_sgd import FedProxSGDState, ProximalSGD
from fedrepro.core.params import NONNEGATIVE, NONNEGATIVE_INT, POSITIVE, Boolean, Options
from fedrepro.core.store import ClientStore

INITS = ("local", "global", "sequential_shared")
ORDERS = ("ascending", "random", "selection")


@dataclass(slots=True)
class FedADMMGongState(FedProxSGDState):
    W: ClientStore | None = None          # local models w_i (local_init: local)
    Y: ClientStore | None = None          # duals y_i (dual_ascent)
    visited: np.ndarray | None = None     # (m,) bool: client has a stored w_i
    w_old: np.ndarray | None = None       # start point of the client being trained (model dtype)
    y_old: np.ndarray | None = None       # its dual before the round
    shared: np.ndarray | None = None      # sequential_shared: the model the last client left
    order: np.ndarray | None = None       # the last round's clients in the order they trained
    drift_sum: float = 0.0                # sum over the round's clients of ||w_i - theta^t||^2
    drift_n: int = 0                      # the number of those clients


@dataclass
class FedADMMGong(ProximalSGD):
    """Parameters (spec 003 §3.1, §9; defaults the paper's)
    ----------
    penalty : the paper's penalty rho (0.01; ``rho`` is the run's participation rate). eta : server step
    (1.0). lr (0.1), momentum (0.5), E, B, random_epochs (E_i ~ U{1..E}, default true): the local solver
    (:class:`~fedrepro.algorithms.local_epochs.LocalEpochs`); momentum, random_epochs and aggregation are this
    class's own defaults (the paper's), not fedprox_sgd's (which are fedavg_sgd's).
    local_init : ``local`` (Option I) | ``global`` (Option II) | ``sequential_shared`` (the early code)
    (spec §9 ``fedadmm.init``).
    client_order : order of training within a round, ``random`` (from the stream ("client_order", r);
    the early code's) | ``ascending`` (client ids) | ``selection`` (the order ``ctx.clients(r)`` lists
    them: a replayed file's order); None (default): ``random`` under ``sequential_shared``, else
    ``ascending``. ``random`` requires ``sequential_shared`` (elsewhere the order has no effect).
    first_visit_init : ``global`` | ``theta0`` (start of a client's first visit under Option I).
    eta_2, eta_switch : eta_t = eta_2 for rounds t >= eta_switch (both or neither).
    rho_2, rho_switch : the penalty is rho_2 for rounds t >= rho_switch (both or neither).
    dual_ascent : update y_i (Alg. 1 line 24); false holds y = 0 (reduction to FedProx/FedAvg).
    aggregation : ``unweighted`` (the paper's mean over S) | ``data_size`` (weights n_i).
    """

    lr: float = 0.1
    momentum: float = 0.5
    random_epochs: bool = True
    aggregation: str = "unweighted"
    penalty: float = 0.01
    eta: float = 1.0
    local_init: str = "local"
    first_visit_init: str = "global"
    eta_2: float | None = None
    eta_switch: int | None = None
    rho_2: float | None = None
    rho_switch: int | None = None
    dual_ascent: bool = True
    client_order: str | None = None

    name = "fedadmm_gong"
    client_vectors = 2                    # w_i and y_i (Option II: y_i only; the estimate is the bound)
    state_class = FedADMMGongState
    upload_kind = "delta"                   # Delta_i; theta <- theta + eta mean_S Delta_i, eq. (5)
    constraints = {"penalty": [NONNEGATIVE], "eta": [POSITIVE], "local_init": [Options(*INITS)],
                   "first_visit_init": [Options("global", "theta0")], "eta_2": [None, POSITIVE], "eta_switch": [None, NONNEGATIVE_INT],
                   "rho_2": [None, NONNEGATIVE], "rho_switch": [None, NONNEGATIVE_INT], "dual_ascent": [Boolean],
                   "client_order": [None, Options(*ORDERS)]}
    # a parameter's former name -> its name now (a config that still uses it is refused, naming both)
    renamed = {"rho": ("penalty", "rho is the run's participation rate; FedADMM's penalty is penalty")}
    # the cell id is computed from the parameters as they were written before issue #44
    id_legacy = {"names": {"penalty": "rho"}, "defaults": {}}

    def __post_init__(self):
        super().__post_init__()
        for value, switch, what in ((self.eta_2, self.eta_switch, "eta"), (self.rho_2, self.rho_switch, "rho")):
            if (value is None) != (switch is None):
                raise ValueError(f"{self.name}: a {what} schedule needs both {what}_2 and {what}_switch "
                                 f"(got {what}_2={value!r}, {what}_switch={switch!r}); give both or neither")
        if self.dual_ascent and (self.penalty == 0 or self.rho_2 == 0):
            raise ValueError(f"{self.name}: the penalty must be > 0 with dual_ascent (Delta_i divides the dual change "
                             f"by it); got penalty={self.penalty!r}, rho_2={self.rho_2!r}. penalty = 0 is allowed only "
                             "with dual_ascent: false (the FedAvg reduction)")
        if self.client_order == "random" and self.local_init != "sequential_shared":
            raise ValueError(f"{self.name}: client_order: random needs local_init: sequential_shared (the early "
                             f"code, where clients train in sequence); with local_init: {self.local_init!r} the "
                             "clients are independent and the order cannot matter. Remove client_order or use "
                             "'ascending'")

    @property
    def order(self) -> str:
        """The effective client order: ``client_order``, or the variant's own (random for the early code)."""
        if self.client_order is not None:
            return self.client_order
        return "random" if self.local_init == "sequential_shared" else "ascending"

    # ---- schedules (0-based round index t) -----------------------------------------------
    def eta_at(self, t: int) -> float:
        return float(self.eta_2 if self.eta_switch is not None and t >= self.eta_switch else self.eta)

    def prox_at(self, t: int) -> float:
        """The penalty rho_t of round t (``penalty``, or ``rho_2`` from round ``rho_switch`` on)."""
        return float(self.rho_2 if self.rho_switch is not None and t >= self.rho_switch else self.penalty)

    # ---- state ------------------------------------------------------------------------
    def init(self, problem, ctx):
        state = super().init(problem, ctx)
        dtype = state.w.dtype
        if self.local_init == "local":
            fill = state.w if self.first_visit_init == "theta0" else 0.0
            state.W = ctx.client_store(problem.m, problem.dim, fill=fill, dtype=dtype)
            state.visited = np.zeros(problem.m, dtype=bool)
        if self.dual_ascent:
            state.Y = ctx.client_store(problem.m, problem.dim, dtype=dtype)
        return state

    # ---- client side ----------------------------------------------------------------------
    def training_order(self, ctx, clients: np.ndarray, r: int) -> np.ndarray:
        """Positions into ``clients`` (round r's selected set, in the order selected) in the order they
        train: ascending ids (``ascending``: the identity under the default sampler, whose ids are
        ascending), the identity (``selection``) or a uniform permutation from the stream
        ("client_order", r) (``random``)."""
        if self.order == "random":
            return ctx.rng("client_order", r).permutation(len(clients))
        if self.order == "ascending":
            return np.argsort(clients, kind="stable")
        return np.arange(len(clients))

    def client_update(self, state, problem, ctx, clients, r):
        clients = np.asarray(clients, dtype=np.int64)
        state.drift_sum, state.drift_n = 0.0, 0
        perm = self.training_order(ctx, clients, r)
        state.order = clients[perm]
        if np.array_equal(perm, np.arange(len(clients))):
            return super().client_update(state, problem, ctx, clients, r)
        uploads = super().client_update(state, problem, ctx, clients[perm], r, rows=perm)   # rows: S's order
        inv = np.argsort(perm)                       # back to the selected set's order (receive's clients)
        state.steps, state.epochs = state.steps[inv], state.epochs[inv]
        return uploads

    def start_point(self, state, problem, ctx, j, client, r):
        theta = state.w
        if self.local_init == "local" and (self.first_visit_init == "theta0" or state.visited[client]):
            w = np.array(state.W[client], dtype=theta.dtype, copy=True)           # Option I warm start
        elif self.local_init == "sequential_shared" and j > 0:
            w = np.array(state.shared, copy=True)                                 # early-code aliasing
        else:
            w = np.array(theta, copy=True)                                        # theta^t
        state.w_old = theta if self.local_init == "global" else w.copy()
        state.y_old = np.array(state.Y[client], dtype=theta.dtype, copy=True) if self.dual_ascent else None
        return w

    def local_terms(self, state, problem, ctx, j, client):
        # grad_w L_i(w, y_i, theta^t) = grad f_i(w) + rho_t (w - theta^t) + y_i: the gradient of (3)
        return {"rho": state.rho_now, "anchor": state.w, "shift": state.y_old}

    def client_upload(self, state, problem, ctx, j, client, w, steps):
        w64 = w.astype(np.float64)
        delta = w64 - state.w_old                                                 # w - w_old (float64)
        moved = w64 - state.w                                                     # w - theta^t
        state.drift_sum += float(moved @ moved)
        state.drift_n += 1
        if self.dual_ascent:                                                      # (y_new - y_old) / rho_t
            delta += moved
            moved *= state.rho_now
            moved += state.y_old
            state.Y[client] = moved                                               # y_old + rho_t (w - theta^t)
        if self.local_init == "local":
            state.W[client] = w
            state.visited[client] = True
        elif self.local_init == "sequential_shared":
            state.shared = w.copy()
        return delta

    RECORDS = ProximalSGD.RECORDS + ("client_drift",)

    def round_metrics(self, state, problem, ctx):
        """Local work (:class:`LocalSGD`) and ``client_drift``: the mean over the last round's clients of
        ||w_i - theta^t||^2, each trained model's squared distance from the global model it was trained
        against (the "discrepancies between client models and the global model" of Sec. V-B, Fig. 9)."""
        out = super().round_metrics(state, problem, ctx)
        out["client_drift"] = state.drift_sum / state.drift_n if state.drift_n else float("nan")
        return out

    # ---- server ---------------------------------------------------------------------------
    def aggregate(self, state, problem, ctx, r):
        if state.uploads is None:
            return state.w
        # the uploads are round r-1's: theta^r = theta^{r-1} + eta_{r-1} mean_S Delta_i   (5)
        theta = state.w.astype(np.float64) + self.eta_at(r - 1) * self.upload_mean(state, problem)
        state.uploads = None
        return theta.astype(state.w.dtype)
