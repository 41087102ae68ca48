#!/usr/bin/env bash
# One-command quickstart: train and evaluate a small Macaron translation model on CPU in a few minutes.
#
#   bash pipelines/quickstart.sh [options]
#
# Stages (each is a documented CLI; a stage whose outputs exist is skipped, so a rerun resumes):
#   0. bash scripts/install.sh                     installs whatever is missing (skip: --skip-install)
#   1. python -m preprocess.synthetic_en_de        generated en→de corpus (or your files, see below)
#   2. python -m preprocess.custom                 sacremoses tokenization, joint sentencepiece BPE,
#                                                  binarized data-bin (joined dictionary)
#   3. fairseq-train --arch macaron_base ...       via tools.train_progress (progress
#                                                  display; the full JSON log goes to train.log)
#   4. fairseq-generate --beam 5                   test split, --post-process sentencepiece
#   5. python -m tools.score_bleu  detokenized sacreBLEU + tokenized BLEU -> bleu.json
#   6. python -m tools.plot_curves train/valid loss per epoch -> loss_curves.png
#
# Options (defaults in brackets):
#   --workdir DIR          everything is written here [work_dirs/quickstart in the repository]
#   --src L / --tgt L      language suffixes of the parallel files [en / de]
#   --train-prefix P       use your own corpus: P.SRC and P.TGT, one sentence per line, aligned;
#   --valid-prefix P         all three prefixes are required together; without them the synthetic
#   --test-prefix P          corpus is generated
#   --train-size N         synthetic corpus: training pairs [12000]
#   --valid-size N / --test-size N   synthetic corpus: validation / test pairs [400 / 400]
#   --seed N               corpus and training seed [1]
#   --bpe-vocab-size N     joint sentencepiece BPE vocabulary [2000]
#   --lowercase            lowercase the text before BPE (scores then become case-insensitive)
#   --embed-dim N          model dimension [128]
#   --ffn-dim N            inner dimension of EACH of the two half-step FFNs of a Macaron layer [256]
#   --layers N             encoder layers = decoder layers [2]
#   --heads N              attention heads [4]
#   --max-update N         stop after N updates [750]; 0 = no limit (then set --max-epoch)
#   --max-epoch N          stop after N epochs [0 = no limit]
#   --max-tokens N         tokens per batch [2048]
#   --lr X / --warmup N    peak learning rate / inverse_sqrt warm-up updates [3e-3 / 100]
#   --dropout X            [0.1]
#   --beam N / --lenpen X  beam search [5 / 1.0]
#   --threads N            torch CPU threads [the usable cores]
#   --skip-install         do not run scripts/install.sh
#   --force                redo every stage (the workdir's old results are replaced)
#   -h, --help             this text
#
# Results: WORKDIR/results/{bleu.json, loss_curves.png, test.hyp.TGT}, WORKDIR/train.log (fairseq JSON
# log), WORKDIR/generate-test.txt (fairseq-generate output), WORKDIR/checkpoints/.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
start_time=$(date +%s)

workdir="$here/work_dirs/quickstart"
src=en; tgt=de
train_prefix=""; valid_prefix=""; test_prefix=""
train_size=12000; valid_size=400; test_size=400; seed=1
bpe_vocab_size=2000; lowercase=0
embed_dim=128; ffn_dim=256; layers=2; heads=4
max_update=750; max_epoch=0; max_tokens=2048; lr=3e-3; warmup=100; dropout=0.1
beam=5; lenpen=1.0
threads="$("$PY" -c 'import os; print(len(os.sched_getaffinity(0)))' 2>/dev/null || echo 2)"
skip_install=0; force=0

die() { echo "quickstart: error: $*" >&2; exit 2; }
need_value() { [ "$#" -ge 2 ] && [ -n "$2" ] || die "option $1 needs a value (try --help)"; }
while [ "$#" -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    --skip-install) skip_install=1; shift; continue ;;
    --force) force=1; shift; continue ;;
    --lowercase) lowercase=1; shift; continue ;;
  esac
  case "$1" in
    --workdir|--src|--tgt|--train-prefix|--valid-prefix|--test-prefix|--train-size|--valid-size|--test-size|\
    --seed|--bpe-vocab-size|--embed-dim|--ffn-dim|--layers|--heads|--max-update|--max-epoch|--max-tokens|\
    --lr|--warmup|--dropout|--beam|--lenpen|--threads) need_value "$@" ;;
    *) die "unknown option '$1' (try --help)" ;;
  esac
  case "$1" in
    --workdir) workdir="$2" ;;
    --src) src="$2" ;;
    --tgt) tgt="$2" ;;
    --train-prefix) train_prefix="$2" ;;
    --valid-prefix) valid_prefix="$2" ;;
    --test-prefix) test_prefix="$2" ;;
    --train-size) train_size="$2" ;;
    --valid-size) valid_size="$2" ;;
    --test-size) test_size="$2" ;;
    --seed) seed="$2" ;;
    --bpe-vocab-size) bpe_vocab_size="$2" ;;
    --embed-dim) embed_dim="$2" ;;
    --ffn-dim) ffn_dim="$2" ;;
    --layers) layers="$2" ;;
    --heads) heads="$2" ;;
    --max-update) max_update="$2" ;;
    --max-epoch) max_epoch="$2" ;;
    --max-tokens) max_tokens="$2" ;;
    --lr) lr="$2" ;;
    --warmup) warmup="$2" ;;
    --dropout) dropout="$2" ;;
    --beam) beam="$2" ;;
    --lenpen) lenpen="$2" ;;
    --threads) threads="$2" ;;
    *) die "unknown option '$1' (try --help)" ;;
  esac
  shift 2
