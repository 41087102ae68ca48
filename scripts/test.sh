#!/usr/bin/env bash
# The test command (README "The two commands"; .ci/run calls exactly this).
#   bash scripts/test.sh [--quick] [pytest args...]
# Installs what is missing (scripts/install.sh --dev), lints with ruff (and checks its formatting), runs the
# whole pytest suite.
# --quick deselects the tests marked slow or slurm (the unit tests and fast CLI checks remain);
# CI runs everything. The tests run on PYTEST_WORKERS pytest-xdist workers (default 2; 0 = in this
# process), the tests of one file on one worker (tests/conftest.py); the slurm-marked tests run at the
# same time in one process of their own, whose jobs time themselves against wall-clock limits: the other
# tests run at a lower CPU priority (nice), so that the Slurm jobs get the CPUs they ask for and the
# other tests the rest (the Slurm part alone keeps the machine about 57% busy).
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
pytest_cmd=("$PY" -m pytest -q -p no:cacheprovider --durations=15)
if [ "${#quick[@]}" -gt 0 ]; then
  "${pytest_cmd[@]}" -n "$workers" --dist loadgroup "${quick[@]}" "$@"
  exit
fi
status=0
slurm_out="$(mktemp -d)"
echo "[test] pytest: the slurm tests in one process (output below when done), the others beside them at nice 15"
# a background command of a script ignores SIGINT: give Ctrl-C back to it (its fixtures stop the cluster)
with_sigint=()
env --default-signal=INT true 2> /dev/null && with_sigint=(env --default-signal=INT)
"${with_sigint[@]}" "${pytest_cmd[@]}" -m slurm --basetemp "$slurm_out/tmp" "$@" > "$slurm_out/log" 2>&1 &
slurm_pid=$!
nice -n 15 "${pytest_cmd[@]}" -n "$workers" --dist loadgroup -m "not slurm" "$@" || status=$?
rc=0
wait "$slurm_pid" || rc=$?
echo "[test] pytest: the slurm tests"
cat "$slurm_out/log"
[ "$rc" = 5 ] && rc=0  # the selection held no slurm test
[ "$status" = 0 ] && status=$rc
rm -rf "$slurm_out"
exit "$status"
