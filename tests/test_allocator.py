"""fedrepro.core.allocator: on glibc, freed memory is kept, so large numpy temporaries stop faulting pages."""
import subprocess
import sys

import pytest

from fedrepro.core import allocator

CHURN = """
import resource, sys, numpy as np
if sys.argv[1] == "keep":
    from fedrepro.core.allocator import keep_freed_memory
    assert keep_freed_memory() and keep_freed_memory()          # applied, idempotent
a = np.ones((20, 7850))                                         # 1.26 MB, FRPG's worker rows
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(100):                                            # FRPG's (8a)-(8c) in numpy: several live rows
    u = 0.9 * a + 0.1 * a
    r = a - u + a / 5.0
    v = a - (1e-3 * (a - u) + a - r) / 3.0
    del u, r, v
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode):
    out = subprocess.run([sys.executable, "-c", CHURN, mode], capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


@pytest.mark.skipif(allocator._mallopt() is None, reason="the C library is not glibc: keep_freed_memory does nothing")
def test_kept_memory_removes_the_page_faults_of_large_temporaries():
    default, kept = _faults("default"), _faults("keep")
    assert default > 10_000                  # ~300 pages a temporary, many of them faulted anew
    assert kept < default / 10
