#!/usr/bin/env bash
# The test command (README "The two commands"; .ci/run calls exactly this).
#   bash scripts/test.sh [--quick] [pytest args...]
# Installs what is missing (scripts/install.sh --dev), lints with ruff, runs the whole pytest suite.
# --quick deselects the tests marked slow or slurm (the unit tests and fast CLI checks remain);
# CI runs everything. The tests run on PYTEST_WORKERS pytest-xdist workers (default 2; 0 = in this
# process): one file per worker at a time, all Slurm tests on one worker (tests/conftest.py).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
PY="${PYTHON:-python3}"
quick=()
if [ "${1:-}" = "--quick" ]; then
  quick=(-m "not slow and not slurm")
  shift
fi
bash scripts/install.sh --dev
echo "[test] ruff check"
"$PY" -m ruff check .
echo "[test] pytest"
export PYTHONWARNINGS="${PYTHONWARNINGS:-ignore::DeprecationWarning}"
workers="${PYTEST_WORKERS:-2}"
"$PY" -m pytest -q -p no:cacheprovider --durations=15 -n "$workers" --dist loadgroup "${quick[@]}" "$@"
