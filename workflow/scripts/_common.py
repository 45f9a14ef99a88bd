"""Shared preamble of the rule scripts: import path, one BLAS thread, logging to the rule's log."""
import contextlib
import os
import sys
import traceback
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(var, "1")
os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


@contextlib.contextmanager
def logged(snakemake):
    """Send stdout and stderr of the script body to the rule's log file; a failure's traceback
    is written there too (the log Snakemake points to on error must say what went wrong)."""
    log = snakemake.log[0] if snakemake.log else os.devnull
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as fh, contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
        try:
            yield fh
        except BaseException:
            traceback.print_exc(file=fh)
            fh.flush()
            raise
