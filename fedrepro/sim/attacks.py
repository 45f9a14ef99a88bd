"""The adversary of the client-to-server channel (:mod:`fedrepro.sim.channel`): Byzantine attacks
(FRPG spec 004 sec. 3.7 and the literature below), one population of faulty workers per run.

An attack is built from its config block, ``ATTACKS[spec["name"]](spec)``; it owns which workers are
faulty (not the problem, not the algorithm). The channel calls ``check(algorithm, problem)`` before
the run (an unsuitable pairing is refused with the reason), ``prepare(problem, ctx)`` once, and
every round, on the uploads of the round's clients, either ``corrupt(uploads, ...)`` (``acts_on =
"upload"``: what the algorithm's ``faulty_upload`` says a faulty worker sends) or
``corrupt_updates(D, clients, r, ctx)`` (``acts_on = "update"``: the rows D are model updates, the
channel maps them from and back to the algorithm's declared upload kind). A data-side attack
(``acts_on = "data"``) changes the faulty workers' training data and leaves the uploads: in ``prepare``
(``label_flip``), or, when it changes the federation itself (``backdoor`` adds a worker), through the
problem's builder: ``problem_options()`` are the builder's keyword arguments for the data the attack
needs (:func:`fedrepro.experiments.runner.build_run` passes them), and ``check`` refuses a problem built
without them.

Upload-side attacks on model updates d_i (the faulty workers' rows; benign = the round's other rows):

* ``sign_flip`` -- d_i -> -c d_i (c = 1).
* ``scaling`` -- d_i -> c d_i (c = 10).
* ``alie`` -- "A little is enough" (Baruch, Baruch & Goldberg, NeurIPS 2019): every faulty worker
  sends mu - z sigma, mu and sigma the coordinate-wise mean and standard deviation of the benign
  updates, z = z_max(n, f) of the paper (Phi^-1((n - s) / n), s = floor(n/2 + 1) - f; n workers,
  f of them faulty) unless ``z`` is given.
* ``ipm`` -- inner-product manipulation (Xie, Koyejo & Gupta, UAI 2020): -eps mu (eps = 0.5).

Faulty workers: ``faulty`` (list of ids) or ``B`` (the last B workers, the paper's
n = N+1..Q convention, spec A2). The problem is told who is faulty
(``problem.set_faulty``) so its metrics use the reliable workers only.

* ``label_flip`` -- the faulty workers follow the protocol on labels y -> C-1-y
  (``prepare`` rewrites their training labels, ``problem.flip_labels``; C the problem's number of
  classes; uploads are not touched). Any classification problem with rewritable training labels
  (RelabelProblem: softmax, neural, worker_neural).
* ``backdoor`` -- the backdoor of aspire App. C.2 (FIDELITY AS-27): one malicious worker is added to
  the federation (the last, index N of N + 1; ``B`` is 1, ``faulty`` is not an option) with a
  triggered, relabelled share ``poison_fraction`` of its data, and it multiplies every loss it reports
  to the master by ``loss_scale`` (``problem.reported_loss``). The data are prepared by the problem's
  builder from ``problem_options()`` (:func:`fedrepro.data.worker_data.with_backdoor`: ``poison_fraction``,
  ``target``, ``source``, ``n_samples``, ``patch``, ``value``, ``trigger_frac``, ``trigger_value``;
  seeded by the problem's ``split_seed``); the problem scores ``attack_success`` on its triggered test
  set and leaves the added worker out of its worst-case metrics. Problems: BackdoorProblem (worker_neural).
* ``gaussian`` -- every slot a faulty worker's *model* is c xi, xi ~ N(0, I_d) fresh
  (stream ``attack``, keyed by round); what it uploads is what the algorithm's
  ``faulty_upload(state, problem, clients, models)`` says a worker with that model
  sends (FRPG: the Huber penalty gradient; RSA/Krum/GeoMed: the model; SGD: c xi as
  its gradient). ``models`` has shape (slots_per_upload, n_faulty, d).
* ``silent`` -- no corruption, but the faulty workers (default the last B = 4) send
  nothing the server uses: the ideal problem (4) over the N reliable workers, the
  "no attack" reference of the acceptance check.
* ``none`` -- no attack. Without ``faulty``/``B`` (or with ``B: 0``) there are no faulty
  workers and :func:`build_attack` returns None (nothing to run, as with no ``attack``
  block). With ``faulty: [ids]`` or ``B > 0`` the listed workers follow the protocol
  unchanged but are not "reliable": metrics use the other workers only (an attack-free
  run measured on the same reliable set as the attacked runs).
"""
from __future__ import annotations

