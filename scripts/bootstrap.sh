#!/usr/bin/env bash
# Create .venv (Python >= 3.11) with the pinned stack of requirements.lock and fedrepro itself.
# Idempotent: re-installs only when requirements.lock or pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-}
if [ -z "$PY" ]; then
  for cand in python3.11 python3 python; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
      PY=$cand; break
    fi
  done
fi
[ -n "$PY" ] || { echo "error: Python >= 3.11 not found; install it or set PYTHON=/path/to/python3.11" >&2; exit 1; }
stamp=.venv/.fedrepro-installed
want=$(cat requirements.lock pyproject.toml | sha256sum | cut -c1-16)
if [ ! -x .venv/bin/python ]; then
  echo "[bootstrap] creating .venv with $($PY --version)" >&2
  "$PY" -m venv .venv
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "[bootstrap] installing pinned dependencies (requirements.lock)" >&2
  pipq() { .venv/bin/python -m pip install -q --disable-pip-version-check "$@" 2>&1 \
           | { grep -v "^WARNING: Location .* is ignored" || true; } >&2; return "${PIPESTATUS[0]}"; }
  pipq -r requirements.lock
  pipq --no-deps --no-build-isolation -e .
  echo "$want" > "$stamp"
fi
