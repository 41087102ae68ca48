"""English Wikipedia + BookCorpus -> a sentence/document fairseq data-bin for BERT-style pre-training.

The recipe of the Macaron paper (after BERT): documents are segmented into sentences with spaCy;
normalized, lowercased and Moses-tokenized; split at random (by a hash of the document id) into training
and validation documents, 199:1; encoded with a sentencepiece BPE model (32768 pieces) learned on a bounded
random sample of sentences; binarized with one item per sentence and an empty item between documents
(fairseq's ``BlockPairDataset``, ``break_mode="doc"``).

Stages (each resumable; Ctrl-C or a crash leaves nothing a rerun would trust):
  extract-<source>  one per dump file and one for the books: clean, split, tokenize (--workers processes)
  collect           all sources into DEST/text/{train,valid}.txt
  learn-bpe         sentencepiece BPE
  bpe-train, bpe-valid, binarize

Shards: each dump part file can be extracted by its own job (--extract-only, e.g. one Slurm array task
per part); running the full command afterwards with all parts skips the finished extract stages and
merges everything into one data-bin with one dictionary. See docs/pretraining_data.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from macaron_preprocess.text.bpe import BpeConfig
from macaron_preprocess.text.corpus_layout import SPLITS, CorpusLayout
from macaron_preprocess.text.corpus_stages import apply_bpe, binarize, collect, learn_bpe
from macaron_preprocess.text.corpus_summary import build_summary, summary_table
from macaron_preprocess.text.documents import DocumentConfig
from macaron_preprocess.text.extract import ExtractOutputs, extract_bookcorpus, extract_wikipedia
from macaron_preprocess.text.sentences import RULE_BASED
from macaron_workflow.atomic import write_text_atomically
from macaron_workflow.cli import ArgumentParser, add_deprecated_alias, positive_int, program_name, run_cli
from macaron_workflow.errors import UserError
from macaron_workflow.files import ensure_writable_dir, require_files
from macaron_workflow.options import add_run_options
from macaron_workflow.overlap import refuse_overlap
from macaron_workflow.stages import StageRunner

LATEST = "latest"


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="python -m macaron_preprocess.bert_corpus",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--dest", required=True, type=Path, help="output directory = the fairseq data-bin")
    parser.add_argument(
        "--wikipedia",
        nargs="+",
        metavar="DUMP",
        default=[],
        help="MediaWiki XML export files (enwiki-*-pages-articles*.xml.bz2, multistream or part files, or "
        f"plain .xml), or '{LATEST}' to download the newest English dump (resumable, sha1-checked)",
    )
    parser.add_argument(
        "--wikipedia-mirror",
        metavar="URL",
        help="with --wikipedia latest: a mirror laid out as https://dumps.wikimedia.org (default: "
        "$WIKIPEDIA_DUMPS_MIRROR, else dumps.wikimedia.org)",
    )
    parser.add_argument(
        "--bookcorpus", type=Path, metavar="DIR", help="a directory of books, one UTF-8 .txt per book"
    )
    add_run_options(parser)
    parser.add_argument(
        "--bpe-vocab-size",
        type=positive_int,
        default=32768,
        help="sentencepiece BPE size (default: %(default)s)",
    )
    add_deprecated_alias(parser, "--vocab-size", "--bpe-vocab-size")
    parser.add_argument(
        "--valid-ratio",
        type=float,
        default=0.005,
        help="share of documents in the validation set, chosen by a hash of the document id "
        "(default: %(default)s = 1 in 200, i.e. 199:1)",
    )
    parser.add_argument(
        "--spm-input-sentence-size",
        type=positive_int,
        default=BpeConfig.input_sentence_size,
        help="BPE is learned on at most this many training sentences, sampled at random; this bounds its "
        "memory (default: %(default)s)",
    )
    add_deprecated_alias(parser, "--bpe-sample-sentences", "--spm-input-sentence-size")
    parser.add_argument(
        "--sentence-splitter",
        default=RULE_BASED,
        help=f"'{RULE_BASED}' (spaCy's rule-based sentencizer, no download; default) or the name of an "
        "installed trained spaCy pipeline, e.g. en_core_web_sm (better on abbreviations, slower)",
    )
    parser.add_argument(
        "--keep-short-documents",
        action="store_true",
        help="keep documents with fewer than two sentences (they give no next-sentence pair; default: drop "
        "and count them)",
    )
    parser.add_argument(
        "--extract-only",
        action="store_true",
        help="only run the extract stage of each input (one shard per job); rerun without it, with all "
        "inputs, to merge",
    )
    return parser


def check_args(args: argparse.Namespace) -> None:
    if not args.wikipedia and args.bookcorpus is None:
        raise UserError("give at least one source: --wikipedia DUMP [DUMP ...] and/or --bookcorpus DIR")
    if not 0 < args.valid_ratio < 1:
        raise UserError(f"--valid-ratio must be between 0 and 1, got {args.valid_ratio}")
    if LATEST in args.wikipedia and len(args.wikipedia) > 1:
        raise UserError(f"--wikipedia {LATEST} downloads the whole dump; do not combine it with files")
    names = [Path(dump).name for dump in args.wikipedia]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise UserError(f"--wikipedia names the same file name twice: {', '.join(duplicates)}")


def wikipedia_dumps(args: argparse.Namespace, layout: CorpusLayout) -> list[Path]:
    if args.wikipedia == [LATEST]:
        from macaron_preprocess.sources.wikipedia_download import download_latest_wikipedia

        return [download_latest_wikipedia(layout.downloads, mirror=args.wikipedia_mirror)]
    dumps = [Path(dump) for dump in args.wikipedia]
    require_files(dumps, "Wikipedia dumps")
    return dumps


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    check_args(args)
    dumps = {f"--wikipedia {dump}": Path(dump) for dump in args.wikipedia if dump != LATEST}
    refuse_overlap({"--dest": args.dest}, {**dumps, "--bookcorpus": args.bookcorpus})  # before it is created
    layout = CorpusLayout(ensure_writable_dir(args.dest))
    runner = StageRunner(layout.state_dir, force=args.force)
    config = DocumentConfig(
        sentence_splitter=args.sentence_splitter,
        valid_ratio=args.valid_ratio,
        keep_short=args.keep_short_documents,
    )
    sources: list[ExtractOutputs] = []
    for dump in wikipedia_dumps(args, layout):
        outputs = layout.extract(f"wikipedia-{dump.name}")
        extract_wikipedia(runner, dump, outputs, config, args.workers)
        sources.append(outputs)
    if args.bookcorpus is not None:
        outputs = layout.extract("bookcorpus")
        extract_bookcorpus(runner, args.bookcorpus, outputs, config, args.workers)
        sources.append(outputs)
    if args.extract_only:
        print(f"extracted {len(sources)} source(s) into {layout.dest / 'work' / 'extract'}", file=sys.stderr)
        return
    collect(runner, layout, sources)
    bpe = BpeConfig(
        args.bpe_vocab_size, input_sentence_size=args.spm_input_sentence_size, threads=args.workers
    )
    learn_bpe(runner, layout, bpe)
    for split in SPLITS:
        apply_bpe(runner, layout, split, args.workers)
    binarize(runner, layout, args.workers)
    summary = build_summary(runner.reports)
    write_text_atomically(layout.summary, json.dumps(summary, indent=1))
    print(summary_table(summary))
    print(f"data-bin: {layout.dest}", file=sys.stderr)


def cli() -> None:
    """Console script ``macaron-preprocess-bert-corpus`` (``python -m macaron_preprocess.bert_corpus``)."""
    run_cli(main, program_name("macaron_preprocess.bert_corpus", "macaron-preprocess-bert-corpus"))


if __name__ == "__main__":
    cli()
