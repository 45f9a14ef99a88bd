"""The SLURM profile submits, runs and finishes real jobs (issue #14, 10): scripts/slurm_smoke.sh
on a throw-away single-node cluster. Slow (about 2 min) and only where it can run: root, Slurm and
munge installed, no Slurm configuration of the machine's own, a dataset mirror."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import unavailable

ROOT = Path(__file__).resolve().parents[1]


def _unavailable() -> str | None:
    missing = [t for t in ("sbatch", "slurmctld", "slurmd", "munged") if shutil.which(t) is None]
    if missing:
        return f"Slurm/munge not installed ({', '.join(missing)} missing; apt-get install slurm-wlm munge)"
    if os.geteuid() != 0:
        return "needs root (starts munged, slurmctld and slurmd)"
    if os.path.lexists("/etc/slurm/slurm.conf"):
        return "/etc/slurm/slurm.conf exists: this machine has its own Slurm configuration"
    return None


@pytest.mark.slow
def test_slurm_profile_runs_fedepm_cells_end_to_end(mirror, tmp_path):
    reason = _unavailable()
    if reason:
        unavailable(reason)
    env = dict(os.environ, FEDREPRO_DATA_MIRROR=str(mirror), SMOKE_DIR=str(tmp_path / "smoke"))
    # its own process group: on a timeout the whole script gets SIGTERM, so its exit trap stops the
    # daemons and removes the /etc/slurm/slurm.conf link (a SIGKILL would leave a cluster behind)
    proc = subprocess.Popen(["bash", str(ROOT / "scripts" / "slurm_smoke.sh")], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=1200)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
        pytest.fail("slurm_smoke.sh ran past 1200 s and was stopped (its cleanup ran):\n" + out[-3000:] + err[-3000:])
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert re.search(r"slurm_smoke: OK: \d+ SLURM jobs COMPLETED \(fetch 1, preprocess 1, run_cells \d+", done.stdout)
    assert (tmp_path / "smoke" / "run" / "figures" / "fedepm" / "fig2.pdf").stat().st_size > 0
