"""The one channel between clients and server, applied by the simulation driver to every upload.

Every algorithm declares what it uploads (``upload_kind``, :class:`fedrepro.algorithms.base.Algorithm`):
a model, a model delta, a gradient, or an algorithm-specific vector with its map to a model update
(FedADMM's z_i = sigma_i w_i + pi_i stands for the model z_i / sigma_i). The channel is a stack set in
the config, applied in this order to the uploads U of a round's clients S::

    1. privacy, client side     laplace_epm: noise on each uploaded model (FedEPM eq. (39));
                                gaussian / clip: each client clips its model update to norm C
    2. adversary                the run's faulty workers (one population, :mod:`fedrepro.sim.attacks`):
                                data-side attacks acted before the run; upload-side attacks rewrite the
                                faulty rows (gaussian, sign_flip, scaling, alie, ipm); silent drops them
    3. aggregation, server      an aggregator (:mod:`fedrepro.sim.aggregation`: krum, trimmed mean ...)
                                or the Gaussian mechanism's noised mean replaces the average the server
                                step takes: the algorithm receives that update as every row

Rows are mapped to model updates d_i (``algorithm.upload_to_update``) only when a stage needs them,
and back (``update_to_upload``) afterwards; with no stage configured the uploads pass untouched (the
papers' runs are unchanged bit for bit). :meth:`Channel.check` refuses, before any job, every stage the
algorithm cannot take, with the reason; :mod:`fedrepro.sim.capabilities` lists what composes with what
(the matrix of ``docs/capabilities.md``).
"""
from __future__ import annotations

import numpy as np

from fedrepro.sim.aggregation import build_aggregator
from fedrepro.sim.attacks import build_attack
from fedrepro.sim.privacy import build_mechanism


