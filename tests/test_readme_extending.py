"""The README's "new algorithm" example is real code: it runs on the loop and passes the seam checks."""
from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import numpy as np

from fedrepro.sim.loop import simulate
from tests.toys import Quadratic

README = Path(__file__).resolve().parents[1] / "README.md"


def _example_source() -> str:
    text = README.read_text()
    start = text.index("**A new algorithm**")
    return re.search(r"```python\n(.*?)```", text[start:], re.S).group(1)


def test_the_readme_algorithm_runs_and_declares_its_state():
    module = types.ModuleType("readme_example")
    sys.modules[module.__name__] = module           # dataclasses look their module up
    try:
        exec(compile(_example_source(), "README.md", "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    MyAlg = module.MyAlg
    P = Quadratic.random(m=6, dim=3)
    res = simulate(P, MyAlg(step=0.5), k0=3, rho=0.5, max_rounds=30, seed=0)
    assert res.status == "max_rounds" and np.all(np.isfinite(res.w))
    assert res.trace[-1]["objective"] < res.trace[0]["objective"]
    assert "__dict__" not in dir(MyAlg.state_class(w=np.zeros(1)))
