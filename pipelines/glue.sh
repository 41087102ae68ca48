#!/usr/bin/env bash
# GLUE fine-tuning in one command: GLUE data (downloaded when absent) → the pre-training corpus's text
# processing → BERT's grid × seeds with fairseq-train (in parallel over GPUs) → selection on dev → results
# table → GLUE server submission (the logic is in pipelines/glue/; --help lists every option).
#
#   CHECKPOINT=model.pt bash pipelines/glue.sh [-- extra fairseq-train flags]
#   SMALL=1 bash pipelines/glue.sh              # CPU smoke run: tiny model pre-trained first, generated GLUE
#
# Every option can also be given as an environment variable (CHECKPOINT, GLUE_DIR, DOWNLOAD=1, WORKDIR,
# TASKS, GRID_PRESET, BATCH_SIZES, LRS, EPOCHS, WEIGHT_DECAYS, SEEDS, GPUS, CPU_PROCESSES, EXTRA_LAYERS,
# INIT_SCHEME, PRETRAINED_LR_MULTIPLIER, SMALL=1, SKIP_INSTALL=1): `bash pipelines/glue.sh --help` lists each
# option with its [env NAME], from the pipeline's option table (pipelines/glue/__main__.py OPTIONS). WORKDIR
# defaults to work_dirs/glue.
# The inputs are checked before anything is installed, downloaded or written (a typo costs a second); every
# error is one line and exit 2 (docs/architecture.md, "Errors").
set -euo pipefail
# shellcheck source=pipelines/wrapper.sh
source "$(dirname "${BASH_SOURCE[0]}")/wrapper.sh"
case "${1:-}" in -h|--help) exec "$PY" -m macaron_pipelines.glue --help ;; esac
fail() { echo "glue.sh: error: $*" >&2; exit 2; }
if [ -n "${CHECKPOINT:-}" ]; then
    [ ! -d "$CHECKPOINT" ] || fail "CHECKPOINT=$CHECKPOINT: a directory, not a checkpoint file; give the" \
        "model.pt of python -m macaron_fairseq.pretrain.export (or of python -m macaron_fairseq.hf import)"
    [ -f "$CHECKPOINT" ] || fail "CHECKPOINT=$CHECKPOINT: no such file"
elif [ "${SMALL:-0}" != 1 ] && ! given --small "$@" && ! given --checkpoint "$@"; then
    fail "give CHECKPOINT=model.pt (an export of python -m macaron_fairseq.pretrain), or SMALL=1"
fi
if [ -n "${GLUE_DIR:-}" ] && [ "${DOWNLOAD:-0}" != 1 ] && [ ! -d "$GLUE_DIR" ]; then
    fail "GLUE_DIR=$GLUE_DIR: no such directory (a given GLUE directory is only read); download GLUE into" \
         "it with DOWNLOAD=1, or unset GLUE_DIR to download it into WORKDIR"
fi
# the GLUE directory is only read: it must lie apart from what the pipeline writes under WORKDIR/glue/
# (GLUE_DIR=WORKDIR/glue/data had the preprocessing replace the raw TSVs); Python checks it again, with
# the --glue-dir/--workdir flags too
if [ -n "${GLUE_DIR:-}" ]; then
    glue="$(realpath -m -- "$GLUE_DIR")"
    written="$(realpath -m -- "${WORKDIR:-$here/work_dirs/glue}")/glue"
    for out in "$written/data" "$written/runs" "$written/submission" "$written/submission-partial"; do
        case "$glue/" in "$out/"*) how="is or lies inside" ;; *) how="" ;; esac
        case "$out/" in "$glue/"?*) how="contains" ;; esac
        [ -z "$how" ] || fail "GLUE_DIR=$GLUE_DIR $how $out, where the pipeline writes (its raw files would" \
            "be replaced); keep GLUE_DIR apart from WORKDIR/glue/{data,runs,submission}: another WORKDIR or" \
            "another GLUE_DIR"
    done
fi
install_unless_skipped "$@"
exec "$PY" -m macaron_pipelines.glue --from-env "$@"
