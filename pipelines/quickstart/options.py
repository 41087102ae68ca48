"""The quickstart's command line: its options, their checks, and the arguments a run gets."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from macaron_pipelines import quickstart
from macaron_pipelines.commands import REPO, add_from_env
from macaron_pipelines.quickstart.threads import CPU_KERNELS
from macaron_pipelines.quickstart.workdir import SPLITS
from macaron_workflow.cli import HelpFormatter, available_cores, program_name
from macaron_workflow.errors import UserError
from macaron_workflow.options import SKIP_INSTALL, add_options, with_environment

PROG = "quickstart"


class QuickstartParser(argparse.ArgumentParser):
    """Errors read ``quickstart: error: MESSAGE (try --help)`` and exit with status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{PROG}: error: {message} (try --help)\n")


def non_negative_int(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got '{text}'")
    return int(text)


def number_text(text: str) -> str:
    """A number, kept as written (fairseq parses it again)."""
    try:
        float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got '{text}'") from None
    return text


def non_empty(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("needs a value")
    return text


#: (option, default, help) of the integer options; the help shows the default in brackets
INTEGER_OPTIONS = [
    ("--train-size", 12000, "synthetic corpus: training pairs"),
    ("--valid-size", 400, "synthetic corpus: validation pairs"),
    ("--test-size", 400, "synthetic corpus: test pairs"),
    ("--seed", 1, "corpus and training seed"),
    ("--bpe-vocab-size", 2000, "joint sentencepiece BPE vocabulary"),
    ("--embed-dim", 128, "model dimension"),
    ("--ffn-dim", 256, "inner dimension of EACH of the two half-step FFNs of a Macaron layer"),
    ("--layers", 2, "encoder layers = decoder layers"),
    ("--heads", 4, "attention heads"),
    ("--max-update", 750, "stop after N updates; 0 = no limit (then set --max-epoch)"),
    ("--max-epoch", 0, "stop after N epochs; 0 = no limit"),
    ("--max-tokens", 2048, "tokens per batch"),
    ("--warmup", 100, "inverse_sqrt warm-up updates"),
    ("--beam", 5, "beam size"),
]
#: (option, default, help) of the real-valued options, passed to fairseq as written
NUMBER_OPTIONS = [
    ("--lr", "3e-3", "peak learning rate"),
    ("--dropout", "0.1", "dropout"),
    ("--lenpen", "1.0", "length penalty of the beam search"),
]


OPTIONS = (SKIP_INSTALL,)
"""The options shared with the other pipelines' option tables (the rest keep quickstart's own table above,
INTEGER_OPTIONS and NUMBER_OPTIONS: the quickstart has no environment variables but SKIP_INSTALL)."""


def build_parser() -> QuickstartParser:
    parser = QuickstartParser(
        prog=program_name("macaron_pipelines.quickstart"),
        usage="%(prog)s [options]",
        description=quickstart.__doc__,
        formatter_class=HelpFormatter,
        allow_abbrev=False,
        epilog="Your own corpus: --train-prefix/--valid-prefix/--test-prefix P read P.SRC and P.TGT (raw\n"
        "text, one sentence per line, aligned line by line); all three are required together.",
    )
    add = parser.add_argument
    add(
        "--workdir",
        type=Path,
        default=REPO / "work_dirs" / "quickstart",
        metavar="DIR",
        help="everything is written here",
    )
    for option, default, side in (("--src", "en", "source"), ("--tgt", "de", "target")):
        add(option, type=non_empty, default=default, metavar="L", help=f"{side} language [%(default)s]")
    for split in SPLITS:
        add(f"--{split}-prefix", type=Path, metavar="P", help=f"your own {split} files P.SRC and P.TGT")
    for option, default, text in INTEGER_OPTIONS:
        add(option, type=non_negative_int, default=default, metavar="N", help=f"{text} [%(default)s]")
    for option, default, text in NUMBER_OPTIONS:
        add(option, type=number_text, default=default, metavar="X", help=f"{text} [%(default)s]")
    add(
        "--lowercase",
        action="store_true",
        help="lowercase the text before BPE (scores then become case-insensitive)",
    )
    add(
        "--threads",
        type=non_negative_int,
        default=available_cores(),
        metavar="N",
        help="torch CPU threads [the usable cores, here %(default)s]",
    )
    add(
        "--cpu-kernels",
        choices=CPU_KERNELS,
        default="avx2",
        help="avx2: torch's and MKL's AVX2 code paths on an x86 CPU that has AVX2 (the same kernels on every "
        "such CPU; no measured cost in speed); native: the fastest ones for this CPU (on an AVX-512 CPU they "
        "give other numbers) [%(default)s]",
    )
    add_options(parser, OPTIONS)
    add_from_env(parser)
    add(
        "--force",
        action="store_true",
        help="redo every stage (results are replaced; the old checkpoints/ and train.log are moved aside)",
    )
    return parser


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = build_parser()
    try:
        argv = with_environment(sys.argv[1:] if argv is None else argv, OPTIONS)
    except UserError as err:
        parser.error(str(err))
    args = parser.parse_args(argv)
    if args.max_update == 0 and args.max_epoch == 0:
        parser.error("set --max-update or --max-epoch (both are 0)")
    prefixes = [args.train_prefix, args.valid_prefix, args.test_prefix]
    given = [prefix for prefix in prefixes if prefix is not None]
    if given and len(given) != len(prefixes):
        parser.error("--train-prefix, --valid-prefix and --test-prefix must be given together")
    for prefix in given:
        for lang in (args.src, args.tgt):
            if not Path(f"{prefix}.{lang}").is_file():
                parser.error(f"missing corpus file {prefix}.{lang}")
    if not given and (args.src, args.tgt) != ("en", "de"):
        parser.error("the synthetic corpus is en→de; for --src/--tgt give your files")
    args.own_corpus = bool(given)
    args.workdir = args.workdir.resolve()
    args.train_prefix, args.valid_prefix, args.test_prefix = (p.resolve() if p else None for p in prefixes)
    return args