import numpy as np

from fedrepro.core.params import NONNEGATIVE_INT, POSITIVE, POSITIVE_INT, Anything, Interval, Real, validate_params
from fedrepro.problems.protocols import BACKDOOR, RELABEL, provides
from fedrepro.sim import attack_ops

#: upload kinds (fedrepro.algorithms.base.Algorithm.upload_kind) the channel maps to model updates
MAPPED_KINDS = ("model", "delta", "gradient", "vector")

# keys every attack block accepts (besides ``name``)
_WORKERS = {"faulty": [None, Anything("a list of worker ids")], "B": [None, NONNEGATIVE_INT]}


def _faulty_ids(spec: dict, m: int, default_B: int, workers: str = "workers") -> np.ndarray:
    """The faulty workers' ids: ``faulty``, else the last ``B``; a ValueError names the numbers
    (``workers``: how the problem's worker count is spelt, e.g. ``problem.Q = 20``)."""
    name = spec.get("name")
    if "faulty" in spec and spec["faulty"] is not None:
        try:
            ids = np.asarray(spec["faulty"], dtype=np.int64).reshape(-1)
        except (TypeError, ValueError):
            raise ValueError(f"attack {name!r}: faulty={spec['faulty']!r} must be a list of worker ids") from None
    else:
        B = int(spec.get("B", default_B))
        if B > m:
            raise ValueError(f"attack {name!r}: B = {B} faulty workers, but the problem has only {m} {workers}; "
                             f"B must be at most {m} (attack.B)")
        ids = np.arange(m - B, m, dtype=np.int64)
    bad = sorted({int(i) for i in ids if i < 0 or i >= m})
    if bad:
        shown = ", ".join(map(str, bad[:10])) + (f", ... ({len(bad)} ids)" if len(bad) > 10 else "")
        raise ValueError(f"attack {name!r}: faulty ids [{shown}] are not workers of the problem, which has {m} "
                         f"{workers} (ids 0..{m - 1}); fix attack.faulty")
    return np.unique(ids)


