#!/usr/bin/env bash
# WMT14 En→De big as the Macaron authors trained and tested it: their train-wmt14-big.sh
# (transformer_wmt_en_de_big_t2t_macaron: pre-LN, dropout 0.3, lr 0.003, 4096 tokens × update-freq 16 on
# 4 GPUs) → checkpoint_best.pt → their test-wmt14-big.sh BLEU. Shares work_dirs/wmt14 (the data-bin) with
# pipelines/wmt14.sh. Options and environment: see pipelines/translation.sh.
#   GPUS=4 bash pipelines/wmt14_big.sh                                  # the authors' setting
#   ARCH=transformer_wmt_en_de_big_t2t GPUS=4 bash pipelines/wmt14_big.sh   # their Transformer baseline
exec bash "$(dirname "${BASH_SOURCE[0]}")/translation.sh" wmt14-big "$@"
