#!/usr/bin/env bash
# Shared body of pipelines/iwslt14.sh and pipelines/wmt14.sh (the logic is in pipelines/translation.py).
#
#   bash pipelines/translation.sh {iwslt14|wmt14|wmt14-big} [options] [-- extra fairseq-train flags]
#
# Every option can also be given as an environment variable (WORKDIR, RAW_DIR, ARCH, INIT_SCHEME, GPUS,
# MAX_TOKENS, UPDATE_FREQ, MAX_UPDATE, NUM_AVG, WORKERS, SMALL=1, SKIP_INSTALL=1, ...): `bash
# pipelines/translation.sh iwslt14 --help` lists each option with its [env NAME], from the pipeline's option
# table (pipelines/translation.py OPTIONS). WORKDIR defaults to work_dirs/<recipe> (work_dirs/wmt14 for wmt14-big).
set -euo pipefail
# shellcheck source=pipelines/wrapper.sh
source "$(dirname "${BASH_SOURCE[0]}")/wrapper.sh"
[ "$#" -ge 1 ] || { echo "usage: bash pipelines/translation.sh iwslt14|wmt14|wmt14-big [options]" >&2; exit 2; }
install_unless_skipped "$@"
exec "$PY" -m macaron_pipelines.translation --from-env "$@"
