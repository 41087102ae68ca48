#!/usr/bin/env bash
# WMT14 En→De, Macaron base: download/preprocess → train → average → beam 4, lenpen 0.6 → tokenized
# BLEU with compound splitting AND detokenized sacreBLEU + WORKDIR/results.<arch>.json.
# Options and environment: see pipelines/translation.sh.
#   GPUS=4 bash pipelines/wmt14.sh                             # the paper's setting (4 GPUs × 8192 tokens)
#   GPUS=1 UPDATE_FREQ=4 bash pipelines/wmt14.sh               # same effective batch on 1 GPU
#   ARCH=transformer_wmt_en_de bash pipelines/wmt14.sh         # the Transformer baseline
exec bash "$(dirname "${BASH_SOURCE[0]}")/translation.sh" wmt14 "$@"
