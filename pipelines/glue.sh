#!/usr/bin/env bash
# GLUE fine-tuning in one command: GLUE data (downloaded when absent) → the pre-training corpus's text
# processing → BERT's grid × seeds with fairseq-train (in parallel over GPUs) → selection on dev → results
# table → GLUE server submission (the logic is in pipelines/glue/; --help lists every option).
#
#   CHECKPOINT=model.pt bash pipelines/glue.sh [-- extra fairseq-train flags]
#   SMALL=1 bash pipelines/glue.sh              # CPU smoke run: tiny model pre-trained first, generated GLUE
#
# Environment variables (all optional except CHECKPOINT without SMALL) map to options:
#   CHECKPOINT (an export of python -m macaron_fairseq.pretrain)
#   GLUE_DIR (an unpacked GLUE, only read; unset: downloaded into WORKDIR)   DOWNLOAD=1 (download the tasks
#   missing from GLUE_DIR into it)
#   WORKDIR (work_dirs/glue)   TASKS ("CoLA SST-2 MRPC STS-B QQP MNLI QNLI RTE"; also WNLI)
#   GRID_PRESET (bert: Devlin et al. A.3, the default; macaron; roberta), within it: BATCH_SIZES ("16 32")
#   LRS ("5e-5 3e-5 2e-5")   EPOCHS ("2 3 4")   WEIGHT_DECAYS ("0.01")   SEEDS (5, or a list)
#   GPUS (the CUDA devices: one run per GPU)   CPU_PROCESSES (2: parallel runs without GPUs)
#   EXTRA_LAYERS=K INIT_SCHEME=dt-fixup (K new layers under the classification head)   PRETRAINED_LR_MULTIPLIER
#   SMALL=1   SKIP_INSTALL=1 (do not run scripts/install.sh first)
# The inputs are checked before anything is installed, downloaded or written (a typo costs a second); every
# error is one line and exit 2 (docs/architecture.md, "Errors").
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
case "${1:-}" in -h|--help) exec "$PY" -m pipelines.glue --help ;; esac
fail() { echo "glue.sh: error: $*" >&2; exit 2; }
if [ -n "${CHECKPOINT:-}" ]; then
    [ -f "$CHECKPOINT" ] || fail "CHECKPOINT=$CHECKPOINT: no such file"
elif [ "${SMALL:-0}" != 1 ]; then
    fail "give CHECKPOINT=model.pt (an export of python -m macaron_fairseq.pretrain), or SMALL=1"
fi
if [ -n "${GLUE_DIR:-}" ] && [ "${DOWNLOAD:-0}" != 1 ] && [ ! -d "$GLUE_DIR" ]; then
    fail "GLUE_DIR=$GLUE_DIR: no such directory (a given GLUE directory is only read); download GLUE into" \
         "it with DOWNLOAD=1, or unset GLUE_DIR to download it into WORKDIR"
fi
[ "${SKIP_INSTALL:-0}" = 1 ] || bash "$here/scripts/install.sh"
args=(--workdir "${WORKDIR:-$here/work_dirs/glue}")
[ -n "${CHECKPOINT:-}" ] && args+=(--checkpoint "$CHECKPOINT")
[ -n "${GLUE_DIR:-}" ] && args+=(--glue-dir "$GLUE_DIR")
[ -n "${TASKS:-}" ] && args+=(--tasks "$TASKS")
[ -n "${GRID_PRESET:-}" ] && args+=(--grid-preset "$GRID_PRESET")
[ -n "${BATCH_SIZES:-}" ] && args+=(--batch-sizes "$BATCH_SIZES")
[ -n "${LRS:-}" ] && args+=(--lrs "$LRS")
[ -n "${EPOCHS:-}" ] && args+=(--epochs "$EPOCHS")
[ -n "${WEIGHT_DECAYS:-}" ] && args+=(--weight-decays "$WEIGHT_DECAYS")
[ -n "${SEEDS:-}" ] && args+=(--seeds "$SEEDS")
[ -n "${GPUS:-}" ] && args+=(--gpus "$GPUS")
[ -n "${CPU_PROCESSES:-}" ] && args+=(--cpu-processes "$CPU_PROCESSES")
[ -n "${EXTRA_LAYERS:-}" ] && args+=(--extra-layers "$EXTRA_LAYERS")
[ -n "${INIT_SCHEME:-}" ] && args+=(--init-scheme "$INIT_SCHEME")
[ -n "${PRETRAINED_LR_MULTIPLIER:-}" ] && args+=(--pretrained-lr-multiplier "$PRETRAINED_LR_MULTIPLIER")
[ "${SMALL:-0}" = 1 ] && args+=(--small)
[ "${DOWNLOAD:-0}" = 1 ] && args+=(--download)
exec "$PY" -m pipelines.glue "${args[@]}" "$@"
