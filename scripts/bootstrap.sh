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
  # the lock pins every package (a pip freeze), so pip need not resolve dependencies (pip check below
  # confirms they are met) nor byte-compile file by file: compileall does it on both cores, without the
  # packages' own test suites; meanwhile fedrepro's numba kernels compile into their on-disk cache
  # (else the workflow's DAG, which imports fedrepro.nn, would compile them while nothing else runs)
  # two pip processes, each half of the pins: pip installs one package after another on one core, and
  # with --no-deps the halves share no file (pip check below confirms the result)
  grep -v '^#' requirements.lock | grep . | awk -v a=.venv/lock-1.txt -v b=.venv/lock-2.txt \
    '{ print > (NR % 2 ? a : b) }'
  pipq --no-deps --no-compile -r .venv/lock-1.txt & half=$!
  pipq --no-deps --no-compile -r .venv/lock-2.txt || { wait "$half" || true; exit 1; }
  wait "$half"
  pipq --no-deps --no-build-isolation -e .
  if ! .venv/bin/python -m pip check > .venv/pip-check.txt; then
    cat .venv/pip-check.txt >&2
    echo "error: requirements.lock does not hold every package its packages need (above); add them" >&2
    exit 1
  fi
  .venv/bin/python -c "import importlib, pkgutil, fedrepro.nn, fedrepro.algorithms.ops as ops
for m in pkgutil.iter_modules(ops.__path__): importlib.import_module(f'{ops.__name__}.{m.name}')" & kernels=$!
  site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  .venv/bin/python -m compileall -q -j 2 -x '/tests?/' "$site" fedrepro workflow/scripts > /dev/null
  wait "$kernels"
  echo "$want" > "$stamp"
fi
