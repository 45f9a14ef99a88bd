#!/usr/bin/env bash
# Open the HTML report in a real headless browser (issue #14 finding 8): builds fedepm at a tiny
# scale in a temporary folder, runs `snakemake --report`, then clicks through the report in
# Debian's Chromium (driven by chromedriver) and checks that the claims table (every claim, its
# verdict and reason), the tables, figures, skipped list and provenance are visible.
#   FEDREPRO_DATA_MIRROR=/path/to/mirror bash scripts/check_report_browser.sh
#   FEDREPRO_SCREENSHOT_DIR=/tmp/shots bash scripts/check_report_browser.sh   # keep a PNG of the claims view
# Installs chromium and chromium-driver with apt-get when they are missing (needs root).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
        echo "[check_report_browser] chromium/chromedriver missing: install Debian's chromium and chromium-driver" >&2
        exit 1
    fi
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium chromium-driver
fi
if [ -z "${FEDREPRO_DATA_MIRROR:-}" ]; then
    echo "[check_report_browser] set FEDREPRO_DATA_MIRROR to the dataset mirror (the test builds fedepm from Adult)" >&2
    exit 1
fi
bash scripts/bootstrap.sh
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 MPLBACKEND=Agg
exec .venv/bin/python -m pytest -q -s -m slow tests/test_report_browser.py "$@"
