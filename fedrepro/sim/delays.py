"""Virtual-time delay models (aspire spec 002, section 3.0.1): how long a worker's job and the
master's iteration take on the virtual clock. Nothing sleeps.

:class:`DelayModel` (the spec's model): worker j has heterogeneity factor h_j = linspace(1, H_max,
N)[perm_j] (perm drawn from ``ctx.rng("delay")``; or explicit ``factors``); a job of n_steps local
gradient steps (plus one loss evaluation) sent at virtual time s takes

    D_j = (n_steps c0 h_j + m0 h_j) * prod(factor of every straggler episode (j, t0, t1, factor)
                                           with t0 <= s < t1) * xi,
    xi = lognormal(-sigma^2/2, sigma)   (E[xi] = 1),

xi drawn from worker j's own stream ``ctx.rng("delay", j, job, phase)`` (job: the worker's job
counter in the asynchronous loop, the round in a synchronous one; phase: 0, or the phase of a
multi-phase round), so a draw never depends on other workers or on the order of events. The master
takes mu0 + mu1 * units (+ t_cp when it solved the cutting-plane subproblem) per iteration.

:class:`DelayTable` gives hand-written durations (tests, illustrations). A model is bound to a run
with ``bind(m, ctx)``; the bound object answers ``duration(worker, n_steps, start, job, phase)``,
``mean(worker, n_steps, start)`` and ``master_time(units, cp)``.

Synchronous methods take their round durations from the same model:
:func:`sync_round_duration` (max over the participants of each phase; phases run one after the
other; master time once) and :func:`drfa_round_duration` (DRFA-Prox: a model phase of tau steps and
a loss phase of one step).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fedrepro.core.params import NONNEGATIVE, Anything, Interval, Real, validate_params

__all__ = ["DelayModel", "DelayTable", "build_delays", "resolve_staleness", "sync_round_duration",
           "drfa_round_duration"]


def _check_schedule(schedule, m=None):
    out = []
    for entry in schedule or ():
        if isinstance(entry, dict):
            entry = (entry.get("worker"), entry.get("start"), entry.get("end"), entry.get("factor"))
        if len(entry) != 4:
            raise ValueError(f"delay schedule entry {entry!r}: expected (worker, start, end, factor)")
        w, t0, t1, fac = entry
        if not (isinstance(w, (int, np.integer)) and w >= 0 and (m is None or w < m)):
            raise ValueError(f"delay schedule entry {entry!r}: worker must be an index in [0, {m})")
        if not (float(t0) < float(t1)) or not float(fac) > 0:
            raise ValueError(f"delay schedule entry {entry!r}: need start < end and factor > 0")
        out.append((int(w), float(t0), float(t1), float(fac)))
    return tuple(out)


@dataclass
class DelayModel:
    """Spec 3.0.1 defaults: H_max = 5, c0 = 0.05 s per step, m0 = 0.2 s round trip, sigma = 0.3,
    master mu0 = 0, mu1 = 0.002 s per unit (cutting plane), t_cp = 0."""

    H_max: float = 5.0
    c0: float = 0.05
    m0: float = 0.2
    sigma: float = 0.3
    schedule: tuple = ()
    mu0: float = 0.0
    mu1: float = 0.002
    t_cp: float = 0.0
    factors: object = None
    constraints = {"H_max": [Interval(Real, 1, None)], "c0": [NONNEGATIVE], "m0": [NONNEGATIVE],
                   "sigma": [NONNEGATIVE], "schedule": [Anything("a list of (worker, start, end, factor)")],
                   "mu0": [NONNEGATIVE], "mu1": [NONNEGATIVE], "t_cp": [NONNEGATIVE],
                   "factors": [None, Anything("heterogeneity factors h_j >= 1 of every worker")]}

    def __post_init__(self):
        validate_params("delay model", {k: getattr(self, k) for k in self.constraints}, self.constraints)
        self.schedule = _check_schedule(self.schedule)
        if self.factors is not None:
            self.factors = np.asarray(self.factors, dtype=float)
            if self.factors.ndim != 1 or np.any(~(self.factors > 0)):
                raise ValueError("delay model: factors must be a vector of positive numbers, one per worker")

    def bind(self, m: int, ctx) -> "_BoundModel":
        if self.factors is not None:
            if self.factors.size != m:
                raise ValueError(f"delay model: {self.factors.size} factors given for {m} workers")
            h = self.factors.copy()
        else:
            h = np.linspace(1.0, self.H_max, m)[ctx.rng("delay").permutation(m)]
        _check_schedule(self.schedule, m)
        return _BoundModel(self, h, ctx)


@dataclass
class _BoundModel:
    model: DelayModel
    h: np.ndarray
    ctx: object

    def mean(self, worker: int, n_steps: int, start: float) -> float:
        d = self.model
        mean = (n_steps * d.c0 + d.m0) * self.h[worker]
        for w, t0, t1, fac in d.schedule:
            if w == worker and t0 <= start < t1:
                mean *= fac
        return float(mean)

    def duration(self, worker: int, n_steps: int, start: float, job: int, phase: int = 0) -> float:
        sigma = self.model.sigma
        xi = 1.0 if sigma == 0 else float(
            self.ctx.rng("delay", worker, job, phase).lognormal(mean=-0.5 * sigma**2, sigma=sigma))
        return self.mean(worker, n_steps, start) * xi

    def master_time(self, units: int = 0, cp: bool = False) -> float:
        d = self.model
        return d.mu0 + d.mu1 * units + (d.t_cp if cp else 0.0)


@dataclass
class DelayTable:
    """Hand-written durations: ``durations[j][k]`` is worker j's k-th job (its last entry repeats);
    the master takes ``master`` per iteration."""

    durations: list = field(default_factory=list)
    master: float = 0.0

    def __post_init__(self):
        validate_params("delay table", {"master": self.master}, {"master": [NONNEGATIVE]})
        self.durations = [np.asarray(d, dtype=float).ravel() for d in self.durations]
        if any(d.size == 0 or np.any(~(d >= 0)) for d in self.durations):
            raise ValueError("delay table: every worker needs a non-empty list of durations >= 0")

    def bind(self, m: int, ctx) -> "DelayTable":
        if len(self.durations) != m:
            raise ValueError(f"delay table: {len(self.durations)} workers' durations given for {m} workers")
        return self

    def mean(self, worker, n_steps, start):
        return float(self.durations[worker][0])

    def duration(self, worker, n_steps, start, job, phase=0):
        d = self.durations[worker]
        return float(d[min(job, d.size - 1)])

    def master_time(self, units=0, cp=False):
        return float(self.master)


def sync_round_duration(delays, r: int, phases, start: float = 0.0, units: int = 0, cp: bool = False) -> float:
    """Virtual duration of synchronous round r started at ``start``: ``phases`` is a sequence of
    (participants, n_steps); each phase lasts the max over its participants of their job duration
    (job key r, phase index) and starts when the previous one ended; the master time is added once."""
    clock = float(start)
    for phase, (workers, n_steps) in enumerate(phases):
        workers = np.atleast_1d(workers)
        if workers.size:
            clock += max(delays.duration(int(j), n_steps, clock, r, phase) for j in workers)
    return clock - start + delays.master_time(units, cp)


def drfa_round_duration(delays, r: int, model_workers, loss_workers, tau: int, start: float = 0.0) -> float:
    """DRFA(-Prox) round (spec 3.7): phase 1 sends the model to ``model_workers`` for ``tau`` local
    steps, phase 2 asks ``loss_workers`` for one loss evaluation (n_steps = 1); two communications."""
    return sync_round_duration(delays, r, [(model_workers, tau), (loss_workers, 1)], start)


def build_delays(spec: dict | None) -> DelayModel | None:
    """The :class:`DelayModel` a config's ``delays:`` block describes (None: no virtual clock)."""
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise ValueError(f"delays must be a mapping of DelayModel parameters, got {spec!r}")
    unknown = sorted(set(spec) - set(DelayModel.constraints))
    if unknown:
        raise ValueError(f"delays: unknown key(s) {unknown}; allowed: {', '.join(DelayModel.constraints)}")
    return DelayModel(**spec)


def resolve_staleness(tau, m: int) -> int | None:
    """Bounded staleness tau: an int, None (unbounded) or ``"<k>N"`` (k times the number of workers,
    e.g. the spec's ``"4N"``)."""
    if tau is None or (isinstance(tau, (int, np.integer)) and not isinstance(tau, bool) and tau >= 1):
        return None if tau is None else int(tau)
    if isinstance(tau, str) and tau.endswith("N"):
        try:
            k = float(tau[:-1] or 1)
        except ValueError:
            k = 0.0
        if k > 0:
            return max(1, int(round(k * m)))
    raise ValueError(f"tau={tau!r} must be a positive integer, None or '<k>N' (e.g. '4N')")
