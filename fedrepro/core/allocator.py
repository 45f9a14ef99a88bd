"""Keep freed memory in the process: glibc's malloc settings for numpy's large temporaries.

glibc serves a request above ``M_MMAP_THRESHOLD`` with a fresh ``mmap`` and returns the free top of
the heap to the system above ``M_TRIM_THRESHOLD`` (both tuned dynamically from 128 KiB). A numpy
expression over rows of a few MB -- FRPG's (20, 7850) float64 worker rows, 1.26 MB -- then gets
fresh pages for every temporary and pays a page fault for each 4 KiB of it: FRPG's numpy worker
passes took 6.55 ms and 1,808 minor faults a step, 1.15 ms and 1.2 faults once freed memory is kept
(``benchmarks/bench_allocator.py``). :func:`keep_freed_memory` raises both thresholds, so that such
temporaries reuse the pages freed by the previous ones. Arithmetic is untouched (results are the same
bits); the resident size stays at the process's high-water mark instead of shrinking between peaks, and
a job's peak grew by 0-65 MB in the quick build (frpg 814 -> 880 MB; the memory requests' margin,
``resources.MEMORY_SLACK_MB``, is 512 MB).

Above the mmap threshold glibc still maps every array afresh (32 MiB is the largest it accepts), so a loop
that allocates one such array per round keeps one instead: the local-training harness writes a round's
uploads into the array the server released the round before (``LocalSGD.client_update``;
``benchmarks/bench_allocator.py`` measures both patterns).

Every run calls it (:meth:`fedrepro.experiments.runner.Run.simulate`, the path of the workflow, the CLI
and the benchmarks that time cells); code that times its own numpy work outside a run calls it itself.
Elsewhere than glibc (macOS, musl, Windows) it does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD = -1            # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 2 ** 20    # glibc's largest (HEAP_MAX_SIZE / 2 on 64-bit)
TRIM_THRESHOLD = 2 ** 30

_applied: bool | None = None


def _mallopt():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        ctypes.CDLL(None).gnu_get_libc_version      # only glibc has it (musl, macOS: AttributeError)
    except (OSError, AttributeError, TypeError):     # TypeError: no CDLL(None) (Windows)
        return None
    fn = getattr(libc, "mallopt", None)
    if fn is not None:
        fn.argtypes, fn.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return fn


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds for this process (see the module docstring); idempotent.
    Returns whether the settings are in force (False where the C library is not glibc)."""
    global _applied
    if _applied is None:
        fn = _mallopt()
        _applied = bool(fn is not None and fn(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
                        and fn(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1)
    return _applied
