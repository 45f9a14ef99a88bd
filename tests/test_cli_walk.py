"""The walk of ``fedrepro run``'s arguments (issue #45): the CLI's path, traced call by call, goes down the
layers of docs/architecture.md and never steps back up, nor returns to a room it has left.

A *room* is a top-level part of the package (``cli``, ``experiments``, ``sim``, ``problems`` ...), its floor
the layer number of tests/test_layout.py. Every call made while the command runs is recorded with the rooms
of its call stack, outermost first (consecutive frames of one room are one step). The walk steps back up
where a deeper step's floor is higher than the one before it (a problem calling into an algorithm), and
returns where a room comes back after another one (``experiments -> sim -> experiments``)."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from tests.test_layout import LAYERS


def _room(frame) -> str | None:
    name = frame.f_globals.get("__name__", "")
    if name != "fedrepro" and not name.startswith("fedrepro."):
        return None
    parts = name.split(".")
    return parts[1].removesuffix(".py") if len(parts) > 1 else "__init__"


def walks(fn, *args, **kwargs) -> tuple[object, dict[tuple, str]]:
    """``fn(*args, **kwargs)``'s result and its walks: ``{rooms of a call stack: the first function called
    at the end of that walk}``."""
    seen: dict[tuple, str] = {}

    def profile(frame, event, arg):
        if event != "call" or _room(frame) is None:
            return
        rooms, f = [], frame
        while f is not None:
            r = _room(f)
            if r is not None and (not rooms or rooms[-1] != r):
                rooms.append(r)
            f = f.f_back
        key = tuple(reversed(rooms))
        if key not in seen:
            seen[key] = f"{frame.f_code.co_filename}:{frame.f_code.co_firstlineno} {frame.f_code.co_name}"

    old = sys.getprofile()
    sys.setprofile(profile)
    try:
        out = fn(*args, **kwargs)
    finally:
        sys.setprofile(old)
    return out, seen


def steps_back(walk: tuple) -> list[str]:
    """What is wrong with one walk: each step up a floor and each return to a room already left."""
    bad = []
    for a, b in zip(walk, walk[1:]):
        if LAYERS[b] > LAYERS[a]:
            bad.append(f"up from {a} (floor {LAYERS[a]}) to {b} (floor {LAYERS[b]})")
    for i, r in enumerate(walk):
        if r in walk[:i]:
            bad.append(f"back to {r}")
    return bad


def _bad(seen: dict) -> list[str]:
    return [f"{' > '.join(w)}: {'; '.join(steps_back(w))} (at {where})" for w, where in sorted(seen.items())
            if steps_back(w)]


def test_the_walk_check_finds_a_step_up_and_a_return():
    assert steps_back(("cli", "experiments", "sim", "problems")) == []
    assert steps_back(("cli", "problems", "algorithms")) == ["up from problems (floor 3) to algorithms (floor 4)"]
    assert "back to experiments" in steps_back(("experiments", "sim", "experiments"))
    # the tracer sees a call from a problem's module into an algorithm's
    from fedrepro.algorithms import make_algorithm

    alg = make_algorithm("fedavg")
    code = compile("def ask(a):\n    return a.requirements()\n", "<fake problem module>", "exec")
    fake = {"__name__": "fedrepro.problems.fake"}
    exec(code, fake)
    _, seen = walks(fake["ask"], alg)
    assert any("up from problems (floor 3) to algorithms (floor 4)" in b for b in _bad(seen))


@pytest.mark.parametrize("extra", [[], ["--mechanism", "gaussian", "--mechanism-param", "clip=1.0", "--mechanism-param", "noise_multiplier=1.0"]], ids=["plain", "privacy"])
def test_fedrepro_run_walks_down_the_layers(tmp_path, extra):
    from fedrepro import cli

    rng = np.random.default_rng(0)
    data = tmp_path / "d.npz"
    np.savez(data, X=rng.normal(size=(40, 3)), y=rng.normal(size=40), client=np.repeat(np.arange(4), 10))
    argv = ["run", "--algorithm", "fedavg", "--problem", "linreg", "--data", str(data), "--rho", "0.5",
            "--rounds", "3", "--seed", "1", "--quiet", "--out", str(tmp_path / "o.parquet"), *extra]
    rc, seen = walks(cli.main, argv)
    assert rc == 0
    assert any(w[:1] == ("cli",) and "sim" in w and "problems" in w for w in seen), "the run was not traced"
    assert not _bad(seen), "the CLI's walk steps back:\n" + "\n".join(_bad(seen))
