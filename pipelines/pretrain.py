"""BERT-style pre-training, one command: corpus → DeepSpeed pre-training → fairseq checkpoint → loss curves.

    python -m macaron_pipelines.pretrain --workdir DIR [--wikipedia DUMP... | --wikipedia latest]
        [--bookcorpus DIR] [options] [-- extra python -m macaron_fairseq.pretrain flags]

Stages (``--arch`` decides the directory ``DIR/ARCH/``; the data-bin is shared by every arch):

  synthetic  with --small and no --wikipedia/--bookcorpus only: a generated ~1.5 MB multistream dump and 5
             books (``python -m macaron_synthetic.wiki``, offline) in DIR/synthetic/
  corpus     ``python -m macaron_preprocess.bert_corpus --dest DIR/data-bin``: sentences, BPE, binarized
             data-bin (resumable by itself, markers in DIR/data-bin/.stages/)
  pretrain   ``torchrun --standalone --nproc_per_node GPUS -m macaron_fairseq.pretrain DIR/data-bin
             --arch ARCH --deepspeed-config CFG --save-dir DIR/ARCH/checkpoints ...``; its full output goes
             to DIR/ARCH/checkpoints/pretrain.log, the trainer's progress lines to the console, one JSON
             record per step (and per validation) to DIR/ARCH/checkpoints/train_log.jsonl
  export     ``python -m macaron_fairseq.pretrain.export`` of the newest checkpoint → DIR/ARCH/model.pt (a
             fairseq checkpoint: ``checkpoint_utils.load_model_ensemble_and_task``, ``--restore-file``)
  plot       MLM loss, NSP loss and learning rate per step → DIR/ARCH/loss_curves.png
  results    DIR/ARCH/results.json: final and first losses (bits, as fairseq logs them), steps, tokens,
             training time, the settings

Every stage is resumable (completion markers in DIR/.stages/): a rerun skips the finished ones, --force
redoes them all. The trainer resumes by itself from the newest checkpoint of its save dir: a rerun with
the same settings (an interrupted run, or a larger --max-update) continues the run, while other settings
(arch, config, ranks, seed, extra flags), another config file content or other data move the save dir
aside (``checkpoints.before-TIME``, nothing is deleted) and train afresh. --max-update,
--save-interval-updates and --log-interval can change without restarting.

Each option's default is listed below, at the full scale and at ``--small``, the CPU smoke scale the tests
run (a tiny model on 2 CPU ranks with gloo, so that it exercises the distributed path; a generated corpus
unless inputs are given). Without CUDA and without --small, 1 CPU rank: a smoke test at best (a warning
says so).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import sys
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from macaron_pipelines.commands import (
    REPO,
    Console,
    PipelineError,
    add_from_env,
    parse_with_passthrough,
    report_errors,
    run_command,
)
from macaron_pipelines.fairseq_steps import data_bin_files, without_options
from macaron_tools import plot_curves
from macaron_tools.plot_curves import StepLog
from macaron_workflow import processes
from macaron_workflow.cli import ArgumentParser, positive_int
from macaron_workflow.options import FORCE, SKIP_INSTALL, WORKERS, Option, add_options
from macaron_workflow.stages import StageReport, StageRunner

CONFIGS = REPO / "configs" / "deepspeed"


@dataclass(frozen=True)
class Scale:
    """The defaults of one scale, written once: the options' help strings and :func:`parse_args` read them.
    ``None``: decided from the DeepSpeed config (its scheduler's ``total_num_steps``)."""

    arch: str
    deepspeed_config: Path
    max_update: int | None
    save_interval_updates: int
    log_interval: int
    phases: str
    phase2_config: Path
    phase2_tokens_per_sample: int
    phase2_max_update: int | None
    bpe_vocab_size: int
    valid_ratio: float
    gpus: int
    """Ranks when this machine has no CUDA device (CPU ranks, gloo)."""


FULL = Scale(
    arch="macaron_bert_base",
    deepspeed_config=CONFIGS / "bert_phase1.json",
    max_update=None,
    save_interval_updates=5000,
    log_interval=100,
    phases="1 2",
    phase2_config=CONFIGS / "bert_phase2.json",
    phase2_tokens_per_sample=512,
    phase2_max_update=None,
    bpe_vocab_size=32768,
    valid_ratio=0.005,
    gpus=1,
)
SMALL = Scale(
    arch="macaron_bert_tiny",
    deepspeed_config=CONFIGS / "tiny_cpu.json",
    max_update=30,
    save_interval_updates=10,
    log_interval=5,
    phases="1",
    phase2_config=CONFIGS / "tiny_cpu.json",
    phase2_tokens_per_sample=256,
    phase2_max_update=10,
    bpe_vocab_size=500,
    valid_ratio=0.1,
    gpus=2,
)
"""--small, the CPU smoke scale the tests run (2 CPU ranks, so that it exercises the distributed path)."""


def _shown(value: object) -> str:
    if value is None:
        return "the config's scheduler total_num_steps"
    if isinstance(value, Path):
        return value.relative_to(REPO).as_posix() if value.is_relative_to(REPO) else str(value)
    return f"'{value}'" if isinstance(value, str) and " " in value else str(value)


def scaled_help(field: str, what: str = "", default: str | None = None) -> str:
    """``what; default: X (--small: Y)``, from :data:`FULL` and :data:`SMALL` (``default``: how the full
    scale's default reads, when it is not a value)."""
    full = default or _shown(getattr(FULL, field))
    return f"{what}; " * bool(what) + f"default: {full} (--small: {_shown(getattr(SMALL, field))})"


DEFAULT_TOKENS_PER_SAMPLE = 128
"""The task's default sequence length (BERT's phase 1)."""
SYNTHETIC = {"dump_mb": 1.5, "books": 5, "seed": 1}
"""The generated corpus of --small: about 1.5 MB of page XML (~300 pages, ~150 articles) and 5 books."""
SYNTHETIC_DUMP = "enwiki-synthetic-pages-articles-multistream.xml.bz2"
SYNTHETIC_INDEX = "enwiki-synthetic-pages-articles-multistream-index.txt.bz2"
ARCH_PATTERN = re.compile(r"^(macaron|vanilla)_bert_\w+$")

RESUMABLE_OPTIONS = ("--max-update", "--save-interval-updates", "--log-interval", "--keep-last-checkpoints")
"""Trainer options that decide when the run stops, what it keeps and prints, not what it learns: a run
started with other values of these is resumed, not restarted."""

_PROGRESS = re.compile(r"^\[pretrain\] (?P<message>.*)$")
_CAUSE = re.compile(r"^(?:\[rank\d+\]:\s*)?(?P<cause>(?:[\w.]*(?:Error|Exception)|error): .*)$")
"""The last line of a rank's traceback (``[rank0]: ValueError: ...``) or a command-line error
(``error: ...``): what a failed run is reported with (torchrun's own ``ChildFailedError`` report is not)."""
FAILURE_TAIL_LINES = 40


@dataclass(frozen=True)
class ArchPaths:
    """Where the stages of one ``--arch`` write inside the workdir."""

    workdir: Path
    arch: str
    phase: int = 1

    @property
    def root(self) -> Path:
        """``DIR/ARCH`` (phase 1) or ``DIR/ARCH/phase2``."""
        return self.workdir / self.arch / ("phase2" if self.phase == 2 else "")

    @property
    def save_dir(self) -> Path:
        return self.root / "checkpoints"

    @property
    def step_log(self) -> Path:
        """One JSON record per optimizer step, written by the trainer (appended to when it resumes)."""
        return self.save_dir / "train_log.jsonl"

    @property
    def output_log(self) -> Path:
        """The full output of torchrun and its ranks (appended to when the run resumes; moved aside with
        its checkpoints)."""
        return self.save_dir / "pretrain.log"

    @property
    def model(self) -> Path:
        return self.root / "model.pt"

    @property
    def curves(self) -> Path:
        return self.root / "loss_curves.png"

    @property
    def results(self) -> Path:
        return self.root / "results.json"


# ------------------------------------------------------------------------------------------------- corpus
def synthetic_inputs(runner: StageRunner, console: Console, workdir: Path) -> tuple[list[Path], Path]:
    """Generate the small corpus (a multistream dump and books) offline; the dump paths and books dir."""
    root = workdir / "synthetic"
    dump, index, books = root / SYNTHETIC_DUMP, root / SYNTHETIC_INDEX, root / "books"
    manifest = root / "manifest.json"

    def build() -> StageReport:
        console.say(
            "no --wikipedia/--bookcorpus given: generating a synthetic corpus offline "
            f"({SYNTHETIC['dump_mb']} MB Wikipedia-style dump + {SYNTHETIC['books']} books) in {root}"
        )
        command = [sys.executable, "-m", "macaron_synthetic.wiki", "--out", dump]
        command += ["--mb", SYNTHETIC["dump_mb"], "--seed", SYNTHETIC["seed"]]
        command += ["--books-dir", books, "--books", SYNTHETIC["books"]]
        run_command(command, console)
        files = sorted(path.name for path in books.glob("*.txt"))
        if len(files) != SYNTHETIC["books"] or not dump.exists() or not index.exists():
            raise PipelineError(f"the synthetic corpus in {root} is incomplete")
        contents = json.dumps({**SYNTHETIC, "books_files": files}, indent=1)
        manifest.write_text(contents + "\n", encoding="utf-8")
        return {"books": len(files), "dump_bytes": dump.stat().st_size}

    runner.run_in_place(
        "synthetic-corpus",
        inputs=[],
        outputs=[dump, index, manifest],
        params=dict(SYNTHETIC),
        build=build,
        workspace=root,
    )
    return [dump], books


def build_corpus(runner: StageRunner, console: Console, args: argparse.Namespace) -> Path:
    """``python -m macaron_preprocess.bert_corpus`` into ``WORKDIR/data-bin`` (skips its finished stages)."""
    wikipedia, bookcorpus = list(args.wikipedia), args.bookcorpus
    if not wikipedia and bookcorpus is None:
        wikipedia, bookcorpus = synthetic_inputs(runner, console, args.workdir)
    data_bin = args.workdir / "data-bin"
    command: list[object] = [sys.executable, "-m", "macaron_preprocess.bert_corpus", "--dest", data_bin]
    if wikipedia:
        command += ["--wikipedia", *wikipedia]
    if bookcorpus is not None:
        command += ["--bookcorpus", bookcorpus]
    command += ["--workers", args.workers, "--bpe-vocab-size", args.bpe_vocab_size]
    command += ["--valid-ratio", args.valid_ratio]
    if args.force:
        command += ["--force"]
    run_command(command, console)
    return data_bin


# ---------------------------------------------------------------------------------------------- pretrain
def pretrain_command(args: argparse.Namespace, data_bin: Path, paths: ArchPaths) -> list[str]:
    q = shlex.quote
    command = shlex.split(
        f"{q(sys.executable)} -m torch.distributed.run --standalone --nproc_per_node {args.gpus} "
        f"-m macaron_fairseq.pretrain {q(str(data_bin))} --arch {q(args.arch)} "
        f"--deepspeed-config {q(str(args.deepspeed_config))} --save-dir {q(str(paths.save_dir))} "
        f"--max-update {args.max_update} --save-interval-updates {args.save_interval_updates} "
        f"--log-interval {args.log_interval} --seed {args.seed}"
    )
    if args.tokens_per_sample:
        command += ["--tokens-per-sample", str(args.tokens_per_sample)]
    return command + list(args.train_flags)


def run_trainer(command: Sequence[str], log: Path, console: Console) -> None:
    """Run the torchrun ``command``: its whole output is appended to ``log``; the trainer's progress lines
    (``[pretrain] ...``) are shown; on failure the ranks' errors (or, without any, the output's tail)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    tail: deque[str] = deque(maxlen=FAILURE_TAIL_LINES)
    causes: dict[str, None] = {}  # ordered, without repeats (every rank reports the same error)
    console.command(command)

    def show(line: str) -> None:
        tail.append(line)
        progress = _PROGRESS.match(line)
        if progress:
            console.say(progress["message"])
        else:
            cause = _CAUSE.match(line)
            if cause and "ChildFailedError" not in line:
                causes[cause["cause"]] = None

    header = f"\n===== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(command)}\n"
    # Ctrl-C: SIGINT to torchrun, which passes it on to the ranks
    completed = processes.run(command, cwd=REPO, env=env, log=log, append=True, header=header, on_line=show)
    status = completed.status
    if status != 0:
        print("\n".join(causes or tail), file=sys.stderr, flush=True)
        raise PipelineError(f"pre-training failed with exit status {status} (full output: {log})")


def pretrain(runner: StageRunner, console: Console, args: argparse.Namespace, data_bin: Path) -> None:
    paths = ArchPaths(args.workdir, args.arch, args.phase)
    command = pretrain_command(args, data_bin, paths)

    def build() -> StageReport:
        run_trainer(command, paths.output_log, console)
        return {"steps": read_step_log(paths.step_log).train[-1]["step"]}

    runner.run_in_place(
        stage_name("pretrain", args),
        inputs=[*data_bin_files(data_bin), args.deepspeed_config, *args.phase_inputs],
        outputs=[paths.save_dir / "latest", paths.step_log],
        params=training_settings(command),
        build=build,
        workspace=paths.save_dir,
        resume_params=training_settings(command, without_resumable=True),
        former_params=({"command": command}, {"command": without_options(command, RESUMABLE_OPTIONS)}),
    )


def training_settings(command: Sequence[str], without_resumable: bool = False) -> dict[str, list[str]]:
    """The pre-training stage's settings: its command without the interpreter, which is not one (``python``
    or ``python3``, a venv at another path); with ``without_resumable`` also without the options a run can
    change and still resume (:data:`RESUMABLE_OPTIONS`). Before, the keys held the interpreter too
    (``former_params``): the same run started as ``bash pipelines/pretrain.sh`` (``python3``) and as
    ``python -m macaron_pipelines.pretrain`` moved the finished checkpoints aside and trained again."""
    arguments = list(command[1:])
    return {"command": without_options(arguments, RESUMABLE_OPTIONS) if without_resumable else arguments}


def stage_name(stage: str, args: argparse.Namespace) -> str:
    """``pretrain-ARCH`` (phase 1), ``pretrain-ARCH-phase2``."""
    return f"{stage}-{args.arch}" + ("-phase2" if args.phase == 2 else "")


def phase2_args(args: argparse.Namespace) -> argparse.Namespace:
    """The settings of BERT's phase 2: its own config (a fresh warm-up), longer sequences, its own length,
    and phase 1's weights (``--init-from`` phase 1's save dir: weights only)."""
    phase1 = ArchPaths(args.workdir, args.arch, 1)
    return argparse.Namespace(
        **{
            **vars(args),
            "phase": 2,
            "deepspeed_config": args.phase2_config,
            "tokens_per_sample": args.phase2_tokens_per_sample,
            "max_update": args.phase2_max_update,
            "train_flags": [*args.train_flags, "--init-from", str(phase1.save_dir)],
            "phase_inputs": [phase1.save_dir / "latest"],
        }
    )


# ------------------------------------------------------------------------------------------------ export
def newest_checkpoint(save_dir: Path) -> tuple[str, list[Path]]:
    """The newest complete checkpoint's tag and files (the export's inputs; see
    :mod:`macaron_fairseq.pretrain.checkpoints`)."""
    from macaron_fairseq.pretrain import checkpoints

    tag = checkpoints.choose(save_dir).tag
    if tag is None:
        raise PipelineError(f"{save_dir} holds no complete DeepSpeed checkpoint")
    files = sorted(path for path in (save_dir / tag).rglob("*") if path.is_file())
    return tag, files


def export(runner: StageRunner, console: Console, args: argparse.Namespace) -> None:
    paths = ArchPaths(args.workdir, args.arch, args.phase)
    tag, reads = newest_checkpoint(paths.save_dir)

    def build(temps: Mapping[Path, Path]) -> StageReport:
        command = [sys.executable, "-m", "macaron_fairseq.pretrain.export", paths.save_dir, "--tag", tag]
        run_command([*command, "--out", temps[paths.model]], console)
        return {"tag": tag}

    runner.run(stage_name("export", args), reads, [paths.model], {"tag": tag}, build)


# -------------------------------------------------------------------------------------- plot and results
def read_step_log(path: Path) -> StepLog:
    """The trainer's log (:func:`macaron_tools.plot_curves.read_step_log`); a missing or empty one is the
    pipeline's error."""
    try:
        return plot_curves.read_step_log(path)
    except plot_curves.PlotError as err:
        raise PipelineError(str(err)) from err


