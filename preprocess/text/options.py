"""Options of the text-to-data-bin CLIs (``custom``, ``iwslt14``, ``wmt14_en_de``) and how a run starts."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from macaron_preprocess.text.binarize import BINARIZERS
from macaron_preprocess.text.bpe import BpeConfig
from macaron_preprocess.text.layout import OutputLayout
from macaron_workflow.cli import ArgumentParser, positive_int
from macaron_workflow.files import ensure_writable_dir
from macaron_workflow.options import add_run_options
from macaron_workflow.overlap import refuse_overlap
from macaron_workflow.stages import StageRunner


def add_shared_options(parser: argparse.ArgumentParser, default_vocab: int, vocab_help: str = "") -> None:
    """--workers, --force, --binarizer and the BPE options, identical in every text-to-data-bin CLI."""
    add_run_options(parser)
    parser.add_argument(
        "--binarizer",
        choices=BINARIZERS,
        default="pool",
        help="how the data-bin is written: 'pool' (fairseq's Dictionary and mmap builder driven from a pool "
        "of --workers processes) or 'fairseq-preprocess' (the fairseq CLI itself, slower); both write "
        "identical files (default: %(default)s)",
    )
    parser.add_argument(
        "--bpe-vocab-size",
        type=positive_int,
        default=default_vocab,
        help=vocab_help or "joint sentencepiece BPE vocabulary size (default: %(default)s)",
    )
    parser.add_argument(
        "--spm-input-sentence-size",
        type=positive_int,
        default=BpeConfig.input_sentence_size,
        help="at most this many training sentences (randomly sampled, both sides together) are loaded to "
        "learn BPE, which bounds its memory (default: %(default)s)",
    )


@dataclass(frozen=True)
class CorpusCli:
    """The command line of a published corpus's preprocessor: ``--dest``, ``--raw-dir`` and the shared
    options; :meth:`start` parses it and prepares the run."""

    prog: str
    doc: str
    raw_dir_help: str
    default_vocab: int
    vocab_help: str = ""

    def parser(self) -> argparse.ArgumentParser:
        parser = ArgumentParser(
            prog=self.prog,
            description=self.doc,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            epilog="--force redoes every stage but keeps downloaded archives (delete DEST/work/downloads to "
            "download again).",
        )
        parser.add_argument(
            "--dest", required=True, type=Path, help="output directory = the fairseq data-bin"
        )
        parser.add_argument("--raw-dir", type=Path, help=self.raw_dir_help)
        add_shared_options(parser, default_vocab=self.default_vocab, vocab_help=self.vocab_help)
        return parser

    def start(
        self, argv: Sequence[str] | None, src: str, tgt: str
    ) -> tuple[argparse.Namespace, OutputLayout, StageRunner]:
        """Parse ``argv``; the arguments, the output layout (data-bin = ``--dest``) and the stage runner."""
        args = self.parser().parse_args(argv)
        return (args, *start_corpus(self, args, src, tgt))


def start_corpus(
    cli: CorpusCli, args: argparse.Namespace, src: str, tgt: str
) -> tuple[OutputLayout, StageRunner]:
    """:meth:`CorpusCli.start` on arguments parsed already (a CLI with options of its own)."""
    # before --dest is created: nothing is written into an input, whatever the name
    refuse_overlap({"--dest": args.dest}, {"--raw-dir": args.raw_dir})
    return start_run(args.dest, src, tgt, args.force)


def start_run(
    dest: Path, src: str, tgt: str, force: bool, data_bin: Path | None = None
) -> tuple[OutputLayout, StageRunner]:
    """Check that ``dest`` is writable; the output layout and the stage runner of this run."""
    dest = ensure_writable_dir(dest)
    layout = OutputLayout(dest, src, tgt, data_bin=dest if data_bin is None else dest / data_bin)
    return layout, StageRunner(layout.state_dir, force=force)


def bpe_config(args: argparse.Namespace) -> BpeConfig:
    return BpeConfig(
        vocab_size=args.bpe_vocab_size, input_sentence_size=args.spm_input_sentence_size, threads=args.workers
    )
