"""Byzantine attacks on the uploads (FRPG spec 004 sec. 3.7), reusable by any algorithm.

An attack is built from its config block, ``ATTACKS[spec["name"]](spec)``, and the
simulation calls ``prepare(problem, ctx)`` once and
``corrupt(uploads, clients, r, state, problem, algorithm, ctx)`` every round.

Faulty workers: ``faulty`` (list of ids) or ``B`` (the last B workers, the paper's
n = N+1..Q convention, spec A2). The problem is told who is faulty
(``problem.set_faulty``) so its metrics use the reliable workers only.

* ``label_flip`` -- the faulty workers follow the protocol on labels y -> C-1-y
  (``prepare`` rewrites their training labels; uploads are not touched).
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

from fedrepro.core.params import NONNEGATIVE_INT, POSITIVE, POSITIVE_INT, Anything, validate_params
from fedrepro.problems.protocols import RELABEL, provides

# keys every attack block accepts (besides ``name``)
_WORKERS = {"faulty": [None, Anything("a list of worker ids")], "B": [None, NONNEGATIVE_INT]}


def _faulty_ids(spec: dict, m: int, default_B: int) -> np.ndarray:
    if "faulty" in spec and spec["faulty"] is not None:
        ids = np.asarray(spec["faulty"], dtype=np.int64)
    else:
        B = int(spec.get("B", default_B))
        ids = np.arange(m - B, m, dtype=np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= m):
        raise ValueError(f"attack {spec.get('name')!r}: faulty ids {ids.tolist()} outside 0..{m - 1}")
    return np.unique(ids)


class _Attack:
    name = "attack"
    default_B = 4
    silent = False
    problem_requires = ()           # capabilities (fedrepro.problems.protocols) the attack needs
    algorithm_requires = ()         # methods the algorithm must implement
    constraints = {}                # the attack's own keys (besides name, faulty, B)

    def check(self, algorithm, problem) -> None:
        """Raise ValueError when this attack cannot run with ``algorithm`` on ``problem`` (an
        instance or a problem class), naming what is missing; called before the run starts."""
        alg = getattr(algorithm, "name", type(algorithm).__name__)
        lacking = [m for m in self.algorithm_requires if not callable(getattr(algorithm, m, None))]
        if lacking:
            raise ValueError(f"attack {self.name!r} cannot corrupt the uploads of algorithm {alg!r}: it needs "
                             f"the algorithm to implement {', '.join(lacking)} (what a faulty worker uploads)")
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

    def prepare(self, problem, ctx):
        self.faulty = _faulty_ids(self.spec, problem.m, self.default_B)
        if hasattr(problem, "set_faulty"):
            problem.set_faulty(self.faulty, silent=self.silent)

    def _rows(self, clients):
        """Positions in ``clients`` of the faulty workers."""
        return np.flatnonzero(np.isin(clients, self.faulty))

    def corrupt(self, uploads, clients, r, state, problem, algorithm, ctx):
        return uploads


class LabelFlip(_Attack):
    """Label flipping (Yin et al. 2018): y -> C - 1 - y on the faulty workers."""

    name = "label_flip"
    problem_requires = (RELABEL,)
    constraints = {"n_classes": [POSITIVE_INT]}

    def prepare(self, problem, ctx):
        super().prepare(problem, ctx)
        C = int(getattr(problem, "C", self.spec.get("n_classes", 10)))
        problem.flip_labels(self.faulty, lambda y: C - 1 - y)


class Gaussian(_Attack):
    """Gaussian attack (Dong et al. 2019): faulty model c xi, fresh every slot (c = 1e4)."""

    name = "gaussian"
    algorithm_requires = ("faulty_upload",)
    constraints = {"c": [POSITIVE]}

    def __init__(self, spec=None):
        super().__init__(spec)
        self.c = float(self.spec.get("c", 1e4))

    def corrupt(self, uploads, clients, r, state, problem, algorithm, ctx):
        rows = self._rows(np.asarray(clients))
        if rows.size == 0:
            return uploads
        S = int(getattr(algorithm, "slots_per_upload", 1))
        models = self.c * ctx.rng("attack", r).standard_normal((S, rows.size, uploads.shape[1]))
        out = uploads.copy()
        out[rows] = algorithm.faulty_upload(state, problem, np.asarray(clients)[rows], models)
        return out


class Silent(_Attack):
    """The faulty workers stay silent: the server ignores their uploads."""

    name = "silent"
    silent = True


class NoAttack(_Attack):
    """No faulty workers (B = 0 unless ids are given; listed ids are only excluded from metrics)."""

    name = "none"
    default_B = 0


ATTACKS = {"label_flip": LabelFlip, "gaussian": Gaussian, "silent": Silent, "none": NoAttack}


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