def plot(runner: StageRunner, args: argparse.Namespace) -> None:
    paths = ArchPaths(args.workdir, args.arch, args.phase)
    phase = f" phase {args.phase}" if args.phase == 2 else ""
    title = f"{args.arch} pre-training{phase} ({args.deepspeed_config.name}, {args.gpus} rank(s))"

    def build(temps: Mapping[Path, Path]) -> StageReport:
        log = read_step_log(paths.step_log)
        plot_curves.plot_step_log(log, temps[paths.curves], title)
        return {"steps": len(log.train), "validations": len(log.valid)}

    runner.run(stage_name("plot", args), [paths.step_log], [paths.curves], {"title": title}, build)


def mean_of(records: Sequence[Mapping[str, Any]], key: str) -> float:
    return sum(float(r[key]) for r in records) / len(records)


def results_record(
    log: StepLog, settings: Mapping[str, Any], stage_seconds: Mapping[str, Any]
) -> dict[str, Any]:
    """What results.json holds: the settings, the losses at the start and the end, the time spent."""
    train = log.train
    keys = ("mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy", "lr")
    last = train[-min(10, len(train)) :]
    results = {
        **settings,
        "steps": int(train[-1]["step"]),
        "loss_unit": "bits (base-2, per masked token / per pair, as fairseq logs losses)",
        "final": {key: train[-1][key] for key in keys if key in train[-1]},
        f"final_mean_of_last_{len(last)}_steps": {key: mean_of(last, key) for key in keys[:4]},
        "first": {key: train[0][key] for key in keys[:2]},
        "tokens": sum(float(r.get("tokens", 0)) for r in train),
        # per step: tokens / tokens_per_second = the step's wall time (data, forward, backward, update and
        # any checkpoint saved or validation run before it), summed over every run that built the log
        "train_loop_seconds": round(
            sum(float(r["tokens"]) / r["tokens_per_second"] for r in train if r.get("tokens_per_second")), 2
        ),
        "stage_seconds": dict(stage_seconds),
    }
    if log.valid:
        results["valid"] = {key: value for key, value in log.valid[-1].items() if key != "split"}
    return results


