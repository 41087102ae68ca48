#!/usr/bin/env bash
# The one-command GPU check (benchmarks/gpu_check.py; docs/pretraining.md "GPU check"):
#   bash scripts/gpu_check.sh [options of python -m benchmarks.gpu_check]
# Prints one table, writes docs/results/gpu_check.json. Exit 0 all ok, 1 a row failed, 2 no CUDA GPU or
# missing packages (one line naming them and the pip command that installs them from wheels/gpu/).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
exec "${PYTHON:-python}" -m benchmarks.gpu_check "$@"
