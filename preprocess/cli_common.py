"""Options and error handling shared by the preprocessing CLIs."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from preprocess.binarize import BINARIZERS
from preprocess.bpe import BpeConfig
from preprocess.errors import PreprocessError


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def add_shared_options(parser: argparse.ArgumentParser, default_vocab: int) -> None:
    """--workers, --force, --binarizer and the BPE options, identical in every preprocessing CLI."""
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=available_cores(),
        help="processes for tokenization, BPE encoding and binarization "
        "(default: the usable cores, here %(default)s)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="redo every stage even if its completion marker says it is up to date "
        "(without it, a rerun resumes after the last completed stage)",
    )
    parser.add_argument(
        "--binarizer",
        choices=BINARIZERS,
        default="parallel",
        help="how the data-bin is written: 'parallel' (fairseq's Dictionary and mmap builder on --workers "
        "processes) or 'fairseq-preprocess' (the fairseq CLI itself, slower); both write identical files "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--bpe-vocab-size",
        type=positive_int,
        default=default_vocab,
        help="joint sentencepiece BPE vocabulary size (default: %(default)s)",
    )
    parser.add_argument(
        "--spm-input-sentence-size",
        type=positive_int,
        default=BpeConfig.input_sentence_size,
        help="at most this many training sentences (randomly sampled, both sides together) are loaded to "
        "learn BPE, which bounds its memory (default: %(default)s)",
    )


def bpe_config(args: argparse.Namespace) -> BpeConfig:
    return BpeConfig(
        vocab_size=args.bpe_vocab_size, input_sentence_size=args.spm_input_sentence_size, threads=args.workers
    )


def run_cli(main: Callable[[], None]) -> None:
    """Run ``main``: user errors become ``error: ...`` (exit 2), Ctrl-C exits 130 with a resume hint."""
    try:
        main()
    except PreprocessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("\ninterrupted: completed stages are kept, rerun the same command to resume", file=sys.stderr)
        sys.exit(130)