class _Attack:
    name = "attack"
    default_B = 4
    silent = False
    acts_on = "none"                # "data" | "upload" | "update" | "none" (module docstring)
    kinds = ()                      # upload kinds an upload-side attack can corrupt
    problem_requires = ()           # capabilities (fedrepro.problems.protocols) the attack needs
    adds_workers = 0                # workers the attack adds to the federation (its data: problem_options)
    algorithm_requires = ()         # methods the algorithm must implement
    constraints = {}                # the attack's own keys (besides name, faulty, B)

    def refusal(self, algorithm) -> str | None:
        """Why this attack cannot corrupt what ``algorithm`` (instance or class) uploads, or None."""
        if self.acts_on == "update" and getattr(algorithm, "upload_kind", None) not in self.kinds:
            kind = getattr(algorithm, "upload_kind", None)
            return (f"it rewrites model updates, and the algorithm's uploads ({kind or 'undeclared'}) have no map to "
                    f"one (the attack corrupts {', '.join(self.kinds)} uploads)")
        lacking = [m for m in self.algorithm_requires if not callable(getattr(algorithm, m, None))]
        if lacking:
            return f"it needs the algorithm to implement {', '.join(lacking)} (what a faulty worker uploads)"
        return None

    def check(self, algorithm, problem) -> None:
        """Raise ValueError when this attack cannot run with ``algorithm`` on ``problem`` (an
        instance or a problem class), naming what is missing; called before the run starts."""
        alg = getattr(algorithm, "name", type(algorithm).__name__)
        why = self.refusal(algorithm)
        if why:
            raise ValueError(f"attack {self.name!r} cannot corrupt the uploads of algorithm {alg!r}: {why}")
        cls = problem if isinstance(problem, type) else type(problem)
        gaps = [str(c) for c in self.problem_requires if not provides(problem, c)]
        if gaps:
            pname = getattr(problem, "name", None) if not isinstance(problem, type) else None
            raise ValueError(f"attack {self.name!r} cannot run on problem {pname or cls.__name__!r}: it needs "
                             f"{', '.join(gaps)}")

    def __init__(self, spec: dict | None = None):
        self.spec = dict(spec or {})
        validate_params(f"attack {self.name!r}", {k: v for k, v in self.spec.items() if k != "name"},
                        {**_WORKERS, **self.constraints}, noun="key")
        self.faulty = None

    def check_workers(self, m: int, workers: str = "workers") -> None:
        """Raise ValueError when the faulty workers (``faulty`` ids or the last ``B``) are not workers of a
        problem with ``m`` workers (before any data is loaded; the run checks again with the built problem)."""
        _faulty_ids(self.spec, int(m) + int(self.adds_workers), self.default_B, workers)

    def problem_options(self) -> dict:
        """Keyword arguments for the problem's builder: the data this attack needs prepared when the
        problem is built (empty: none; :class:`Backdoor`'s added worker)."""
        return {}

    def prepare(self, problem, ctx):
        self._m = int(problem.m)
        self.faulty = _faulty_ids(self.spec, problem.m, self.default_B)
        if hasattr(problem, "set_faulty"):
            problem.set_faulty(self.faulty, silent=self.silent)

    def _rows(self, clients):
        """Positions in ``clients`` of the faulty workers."""
        return np.flatnonzero(np.isin(clients, self.faulty))

    def corrupt(self, uploads, clients, r, state, problem, algorithm, ctx):
        return uploads


def classes_of(problem, default=None) -> int:
    """The number of classes of a classification problem: ``problem.n_classes`` (the neural problems: the
    model's head), ``problem.C`` (softmax), else ``default`` (an attack's ``n_classes`` key), else 10."""
    for attr in ("n_classes", "C"):
        value = getattr(problem, attr, None)
        if value is not None:
            return int(value)
    return int(default) if default is not None else 10


class LabelFlip(_Attack):
    """Label flipping (Yin et al. 2018): y -> C - 1 - y on the faulty workers (C: the problem's classes;
    ``n_classes`` only for a problem that declares none)."""

    name = "label_flip"
    acts_on = "data"
    problem_requires = (RELABEL,)
    constraints = {"n_classes": [POSITIVE_INT]}

    def prepare(self, problem, ctx):
        super().prepare(problem, ctx)
        C = classes_of(problem, self.spec.get("n_classes"))
        problem.flip_labels(self.faulty, lambda y: C - 1 - y)


