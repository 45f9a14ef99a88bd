"""Which BLAS ran: library, version, kernel and threads, as threadpoolctl reads them from the
libraries loaded in this process, with the two variables that choose OpenBLAS's kernel.

OpenBLAS picks its kernel (``architecture``: SkylakeX, Haswell, Zen ...) for the CPU it starts on
unless ``OPENBLAS_CORETYPE`` names one; ``OPENBLAS_L2_SIZE`` overrides the L2 size it blocks for.
Some machines set both (older OpenBLAS builds fail on their CPU); a user's machine usually does
not, and the kernel changes a timing by up to 1.5x. Every timing therefore names the record of
:func:`blas_record` (benchmarks print :func:`describe` and store the record in their JSON; the
workflow's provenance names the kernel and threads).
"""
from __future__ import annotations

import os
import platform
from pathlib import Path

#: the environment variables that choose OpenBLAS's kernel and its blocking
KERNEL_VARIABLES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), or what :mod:`platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def blas_libraries() -> list[dict]:
    """One entry per BLAS library loaded in this process (numpy's is loaded here):
    ``library`` (openblas, mkl, blis ...), ``version``, ``architecture`` (the kernel it runs),
    ``threads`` and ``file`` (the shared library's name)."""
    import numpy  # noqa: F401  (loads numpy's BLAS, so there is one to report)
    from threadpoolctl import threadpool_info

    libraries = [{"library": info["internal_api"], "version": info.get("version"),
                  "architecture": info.get("architecture"), "threads": info["num_threads"],
                  "threading_layer": info.get("threading_layer"), "file": Path(info["filepath"]).name}
                 for info in threadpool_info() if info["user_api"] == "blas"]
    return sorted(libraries, key=lambda lib: lib["file"])


def blas_record() -> dict:
    """The BLAS libraries of this process (:func:`blas_libraries`), the kernel variables as set
    (``None``: unset), the CPU model, the number of CPUs and the 1/5/15-minute load averages."""
    return {"blas": blas_libraries(), "kernel_env": {name: os.environ.get(name) for name in KERNEL_VARIABLES},
            "cpu": cpu_model(), "cpus": os.cpu_count(), "loadavg": [round(x, 2) for x in os.getloadavg()]}


def describe_libraries(libraries: list[dict]) -> str:
    """``openblas 0.3.31 (SkylakeX kernel, 1 thread)``, one per distinct library."""
    seen = []
    for lib in libraries:
        text = (f"{lib['library']} {lib['version']} ({lib['architecture']} kernel, "
                f"{lib['threads']} thread{'s' if lib['threads'] != 1 else ''})")
        if text not in seen:
            seen.append(text)
    return "; ".join(seen) or "no BLAS loaded"


def describe_kernel_env(kernel_env: dict) -> str:
    """``OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=1048576``, or ``... unset``."""
    return ", ".join(f"{name}={value}" if value is not None else f"{name} unset" for name, value in kernel_env.items())


def describe(record: dict | None = None) -> str:
    """One line naming the BLAS, kernel, threads, kernel variables, CPU and load of ``record``
    (default: this process now)."""
    record = blas_record() if record is None else record
    load = " ".join(f"{x:.2f}" for x in record["loadavg"])
    return (f"BLAS: {describe_libraries(record['blas'])}; {describe_kernel_env(record['kernel_env'])}; "
            f"{record['cpu']}, {record['cpus']} CPUs, load average {load}")
