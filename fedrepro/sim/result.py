"""What one run of a loop returns."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fedrepro.problems.base import unknown_names


@dataclass
class RunResult:
    """Outcome of one run.

    trace : list of dicts, one per evaluated round (``round``, ``iteration``,
        ``wall_time``, ``cpu_time``, ``local_time``, ``objective``, ``grad_norm2``, ...).
    status : ``"converged"`` (a stop rule fired), ``"max_rounds"``,
        ``"time_limit"`` or ``"diverged"`` (non-finite objective or model).
    stop_reason : the stop rule's reason, or the status.
    rounds : communication rounds performed (CR).
    iterations : local iterations performed (rounds * k0).
    wall_time : wall-clock seconds of the run (data loading and problem set-up excluded).
    cpu_time : CPU seconds of this process during the run (``time.process_time``; what the
        papers time: with one BLAS thread it is the single-thread CPU time; other jobs loading
        the machine inflate it far less than ``wall_time``).
    local_time : wall-clock seconds spent in client computation (begin_round, local steps, upload).
    local_cpu_time : CPU seconds of the same client computation.
    """

    trace: list
    status: str
    stop_reason: str
    rounds: int
    iterations: int
    wall_time: float
    local_time: float
    w: np.ndarray
    cpu_time: float = 0.0
    local_cpu_time: float = 0.0
    info: dict = field(default_factory=dict)

    @property
    def final(self) -> dict:
        return self.trace[-1] if self.trace else {}


def record_evaluation(problem, algorithm, state, ctx, w, metrics, record: dict, tail: dict, trace: list,
                      progress=None, stop=None, diverge_factor: float | None = None) -> tuple[str, str] | None:
    """The driver's evaluation step (both schedules): evaluate ``w`` (the run's ``metrics``), complete
    ``record`` (head fields given) with the evaluated metrics, the algorithm's round metrics, its
    state metrics and ``tail`` (clocks), append it to ``trace``, report it to ``progress``, and
    return ``(status, reason)`` when the run ends here: ``diverged`` when an evaluated metric or the
    model is not finite, or when |objective| exceeds ``diverge_factor`` x max(1, |objective at the
    first evaluation|) (reason ``diverged: objective above <bound>``); ``converged`` when ``stop``
    fires; else None."""
    with np.errstate(over="ignore", invalid="ignore"):   # divergence is a status, below
        evaluated = problem.evaluate(w, metrics)
    record.update(evaluated)
    extra = algorithm.round_metrics(state, problem, ctx)
    # the parse-time plot check reads these declarations, so they must be complete
    for owner, catalogue, names in ((problem, getattr(problem, "METRIC_CATALOGUE", None), evaluated),
                                    (algorithm, type(algorithm).RECORDS, extra)):
        undeclared = unknown_names(catalogue, names) if catalogue is not None and names else []
        if undeclared:
            raise RuntimeError(f"{type(owner).__name__} recorded {undeclared}, which it does not declare "
                               f"({catalogue})")
    record.update(extra)
    record.update(state.metrics)
    record.update(tail)
    trace.append(record)
    if progress is not None:
        progress(record)
    if not (all(np.isfinite(v) for v in evaluated.values()) and np.all(np.isfinite(w))):
        return "diverged", "diverged"
    if diverge_factor is not None and "objective" in evaluated:
        bound = diverge_factor * max(1.0, abs(trace[0]["objective"]))
        if abs(evaluated["objective"]) > bound:
            return "diverged", f"diverged: objective above {bound:.3g}"
    fired = stop.check(trace, ctx) if stop is not None else None
    if fired:
        return "converged", fired
    return None