class Backdoor(_Attack):
    """The backdoor of aspire App. C.2: an added malicious worker with triggered data that raises the losses
    it reports (module docstring; FIDELITY AS-27)."""

    name = "backdoor"
    acts_on = "data"
    default_B = 1
    adds_workers = 1
    problem_requires = (BACKDOOR,)
    #: the data options (fedrepro.data.worker_data.with_backdoor), passed to the problem's builder
    DATA_KEYS = ("poison_fraction", "target", "source", "n_samples", "patch", "value", "trigger_frac", "trigger_value")
    constraints = {"poison_fraction": [Interval(Real, 0, 1, closed="right")],
                   "loss_scale": [Interval(Real, 1, None, closed="left")],
                   "target": [None, NONNEGATIVE_INT], "source": [NONNEGATIVE_INT], "n_samples": [POSITIVE_INT],
                   "patch": [Anything("[row0, row1, col0, col1] of the 28x28 image")],
                   "value": [Interval(Real, None, None)], "trigger_frac": [Interval(Real, 0, 1, closed="right")],
                   "trigger_value": [Interval(Real, None, None)]}

    def __init__(self, spec=None):
        super().__init__(spec)
        if self.spec.get("faulty") is not None or self.spec.get("B") not in (None, 1):
            raise ValueError("attack 'backdoor': the malicious worker is the one the attack adds (the last, index N of "
                             "N + 1): remove faulty / B (B can only be 1)")
        self.loss_scale = float(self.spec.get("loss_scale", 1.0))

    def problem_options(self) -> dict:
        return {"backdoor": {k: self.spec[k] for k in self.DATA_KEYS if k in self.spec}}

    def check(self, algorithm, problem) -> None:
        super().check(algorithm, problem)
        if not isinstance(problem, type) and (problem.backdoor is None or problem.malicious != problem.m - 1):
            raise ValueError(f"attack 'backdoor' cannot run on problem {getattr(problem, 'name', '')!r}: it was built "
                             "without the malicious worker's data; build it with the attack's problem_options() "
                             "(fedrepro.experiments.runner.build_run does)")

    def prepare(self, problem, ctx):
        super().prepare(problem, ctx)          # faulty: the last worker, the one the builder added
        self._liars = {int(j) for j in self.faulty}
        problem.loss_reporter = self.reported_loss

    def reported_loss(self, j: int, value: float) -> float:
        """What worker j reports for a computed loss ``value``: the malicious worker raises it by
        ``loss_scale`` ("the malicious worker can purposefully raise the training loss to mislead the
        master", App. C.2); the others report the value."""
        return value * self.loss_scale if int(j) in self._liars else value


class Gaussian(_Attack):
    """Gaussian attack (Dong et al. 2019): faulty model c xi, fresh every slot (c = 1e4)."""

    name = "gaussian"
    acts_on = "upload"
    kinds = MAPPED_KINDS
    constraints = {"c": [POSITIVE]}

    def __init__(self, spec=None):
        super().__init__(spec)
        self.c = float(self.spec.get("c", 1e4))

    def refusal(self, algorithm):
        if callable(getattr(algorithm, "faulty_upload", None)) or getattr(algorithm, "upload_kind", None) in self.kinds:
            return None
        return ("the algorithm neither implements faulty_upload nor declares an upload kind the channel maps "
                f"to a model ({', '.join(self.kinds)})")

    def corrupt(self, uploads, clients, r, state, problem, algorithm, ctx):
        clients = np.asarray(clients)
        rows = self._rows(clients)
        if rows.size == 0:
            return uploads
        out = uploads.copy()
        if callable(getattr(algorithm, "faulty_upload", None)):      # what the algorithm says such a worker sends
            S = int(getattr(algorithm, "slots_per_upload", 1))
            models = self.c * ctx.rng("attack", r).standard_normal((S, rows.size, uploads.shape[1]))
            out[rows] = algorithm.faulty_upload(state, problem, clients[rows], models)
            return out
        # otherwise the faulty model c xi, sent as the algorithm's upload of the update c xi - w
        w = np.asarray(state.w, dtype=np.float64)
        models = self.c * ctx.rng("attack", r).standard_normal((rows.size, w.size))
        out[rows] = algorithm.update_to_upload(state, problem, clients[rows], models - w[None, :], uploads[rows])
        return out


