"""Whether an algorithm pairs with a problem: the capabilities it needs (:meth:`Algorithm.requirements`,
its class's ``requires``) against what the problem provides (:func:`fedrepro.problems.protocols.provides`).

It lives in the algorithms' layer because it asks the algorithm; the problems' layer only answers for
problems (:mod:`fedrepro.problems.protocols`: the capabilities, ``provides``, ``problems_providing``), so
the check's walk goes down, never back up from a problem to an algorithm."""
from __future__ import annotations

from fedrepro.problems.protocols import problems_providing, provides


def requirements_of(algorithm) -> tuple:
    """What ``algorithm`` (an instance, or a class: its unconditional ``requires``) needs."""
    if isinstance(algorithm, type):
        return tuple(getattr(algorithm, "requires", ()))
    if hasattr(algorithm, "requirements"):
        return tuple(algorithm.requirements())
    return tuple(getattr(algorithm, "requires", ()))


def missing(algorithm, problem) -> tuple:
    """The capabilities ``algorithm`` needs and ``problem`` does not provide (empty: they pair)."""
    return tuple(c for c in requirements_of(algorithm) if not provides(problem, c))


def check_pairing(algorithm, problem, problem_name: str | None = None) -> None:
    """Raise ValueError when ``algorithm`` cannot run on ``problem`` (instance or class), naming the
    algorithm, the problem, the missing capabilities and a problem that provides them."""
    lacking = missing(algorithm, problem)
    if not lacking:
        return
    alg_name = getattr(algorithm, "name", type(algorithm).__name__)
    cls = problem if isinstance(problem, type) else type(problem)
    pname = problem_name or getattr(problem, "name", None) or cls.__name__
    label = pname if pname == cls.__name__ else f"{pname} ({cls.__name__})"
    parts = [str(c) for c in lacking]
    need = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    them = "it" if len(lacking) == 1 else "them"
    alternatives = problems_providing(requirements_of(algorithm))
    members = [m for c in lacking for m in c.members]
    fix = f"use a problem that provides {them}, e.g. {', '.join(alternatives)}; or " if alternatives else ""
    fix += f"implement {', '.join(members)} on {cls.__name__}"
    raise ValueError(f"algorithm {alg_name!r} cannot run on problem {pname!r}: it needs {need}, "
                     f"which {label} does not provide; {fix}")


__all__ = ["requirements_of", "missing", "check_pairing"]
