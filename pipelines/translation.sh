#!/usr/bin/env bash
# Shared body of pipelines/iwslt14.sh and pipelines/wmt14.sh (the logic is in
# pipelines/translation.py; run it with --help for every option).
#
#   bash pipelines/translation.sh {iwslt14|wmt14} [options] [-- extra fairseq-train flags]
#
# Environment variables (all optional) map to options:
#   WORKDIR (work_dirs/<recipe>)  RAW_DIR (archives you already have; default: download)
#   ARCH (macaron_small / macaron_base; e.g. ARCH=transformer_iwslt_de_en for the baseline)
#   INIT_SCHEME (default | dt-fixup | t-fixup)   GPUS   MAX_TOKENS   UPDATE_FREQ   MAX_UPDATE
#   NUM_AVG (5)   WORKERS (2)   SMALL=1 (tiny model and schedule: the CPU smoke scale the tests run)
#   SKIP_INSTALL=1 (do not run scripts/install.sh first)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
[ "$#" -ge 1 ] || { echo "usage: bash pipelines/translation.sh iwslt14|wmt14 [options]" >&2; exit 2; }
recipe="$1"; shift
# the checkout's packages, without changing directory (relative paths stay relative to where you are)
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
case "${1:-}" in -h|--help) exec "$PY" -m pipelines.translation --help ;; esac
[ "${SKIP_INSTALL:-0}" = 1 ] || bash "$here/scripts/install.sh"
args=("$recipe" --workdir "${WORKDIR:-$here/work_dirs/$recipe}")
[ -n "${RAW_DIR:-}" ] && args+=(--raw-dir "$RAW_DIR")
[ -n "${ARCH:-}" ] && args+=(--arch "$ARCH")
[ -n "${INIT_SCHEME:-}" ] && args+=(--init-scheme "$INIT_SCHEME")
[ -n "${GPUS:-}" ] && args+=(--gpus "$GPUS")
[ -n "${MAX_TOKENS:-}" ] && args+=(--max-tokens "$MAX_TOKENS")
[ -n "${UPDATE_FREQ:-}" ] && args+=(--update-freq "$UPDATE_FREQ")
[ -n "${MAX_UPDATE:-}" ] && args+=(--max-update "$MAX_UPDATE")
[ -n "${NUM_AVG:-}" ] && args+=(--num-avg "$NUM_AVG")
[ -n "${WORKERS:-}" ] && args+=(--workers "$WORKERS")
[ "${SMALL:-0}" = 1 ] && args+=(--small)
exec "$PY" -m pipelines.translation "${args[@]}" "$@"