class _UpdateAttack(_Attack):
    """An attack on the faulty rows of the round's model updates D (module docstring)."""

    acts_on = "update"
    kinds = MAPPED_KINDS

    def corrupt_updates(self, D: np.ndarray, clients: np.ndarray, r: int, ctx) -> np.ndarray:
        rows = self._rows(np.asarray(clients))
        if rows.size == 0:
            return D
        benign = np.ones(len(D), dtype=bool)
        benign[rows] = False
        D = D.copy()
        D[rows] = self._malicious(D, rows, benign, len(D))
        return D

    def _malicious(self, D, rows, benign, n):
        raise NotImplementedError

    @staticmethod
    def _benign(D, benign):
        """The benign rows the attackers see (all rows' honest updates when fewer than 2 are benign:
        the faulty workers' own honest computations are then the attackers' estimate)."""
        return D[benign] if benign.sum() >= 2 else D


class SignFlip(_UpdateAttack):
    """Sign flipping: a faulty worker sends -c d_i, its honest update reversed (and scaled by c)."""

    name = "sign_flip"
    constraints = {"c": [POSITIVE]}

    def _malicious(self, D, rows, benign, n):
        return attack_ops.sign_flip(D[rows], float(self.spec.get("c", 1.0)))


class Scaling(_UpdateAttack):
    """Scaling (model replacement boost): a faulty worker sends c d_i (c = 10)."""

    name = "scaling"
    constraints = {"c": [POSITIVE]}

    def _malicious(self, D, rows, benign, n):
        return attack_ops.scaling(D[rows], float(self.spec.get("c", 10.0)))


class ALIE(_UpdateAttack):
    """A little is enough (Baruch et al. 2019): mu - z sigma of the benign updates, z = z_max(n, f)."""

    name = "alie"
    constraints = {"z": [None, POSITIVE]}

    def _malicious(self, D, rows, benign, n):
        z = self.spec.get("z")
        # the paper's z_max(n, f) of the whole population (n workers, f of them faulty), fixed for the run
        z = attack_ops.alie_z(self._m, self.faulty.size) if z is None else float(z)
        return attack_ops.alie(self._benign(D, benign), z)[None, :]


class IPM(_UpdateAttack):
    """Inner-product manipulation (Xie et al. 2020): -eps times the mean of the benign updates."""

    name = "ipm"
    constraints = {"eps": [POSITIVE]}

    def _malicious(self, D, rows, benign, n):
        return attack_ops.ipm(self._benign(D, benign), float(self.spec.get("eps", 0.5)))[None, :]


class Silent(_Attack):
    """The faulty workers stay silent: the server ignores their uploads."""

    name = "silent"
    silent = True
    acts_on = "upload"              # the channel drops the faulty rows (or the algorithm, reads_senders)


class NoAttack(_Attack):
    """No faulty workers (B = 0 unless ids are given; listed ids are only excluded from metrics)."""

    name = "none"
    default_B = 0


ATTACKS = {"label_flip": LabelFlip, "backdoor": Backdoor, "gaussian": Gaussian, "sign_flip": SignFlip,
           "scaling": Scaling, "alie": ALIE, "ipm": IPM, "silent": Silent, "none": NoAttack}


def added_workers(spec: dict | None) -> int:
    """Workers the attack of an ``attack`` block adds to the federation (the backdoor's one; else 0)."""
    attack = build_attack(spec)
    return int(getattr(attack, "adds_workers", 0)) if attack is not None else 0


def _names_workers(spec: dict) -> bool:
    return spec.get("faulty") is not None or int(spec.get("B") or 0) > 0


def build_attack(spec: dict | None):
    """The attack of a ``attack`` block: ``ATTACKS[spec['name']](spec)``.

    None, ``{}`` and ``{name: none}`` naming no faulty workers: None (no attack at all).
    ``{name: none, faulty: [...]}`` (or ``B > 0``): :class:`NoAttack` -- honest workers
    excluded from the metrics (see the module docstring)."""
    if not spec:
        return None
    name = spec.get("name", "none")
    if name not in ATTACKS:
        raise ValueError(f"unknown attack {name!r}: attack.name must be one of {sorted(ATTACKS)}")
    if name == "none" and not _names_workers(spec):
        return None
    return ATTACKS[name](spec)
