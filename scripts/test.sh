#!/usr/bin/env bash
# Run the test suite (fast tests; `bash scripts/test.sh -m slow` for the slow ones).
# Tests that need raw data read the offline mirror named by FEDREPRO_DATA_MIRROR.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 MPLBACKEND=Agg
if [ $# -eq 0 ]; then set -- -m "not slow"; fi
exec .venv/bin/python -m pytest -q "$@"
