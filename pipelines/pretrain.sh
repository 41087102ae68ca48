#!/usr/bin/env bash
# BERT-style pre-training in one command: corpus (Wikipedia + BookCorpus) → DeepSpeed pre-training under
# torchrun (phase 1 at 128 tokens, phase 2 at 512 from phase 1's weights) → fairseq checkpoint → loss curves (the logic is in pipelines/pretrain.py; --help lists every
# option).
#
#   bash pipelines/pretrain.sh [options] [-- extra python -m macaron_fairseq.pretrain flags]
#   SMALL=1 bash pipelines/pretrain.sh          # CPU smoke test on a generated corpus, about a minute
#
# Environment variables (all optional) map to options:
#   WORKDIR (work_dirs/pretrain)   WIKIPEDIA (dump files separated by spaces, or 'latest')
#   BOOKCORPUS (a directory of .txt books)   ARCH (macaron_bert_base; ARCH=vanilla_bert_base: the BERT baseline)
#   DS_CONFIG (configs/deepspeed/bert_phase1.json)   GPUS (the CUDA devices; without CUDA 1 CPU rank, SMALL: 2)
#   MAX_UPDATE (the config's scheduler total_num_steps)   TOKENS_PER_SAMPLE (128)   SEED (1)   WORKERS
#   PHASES ("1 2": BERT's phase 1 at 128 tokens, then phase 2 at 512 from phase 1's weights; SMALL: "1")
#   PHASE2_CONFIG (configs/deepspeed/bert_phase2.json)   PHASE2_MAX_UPDATE (its total_num_steps)
#   SMALL=1 (macaron_bert_tiny, tiny_cpu.json, 30 steps, 2 CPU ranks; a generated corpus when no input is given)
#   SKIP_INSTALL=1 (do not run scripts/install.sh first)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
# the checkout's packages, without changing directory (relative paths stay relative to where you are)
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
case "${1:-}" in -h|--help) exec "$PY" -m pipelines.pretrain --help ;; esac
[ "${SKIP_INSTALL:-0}" = 1 ] || bash "$here/scripts/install.sh"
args=(--workdir "${WORKDIR:-$here/work_dirs/pretrain}")
if [ -n "${WIKIPEDIA:-}" ]; then
  read -r -a dumps <<< "$WIKIPEDIA"
  args+=(--wikipedia "${dumps[@]}")
fi
[ -n "${BOOKCORPUS:-}" ] && args+=(--bookcorpus "$BOOKCORPUS")
[ -n "${ARCH:-}" ] && args+=(--arch "$ARCH")
[ -n "${DS_CONFIG:-}" ] && args+=(--deepspeed-config "$DS_CONFIG")
[ -n "${GPUS:-}" ] && args+=(--gpus "$GPUS")
[ -n "${MAX_UPDATE:-}" ] && args+=(--max-update "$MAX_UPDATE")
[ -n "${TOKENS_PER_SAMPLE:-}" ] && args+=(--tokens-per-sample "$TOKENS_PER_SAMPLE")
[ -n "${SEED:-}" ] && args+=(--seed "$SEED")
[ -n "${WORKERS:-}" ] && args+=(--workers "$WORKERS")
[ -n "${PHASES:-}" ] && args+=(--phases "$PHASES")
[ -n "${PHASE2_CONFIG:-}" ] && args+=(--phase2-config "$PHASE2_CONFIG")
[ -n "${PHASE2_MAX_UPDATE:-}" ] && args+=(--phase2-max-update "$PHASE2_MAX_UPDATE")
[ "${SMALL:-0}" = 1 ] && args+=(--small)
exec "$PY" -m pipelines.pretrain "${args[@]}" "$@"