def write_results(runner: StageRunner, args: argparse.Namespace) -> dict[str, Any]:
    paths = ArchPaths(args.workdir, args.arch, args.phase)
    settings = {
        "arch": args.arch,
        "phase": args.phase,
        "tokens_per_sample": args.tokens_per_sample or DEFAULT_TOKENS_PER_SAMPLE,
        "deepspeed_config": str(args.deepspeed_config),
        "ranks": args.gpus,
        "max_update": args.max_update,
        "seed": args.seed,
        "data_bin": str(args.workdir / "data-bin"),
        "model": str(paths.model),
        "loss_curves": str(paths.curves),
    }
    # wall times of the stages' last runs (kept in their completion markers: the same after a skip)
    stage_seconds = {
        stage: runner.reports.get(stage_name(stage, args), {}).get("seconds")
        for stage in ("pretrain", "export")
    }

    def build(temps: Mapping[Path, Path]) -> StageReport:
        results = results_record(read_step_log(paths.step_log), settings, stage_seconds)
        temps[paths.results].write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        return {"steps": results["steps"]}

    runner.run(stage_name("results", args), [paths.step_log, paths.model], [paths.results], settings, build)
    return json.loads(paths.results.read_text(encoding="utf-8"))


# ------------------------------------------------------------------------------------------ command line
def cuda_devices() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def scheduler_steps(parser: argparse.ArgumentParser, flag: str, config: Path) -> int | None:
    """``scheduler.params.total_num_steps`` of a DeepSpeed config (None: it has none); a parser error naming
    the option and the file when the config is no file or no DeepSpeed JSON."""
    if not config.is_file():
        parser.error(f"{flag} {config}: no such file")
    try:
        scheduler = json.loads(config.read_text(encoding="utf-8")).get("scheduler", {})
        steps = scheduler.get("params", {}).get("total_num_steps")
    except (json.JSONDecodeError, AttributeError) as err:
        parser.error(f"{flag} {config}: not a DeepSpeed JSON config ({err})")
    return int(steps) if steps else None


