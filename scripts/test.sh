#!/usr/bin/env bash
# The test command (README "The two commands"; .ci/run calls exactly this).
#   bash scripts/test.sh [--quick] [pytest args...]
# Installs what is missing (scripts/install.sh --dev), lints with ruff, runs the whole pytest suite.
# --quick deselects the tests marked slow or slurm (the unit tests and fast CLI checks remain);
# CI runs everything.
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
"$PY" -m pytest -q -p no:cacheprovider --durations=15 "${quick[@]}" "$@"
