"""Preprocess your own parallel corpus into a fairseq data-bin.

Usage::

    python -m macaron_preprocess.custom --src en --tgt de \\
        --trainpref RAW/train --validpref RAW/valid --testpref RAW/test \\
        --dest OUT [--bpe-vocab-size 8000] [--lowercase] [--workers N] [--force] \\
        [--max-len 250] [--ratio 1.5]

Input: raw (detokenized) UTF-8 text, one sentence per line, ``RAW/train.en`` aligned line by line with
``RAW/train.de`` (likewise valid/test).

Stages (each resumable, see :mod:`macaron_workflow.stages`):

1. tokenize: Moses tokenization (sacremoses, no escaping), optional lowercasing. Pairs with invalid
   UTF-8 or an empty/whitespace-only side are dropped pairwise and reported; training pairs are also
   length/ratio-filtered like ``clean-corpus-n.perl -ratio RATIO ... 1 MAX_LEN``; valid/test never are.
2. bpe-train: joint sentencepiece BPE on the tokenized training text of both sides.
3. bpe-<split>: sentencepiece pieces, checked to decode back to the tokenized text.
4. binarize: joined dictionary + fairseq mmap data-bin (``--binarizer``, see
:mod:`macaron_preprocess.text.binarize`).

Output in OUT, the data-bin (``fairseq-train OUT``), laid out as ``macaron_preprocess.iwslt14`` and
``macaron_preprocess.wmt14_en_de`` lay out theirs::

    OUT/dict.{en,de}.txt, OUT/{train,valid,test}.en-de.{en,de}.{bin,idx}
                                         fairseq binaries, dict.en.txt == dict.de.txt
                                         (train with --share-all-embeddings)
    OUT/raw/{train,valid,test}.{en,de}   raw input of the kept pairs (detokenized sacreBLEU references)
    OUT/tok/{train,valid,test}.{en,de}   tokenized (and lowercased) text (tokenized-BLEU references)
    OUT/spm.model, OUT/spm.vocab         joint sentencepiece model
    OUT/bpe/{train,valid,test}.{en,de}   space-separated pieces; --remove-bpe sentencepiece gives tok/
    OUT/.stages/                         completion markers (delete OUT or use --force to start over)

An OUT of the old layout (the data-bin in ``OUT/data-bin/``, written before OUT was the data-bin) is
continued in that layout by a rerun, saying so in one line; ``--force`` redoes it in the new one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from macaron_preprocess.text.bitext import BitextFiles, check_bitext_counts
from macaron_preprocess.text.cleaning import CleanConfig
from macaron_preprocess.text.layout import LEGACY_DATA_BIN, legacy_data_bin
from macaron_preprocess.text.moses import MosesConfig
from macaron_preprocess.text.options import add_shared_options, bpe_config, start_run
from macaron_preprocess.text.summary import line_count_table
from macaron_preprocess.text.to_databin import bpe_and_binarize, tokenize_jobs
from macaron_preprocess.text.tokenize_stage import tokenize_split
from macaron_workflow.cli import ArgumentParser, positive_int, program_name, run_cli
from macaron_workflow.errors import UserError
from macaron_workflow.files import require_files
from macaron_workflow.overlap import refuse_overlap

OUTPUTS_HELP = """outputs in DEST, the data-bin (fairseq-train DEST --share-all-embeddings):
  dict.{SRC,TGT}.txt, {train,valid,test}.SRC-TGT.{SRC,TGT}.{bin,idx}
                                    fairseq-preprocess --joined-dictionary output (dict.SRC.txt ==
                                    dict.TGT.txt)
  raw/{train,valid,test}.{SRC,TGT}  raw input of the kept pairs (train after pairwise cleaning; valid/test
                                    only checked): detokenized references for sacreBLEU
  tok/{train,valid,test}.{SRC,TGT}  Moses-tokenized (and lowercased if asked) text: tokenized references
  spm.model, spm.vocab              joint sentencepiece BPE model learned on tok/train of both sides
  bpe/{train,valid,test}.{SRC,TGT}  pieces separated by spaces (--remove-bpe sentencepiece gives tok/ back)
  .stages/                          completion markers: a rerun skips finished stages, --force redoes them
A DEST of the old layout (its data-bin in DEST/data-bin/) is continued in that layout, saying so;
--force redoes it with the data-bin in DEST itself.

