#!/usr/bin/env bash
# BERT-style pre-training in one command: corpus (Wikipedia + BookCorpus) → DeepSpeed pre-training under
# torchrun (phase 1 at 128 tokens, phase 2 at 512 from phase 1's weights) → fairseq checkpoint → loss curves
# (the logic is in pipelines/pretrain.py).
#
#   bash pipelines/pretrain.sh [options] [-- extra python -m macaron_fairseq.pretrain flags]
#   SMALL=1 bash pipelines/pretrain.sh          # CPU smoke test on a generated corpus, about a minute
#
# Every option can also be given as an environment variable (WORKDIR, WIKIPEDIA, ARCH, DS_CONFIG, GPUS,
# SMALL=1, SKIP_INSTALL=1, ...): `bash pipelines/pretrain.sh --help` lists each option with its [env NAME],
# from the pipeline's option table (pipelines/pretrain.py OPTIONS). WORKDIR defaults to work_dirs/pretrain.
set -euo pipefail
# shellcheck source=pipelines/wrapper.sh
source "$(dirname "${BASH_SOURCE[0]}")/wrapper.sh"
install_unless_skipped "$@"
exec "$PY" -m macaron_pipelines.pretrain --from-env "$@"
