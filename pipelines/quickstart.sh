#!/usr/bin/env bash
# One-command quickstart: train and evaluate a small Macaron translation model on CPU in a few minutes.
#
#   bash pipelines/quickstart.sh [options]       # every option: bash pipelines/quickstart.sh --help
#
# This wrapper installs whatever is missing (scripts/install.sh; skip it with --skip-install or
# SKIP_INSTALL=1) BEFORE any Python of the project runs, then hands over to `python -m macaron_pipelines.quickstart`
# with the same options, which runs the resumable stages (corpus, preprocessing, training, translation,
# BLEU, loss curves) and sets the CPU thread environment of its commands (--threads; OMP_WAIT_POLICY=PASSIVE,
# see pipelines/quickstart/threads.py for the measurement behind it). It also hands over its start time and
# the command as typed, for the run record WORKDIR/results/quickstart.json (whose wall time includes the
# installer).
set -euo pipefail
MACARON_QUICKSTART_STARTED="$(date +%s.%N)"
MACARON_QUICKSTART_COMMAND="bash $0"
for arg in "$@"; do MACARON_QUICKSTART_COMMAND+=" $(printf '%q' "$arg")"; done
export MACARON_QUICKSTART_STARTED MACARON_QUICKSTART_COMMAND
# shellcheck source=pipelines/wrapper.sh
source "$(dirname "${BASH_SOURCE[0]}")/wrapper.sh"
INSTALL_MESSAGE="[quickstart] checking/installing requirements (scripts/install.sh)" install_unless_skipped "$@"
exec "$PY" -m macaron_pipelines.quickstart --from-env "$@"
