#!/usr/bin/env bash
# IWSLT14 De→En as the Macaron authors trained and tested it: download/preprocess → their train-iwslt14.sh
# (transformer_iwslt_de_en_macaron_v2: pre-LN, dropout 0.3, attention/ReLU dropout 0.1) → checkpoint_best.pt
# → beam 5, lenpen 1.0 → fairseq's BLEU4 (their test-iwslt14.sh) and case-insensitive tokenized BLEU +
# WORKDIR/results.<arch>.json. Options and environment: see pipelines/translation.sh.
#   bash pipelines/iwslt14.sh                                     # the authors' setting (1 GPU)
#   ARCH=transformer_iwslt_de_en_v2 bash pipelines/iwslt14.sh     # their Transformer baseline
#   ARCH=macaron_small bash pipelines/iwslt14.sh                  # the post-LN Macaron (fairseq's defaults)
#   SMALL=1 RAW_DIR=/path/with/de-en.tgz bash pipelines/iwslt14.sh   # tiny CPU run of the same pipeline
exec bash "$(dirname "${BASH_SOURCE[0]}")/translation.sh" iwslt14 "$@"
