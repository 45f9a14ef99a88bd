"""Neural classification with a train AND a test split per worker, evaluated on the worst-case
worker (aspire spec 002 §3.0.2, §4): the distributionally robust view of a federation.

Worker j holds ``parts[j]`` (indices into the shared training array) and ``test_parts[j]`` (into
the shared test array). Metrics of the evaluated model (eval mode), over the benign workers:

* ``acc_w`` = min_j Acc_j (test accuracy on worker j's test split, %); ``acc_mean``; ``acc_std`` =
  population std (ddof 0) of the Acc_j in percentage points;
* ``loss_w`` = max_j Loss_j (cross-entropy on worker j's full training split, NeurIPS version of the
  paper, AMBIG-8); ``objective`` = sum_j weights_j Loss_j over all workers;
* ``test_accuracy`` (%, all benign test samples together);
* ``acc_worker_<j>`` for every benign worker, ``loss_worker_<j>`` for every worker;
* with a backdoor test set: ``attack_success`` (% of triggered samples predicted as the target).

A malicious worker (``malicious``: its index) trains with the others but has no test split and is
left out of every worst-case metric: the worker the attack ``backdoor`` (:class:`fedrepro.sim.attacks.Backdoor`,
aspire App. C.2) adds, its data prepared by the builder from the attack's ``problem_options()``; the attack,
not the problem, owns its behaviour (the losses it reports). ``eval_max_per_worker`` evaluates the training losses on a
fixed seeded subsample of at most that many samples per worker (intermediate curves, spec §3.0.2).
"""
from __future__ import annotations

import numpy as np

from fedrepro.core.rng import stream
from fedrepro.core.params import NONNEGATIVE_INT, POSITIVE_INT, Anything, Options, RegisteredNames
from fedrepro.data.registry import WORKER_SPLITS
from fedrepro.nn.heads import get_head
from fedrepro.problems.base import problem_spec
from fedrepro.problems.neural import NeuralProblem