done
for name in train_size valid_size test_size seed bpe_vocab_size embed_dim ffn_dim layers heads max_update \
            max_epoch max_tokens warmup beam threads; do
  [[ "${!name}" =~ ^[0-9]+$ ]] || die "--${name//_/-} must be a non-negative integer, got '${!name}'"
done
[ "$max_update" -gt 0 ] || [ "$max_epoch" -gt 0 ] || die "set --max-update or --max-epoch (both are 0)"
n_prefixes=0
for p in "$train_prefix" "$valid_prefix" "$test_prefix"; do [ -n "$p" ] && n_prefixes=$((n_prefixes + 1)); done
if [ "$n_prefixes" -ne 0 ] && [ "$n_prefixes" -ne 3 ]; then
  die "--train-prefix, --valid-prefix and --test-prefix must be given together"
fi
for p in "$train_prefix" "$valid_prefix" "$test_prefix"; do
  [ -z "$p" ] && continue
  for lang in "$src" "$tgt"; do [ -f "$p.$lang" ] || die "missing corpus file $p.$lang"; done
done

say() { echo "[quickstart $(( $(date +%s) - start_time ))s] $*"; }
export OMP_NUM_THREADS="$threads" MKL_NUM_THREADS="$threads"
# Passive OpenMP waiting: with the default busy-waiting, 2 torch threads on a 2-core machine that has any
# other load run several times slower than 1 thread (measured here: 4.0 s vs 0.37 s per step).
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
mkdir -p "$workdir"
workdir="$(cd "$workdir" && pwd)"
cd "$here"  # so that `python -m preprocess...` and `macaron_fairseq` resolve to this checkout
if [ "$force" = 1 ]; then
  say "--force: removing previous results in $workdir"
  rm -rf "$workdir/corpus" "$workdir/data" "$workdir/checkpoints" "$workdir/results" \
         "$workdir/train.log" "$workdir/generate-test.txt"
fi

# The tools are run as scripts (same CLI as `python -m tools.NAME`): `-m` would first
# import the macaron_fairseq package, i.e. fairseq, ~3.5 s of CPU each time, which these tools never use.
tools="$here/tools"

# 0. install ------------------------------------------------------------------------------------------
if [ "$skip_install" = 0 ]; then
  say "checking/installing requirements (scripts/install.sh)"
  bash "$here/scripts/install.sh"
fi

# 1. corpus -------------------------------------------------------------------------------------------
if [ "$n_prefixes" = 0 ]; then
  corpus="$workdir/corpus"
  corpus_args="--train $train_size --valid $valid_size --test $test_size --seed $seed"
  if [ -f "$corpus/.done" ] && [ "$(cat "$corpus/.done")" = "$corpus_args" ]; then
    say "synthetic corpus: up to date ($corpus)"
  else
    [ "$src" = en ] && [ "$tgt" = de ] || die "the synthetic corpus is en→de; for --src/--tgt give your files"
    say "generating the synthetic en→de corpus ($corpus_args)"
    rm -f "$corpus/.done"
    # shellcheck disable=SC2086
    "$PY" -m preprocess.synthetic_en_de --dest "$corpus" $corpus_args
    echo "$corpus_args" > "$corpus/.done"
  fi
  train_prefix="$corpus/train"; valid_prefix="$corpus/valid"; test_prefix="$corpus/test"
fi

# 2. tokenize, BPE, binarize (preprocess.custom skips its finished stages itself) ------------------------
data="$workdir/data"
say "preprocessing -> $data"
prep_args=(--src "$src" --tgt "$tgt" --trainpref "$train_prefix" --validpref "$valid_prefix"
           --testpref "$test_prefix" --dest "$data" --bpe-vocab-size "$bpe_vocab_size")
[ "$lowercase" = 1 ] && prep_args+=(--lowercase)
"$PY" -m preprocess.custom "${prep_args[@]}"
[ -f "$data/data-bin/dict.$src.txt" ] || die "preprocessing did not produce $data/data-bin"

