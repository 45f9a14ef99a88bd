"""Pieces the synchronous DRO baselines of aspire spec 002 share (AFL §3.6, DRFA-Prox §3.7, and the
weighted FedAvg / Ind_j of §3.4-3.5): the prior parameter, reported minibatch losses, the mixture
weights as trace columns, full-participation checks and uploads laid out one row per round client.
"""
from __future__ import annotations

import numpy as np

from fedrepro.algorithms.local_epochs import random_batch
from fedrepro.algorithms.ops.priors import PRIOR_CONSTRAINT, check_prior, resolve_prior

__all__ = ["PRIOR", "check_prior", "resolve_prior", "reported_losses", "mixture_metrics", "require_all_workers",
           "rows_for_clients", "client_rows"]

#: constraint of a ``prior`` parameter: None (uniform), "uniform", {"last": r} or a probability vector
PRIOR = [None, PRIOR_CONSTRAINT]


def report(problem, j: int, value: float) -> float:
    """What worker j tells the master its loss is (``problem.reported_loss``: the value itself, except
    for a malicious worker that raises it, aspire App. C.2)."""
    return float(problem.reported_loss(int(j), float(value)))


def reported_losses(problem, ctx, w: np.ndarray, workers, r: int, B_loss: int) -> np.ndarray:
    """F_j = mean loss of w (eval mode) on min(B_loss, n_j) samples of worker j drawn without
    replacement from ``ctx.rng("loss_batch", r, j)`` (all of them when n_j <= B_loss), float64, as
    the worker reports it (:func:`report`)."""
    return np.array([report(problem, j, problem.batch_loss(w, random_batch(problem, ctx.rng("loss_batch", r, int(j)),
                                                                           j, B_loss)))
                     for j in np.asarray(workers, dtype=np.int64)], dtype=np.float64)


def mixture_metrics(lam: np.ndarray) -> dict:
    """Trace columns of the mixture weights: lambda_min, lambda_max, lambda_last (the last worker's
    weight: the malicious one in attack runs, spec §4.5) and lambda_<j> of every worker."""
    out = {"lambda_min": float(lam.min()), "lambda_max": float(lam.max()), "lambda_last": float(lam[-1])}
    out.update({f"lambda_{j}": float(v) for j, v in enumerate(lam)})
    return out


def require_all_workers(owner: str, ctx, clients, m: int) -> None:
    """Raise unless the round's clients are all m workers (full participation, spec §3.6-3.7)."""
    if len(clients) != m:
        raise ValueError(f"{owner}: every round needs all {m} workers (full participation), the loop gave "
                         f"{len(clients)}; run it with rho = 1 and the default sampler")


def rows_for_clients(rows: np.ndarray, workers, clients) -> np.ndarray:
    """Uploads laid out one row per round client (the loop's contract: mechanisms and attacks index
    rows by the clients' positions): the rows of ``workers`` (a subset of ``clients``) where they
    belong, zeros for clients that did no work this round (they carry no weight)."""
    workers, clients = np.asarray(workers, dtype=np.int64), np.asarray(clients, dtype=np.int64)
    if workers.shape == clients.shape and np.array_equal(workers, clients):
        return rows
    out = np.zeros((len(clients), rows.shape[1]), dtype=rows.dtype)
    out[client_rows(workers, clients)] = rows
    return out


def client_rows(workers, clients) -> np.ndarray:
    """Positions of ``workers`` among the round ``clients`` (in the order selected: ascending under the
    default sampler, any order under replayed selections); every worker must be one of them."""
    clients, workers = np.asarray(clients, dtype=np.int64), np.asarray(workers, dtype=np.int64)
    order = np.argsort(clients, kind="stable")              # the identity for ascending clients
    pos = np.minimum(np.searchsorted(clients[order], workers), max(len(clients) - 1, 0))
    if len(clients) == 0 or not np.array_equal(clients[order[pos]], workers):
        raise ValueError(f"workers {workers.tolist()} are not all among the round's clients {clients.tolist()}")
    return order[pos]