class WorkerNeuralProblem(NeuralProblem):
    """:class:`NeuralProblem` with per-worker test splits and worst-case metrics (module docstring).

    Extra parameters: ``test_parts`` (m index arrays into X_test; empty for a malicious worker),
    ``malicious`` (index of the malicious worker or None), ``backdoor`` ((X_bd, target) or None: the
    triggered test set of ``attack_success``), ``eval_max_per_worker`` (None: full training splits),
    ``eval_seed``. ``malicious`` and ``backdoor`` are the data of the attack ``backdoor`` (BackdoorProblem);
    what the malicious worker reports is the attack's (``reported_loss``, set by the attack before the run).
    """
    METRIC_CATALOGUE = ("objective", "acc_w", "loss_w", "acc_std", "acc_mean", "test_accuracy", "attack_success",
                        "acc_worker_<j>", "loss_worker_<j>")

    name = "worker_neural"
    malicious: int | None           # the added malicious worker (BackdoorProblem, the attack's data)
    backdoor: tuple | None          # (X_bd, target): the triggered test set

    def __init__(self, model, X, y, parts, X_test, y_test, test_parts, *, malicious: int | None = None,
                 backdoor=None, eval_max_per_worker: int | None = None, eval_seed: int = 0, **kwargs):
        super().__init__(model, X, y, parts, X_test, y_test, **kwargs)
        self.test_parts = [np.asarray(p, dtype=np.int64) for p in test_parts]
        if len(self.test_parts) != self.m:
            raise ValueError(f"worker_neural: {len(self.test_parts)} test parts for {self.m} workers; give one each")
        if malicious is not None and not 0 <= int(malicious) < self.m:
            raise ValueError(f"worker_neural: malicious worker {malicious} is not in [0, {self.m})")
        self.malicious = None if malicious is None else int(malicious)
        self.benign = np.array([j != self.malicious for j in range(self.m)])
        if any(self.test_parts[j].size == 0 for j in np.flatnonzero(self.benign)):
            raise ValueError("worker_neural: every benign worker needs a non-empty test split")
        self.backdoor = None
        if backdoor is not None:
            X_bd, target = backdoor
            self.backdoor = (self._inputs(X_bd, "backdoor X"), int(target))
        rng = stream(int(eval_seed), "subset", 3)
        self.eval_parts = [p if eval_max_per_worker is None or p.size <= eval_max_per_worker
                           else np.sort(rng.choice(p, int(eval_max_per_worker), replace=False)) for p in self.parts]

    def _scores(self, w, X, rows):
        """Logits of X[rows] in batches; (len(rows), K)."""
        out = np.empty((rows.size, self.model.n_classes), dtype=self.dtype)
        for a in range(0, rows.size, self.eval_batch):
            out[a:a + self.eval_batch] = self.model.forward(w, X[rows[a:a + self.eval_batch]])
        return out

    def metric_names(self) -> tuple:
        per = tuple(f"acc_worker_{j}" for j in np.flatnonzero(self.benign)) + \
            tuple(f"loss_worker_{j}" for j in range(self.m))      # a malicious worker has no test split
        bd = ("attack_success",) if self.backdoor is not None else ()
        return ("objective", "acc_w", "loss_w", "acc_std", "acc_mean", "test_accuracy", *bd, *per)

    def default_metrics(self) -> tuple:
        return self.metric_names()

    def evaluate(self, w, metrics=None):
        want = set(self.check_metrics(metrics))
        w = np.asarray(w, dtype=self.dtype)
        out = {}
        head = get_head(self.model.head)
        if want & {"objective", "loss_w"} or any(k.startswith("loss_worker_") for k in want):
            losses = np.empty(self.m)
            for j, rows in enumerate(self.eval_parts):
                per, _ = head(self._scores(w, self.X, rows), self.y[rows], grad=False)
                losses[j] = float(per.mean(dtype=np.float64))
            out["objective"] = float(self.weights @ losses)
            out["loss_w"] = float(losses[self.benign].max())
            out.update({f"loss_worker_{j}": float(v) for j, v in enumerate(losses)})
        if want & {"acc_w", "acc_std", "acc_mean", "test_accuracy"} or any(k.startswith("acc_worker_") for k in want):
            rows = np.concatenate([self.test_parts[j] for j in np.flatnonzero(self.benign)])
            correct = np.zeros(len(self.X_test), dtype=bool)
            correct[rows] = self._scores(w, self.X_test, rows).argmax(axis=1) == self.y_test[rows]
            acc = np.array([100.0 * correct[p].mean() if p.size else np.nan for p in self.test_parts])
            ben = acc[self.benign]
            out.update(acc_w=float(ben.min()), acc_mean=float(ben.mean()), acc_std=float(ben.std()),
                       test_accuracy=100.0 * float(correct[rows].mean()))
            out.update({f"acc_worker_{j}": float(acc[j]) for j in np.flatnonzero(self.benign)})
        if "attack_success" in want:
            X_bd, target = self.backdoor
            pred = self._scores(w, X_bd, np.arange(len(X_bd))).argmax(axis=1)
            out["attack_success"] = 100.0 * float((pred == target).mean())
        return {k: v for k, v in out.items() if k in want}

    def describe(self):
        out = super().describe()
        out.update(malicious=self.malicious, n_test_per_worker=[int(p.size) for p in self.test_parts],
                   backdoor=self.backdoor is not None)
        return out


# ---------------------------------------------------------------------------------- builder
class _Moved:
    """A key that moved out of the problem block: no value is valid here; the message says where it went."""

    def __init__(self, where: str):
        self.where = where

    def accepts(self, value) -> bool:
        return False

    def __str__(self) -> str:
        return self.where


