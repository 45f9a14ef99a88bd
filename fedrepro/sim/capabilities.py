"""What composes with what: the capability matrix of the client-to-server channel, generated from the
code's declarations (each algorithm's ``upload_kind``, ``server_rule``, ``reads_senders`` and schedule;
each attack's ``acts_on`` and upload kinds; each mechanism's and aggregator's refusals), never written by
hand. ``python -m fedrepro.sim.capabilities`` prints the page ``docs/capabilities.md``; a test keeps the
page equal to the code and runs every "runs" cell on a tiny problem.

A cell says ``runs`` or the reason it is refused; the same reason is what the config check prints.
The stages compose with each other except where :meth:`fedrepro.sim.channel.Channel.refusals` says
otherwise (listed under the matrix). Whether an attack can run on a *problem* is the attack's problem
needs (``problem_requires``: ``label_flip`` needs rewritable training labels, the softmax and neural
problems; ``backdoor`` a problem that takes an added poisoned worker, worker_neural), checked with the
pairing; a data-side attack's cell says ``runs`` when some registered problem the algorithm runs on has them.
"""
from __future__ import annotations

from fedrepro.algorithms import algorithm_class, algorithm_names
from fedrepro.sim.aggregation import AGGREGATORS
from fedrepro.sim.attacks import ATTACKS
from fedrepro.sim.channel import Channel
from fedrepro.sim.privacy import MECHANISMS

#: a representative spec of each stage option (the parameters do not change what composes)
ATTACK_SPECS = {name: {"name": name, "B": 1} for name in ATTACKS if name != "none"}
MECHANISM_SPECS = {"laplace_epm": {"name": "laplace_epm", "epsilon": 1.0},
                   "gaussian": {"name": "gaussian", "clip": 1.0, "noise_multiplier": 1.0},
                   "clip": {"name": "clip", "clip": 1.0}}
AGGREGATOR_SPECS = {"mean (unweighted)": {"name": "mean", "weights": "unweighted"},
                    "mean (data_size)": {"name": "mean", "weights": "data_size"},
                    **{name: {"name": name} for name in AGGREGATORS if name != "mean"}}


def _stage(kind: str, spec: dict) -> Channel:
    if kind == "attack":
        return Channel.from_specs(attack=spec)
    if kind == "mechanism":
        return Channel.from_specs(mechanism=spec)
    return Channel.from_specs(aggregator=spec)


def attack_problems(algorithm: str, attack: str) -> list[str]:
    """Registered problems that ``algorithm`` pairs with and that provide what ``attack`` needs of a problem
    (its ``problem_requires``: rewritable training labels for ``label_flip``, the added worker's data for
    ``backdoor``)."""
    from fedrepro.problems import problem_class, problem_names
    from fedrepro.algorithms.pairing import missing
    from fedrepro.problems.protocols import provides

    cls = algorithm_class(algorithm)
    needs = ATTACKS[attack].problem_requires
    out = []
    for name in problem_names():
        pcls = problem_class(name)
        if pcls is not None and all(provides(pcls, c) for c in needs) and not missing(cls, pcls):
            out.append(name)
    return out


def cell(algorithm: str, kind: str, option: str) -> str:
    """``"runs"`` or the refusal of stage ``option`` of ``kind`` ("attack" | "mechanism" | "aggregator")
    for the registered ``algorithm`` under its own schedule."""
    specs = {"attack": ATTACK_SPECS, "mechanism": MECHANISM_SPECS, "aggregator": AGGREGATOR_SPECS}[kind]
    cls = algorithm_class(algorithm)
    schedule = "async" if cls.asynchronous else "sync"
    reasons = _stage(kind, specs[option]).refusals(cls, schedule)
    if not reasons and kind == "attack" and ATTACKS[option].problem_requires and not attack_problems(algorithm, option):
        needs = " and ".join(c.what for c in ATTACKS[option].problem_requires)
        return f"no registered problem that the algorithm runs on has what the attack needs: {needs}"
    return "runs" if not reasons else reasons[0].split(": ", 1)[1]