OPTIONS = (
    Option(
        "--workdir",
        "data-bin/, ARCH/ (checkpoints, model, plots) go here (the wrapper's default: work_dirs/pretrain)",
        env="WORKDIR",
        type=Path,
        required=True,
    ),
    Option(
        "--wikipedia",
        "MediaWiki XML export files (enwiki-*-pages-articles*.xml.bz2), or 'latest' to "
        "download the newest English dump (see docs/pretraining_data.md); the variable: files separated "
        "by spaces",
        env="WIKIPEDIA",
        kind="list",
        default=[],
        metavar="DUMP",
    ),
    Option("--bookcorpus", "a directory of books, one .txt each", env="BOOKCORPUS", type=Path, metavar="DIR"),
    Option(
        "--arch",
        scaled_help(
            "arch", "macaron_bert_{tiny,base,large} or vanilla_bert_{tiny,base,large} (the BERT baseline)"
        ),
        env="ARCH",
    ),
    Option(
        "--deepspeed-config",
        scaled_help("deepspeed_config"),
        env="DS_CONFIG",
        type=Path,
    ),
    Option(
        "--gpus",
        scaled_help(
            "gpus", "processes (torchrun --nproc_per_node)", f"the CUDA devices, else {FULL.gpus} CPU rank"
        ),
        env="GPUS",
        type=positive_int,
    ),
    Option(
        "--max-update",
        scaled_help("max_update", "optimizer steps; raising it later continues the finished run"),
        env="MAX_UPDATE",
        type=positive_int,
    ),
    Option(
        "--tokens-per-sample",
        "sequence length (default: the task's, 128 = BERT phase 1)",
        env="TOKENS_PER_SAMPLE",
        type=positive_int,
    ),
    Option(
        "--phases",
        scaled_help(
            "phases",
            "BERT's phases to run, '1 2', '1' or '2' (phase 2 needs phase 1's checkpoints in the "
            "workdir): phase 2 starts from phase 1's weights (--init-from, a fresh optimizer, schedule and "
            "data position) and writes to DIR/ARCH/phase2/",
        ),
        env="PHASES",
    ),
    Option(
        "--phase2-config",
        scaled_help("phase2_config", "phase 2's DeepSpeed config"),
        env="PHASE2_CONFIG",
        type=Path,
    ),
    Option(
        "--phase2-tokens-per-sample",
        scaled_help("phase2_tokens_per_sample", "phase 2's sequence length"),
        type=positive_int,
    ),
    Option(
        "--phase2-max-update",
        scaled_help("phase2_max_update", "phase 2's optimizer steps"),
        env="PHASE2_MAX_UPDATE",
        type=positive_int,
    ),
    Option("--save-interval-updates", scaled_help("save_interval_updates"), type=positive_int),
    Option("--log-interval", scaled_help("log_interval", "a progress line every N steps"), type=positive_int),
    Option("--seed", "default 1", env="SEED", type=int, default=1),
    Option(
        "--bpe-vocab-size",
        scaled_help("bpe_vocab_size", "BPE pieces"),
        type=positive_int,
        deprecated=("--vocab-size",),
    ),
    Option("--valid-ratio", scaled_help("valid_ratio", "share of validation documents"), type=float),
    WORKERS.with_env("WORKERS"),
    Option(
        "--small",
        f"CPU smoke scale: {SMALL.arch}, {SMALL.deepspeed_config.name}, {SMALL.max_update} steps on "
        f"{SMALL.gpus} CPU ranks, a generated corpus when no input is given",
        env="SMALL",
        kind="switch",
    ),
    replace(
        FORCE,
        help="redo every stage, the corpus included (downloads are kept; the old checkpoints "
        "of this --arch are moved aside)",
    ),
    SKIP_INSTALL,
)
"""Every option of the pipeline; ``bash pipelines/pretrain.sh`` maps the [env NAME] variables to them."""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = ArgumentParser(
        prog="python -m macaron_pipelines.pretrain",
        usage="%(prog)s --workdir DIR [--wikipedia DUMP... | latest] [--bookcorpus DIR] [options] "
        "[-- trainer flags]",
        description=__doc__,
    )
    add_options(parser, OPTIONS)
    add_from_env(parser)
    wrapper_default = {"WORKDIR": str(REPO / "work_dirs" / "pretrain")}
    args = parse_with_passthrough(parser, argv, OPTIONS, wrapper_default)  # flags after -- go to the trainer
    args.gpus_default = args.gpus is None
    args.gpus = args.gpus or cuda_devices() or None
    scale = SMALL if args.small else FULL
    for field in fields(Scale):  # every option left out takes its scale's default
        if getattr(args, field.name) is None:
            setattr(args, field.name, getattr(scale, field.name))
    if not ARCH_PATTERN.match(args.arch):
        parser.error(f"--arch {args.arch}: expected a BERT architecture, macaron_bert_* or vanilla_bert_*")
    try:
        args.phases = sorted({int(phase) for phase in args.phases.replace(",", " ").split()})
    except ValueError:
        args.phases = []
    if not args.phases or not set(args.phases) <= {1, 2}:
        parser.error("--phases: expected '1 2', '1' or '2'")
    args.phase, args.phase_inputs = 1, []
    args.deepspeed_config, args.phase2_config = args.deepspeed_config.resolve(), args.phase2_config.resolve()
    steps = scheduler_steps(parser, "--deepspeed-config", args.deepspeed_config)
    args.max_update = args.max_update or steps
    if args.max_update is None:
        parser.error(f"{args.deepspeed_config} has no scheduler total_num_steps: give --max-update")
    if 2 in args.phases:
        steps = scheduler_steps(parser, "--phase2-config", args.phase2_config)
        args.phase2_max_update = args.phase2_max_update or steps
        if args.phase2_max_update is None:
            parser.error(f"{args.phase2_config} has no scheduler total_num_steps: give --phase2-max-update")
    if not args.small and not args.wikipedia and args.bookcorpus is None:
        parser.error("give --wikipedia DUMP... (or 'latest') and/or --bookcorpus DIR (or --small)")
    args.wikipedia = [w if w == "latest" else str(Path(w).resolve()) for w in args.wikipedia]
    args.bookcorpus = args.bookcorpus.resolve() if args.bookcorpus else None
    args.workdir = args.workdir.resolve()
    return args


