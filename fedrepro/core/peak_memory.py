"""Peak resident memory of the current process, for the build's per-job records and the benchmarks."""
from __future__ import annotations

import resource


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MiB: ``VmHWM`` of /proc/self/status (Linux), else
    ``ru_maxrss``. Not ``ru_maxrss`` where /proc exists: after fork + exec it still holds the parent's
    peak (a Snakemake job would report the scheduler's)."""
    try:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
