"""Shared preamble of the rule scripts: import path, one BLAS thread, logging to the rule's log, and a
one-line resource record per job (``logs/profile/<rule>.jsonl``, summarised by
``benchmarks/build_profile.py``)."""
import contextlib
import json
import os
import resource
import sys
import time
import traceback
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(var, "1")
os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from fedrepro.core.peak_memory import peak_rss_mb  # noqa: E402

PROFILE_DIR = Path("logs/profile")


def _process_start_wall():
    """Wall-clock time at which this process started (Linux: /proc), else now."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return time.time()


def _cpu_seconds(kernel_only=False):
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    kernel = own.ru_stime + children.ru_stime
    return kernel if kernel_only else own.ru_utime + children.ru_utime + kernel


def record_profile(snakemake, status, body_start, body_cpu):
    """Append this job's wall and CPU time (whole process, and the part before the script body:
    interpreter, Snakemake's preamble, imports), the kernel's share of that CPU time (``sys_s``: page
    faults, file reads ...) and peak memory to ``logs/profile/<rule>.jsonl``."""
    end = time.time()
    start = _process_start_wall()
    line = {"rule": snakemake.rule, "output": str(snakemake.output[0]) if snakemake.output else "",
            "status": status, "start": round(start, 3), "wall_s": round(end - start, 3),
            "cpu_s": round(_cpu_seconds(), 3), "sys_s": round(_cpu_seconds(kernel_only=True), 3),
            "startup_wall_s": round(body_start - start, 3),
            "startup_cpu_s": round(body_cpu, 3), "max_rss_mb": round(peak_rss_mb(), 1)}
    PROFILE_DIR.mkdir(parents=True, exist_ok=True)
    # one short line per job, appended with O_APPEND: concurrent jobs never interleave within a line
    with open(PROFILE_DIR / f"{snakemake.rule}.jsonl", "a") as fh:
        fh.write(json.dumps(line) + "\n")


def _user_errors() -> tuple:
    """Exceptions that report bad input (what the user fixes), shown as a message without a traceback."""
    from fedrepro.core.params import ConfigError
    from fedrepro.data.fetch import ChecksumError, DatasetUnavailable

    return (ConfigError, ChecksumError, DatasetUnavailable)


@contextlib.contextmanager
def logged(snakemake):
    """Send stdout and stderr of the script body to the rule's log file; a failure's traceback
    is written there too (the log Snakemake points to on error must say what went wrong)."""
    body_start, body_cpu = time.time(), _cpu_seconds()
    log = snakemake.log[0] if snakemake.log else os.devnull
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    status = "failed"
    with open(log, "w") as fh, contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
        try:
            yield fh
            status = "ok"
        except _user_errors() as err:
            # a bad input the user fixes (a checksum mismatch, a missing dataset, a config error): its
            # message, not a Python traceback, is what the user reads; the traceback stays in the log
            traceback.print_exc(file=fh)
            fh.flush()
            print(f"{type(err).__name__}: {err}\n(log: {log})", file=sys.__stderr__, flush=True)
            raise SystemExit(1) from None
        except BaseException:
            traceback.print_exc(file=fh)
            fh.flush()
            raise
        finally:
            if hasattr(snakemake, "rule"):             # a Snakemake job (not a stand-in of the tests)
                with contextlib.suppress(OSError):
                    record_profile(snakemake, status, body_start, body_cpu)
