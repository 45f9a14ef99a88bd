import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(scope="session")
def mirror() -> Path:
    """The offline dataset mirror named by $FEDREPRO_DATA_MIRROR (tests using it skip without it)."""
    m = os.environ.get("FEDREPRO_DATA_MIRROR")
    if not m:
        unavailable("FEDREPRO_DATA_MIRROR is unset: no offline dataset mirror to test against")
    if not Path(m, "manifest.json").is_file():
        unavailable(f"FEDREPRO_DATA_MIRROR={m} is not a dataset mirror folder (no manifest.json)")
    return Path(m)


def unavailable(reason: str):
    """A check that cannot run here: skipped with ``reason``, or, with FEDREPRO_REQUIRE_ALL=1 (CI as
    root, after installing every tool: .ci/run), a failure naming it — a skipped check is not a
    passed one."""
    if os.environ.get("FEDREPRO_REQUIRE_ALL") == "1":
        pytest.fail(f"required check cannot run (FEDREPRO_REQUIRE_ALL=1): {reason}", pytrace=False)
    pytest.skip(reason)
