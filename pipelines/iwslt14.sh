#!/usr/bin/env bash
# IWSLT14 De→En, Macaron small: download/preprocess → train → average → beam 5 → case-insensitive
# tokenized BLEU + WORKDIR/results.<arch>.json. Options and environment: see pipelines/translation.sh.
#   bash pipelines/iwslt14.sh                                  # the paper's setting (1 GPU)
#   ARCH=transformer_iwslt_de_en bash pipelines/iwslt14.sh     # the Transformer baseline
#   SMALL=1 RAW_DIR=/path/with/de-en.tgz bash pipelines/iwslt14.sh   # tiny CPU run of the same pipeline
exec bash "$(dirname "${BASH_SOURCE[0]}")/translation.sh" iwslt14 "$@"