Pairs with invalid UTF-8 or an empty/whitespace-only side are dropped (pairwise) in every split and
reported; a line count mismatch between the two sides of any file pair is an error.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="python -m macaron_preprocess.custom",
        description="Raw parallel text -> Moses tokenization -> cleaning -> joint sentencepiece BPE -> "
        "fairseq data-bin (joined dictionary).",
        epilog=OUTPUTS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--src", required=True, help="source language code: input suffix and Moses language")
    parser.add_argument("--tgt", required=True, help="target language code: input suffix and Moses language")
    parser.add_argument(
        "--trainpref",
        required=True,
        type=Path,
        help="training prefix: reads TRAINPREF.SRC and TRAINPREF.TGT (raw text)",
    )
    parser.add_argument("--validpref", type=Path, help="validation prefix (optional but recommended)")
    parser.add_argument("--testpref", type=Path, help="test prefix (optional)")
    parser.add_argument(
        "--dest",
        required=True,
        type=Path,
        help="output directory = the fairseq data-bin (created if missing)",
    )
    parser.add_argument("--lowercase", action="store_true", help="lowercase the tokenized text")
    parser.add_argument(
        "--max-len",
        type=positive_int,
        default=250,
        help="drop training pairs with a side longer than this many tokens (default: %(default)s)",
    )
    parser.add_argument(
        "--min-len",
        type=positive_int,
        default=1,
        help="drop training pairs with a side shorter than this many tokens (default: %(default)s)",
    )
    parser.add_argument(
        "--ratio",
        type=float,
        default=1.5,
        help="drop training pairs whose token-count ratio exceeds this (default: %(default)s)",
    )
    parser.add_argument(
        "--aggressive-dash-splits",
        action="store_true",
        help="split hyphenated words as 'a @-@ b' (Moses tokenizer -a)",
    )
    parser.add_argument(
        "--normalize-punctuation",
        action="store_true",
        help="Moses punctuation normalization and non-printing-character removal first",
    )
    add_shared_options(parser, default_vocab=8000)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.src == args.tgt:
        raise UserError("--src and --tgt must differ")
    if args.ratio < 1:
        raise UserError(f"--ratio must be >= 1, got {args.ratio}")
    if args.max_len < args.min_len:
        raise UserError(f"--max-len {args.max_len} is smaller than --min-len {args.min_len}")
    prefixes = {"train": args.trainpref, "valid": args.validpref, "test": args.testpref}
    inputs = {
        split: [BitextFiles.from_prefix(prefix, args.src, args.tgt)]
        for split, prefix in prefixes.items()
        if prefix is not None
    }
    require_files([path for files in inputs.values() for path in files[0].both()], "input files")
    given = {f"--{split}pref ({p.suffix})": p for split, pair in inputs.items() for p in pair[0].both()}
    refuse_overlap({"--dest": args.dest}, given)  # before --dest is created
    for split, files in inputs.items():
        check_bitext_counts(files[0], f"in the {split} input")
    old = legacy_data_bin(args.dest)
    if old is not None:
        if args.force:
            notice = (
                f"{old}: the data-bin of the old layout, left as it was: --force writes the data-bin into "
                f"{args.dest} itself (delete {old})"
            )
        else:
            notice = (
                f"{args.dest} has the old layout (its data-bin in {old}): continuing it there (--force "
                f"redoes it with the data-bin in {args.dest} itself)"
            )
        print(notice, file=sys.stderr, flush=True)
    old_layout = old is not None and not args.force
    layout, runner = start_run(
        args.dest, args.src, args.tgt, args.force, data_bin=Path(LEGACY_DATA_BIN) if old_layout else None
    )

    def moses(lang: str) -> MosesConfig:
        return MosesConfig(
            lang=lang,
            normalize_punctuation=args.normalize_punctuation,
            remove_non_printing=args.normalize_punctuation,
            aggressive_dash_splits=args.aggressive_dash_splits,
            lowercase=args.lowercase,
        )

    clean = CleanConfig(min_len=args.min_len, max_len=args.max_len, ratio=args.ratio)
    for job in tokenize_jobs(layout, inputs, moses(args.src), moses(args.tgt), clean):
        tokenize_split(runner, job, args.workers)
    bpe_and_binarize(runner, layout, list(inputs), bpe_config(args), args.workers, args.binarizer)
    print(line_count_table(layout, list(inputs), runner.reports))
    print(f"data-bin: {layout.data_bin}", file=sys.stderr)


def cli() -> None:
    """The ``macaron-preprocess-custom`` console script: what ``python -m macaron_preprocess.custom`` runs."""
    run_cli(main, program_name("macaron_preprocess.custom", "macaron-preprocess-custom"))


if __name__ == "__main__":
    cli()