def run_pipeline(args: argparse.Namespace) -> None:
    console = Console("pipeline")
    args.workdir.mkdir(parents=True, exist_ok=True)
    runner = StageRunner(args.workdir / ".stages", force=args.force, log=console.say)
    start = time.time()
    if args.gpus_default and not cuda_devices() and not args.small:
        console.say("warning: no CUDA device: pre-training on 1 CPU rank (--small is the CPU smoke test)")
    data_bin = build_corpus(runner, console, args)
    for phase in args.phases:
        phase_args = phase2_args(args) if phase == 2 else args
        run_phase(runner, console, phase_args, data_bin)
    console.say(f"done in {time.time() - start:.0f} s")


def run_phase(runner: StageRunner, console: Console, args: argparse.Namespace, data_bin: Path) -> None:
    """Pre-train one phase, export its model, plot its curves, write its results."""
    if args.phase == 2:
        console.say(
            f"phase 2: {args.tokens_per_sample} tokens per sequence, {args.deepspeed_config.name}, "
            f"{args.max_update} steps from phase 1's weights"
        )
    pretrain(runner, console, args, data_bin)
    export(runner, console, args)
    plot(runner, args)
    results = write_results(runner, args)
    paths = ArchPaths(args.workdir, args.arch, args.phase)
    final = results["final"]
    name = f"{args.arch} phase {args.phase}" if args.phases != [1] else args.arch
    console.say(
        f"{name}: {results['steps']} steps, final MLM loss {final['mlm_loss']:.3f} bits, NSP loss "
        f"{final['nsp_loss']:.3f} bits (first step: {results['first']['mlm_loss']:.3f} / "
        f"{results['first']['nsp_loss']:.3f})"
    )
    if "valid" in results and "mlm_loss" in results["valid"]:
        valid = results["valid"]
        console.say(
            f"validation at step {valid['step']}: MLM loss {valid['mlm_loss']:.3f} bits, NSP accuracy "
            f"{valid.get('nsp_accuracy', float('nan')):.1f}%"
        )
    console.say(f"model: {paths.model}")
    console.say(f"loss curves: {paths.curves}; results: {paths.results}")
    if not math.isfinite(final["mlm_loss"]):
        raise PipelineError(f"the final MLM loss is {final['mlm_loss']}: the run diverged")


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    report_errors("pipeline", lambda: run_pipeline(args))


if __name__ == "__main__":
    main()
