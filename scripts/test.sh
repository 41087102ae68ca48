#!/usr/bin/env bash
# The test command (README "Run the tests"; .ci/run calls exactly this).
#   bash scripts/test.sh [pytest args...]
# Installs what is missing (scripts/install.sh --dev), lints with ruff, runs the whole pytest suite.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
PY="${PYTHON:-python3}"
bash scripts/install.sh --dev
echo "[test] ruff check"
"$PY" -m ruff check .
echo "[test] pytest"
export PYTHONWARNINGS="${PYTHONWARNINGS:-ignore::DeprecationWarning}"
"$PY" -m pytest -q -p no:cacheprovider --durations=15 "$@"
