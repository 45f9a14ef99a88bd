#!/usr/bin/env bash
# Install what the slow test suite needs, from the distribution's packages (needs root and apt-get):
#   Chromium and chromedriver (the HTML report's browser check, tests/test_report_browser.py),
#   slurm-wlm and munge (the SLURM smoke test, tests/test_slurm_smoke.py),
#   snakemake-executor-plugin-slurm into .venv (the SLURM profile's executor).
# Each is skipped when present; `apt-get update` runs once, only when something is missing.
# Exits non-zero, naming what could not be installed and why, so CI fails instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "[install_test_tools] error: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root to install Debian packages (run the slow suite without them: the tests skip with the reason)"
command -v apt-get >/dev/null || die "no apt-get: install chromium, chromium-driver, slurm-wlm and munge with this system's package manager"
missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
for t in sbatch slurmctld slurmd; do command -v "$t" >/dev/null || { missing+=(slurm-wlm); break; }; done
command -v munged >/dev/null || missing+=(munge)
if [ ${#missing[@]} -gt 0 ]; then
    echo "[install_test_tools] installing ${missing[*]} (apt-get)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null || die "apt-get update failed: the distribution's package index cannot be reached"
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null \
        || die "apt-get install ${missing[*]} failed (see the message above)"
fi
for t in chromium chromedriver sbatch slurmctld slurmd munged; do
    command -v "$t" >/dev/null || die "$t is still missing after apt-get install"
done
bash scripts/bootstrap.sh
if ! .venv/bin/python -c "import snakemake_executor_plugin_slurm" 2>/dev/null; then
    echo "[install_test_tools] installing snakemake-executor-plugin-slurm into .venv" >&2
    .venv/bin/python -m pip install -q --disable-pip-version-check snakemake-executor-plugin-slurm 2>&1 \
        | { grep -v "^WARNING: Location .* is ignored" || true; } >&2
    [ "${PIPESTATUS[0]}" = 0 ] || die "pip install snakemake-executor-plugin-slurm failed (see the message above)"
fi
echo "[install_test_tools] $(chromium --version 2>/dev/null | head -1); $(slurmctld -V); munge $(munged -V 2>&1 | head -1)" >&2
