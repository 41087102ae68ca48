#!/usr/bin/env bash
# The test command (README "The two commands"; .ci/run calls exactly this).
#   bash scripts/test.sh [--quick] [pytest args...]
# Installs what is missing (scripts/install.sh --dev), lints with ruff (and checks its formatting), runs the
# whole pytest suite.
# --quick deselects the tests marked slow or slurm (the unit tests and fast CLI checks remain);
# CI runs everything. The tests run on PYTEST_WORKERS pytest-xdist workers (default 2; 0 = in this
# process), the tests of one file on one worker (tests/conftest.py); the slurm-marked tests then run in
# one process, alone on the machine.
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
echo "[test] ruff check, ruff format --check"
"$PY" -m ruff check .
"$PY" -m ruff format --check .
echo "[test] pytest"
export PYTHONWARNINGS="${PYTHONWARNINGS:-ignore::DeprecationWarning}"
workers="${PYTEST_WORKERS:-2}"
pytest_run() { "$PY" -m pytest -q -p no:cacheprovider --durations=15 "$@"; }
if [ "${#quick[@]}" -gt 0 ]; then
  pytest_run -n "$workers" --dist loadgroup "${quick[@]}" "$@"
  exit
fi
# the Slurm tests time their jobs against wall-clock limits: they run afterwards, alone on the machine
status=0
pytest_run -n "$workers" --dist loadgroup -m "not slurm" "$@" || status=$?
echo "[test] pytest: the slurm tests, in one process"
rc=0
pytest_run -m slurm "$@" || rc=$?
[ "$rc" = 5 ] && rc=0  # the selection held no slurm test
[ "$status" = 0 ] && status=$rc
exit "$status"
