#!/usr/bin/env bash
# WMT14 En→De base as the Macaron authors trained and tested it: download/preprocess → their
# train-wmt14-base.sh (transformer_wmt_en_de_macaron_v2: pre-LN, attention/ReLU dropout 0.1; 4 GPUs × 8192
# tokens) → checkpoint_best.pt → beam 4, lenpen 0.6 → BLEU as their test-wmt14-base.sh (Moses detok → tok,
# ##AT## split, multi-bleu), tokenized compound-split BLEU and detokenized sacreBLEU +
# WORKDIR/results.<arch>.json. Options and environment: see pipelines/translation.sh.
#   GPUS=4 bash pipelines/wmt14.sh                             # the authors' setting (4 GPUs × 8192 tokens)
#   GPUS=1 UPDATE_FREQ=4 bash pipelines/wmt14.sh               # same effective batch on 1 GPU
#   ARCH=transformer_wmt_en_de_v2 bash pipelines/wmt14.sh      # their Transformer baseline
exec bash "$(dirname "${BASH_SOURCE[0]}")/translation.sh" wmt14 "$@"