class Channel:
    """The stack of one run: ``mechanism`` (privacy), ``attack`` (adversary), ``aggregator``; any may be None."""

    def __init__(self, mechanism=None, attack=None, aggregator=None):
        self.mechanism, self.attack, self.aggregator = mechanism, attack, aggregator

    @classmethod
    def from_specs(cls, mechanism: dict | None = None, attack: dict | None = None,
                   aggregator: dict | None = None) -> "Channel":
        return cls(build_mechanism(mechanism), build_attack(attack), build_aggregator(aggregator))

    @property
    def empty(self) -> bool:
        """Whether no stage touches the uploads (the loops then skip :meth:`transmit`): no mechanism, no
        aggregator, and no attack or a data-side one (it acted on the data before the run)."""
        return self.mechanism is None and self.aggregator is None and \
            (self.attack is None or getattr(self.attack, "acts_on", "upload") == "data")

    # ---- before the run -------------------------------------------------------------------------
    def refusals(self, algorithm, schedule: str = "sync") -> list[str]:
        """Why each configured stage cannot act on ``algorithm`` (instance or class) under ``schedule``
        ("sync" | "async"); empty when the stack composes."""
        alg = getattr(algorithm, "name", getattr(algorithm, "__name__", str(algorithm)))
        out = []
        mech, attack, agg = self.mechanism, self.attack, self.aggregator
        if mech is not None:
            refusal = getattr(mech, "refusal", None)     # a user's callable without declarations acts on uploads
            why = refusal(algorithm) if refusal is not None else None
            if why is None and schedule == "async" and getattr(mech, "acts_on", "upload") == "update":
                why = ("its noise goes on the server's average of a round's clipped updates, and the asynchronous "
                       "master consumes reports one by one")
            if why:
                out.append(f"mechanism {mech.name!r} cannot act on algorithm {alg!r}: {why}")
        if agg is not None:
            why = None
            if getattr(algorithm, "server_rule", "own") != "mean":
                why = "its server step has its own rule (not an average of the uploads), which aggregators do not replace"
            elif getattr(algorithm, "upload_kind", None) is None:
                why = "its uploads are undeclared (no upload kind), so there is no model update to aggregate"
            elif schedule == "async":
                why = "the asynchronous schedule's master consumes reports one by one"
            if why:
                out.append(f"aggregator {agg.name!r} cannot replace the server step of algorithm {alg!r}: {why}")
            elif mech is not None and getattr(mech, "acts_on", "upload") == "update":
                out.append(f"aggregator {agg.name!r} cannot follow mechanism {mech.name!r}: the Gaussian mechanism's "
                           "privacy holds for the noised mean of clipped updates (sensitivity C), not for a robust "
                           "rule; drop one of the two")
        if attack is not None:
            refusal = getattr(attack, "refusal", None)   # a user's object with prepare/corrupt only: upload-side
            why = refusal(algorithm) if refusal is not None else None
            silent = getattr(attack, "silent", False)
            if why is None and schedule == "async" and silent:
                why = "a silent worker never reports, and the asynchronous master would wait for it forever"
            if why is None and silent and not getattr(algorithm, "reads_senders", False) \
                    and getattr(algorithm, "server_rule", "own") != "mean":
                why = ("the channel drops a silent worker's upload, which an algorithm with its own server rule "
                       "does not expect")
            if why:
                out.append(f"attack {attack.name!r} cannot corrupt the uploads of algorithm {alg!r}: {why}")
        return out

    def check(self, algorithm, problem=None, schedule: str = "sync") -> None:
        """Raise ValueError with every refusal (module docstring); also the attack's problem needs."""
        problems = self.refusals(algorithm, schedule)
        if problems:
            raise ValueError("; ".join(problems))
        if self.attack is not None and problem is not None and hasattr(self.attack, "check"):
            self.attack.check(algorithm, problem)

    def prepare(self, problem, ctx) -> None:
        if self.attack is not None:
            self.attack.prepare(problem, ctx)
        if self.mechanism is not None and hasattr(self.mechanism, "prepare"):
            self.mechanism.prepare(problem, ctx)
        if self.aggregator is not None:
            self.aggregator.prepare(problem, ctx)

    # ---- every round ------------------------------------------------------------------------------
    def transmit(self, uploads: np.ndarray, clients: np.ndarray, r: int, state, problem, algorithm, ctx):
        """The uploads the server receives from ``clients`` in round ``r``: ``(clients, uploads)`` (a
        silent worker's row is dropped unless the algorithm reads ``problem.senders`` itself)."""
        mech, attack, agg = self.mechanism, self.attack, self.aggregator
        clients = np.asarray(clients)
        U, D = uploads, None

        def updates():
            nonlocal U, D
            if D is None:
                D = algorithm.upload_to_update(state, problem, clients, U)
            return D

        def as_uploads():
            nonlocal U, D
            if D is not None:
                U = algorithm.update_to_upload(state, problem, clients, D, uploads)
                D = None
            return U

        # 1. privacy, client side
        if mech is not None and getattr(mech, "acts_on", "upload") == "upload":
            if algorithm.upload_kind in (None, "model"):
                U = mech(U, clients, r, state, ctx)              # the uploaded models themselves (FedEPM)
            else:                                                # the model w + d_i the upload stands for
                w = np.asarray(state.w, dtype=np.float64)[None, :]
                D = mech(updates() + w, clients, r, state, ctx) - w
        elif mech is not None and getattr(mech, "acts_on", "upload") == "update":
            D = mech.clip_rows(updates(), state)
        # 2. adversary
        if attack is not None:
            acts_on, silent = getattr(attack, "acts_on", "upload"), getattr(attack, "silent", False)
            if acts_on == "update":
                D = attack.corrupt_updates(updates(), clients, r, ctx)
            elif acts_on == "upload" and not silent:
                U = attack.corrupt(as_uploads(), clients, r, state, problem, algorithm, ctx)
            if silent and not getattr(algorithm, "reads_senders", False):
                keep = ~np.isin(clients, attack.faulty)
                U = as_uploads()
                clients, U = clients[keep], U[keep]
                uploads = U
        # 3. aggregation, server side
        if agg is not None or (mech is not None and getattr(mech, "acts_on", "upload") == "update"):
            rows = updates()
            if len(rows):
                if agg is not None:
                    faulty = getattr(attack, "faulty", None)
                    n_faulty = int(np.isin(clients, faulty).sum()) if faulty is not None else 0
                    d = agg(rows, clients, n_faulty)
                else:
                    d = mech.release(rows, r, state, ctx)
                d = np.asarray(d, dtype=np.float64)[None, :]
                if algorithm.upload_kind in ("model", "delta", "gradient"):   # the same upload for every client:
                    row = algorithm.update_to_upload(state, problem, clients[:1], d, uploads[:1])   # map one row
                    return clients, np.repeat(row, rows.shape[0], axis=0)
                D = np.repeat(d, rows.shape[0], axis=0)
        return clients, as_uploads()


def build_channel(spec) -> Channel:
    """The channel a run's channel spec describes (:class:`fedrepro.experiments.spec.ChannelSpec`: its
    ``mechanism``, ``attack`` and ``aggregator`` blocks, each None when absent)."""
    return Channel.from_specs(spec.mechanism, spec.attack, spec.aggregator)