def matrix() -> dict:
    """{kind: {algorithm: {option: "runs" | reason}}} over every registered algorithm."""
    out = {}
    for kind, specs in (("attack", ATTACK_SPECS), ("mechanism", MECHANISM_SPECS), ("aggregator", AGGREGATOR_SPECS)):
        out[kind] = {alg: {opt: cell(alg, kind, opt) for opt in specs} for alg in algorithm_names(available_only=False)}
    return out


def declarations() -> dict:
    """{algorithm: (schedule, upload_kind, server_rule, what else a client sends)}."""
    out = {}
    for alg in algorithm_names(available_only=False):
        cls = algorithm_class(alg)
        out[alg] = ("asynchronous" if cls.asynchronous else "synchronous", cls.upload_kind or "undeclared",
                    cls.server_rule + (", reads senders" if getattr(cls, "reads_senders", False) else ""),
                    getattr(cls, "upload_extra", None) or "-")
    return out


def markdown() -> str:
    """The page ``docs/capabilities.md``."""
    m = matrix()
    reasons: dict[str, int] = {}

    def mark(v):
        if v == "runs":
            return "runs"
        reasons.setdefault(v, len(reasons) + 1)
        return f"no ({reasons[v]})"

    lines = ["# What composes: algorithms x attacks x privacy mechanisms x aggregators x schedule", "",
             "Generated by `python -m fedrepro.sim.capabilities > docs/capabilities.md` from the code's declarations "
             "(`tests/test_capabilities.py` fails when this page differs from the code, runs every `runs` cell on a "
             "tiny problem and checks that the stage changes what the server receives). A `no (k)` cell is refused "
             "when the config is checked, before any job, with reason k below.", "",
             "The channel applies, to every round's uploads (or, on the asynchronous schedule, to the reports as "
             "their jobs leave): client-side privacy, then the adversary, then the server-side aggregation "
             "(`fedrepro/sim/channel.py`). Config keys: `attack: {name, B | faulty, ...}`, "
             "`mechanism: {name, ...}`, `aggregator: {name, ...}`; each key is a `grid:` axis "
             "(`attack.name`, `attack.c`, `mechanism.noise_multiplier`, `mechanism.epsilon`, `aggregator.name`, ...).",
             "", "## The algorithms' declarations", "",
             "| algorithm | schedule | uploads | server step | also sent, outside the channel |", "|---|---|---|---|---|"]
    for alg, (sched, kind, rule, extra) in declarations().items():
        lines.append(f"| `{alg}` | {sched} | {kind} | {rule} | {extra} |")
    for kind, title in (("attack", "Attacks (the adversary)"), ("mechanism", "Privacy mechanisms"),
                        ("aggregator", "Aggregators (server)")):
        opts = list(next(iter(m[kind].values())))
        lines += ["", f"## {title}", "", "| algorithm | " + " | ".join(f"`{o}`" for o in opts) + " |",
                  "|---|" + "---|" * len(opts)]
        for alg, row in m[kind].items():
            lines.append(f"| `{alg}` | " + " | ".join(mark(row[o]) for o in opts) + " |")
    lines += ["", "## Reasons", ""]
    lines += [f"{k}. {v}" for v, k in reasons.items()]
    lines += ["", "## Across stages and problems", "",
              "- `aggregator` with `mechanism: gaussian` (or `clip`) is refused: the privacy guarantee is for the "
              "noised mean of clipped updates, not for a robust rule.",
              "- `attack: label_flip` needs a classification problem with rewritable training labels (softmax, neural, "
              "worker_neural: the faulty clients' training labels y -> C-1-y, C the problem's classes); on another "
              "problem it is refused with the pairing check.",
              "- `attack: backdoor` (aspire App. C.2) adds one malicious worker whose data the problem's builder "
              "prepares (worker_neural: triggered, relabelled samples and a triggered test set, `attack_success`) "
              "and raises the losses it reports; on another problem it is refused with the pairing check.",
              "- The asynchronous schedule takes no `aggregator`, no `silent` workers and no server-side noise; "
              "`tau` is its setting only (a block without an asynchronous algorithm that sets `tau` is refused).",
              "- A faulty worker keeps its training weight: metrics of problems with a faulty-worker split "
              "(softmax) are over the reliable workers only.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(), end="")