# 3. train --------------------------------------------------------------------------------------------
ckpt="$workdir/checkpoints"
train_args=(
  "$data/data-bin" --user-dir "$here/macaron_fairseq" --task translation --source-lang "$src"
  --target-lang "$tgt" --arch macaron_base --share-all-embeddings
  --encoder-embed-dim "$embed_dim" --decoder-embed-dim "$embed_dim"
  --encoder-ffn-embed-dim "$ffn_dim" --decoder-ffn-embed-dim "$ffn_dim"
  --encoder-layers "$layers" --decoder-layers "$layers"
  --encoder-attention-heads "$heads" --decoder-attention-heads "$heads"
  --dropout "$dropout" --attention-dropout 0.0 --activation-dropout 0.0
  --optimizer adam --adam-betas "(0.9, 0.98)" --clip-norm 0.0 --weight-decay 0.0
  --lr "$lr" --lr-scheduler inverse_sqrt --warmup-updates "$warmup" --warmup-init-lr 1e-7
  --criterion label_smoothed_cross_entropy --label-smoothing 0.1
  --max-tokens "$max_tokens" --max-update "$max_update" --max-epoch "$max_epoch"
  --seed "$seed" --num-workers 0 --cpu --save-dir "$ckpt" --no-epoch-checkpoints
  --log-format json --log-interval 10
)
# a finished training is reused only if it was run with exactly these arguments on this data
train_key="$(printf '%s\n' "${train_args[@]}"; stat -c %Y "$data/data-bin/dict.$tgt.txt")"
if [ -f "$ckpt/.done" ] && [ "$(cat "$ckpt/.done")" = "$train_key" ] && [ -f "$ckpt/checkpoint_best.pt" ]; then
  say "training: up to date ($ckpt)"
else
  if [ -d "$ckpt" ] && { [ ! -f "$ckpt/.args" ] || [ "$(cat "$ckpt/.args")" != "$train_key" ]; }; then
    say "training settings or data changed: starting training from scratch"
    rm -rf "$ckpt" "$workdir/train.log" "$workdir/generate-test.txt" "$workdir/results"
  fi
  mkdir -p "$ckpt"
  echo "$train_key" > "$ckpt/.args"
  say "training a Macaron model (dim $embed_dim, 2x$ffn_dim FFN, $layers+$layers layers, max $max_update updates, $threads threads)"
  "$PY" "$tools/train_progress.py" --log "$workdir/train.log" -- fairseq-train "${train_args[@]}" \
    || die "fairseq-train failed (full log: $workdir/train.log)"
  echo "$train_key" > "$ckpt/.done"
  rm -f "$workdir/generate-test.txt"
fi

# 4. translate the test split -------------------------------------------------------------------------
gen="$workdir/generate-test.txt"
gen_args=(
  "$data/data-bin" --user-dir "$here/macaron_fairseq" --task translation --source-lang "$src"
  --target-lang "$tgt" --path "$ckpt/checkpoint_best.pt" --gen-subset test --beam "$beam" --lenpen "$lenpen"
  --post-process sentencepiece --batch-size 128 --num-workers 0 --cpu
)
gen_key="$(printf '%s\n' "${gen_args[@]}"; stat -c %Y "$ckpt/checkpoint_best.pt")"
if [ -s "$gen" ] && [ -f "$gen.args" ] && [ "$(cat "$gen.args")" = "$gen_key" ]; then
  say "translation: up to date ($gen)"
else
  say "translating the test split (beam $beam)"
  rm -f "$gen" "$gen.args"
  fairseq-generate "${gen_args[@]}" > "$gen.tmp" 2> "$workdir/generate-test.log" \
    || { tail -20 "$workdir/generate-test.log" >&2; die "fairseq-generate failed (log: $workdir/generate-test.log)"; }
  mv "$gen.tmp" "$gen"
  echo "$gen_key" > "$gen.args"
fi

# 5. score --------------------------------------------------------------------------------------------
results="$workdir/results"
score_args=(--gen "$gen" --ref "$data/raw/test.$tgt" --tok-ref "$data/tok/test.$tgt" --lang "$tgt"
            --json "$results/bleu.json" --hyp-out "$results/test.hyp.$tgt" --name "quickstart test")
[ "$lowercase" = 1 ] && score_args+=(--lowercase)
say "scoring"
"$PY" "$tools/score_bleu.py" "${score_args[@]}"

# 6. plot ---------------------------------------------------------------------------------------------
"$PY" "$tools/plot_curves.py" --log "$workdir/train.log" --out "$results/loss_curves.png" \
  --title "Macaron quickstart ($src→$tgt)"
say "done. results: $results/bleu.json, $results/loss_curves.png, $results/test.hyp.$tgt"
