"""One-command quickstart: train and evaluate a small Macaron translation model on CPU in a few minutes.

  bash pipelines/quickstart.sh [options]        (installs what is missing, then runs this program)
  python -m pipelines.quickstart [options]      (this program alone: it never installs anything)

Stages (each resumable: a rerun skips the finished ones, --force redoes them all; completion markers in
WORKDIR/.stages/ and, for preprocessing, WORKDIR/data/.stages/):
  install     bash scripts/install.sh (by quickstart.sh, unless --skip-install)
  corpus      python -m preprocess.synthetic_en_de: generated en→de corpus (or your own files, see below)
  preprocess  python -m preprocess.custom: sacremoses tokenization, joint sentencepiece BPE, binarized
              data-bin (joined dictionary)
  train       fairseq-train --arch macaron_base ... with the progress display of tools.train_progress;
              the full JSON log goes to train.log. A rerun with a larger --max-update or --max-epoch
              continues from checkpoints/checkpoint_last.pt; other settings or data move checkpoints/
              and train.log aside (*.before-TIME) and train afresh.
  generate    fairseq-generate --beam 5 --post-process sentencepiece on the test split
  score       tools.score_bleu: detokenized sacreBLEU + tokenized BLEU -> results/bleu.json
  plot        tools.plot_curves: train/valid loss per epoch and per update -> results/loss_curves.png

Results: WORKDIR/results/{bleu.json, loss_curves.png, test.hyp.TGT}, WORKDIR/train.log (fairseq JSON
log), WORKDIR/generate-test.txt (fairseq-generate output), WORKDIR/checkpoints/.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from pipelines import fairseq_steps
from pipelines.commands import REPO, USER_DIR, Console, PipelineError, report_errors, run_command
from pipelines.fairseq_steps import BleuSettings
from workflow.atomic import temporary_path
from workflow.cli import available_cores
from workflow.stages import StageReport, StageRunner

PROG = "quickstart"
SPLITS = ("train", "valid", "test")


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


def build_parser() -> QuickstartParser:
    parser = QuickstartParser(
        prog=PROG,
        usage="bash pipelines/quickstart.sh [options]",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
        epilog="Your own corpus: --train-prefix/--valid-prefix/--test-prefix P read P.SRC and P.TGT (raw\n"
        "text, one sentence per line, aligned line by line); all three are required together.",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=REPO / "work_dirs" / "quickstart",
        metavar="DIR",
        help="everything is written here [work_dirs/quickstart in the repository]",
    )
    add = parser.add_argument
    for option, default, side in (("--src", "en", "source"), ("--tgt", "de", "target")):
        add(option, type=non_empty, default=default, metavar="L", help=f"{side} language [%(default)s]")
    for split in SPLITS:
        add(f"--{split}-prefix", type=Path, metavar="P", help=f"your own {split} files P.SRC and P.TGT")
    for option, default, text in INTEGER_OPTIONS:
        add(option, type=non_negative_int, default=default, metavar="N", help=f"{text} [%(default)s]")
    for option, default, text in NUMBER_OPTIONS:
        add(option, type=number_text, default=default, metavar="X", help=f"{text} [%(default)s]")
    parser.add_argument(
        "--lowercase",
        action="store_true",
        help="lowercase the text before BPE (scores then become case-insensitive)",
    )
    parser.add_argument(
        "--threads",
        type=non_negative_int,
        default=available_cores(),
        metavar="N",
        help="torch CPU threads [the usable cores, here %(default)s]",
    )
    parser.add_argument(
        "--skip-install",
        action="store_true",
        help="quickstart.sh: do not run scripts/install.sh (this program itself never installs)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="redo every stage (results are replaced; the old checkpoints/ and train.log are moved aside)",
    )
    return parser


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = build_parser()
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
    for name in ("train_prefix", "valid_prefix", "test_prefix"):
        if getattr(args, name) is not None:
            setattr(args, name, getattr(args, name).resolve())
    return args


@dataclass(frozen=True)
class Workdir:
    """Where the quickstart writes."""

    root: Path

    @property
    def state_dir(self) -> Path:
        return self.root / ".stages"

    @property
    def corpus(self) -> Path:
        return self.root / "corpus"

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def data_bin(self) -> Path:
        return self.data / "data-bin"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def train_log(self) -> Path:
        return self.root / "train.log"

    @property
    def generated(self) -> Path:
        return self.root / "generate-test.txt"

    @property
    def results(self) -> Path:
        return self.root / "results"


def synthetic_corpus(runner: StageRunner, console: Console, args: argparse.Namespace, corpus: Path) -> None:
    """The generated en→de corpus: ``corpus/{train,valid,test}.{en,de}``."""
    sizes = {"train": args.train_size, "valid": args.valid_size, "test": args.test_size}
    outputs = [corpus / f"{split}.{lang}" for split in SPLITS for lang in ("en", "de")]

    def build(temps: Mapping[Path, Path]) -> StageReport:
        console.say(f"generating the synthetic en→de corpus ({sizes}, seed {args.seed})")
        scratch = temporary_path(corpus / "generated")  # a killed run's is removed by the next one
        try:
            run_command(
                [sys.executable, "-m", "preprocess.synthetic_en_de", "--dest", scratch,
                 *(f"--{split}={size}" for split, size in sizes.items()), "--seed", args.seed],
                console,
            )  # fmt: skip
            for out in outputs:
                os.replace(scratch / out.name, temps[out])
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return {"pairs": sizes}

    runner.run("corpus", [], outputs, {**sizes, "seed": args.seed}, build)


def preprocess(console: Console, args: argparse.Namespace, paths: Workdir, prefixes: Sequence[Path]) -> None:
    """Tokenize, learn BPE and binarize (``preprocess.custom`` skips its finished stages itself)."""
    console.say(f"preprocessing -> {paths.data}")
    train, valid, test = prefixes
    command = [
        sys.executable, "-m", "preprocess.custom", "--src", args.src, "--tgt", args.tgt,
        "--trainpref", train, "--validpref", valid, "--testpref", test, "--dest", paths.data,
        "--bpe-vocab-size", args.bpe_vocab_size,
    ]  # fmt: skip
    if args.lowercase:
        command.append("--lowercase")
    if args.force:
        command.append("--force")
    run_command(command, console)
    if not (paths.data_bin / f"dict.{args.src}.txt").is_file():
        raise PipelineError(f"preprocessing did not produce {paths.data_bin}")


def train_command(args: argparse.Namespace, paths: Workdir) -> list[str]:
    return [
        "fairseq-train", str(paths.data_bin), "--user-dir", str(USER_DIR), "--task", "translation",
        "--source-lang", args.src, "--target-lang", args.tgt,
        "--arch", "macaron_base", "--share-all-embeddings",
        "--encoder-embed-dim", str(args.embed_dim), "--decoder-embed-dim", str(args.embed_dim),
        "--encoder-ffn-embed-dim", str(args.ffn_dim), "--decoder-ffn-embed-dim", str(args.ffn_dim),
        "--encoder-layers", str(args.layers), "--decoder-layers", str(args.layers),
        "--encoder-attention-heads", str(args.heads), "--decoder-attention-heads", str(args.heads),
        "--dropout", args.dropout, "--attention-dropout", "0.0", "--activation-dropout", "0.0",
        "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--clip-norm", "0.0", "--weight-decay", "0.0",
        "--lr", args.lr, "--lr-scheduler", "inverse_sqrt", "--warmup-updates", str(args.warmup),
        "--warmup-init-lr", "1e-7", "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
        "--max-tokens", str(args.max_tokens), "--max-update", str(args.max_update),
        "--max-epoch", str(args.max_epoch), "--seed", str(args.seed), "--num-workers", "0", "--cpu",
        "--save-dir", str(paths.checkpoints), "--no-epoch-checkpoints", "--log-format", "json",
        "--log-interval", "10",
    ]  # fmt: skip


def set_thread_environment(threads: int) -> None:
    """Thread settings inherited by every command the quickstart starts."""
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(threads)
    # Passive OpenMP waiting: with the default busy-waiting, 2 torch threads on a 2-core machine that has
    # any other load run several times slower than 1 thread (measured here: 4.0 s vs 0.37 s per step).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def run_quickstart(args: argparse.Namespace) -> None:
    console = Console(PROG, elapsed=True, echo_commands=False)
    paths = Workdir(args.workdir)
    paths.root.mkdir(parents=True, exist_ok=True)
    set_thread_environment(args.threads)
    runner = StageRunner(paths.state_dir, force=args.force, log=console.say)
    if args.force:
        console.say(f"--force: redoing every stage in {paths.root}")

    if args.own_corpus:
        prefixes = [args.train_prefix, args.valid_prefix, args.test_prefix]
    else:
        synthetic_corpus(runner, console, args, paths.corpus)
        prefixes = [paths.corpus / split for split in SPLITS]
    preprocess(console, args, paths, prefixes)

    fairseq_steps.train(
        runner, console, stage="train", command=train_command(args, paths), data_bin=paths.data_bin,
        save_dir=paths.checkpoints, log=paths.train_log, outputs=("checkpoint_best.pt", "checkpoint_last.pt"),
        log_per_training=True,
        announce=f"training a Macaron model (dim {args.embed_dim}, 2x{args.ffn_dim} FFN, "
        f"{args.layers}+{args.layers} layers, max {args.max_update} updates, {args.threads} threads)",
    )  # fmt: skip
    fairseq_steps.generate(
        runner, console, stage="generate", data_bin=paths.data_bin,
        checkpoint=paths.checkpoints / "checkpoint_best.pt", src=args.src, tgt=args.tgt, beam=args.beam,
        lenpen=args.lenpen, output=paths.generated, cpu=True,
        announce=f"translating the test split (beam {args.beam})",
    )  # fmt: skip
    hypotheses = paths.results / f"test.hyp.{args.tgt}"
    fairseq_steps.score(
        runner, stage="score", generated=paths.generated, ref=paths.data / "raw" / f"test.{args.tgt}",
        tok_ref=paths.data / "tok" / f"test.{args.tgt}", lang=args.tgt,
        bleu=BleuSettings(lowercase=args.lowercase), name="quickstart test",
        json_out=paths.results / "bleu.json", hyp_out=hypotheses,
    )  # fmt: skip
    curves = paths.results / "loss_curves.png"
    title = f"Macaron quickstart ({args.src}→{args.tgt})"
    fairseq_steps.plot(runner, stage="plot", log=paths.train_log, out=curves, title=title)
    console.say(f"done. results: {paths.results / 'bleu.json'}, {curves}, {hypotheses}")


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    report_errors(PROG, lambda: run_quickstart(args), exit_status=2)


if __name__ == "__main__":
    main()
