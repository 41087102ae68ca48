"""One-command quickstart: train and evaluate a small Macaron translation model on CPU in a few minutes.

  bash pipelines/quickstart.sh [options]        (installs what is missing, then runs this program)
  python -m pipelines.quickstart [options]      (this program alone: it never installs anything)

Stages (each resumable: a rerun skips the finished ones, --force redoes them all; completion markers in
WORKDIR/.stages/ and, for preprocessing, WORKDIR/data/.stages/):
  install     bash scripts/install.sh (by quickstart.sh, unless --skip-install or SKIP_INSTALL=1)
  corpus      python -m macaron_synthetic.en_de: generated en→de corpus (or your own files, see below)
  preprocess  python -m preprocess.custom: sacremoses tokenization, joint sentencepiece BPE, binarized
              data-bin (joined dictionary)
  train       fairseq-train --arch macaron_base ... with the progress display of macaron_tools.train_progress;
              the full JSON log goes to train.log. A rerun with a larger --max-update or --max-epoch
              continues from checkpoints/checkpoint_last.pt; other settings or data move checkpoints/
              and train.log aside (*.before-TIME) and train afresh.
  generate    fairseq-generate --beam 5 --post-process sentencepiece on the test split
  score       macaron_tools.score_bleu: detokenized sacreBLEU + tokenized BLEU -> results/bleu.json
  plot        macaron_tools.plot_curves: train/valid loss per epoch and per update -> results/loss_curves.png
  record      (every run, not a stage) results/quickstart.json: this run's command, date, machine, load,
              versions, threads, wall and CPU time, which stages ran, sacreBLEU, exact matches, the
              copy-the-source baseline and the first test translations

Results: WORKDIR/results/{bleu.json, quickstart.json, loss_curves.png, test.hyp.TGT}, WORKDIR/train.log
(fairseq JSON log), WORKDIR/generate-test.txt (fairseq-generate output), WORKDIR/checkpoints/.

Reproducibility: every stage up to the data-bin is byte-identical whatever the thread count; training
and translation are bit-identical for the same --threads, torch build and CPU kernels. Another thread
count or other kernels change the order of floating-point sums, hence the weights and the BLEU. So the
kernels are pinned to AVX2 on x86 CPUs that have it (--cpu-kernels), and the threads and kernels are part
of the training command: a rerun with others trains afresh (docs/quickstart.md has the measurements).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, NoReturn

from macaron_tools import score_bleu
from macaron_workflow.atomic import temporary_path, write_text_atomically
from macaron_workflow.cli import available_cores
from macaron_workflow.errors import UserError
from macaron_workflow.machine import cpu_flags, cpu_model
from macaron_workflow.options import SKIP_INSTALL, add_options, with_environment
from macaron_workflow.stages import StageReport, StageRunner
from pipelines import fairseq_steps
from pipelines.commands import (
    REPO,
    USER_DIR,
    Console,
    PipelineError,
    add_from_env,
    report_errors,
    run_command,
)
from pipelines.fairseq_steps import BleuSettings

PROG = "quickstart"
SPLITS = ("train", "valid", "test")
STARTED_ENV = "MACARON_QUICKSTART_STARTED"
"""Set by quickstart.sh: the time (seconds since the epoch) before the installer ran, so that the recorded
wall time is the whole command's."""
COMMAND_ENV = "MACARON_QUICKSTART_COMMAND"
"""Set by quickstart.sh: the command as typed (recorded in results/quickstart.json)."""
EXAMPLES = 3
"""How many test translations (the first ones of the test split) the run record keeps."""
VERSIONS_OF = ("torch", "ve-fairseq", "sentencepiece", "sacremoses", "sacrebleu")
NUMERIC_ENVIRONMENT = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "ATEN_CPU_CAPABILITY", "MKL_CBWR")
"""The environment that decides the floating-point results (threads and CPU kernels): part of the training
command (``env NAME=VALUE ... fairseq-train``, so that other values train afresh) and of the run record."""
CPU_KERNELS = ("avx2", "native")


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
        "--cpu-kernels",
        choices=CPU_KERNELS,
        default="avx2",
        help="avx2: torch's and MKL's AVX2 code paths on an x86 CPU that has AVX2 (the same kernels on every "
        "such CPU; no measured cost in speed); native: the fastest ones for this CPU (on an AVX-512 CPU they "
        "give other numbers) [%(default)s]",
    )
    add_options(parser, OPTIONS)
    add_from_env(parser)
    parser.add_argument(
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

    @property
    def run_record(self) -> Path:
        return self.results / "quickstart.json"


def synthetic_corpus(runner: StageRunner, console: Console, args: argparse.Namespace, corpus: Path) -> None:
    """The generated en→de corpus: ``corpus/{train,valid,test}.{en,de}``."""
    sizes = {"train": args.train_size, "valid": args.valid_size, "test": args.test_size}
    outputs = [corpus / f"{split}.{lang}" for split in SPLITS for lang in ("en", "de")]

    def build(temps: Mapping[Path, Path]) -> StageReport:
        console.say(f"generating the synthetic en→de corpus ({sizes}, seed {args.seed})")
        scratch = temporary_path(corpus / "generated")  # a killed run's is removed by the next one
        try:
            run_command(
                [sys.executable, "-m", "macaron_synthetic.en_de", "--dest", scratch,
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


def numeric_environment() -> dict[str, str]:
    """The variables of :data:`NUMERIC_ENVIRONMENT` that are set, as the quickstart's commands see them."""
    return {name: os.environ[name] for name in NUMERIC_ENVIRONMENT if name in os.environ}


def train_command(args: argparse.Namespace, paths: Workdir, environment: Mapping[str, str]) -> list[str]:
    """``env NAME=VALUE ... fairseq-train ...``: the environment that decides the floating-point results is
    part of the command, hence of the train stage's key (other threads or kernels train afresh)."""
    return [
        "env", *(f"{name}={value}" for name, value in environment.items()),
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


#: The CPU kernels pinned by --cpu-kernels avx2 (the default; variables already set are kept) on a CPU with
#: AVX2. The same training on the same data gives other weights, hence another BLEU, with other kernels,
#: because a vectorized sum adds in an order that depends on the vector width and the code path. Measured
#: on this project's AVX-512 machine, 2 threads, the default settings: torch's own AVX-512 kernels gave
#: sacreBLEU 88.14; ATEN_CPU_CAPABILITY=avx2 88.39 (the figure a fresh clone reported from another
#: machine); with MKL_CBWR=AVX2 too (MKL's "conditional numerical reproducibility" code path, documented as
#: giving the same results on every CPU with AVX2) 88.38. Speed: 60 updates with 1 thread took 20.3 to
#: 21.4 s of CPU time with either ATen kernel set.
PINNED_KERNELS = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"}


def set_thread_environment(threads: int, cpu_kernels: str = "avx2") -> None:
    """Thread settings (and the pinned CPU kernels) inherited by every command the quickstart starts."""
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(threads)
    # Passive OpenMP waiting: with the default busy-waiting, 2 torch threads on a 2-core machine that has
    # any other load run several times slower than 1 thread (measured here: 4.0 s vs 0.37 s per step).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if cpu_kernels == "avx2" and "avx2" in cpu_flags():  # not elsewhere: AVX2 code is illegal without AVX2
        for name, value in PINNED_KERNELS.items():
            os.environ.setdefault(name, value)


def package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def start_torch_probe() -> subprocess.Popen[str] | None:
    """Ask torch (in a child, started now and read at the end: this process does not import torch) which
    CPU kernels it uses — ATen's AVX-512/AVX2 kernels sum in a different order, like the thread count."""
    try:
        return subprocess.Popen(
            [sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
    except OSError:
        return None


def read_torch_probe(probe: subprocess.Popen[str] | None) -> str | None:
    if probe is None:
        return None
    try:
        out, _ = probe.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        probe.kill()
        probe.communicate()
        return None
    if probe.returncode != 0:
        return None
    return out.strip() or None


def stage_markers(*state_dirs: Path) -> dict[str, int]:
    """Completion markers (``stage -> mtime``): a stage that ran rewrote its marker, a skipped one did not."""
    markers = {}
    for state_dir in state_dirs:
        for marker in state_dir.glob("*.json"):
            if not marker.name.endswith(".started.json"):
                markers[marker.stem] = marker.stat().st_mtime_ns
    return markers


def exact_matches(hypotheses: Sequence[str], references: Sequence[str], lowercase: bool) -> int:
    """How many hypotheses equal their reference (case-folded with ``--lowercase``)."""
    fold: Callable[[str], str] = str.lower if lowercase else str
    return sum(
        fold(hyp.strip()) == fold(ref.strip()) for hyp, ref in zip(hypotheses, references, strict=True)
    )


def read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def run_record(
    args: argparse.Namespace,
    paths: Workdir,
    bleu: Mapping[str, Any],
    *,
    started: float,
    load_at_start: Sequence[float],
    timings: Mapping[str, float],
    ran: Sequence[str],
    skipped: Sequence[str],
    cpu_capability: str | None,
) -> dict[str, Any]:
    """The run record (``results/quickstart.json``): what ran where, how long it took, what it scored."""
    sources = read_lines(paths.data / "raw" / f"test.{args.src}")
    references = read_lines(paths.data / "raw" / f"test.{args.tgt}")
    hypotheses = read_lines(paths.results / f"test.hyp.{args.tgt}")
    copy_source = score_bleu.bleu_record(sources, references, "13a", args.lowercase, "copy the source")
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = resource.getrusage(resource.RUSAGE_SELF)
    command = os.environ.get(COMMAND_ENV) or shlex.join([sys.executable, "-m", "pipelines.quickstart",
                                                         *sys.argv[1:]])  # fmt: skip
    settings = {
        key: str(value) if isinstance(value, Path) else value
        for key, value in sorted(vars(args).items())
        if key not in ("workdir", "force", "skip_install")
    }
    return {
        "command": command,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "machine": {
            "cpu": cpu_model(),
            "cpu_count": os.cpu_count(),
            "usable_cores": available_cores(),
            "torch_cpu_capability": cpu_capability,
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "load_average": {"start": list(load_at_start), "end": [round(x, 2) for x in os.getloadavg()]},
        "versions": {name: package_version(name) for name in VERSIONS_OF},
        "threads": args.threads,
        "environment": {name: os.environ.get(name) for name in NUMERIC_ENVIRONMENT},
        "settings": settings,
        "wall_time_s": round(time.time() - started, 1),
        "cpu_time_s": round(children.ru_utime + children.ru_stime + own.ru_utime + own.ru_stime, 1),
        "seconds": {step: round(seconds, 1) for step, seconds in timings.items()},
        "stages_run": list(ran),
        "stages_skipped": list(skipped),
        "n_sentences": bleu["n_sentences"],
        "sacrebleu": bleu["scores"]["sacrebleu"]["score"],
        "tokenized_bleu": bleu["scores"]["tokenized"]["score"],
        "exact_matches": exact_matches(hypotheses, references, args.lowercase),
        "copy_source_sacrebleu": copy_source["score"],
        "examples": [
            {"source": src, "reference": ref, "hypothesis": hyp}
            for src, ref, hyp in list(zip(sources, references, hypotheses, strict=True))[:EXAMPLES]
        ],
    }


def results_table(records: Sequence[Mapping[str, Any]]) -> str:
    """Run records as the markdown table docs/quickstart.md shows (tests check that it quotes
    docs/results/quickstart.json through this function), with notes: the machine and versions, the
    copy-the-source baseline, the first run's time by step."""

    def kernels(record: Mapping[str, Any]) -> str:
        capability, mkl = record["machine"]["torch_cpu_capability"], record["environment"].get("MKL_CBWR")
        return f"{capability}, MKL_CBWR={mkl}" if mkl else f"{capability}"

    def load(record: Mapping[str, Any]) -> str:
        return f"{record['load_average']['start'][0]:.1f} → {record['load_average']['end'][0]:.1f}"

    def minutes(seconds: float) -> str:
        return f"{seconds:.0f} s ({int(seconds // 60)} min {round(seconds) % 60:02d} s)"

    rows = [
        "| command | date | threads | torch CPU kernels | load average (1 min), start → end | wall time "
        "| CPU time | sacreBLEU | exact matches |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for record in records:
        rows.append(
            f"| `{record['command']}` | {record['date'][:10]} | {record['threads']} | {kernels(record)} "
            f"| {load(record)} | {minutes(record['wall_time_s'])} | {record['cpu_time_s']:.0f} s "
            f"| **{record['sacrebleu']:.2f}** | {record['exact_matches']} / {record['n_sentences']} |"
        )
    machines = sorted({
        f"{r['machine']['cpu']}, {r['machine']['usable_cores']} usable cores, "
        + ", ".join(f"{name} {version}" for name, version in r["versions"].items())
        + f", Python {r['machine']['python']}"
        for r in records
    })  # fmt: skip
    baselines = sorted({f"{r['copy_source_sacrebleu']:.2f}" for r in records})
    steps = ", ".join(f"{step} {seconds:.0f} s" for step, seconds in records[0]["seconds"].items())
    notes = [
        "Machine: " + "; ".join(machines) + ".",
        f"Copying the English source as the translation scores sacreBLEU {' / '.join(baselines)}.",
        f"Wall time of the first run by step: {steps}.",
    ]
    return "\n".join(rows) + "\n\n" + "\n".join(notes) + "\n"


def wrapper_start_time() -> float | None:
    """When quickstart.sh started (before its installer), if it is this program's wrapper."""
    try:
        started = float(os.environ[STARTED_ENV])
    except (KeyError, ValueError):
        return None
    return started if 0 <= time.time() - started < 24 * 3600 else None


def run_quickstart(args: argparse.Namespace) -> None:
    started = wrapper_start_time() or time.time()
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    timings = {"before the stages (installer, start-up)": time.time() - started}

    @contextmanager
    def timed(step: str) -> Iterator[None]:
        step_started = time.time()
        try:
            yield
        finally:
            timings[step] = time.time() - step_started

    console = Console(PROG, elapsed=True, echo_commands=False)
    paths = Workdir(args.workdir)
    paths.root.mkdir(parents=True, exist_ok=True)
    set_thread_environment(args.threads, args.cpu_kernels)
    runner = StageRunner(paths.state_dir, force=args.force, log=console.say)
    state_dirs = (paths.state_dir, paths.data / ".stages")
    markers_before = stage_markers(*state_dirs)
    torch_probe = start_torch_probe()
    if args.force:
        console.say(f"--force: redoing every stage in {paths.root}")

    try:
        if args.own_corpus:
            prefixes = [args.train_prefix, args.valid_prefix, args.test_prefix]
        else:
            with timed("corpus"):
                synthetic_corpus(runner, console, args, paths.corpus)
            prefixes = [paths.corpus / split for split in SPLITS]
        with timed("preprocess"):
            preprocess(console, args, paths, prefixes)

        with timed("train"):
            fairseq_steps.train(
                runner, console, stage="train", command=train_command(args, paths, numeric_environment()),
                data_bin=paths.data_bin, save_dir=paths.checkpoints, log=paths.train_log,
                outputs=("checkpoint_best.pt", "checkpoint_last.pt"), log_per_training=True,
                announce=f"training a Macaron model (dim {args.embed_dim}, 2x{args.ffn_dim} FFN, "
                f"{args.layers}+{args.layers} layers, max {args.max_update} updates, {args.threads} threads)",
            )  # fmt: skip
        with timed("generate"):
            fairseq_steps.generate(
                runner, console, stage="generate", data_bin=paths.data_bin,
                checkpoint=paths.checkpoints / "checkpoint_best.pt", src=args.src, tgt=args.tgt,
                beam=args.beam, lenpen=args.lenpen, output=paths.generated, cpu=True,
                announce=f"translating the test split (beam {args.beam})",
            )  # fmt: skip
        hypotheses = paths.results / f"test.hyp.{args.tgt}"
        with timed("score"):
            bleu = fairseq_steps.score(
                runner, stage="score", generated=paths.generated, ref=paths.data / "raw" / f"test.{args.tgt}",
                tok_ref=paths.data / "tok" / f"test.{args.tgt}", lang=args.tgt,
                bleu=BleuSettings(lowercase=args.lowercase), name="quickstart test",
                json_out=paths.results / "bleu.json", hyp_out=hypotheses,
            )  # fmt: skip
        curves = paths.results / "loss_curves.png"
        title = f"Macaron quickstart ({args.src}→{args.tgt})"
        with timed("plot"):
            fairseq_steps.plot(runner, stage="plot", log=paths.train_log, out=curves, title=title)
        cpu_capability = read_torch_probe(torch_probe)
    finally:
        if torch_probe is not None and torch_probe.poll() is None:
            torch_probe.kill()
            torch_probe.wait()

    markers_after = stage_markers(*state_dirs)
    ran = sorted(name for name, mtime in markers_after.items() if markers_before.get(name) != mtime)
    skipped = sorted(name for name in markers_after if name not in ran)
    record = run_record(
        args, paths, bleu, started=started, load_at_start=load_at_start, timings=timings, ran=ran,
        skipped=skipped, cpu_capability=cpu_capability,
    )  # fmt: skip
    write_text_atomically(paths.run_record, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    console.say(
        f"{record['exact_matches']} of {record['n_sentences']} test translations are exactly the reference; "
        f"copying the source would score sacreBLEU {record['copy_source_sacrebleu']:.2f}"
    )
    console.say(f"done. results: {paths.results / 'bleu.json'}, {curves}, {hypotheses}")
    console.say(f"run record: {paths.run_record} ({record['wall_time_s']:.0f} s, {args.threads} threads)")


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    report_errors(PROG, lambda: run_quickstart(args))


if __name__ == "__main__":
    main()