SPEC_CONSTRAINTS = {
    "dataset": [RegisteredNames(WORKER_SPLITS)], "model": [Options("quick", "paper"), Anything("a model name")],
    "split_seed": [NONNEGATIVE_INT], "train_per_worker": [None, POSITIVE_INT], "test_per_worker": [None, POSITIVE_INT],
    "eval_max_per_worker": [None, POSITIVE_INT], "eval_batch": [None, POSITIVE_INT],
    "features": [None, Anything("dataset feature options of fedrepro.data.worker_data")],
    # the backdoor is the adversary's (fedrepro.sim.attacks.Backdoor), not the problem's
    "backdoor": [_Moved("no problem key: the backdoor is the adversary's, write attack: {name: backdoor, "
                        "poison_fraction: ..., loss_scale: ...} instead of problem.backdoor")],
}


def worker_spec_defaults(spec: dict) -> dict:
    """The spec with defaults (model quick, split_seed 0) and the model name resolved (quick / paper:
    the worker dataset's registered ``models``, spec §5)."""
    from fedrepro.core.params import validate_params
    from fedrepro.nn import MODELS

    validate_params("problem 'worker_neural'", {k: v for k, v in spec.items() if k != "name"}, SPEC_CONSTRAINTS,
                    noun="key")
    if "dataset" not in spec:
        raise ValueError(f"problem 'worker_neural' needs a dataset: one of {', '.join(WORKER_SPLITS)}")
    out = {"model": "quick", "split_seed": 0, **spec}
    model = out["model"]
    out["model"] = WORKER_SPLITS[out["dataset"]].models.get(model, model)
    if out["model"] not in MODELS:
        raise ValueError(f"problem 'worker_neural': model {model!r} is neither quick, paper nor a model name "
                         f"({', '.join(sorted(MODELS))})")
    return out


@problem_spec(check=worker_spec_defaults, **SPEC_CONSTRAINTS)
def build_worker_neural(spec: dict, seed: int, data_dir=None, backdoor: dict | None = None,
                        **kwargs) -> WorkerNeuralProblem:
    """Builder for ``problem: {name: worker_neural, dataset: scma, ...}`` (aspire).

    spec keys: ``dataset`` (fmnist3 | scma | person_activity | shl), ``model`` (quick | paper | a
    model name; spec §5), ``split_seed`` (train/test split and subsamples, the same for every run
    seed; default 0), ``train_per_worker`` / ``test_per_worker`` (quick-scale caps),
    ``features`` (dataset options), ``eval_max_per_worker``, ``eval_batch``. ``backdoor`` (keyword, not
    a spec key): the data options of the attack ``backdoor`` (its ``problem_options()``): one malicious
    worker added (:func:`fedrepro.data.worker_data.with_backdoor`, spec §4.5, seeded by ``split_seed``).
    The data do not depend on ``seed``.
    """
    from fedrepro.data.worker_data import build_worker_data, with_backdoor
    from fedrepro.nn import build_model

    spec = worker_spec_defaults(spec)
    if data_dir is None:
        raise ValueError("worker_neural: data_dir (processed data folder) is required")
    wd = build_worker_data(spec["dataset"], data_dir, split_seed=spec["split_seed"],
                           train_per_worker=spec.get("train_per_worker"), test_per_worker=spec.get("test_per_worker"),
                           **(spec.get("features") or {}))
    if backdoor is not None:
        wd = with_backdoor(wd, seed=spec["split_seed"], **backdoor)
    model = build_model(spec["model"])
    backdoor = None if wd.backdoor_X is None else (wd.backdoor_X, int(wd.backdoor_y[0]))
    return WorkerNeuralProblem(model, wd.X_train, wd.y_train, wd.train_parts(), wd.X_test, wd.y_test,
                               wd.test_parts(), malicious=wd.malicious, backdoor=backdoor,
                               eval_max_per_worker=spec.get("eval_max_per_worker"), eval_seed=spec["split_seed"],
                               eval_batch=spec.get("eval_batch"), dataset=spec["dataset"])
