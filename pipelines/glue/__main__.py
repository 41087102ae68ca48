"""GLUE fine-tuning of a pre-trained model in one command (``bash pipelines/glue.sh``).

    python -m macaron_pipelines.glue --workdir DIR --checkpoint model.pt [--glue-dir GLUE] [options]
        [-- extra fairseq-train flags]

Stages (finished ones are skipped on a rerun; an interrupted grid continues where it stopped):

  pretrain    with --small and no --checkpoint only: ``python -m macaron_pipelines.pretrain --small`` → a
              tiny model
  glue-data   GLUE_DIR as ``download_glue_data.py`` unpacks it: a given --glue-dir is only read (a
              missing task is an error, downloaded into it with --download); without one, downloaded into
              DIR/glue/glue-data when absent (with --small: a generated, learnable GLUE in the real
              layout, offline)
  preprocess  ``python -m macaron_preprocess.glue``: the pre-training corpus's text processing, sentencepiece
              model and dictionary (found from the checkpoint) → DIR/glue/data/TASK/
  grid        every task × configuration × seed (BERT's grid, Devlin et al. A.3: batch 16/32, lr
              5e-5/3e-5/2e-5, 2/3/4 epochs, weight decay 0.01, seeds 100…500; --grid-preset for
              others) is one run (:mod:`macaron_pipelines.glue.run_one`): fairseq-train, then predictions on
              dev and test; in parallel, one run per GPU or a few CPU processes; a failed run is retried
              once and reported → DIR/glue/runs/TASK/CONFIG-seedS/run.json
  results     per task the configuration with the best mean dev score over seeds, its mean ± std, and its
              best seed (:mod:`macaron_pipelines.glue.selection`); the GLUE average as the leaderboard
              computes it → DIR/glue/results.json, DIR/glue/results.md (printed)
  submission  the selected runs' test predictions in the GLUE server's format → DIR/glue/submission.zip

On a Slurm cluster (``slurm/glue.sbatch``, ``python -m macaron_slurm.submit glue``) the same work is split
into ``--step``s: ``prepare`` (checkpoint, data, preprocessing; prints the grid size), ``cell`` (one run of
the grid: ``--cell N``, default ``$SLURM_ARRAY_TASK_ID``: a job-array task; retried once; on the preemption
signal it saves, requeues and exits 3), ``collect`` (results and submission once every run has finished);
``count`` prints the number of runs (the array's size). The default ``all`` does everything here.

``--extra-layers K --init-scheme dt-fixup``: K new norm-free layers between the pre-trained encoder and the
classification head (DT-Fixup's mixed setting; the pre-trained part at ``--pretrained-lr-multiplier`` × the
learning rate), for every task.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from macaron_pipelines.commands import (
    INIT_SCHEMES,
    REPO,
    Console,
    PipelineError,
    PipelineUsageError,
    Preempted,
    add_from_env,
    parse_with_passthrough,
    report_errors,
    run_command,
)
from macaron_pipelines.glue.grid import (
    BATCH_SIZES,
    DEFAULT_PRESET,
    EPOCHS,
    LEARNING_RATES,
    PRESETS,
    WEIGHT_DECAYS,
    ModelConfigError,
    NewLayers,
    RunSpec,
    checkpoint_model_flags,
)
from macaron_pipelines.glue.run_one import read_record
from macaron_pipelines.glue.scheduler import ATTEMPTS, execute, is_finished, run_grid
from macaron_pipelines.glue.submission import SUBMISSION_NAMES
from macaron_preprocess.sources.glue import BERT_TASKS, TASKS
from macaron_workflow.atomic import write_text_atomically
from macaron_workflow.cli import ArgumentParser, available_cores, positive_int
from macaron_workflow.errors import USAGE_EXIT
from macaron_workflow.grid import Slot, slots
from macaron_workflow.grid import run_grid as run_keys
from macaron_workflow.options import SKIP_INSTALL, Option, add_options
from macaron_workflow.overlap import refuse_file_as_directory, refuse_overlap
from macaron_workflow.preemption import DEFAULT_SIGNAL, PREEMPTED_EXIT, Preemption, requeue

STEPS = ("all", "prepare", "count", "cell", "collect")

SMALL = {"batch_sizes": [16], "lrs": [1e-3], "epochs": [10], "seeds": [100, 200]}
"""--small's grid: a tiny, barely pre-trained model on 160 generated examples per task needs a larger rate and
more epochs than BERT's grid to learn the generated rules (at lr 5e-5 × 3 epochs it stays at chance)."""
SMALL_PRETRAINED = "macaron_bert_tiny"


def checkpoint_arch(checkpoint: Path) -> str:
    """The architecture the checkpoint was trained as (its ``cfg.model``), read through the plugin's
    allow-listed checkpoint reader: a refused or unreadable file, or one that is not a BERT of the plugin (a
    translation model), is a one-line user error (:func:`macaron_fairseq.bert_checkpoint.require_bert`)."""
    from macaron_fairseq.bert_checkpoint import require_bert

    return str(require_bert(checkpoint, "--checkpoint").arch)


def outputs(args: argparse.Namespace) -> dict[str, Path]:
    """What the pipeline writes under WORKDIR (the GLUE directory it downloads into aside)."""
    glue = args.workdir / "glue"
    return {
        "WORKDIR's glue/data": glue / "data",
        "WORKDIR's glue/runs": glue / "runs",
        **{f"WORKDIR's glue/{name}": glue / name for name in SUBMISSION_NAMES},
        **{f"WORKDIR's glue/{name}.zip": glue / f"{name}.zip" for name in SUBMISSION_NAMES},
        "WORKDIR's glue/results.json": glue / "results.json",
    }


def check_apart(args: argparse.Namespace) -> None:
    """The given GLUE directory and checkpoint lie apart from what the pipeline writes: neither is, holds or
    lies inside its data, runs or submission (``GLUE_DIR=WORKDIR/glue/data`` made the preprocessing replace
    the raw TSVs, then fail)."""
    inputs = {"--glue-dir": args.glue_dir, "--checkpoint": args.checkpoint}
    for label, path in outputs(args).items():
        refuse_overlap({label: path}, inputs, change="--workdir (or the input)")


def ensure_checkpoint(args: argparse.Namespace, console: Console) -> Path:
    """The given checkpoint (checked by :func:`check_inputs`), or with ``--small`` a tiny pre-trained one."""
    if args.checkpoint is not None:
        return args.checkpoint
    workdir = args.workdir / "pretrain"
    console.say("no checkpoint given: pre-training a tiny model first (macaron_pipelines.pretrain --small)")
    run_command(
        [sys.executable, "-m", "macaron_pipelines.pretrain", "--small", "--workdir", workdir], console
    )
    return workdir / SMALL_PRETRAINED / "model.pt"


def wanted_glue_tasks(args: argparse.Namespace) -> list[str]:
    """The GLUE folders the run reads: its tasks, WNLI always (the submission gives it the majority class of
    its training set when it is not run), AX (``diagnostic/``) with MNLI."""
    return sorted({*args.tasks, "WNLI", *(["AX"] if "MNLI" in args.tasks else [])})


def default_glue_dir(args: argparse.Namespace) -> Path:
    return args.workdir / "glue" / ("synthetic-glue" if args.small else "glue-data")


def check_glue_dir(args: argparse.Namespace) -> None:
    """A GLUE directory given explicitly (``--glue-dir``, ``GLUE_DIR``) is only read: a missing directory
    or task is an error naming it and how to download it, checked before anything is written. With
    ``--download`` the missing tasks are downloaded into it."""
    glue_dir = args.glue_dir
    if glue_dir is None or args.download:
        return

    def how(them: str) -> str:
        return (
            f"(a given GLUE directory is only read); download {them} with --download (into {glue_dir}), or "
            f"leave out --glue-dir (unset GLUE_DIR) to download GLUE into {default_glue_dir(args)}"
        )

    if not glue_dir.is_dir():
        what = "not a directory" if glue_dir.exists() else "no such directory"
        raise PipelineUsageError(f"--glue-dir {glue_dir}: {what} {how('it')}")
    missing = [task for task in wanted_glue_tasks(args) if not (glue_dir / TASKS[task].directory).is_dir()]
    if missing:
        folders = ", ".join(f"{TASKS[task].directory}/ ({task})" for task in missing)
        raise PipelineUsageError(f"--glue-dir {glue_dir}: missing {folders} {how('them')}")


def ensure_glue_dir(args: argparse.Namespace, console: Console) -> Path:
    """The GLUE directory: the given one (checked by :func:`check_glue_dir`; written only with
    ``--download``), or the run's own under WORKDIR, downloaded (with --small: generated) when absent."""
    from macaron_preprocess.sources.glue import download_glue
    from macaron_synthetic.glue import write_synthetic_glue

    check_glue_dir(args)
    glue_dir = args.glue_dir or default_glue_dir(args)
    wanted = wanted_glue_tasks(args)
    missing = [task for task in wanted if not (glue_dir / TASKS[task].directory).is_dir()]
    if missing and args.small and args.glue_dir is None:
        console.say(f"generating a small learnable GLUE (real layout) in {glue_dir}")
        write_synthetic_glue(glue_dir, [task for task in wanted if task != "AX"])
    elif missing:
        console.say(f"downloading GLUE tasks {', '.join(missing)} into {glue_dir}")
        download_glue(glue_dir, missing)
    return glue_dir


def check_inputs(args: argparse.Namespace) -> None:
    """Every input given on the command line, checked before anything is written or downloaded."""
    if args.checkpoint is None and not args.small:
        raise PipelineUsageError(
            "give --checkpoint (CHECKPOINT=...), an export of python -m macaron_fairseq.pretrain"
        )
    if args.checkpoint is not None:
        if not args.checkpoint.is_file():
            what = "a directory, not a checkpoint file" if args.checkpoint.is_dir() else "no such file"
            raise PipelineUsageError(f"--checkpoint {args.checkpoint}: {what}")
        # a refused, unreadable or foreign checkpoint, or weights that do not fit the model its configuration
        # describes (every run of the grid would fail on them), is an error now
        from macaron_fairseq.bert_checkpoint import check_bert_weights

        check_bert_weights(args.checkpoint, "--checkpoint")
    check_apart(args)
    check_glue_dir(args)


def setup_name(arch: str, checkpoint: Path, new_layers: NewLayers, extra_flags: Sequence[str]) -> str:
    """The runs directory of one setup: the model, its new layers and the extra flags (a rerun with another
    checkpoint or other options never reuses finished runs of this one)."""
    stat = checkpoint.stat()
    identity = [str(checkpoint.resolve()), stat.st_size, stat.st_mtime_ns, list(extra_flags)]
    digest = hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:8]
    layers = f"-new{new_layers.count}-{new_layers.init_scheme}" if new_layers.count else ""
    multiplier = new_layers.pretrained_lr_multiplier
    return f"{arch}{layers}{'' if multiplier is None else f'-lrx{multiplier:g}'}-{digest}"


def run_specs(args: argparse.Namespace, checkpoint: Path, data_root: Path) -> list[RunSpec]:
    from macaron_fairseq.checkpoint_reader import describe

    arch = checkpoint_arch(checkpoint)
    preset = PRESETS[args.grid_preset]
    try:  # the model is the checkpoint's model (macaron_pipelines.glue.grid.checkpoint_model_flags)
        model_flags = checkpoint_model_flags(describe(checkpoint).model_config or {}, args.train_flags)
    except ModelConfigError as err:
        raise PipelineUsageError(f"--checkpoint {checkpoint}: {err}") from err
    new_layers = NewLayers(args.extra_layers, args.init_scheme, args.pretrained_lr_multiplier)
    identity = [*args.train_flags, *([] if preset.name == DEFAULT_PRESET else ["--grid-preset", preset.name])]
    runs = args.workdir / "glue" / "runs" / setup_name(arch, checkpoint, new_layers, identity)
    specs = []
    for task in args.tasks:
        meta = json.loads((data_root / task / "meta.json").read_text(encoding="utf-8"))
        for config, seed in grid_points(args, task):
            run_dir = runs / task / f"{config.name()}-seed{seed}"
            specs.append(
                RunSpec(
                    task,
                    config,
                    seed,
                    data_root / task,
                    checkpoint,
                    arch,
                    meta["num_classes"],
                    meta["regression"],
                    meta["splits"]["train"]["examples"],
                    run_dir,
                    new_layers,
                    (*preset.train_flags, *args.train_flags),
                    model_flags,
                    preset.warmup_ratio,
                    preset.adam_betas,
                )
            )
    return specs


GRID_OPTIONS = ("batch_sizes", "lrs", "epochs", "weight_decays", "seeds")


def grid_points(args: argparse.Namespace, task: str) -> list[tuple[Any, int]]:
    """``(configuration, seed)`` of every run of ``task``: the preset's grid with the options given (or its
    one setting for the task, e.g. ``macaron-best``, when no grid option is given)."""
    given = getattr(args, "given_grid_options", GRID_OPTIONS)
    chosen = {name: getattr(args, name) if name in given else None for name in GRID_OPTIONS}
    return PRESETS[args.grid_preset].points(task, argparse.Namespace(**chosen))


def report_run(console: Console, total: int) -> Any:
    finished = [0]

    def report(spec: RunSpec, record: dict[str, Any], attempt: int) -> None:
        if record.get("status") == "ok":
            finished[0] += 1
            metrics = ", ".join(f"{k} {v:.1f}" for k, v in record["metrics"].items())
            console.say(f"[{finished[0]}/{total}] {spec.name}: {metrics} ({record.get('seconds', 0):.0f}s)")
        else:
            again = "retrying once" if attempt == 1 else "failed twice, reported"
            status, log = record.get("exit_status"), record.get("log")
            console.say(f"run {spec.name} failed (exit {status}; log {log}): {again}")

    return report


def results(args: argparse.Namespace, records: dict[str, dict[str, Any]], console: Console) -> Any:
    from macaron_pipelines.glue.metrics import dev_metric_keys
    from macaron_pipelines.glue.selection import RunRecord, render_markdown, select

    runs = [RunRecord.from_dict(record, name) for name, record in records.items() if "task" in record]
    failed = [name for name, record in records.items() if record.get("status") != "ok"]
    selection = select(runs)
    table = render_markdown(selection)
    if failed:
        table += "\n" + "".join(f"- failed twice: {name} ({records[name].get('log')})\n" for name in failed)
    out = args.workdir / "glue"
    summary = {
        "checkpoint": str(args.checkpoint),
        "tasks": {},
        "failed_runs": failed,
        "glue_average_mean": selection.glue_average("mean"),
        "glue_average_median": selection.glue_average("median"),
        "glue_average_best": selection.glue_average("best"),
        "grid": {"preset": args.grid_preset, **{name: getattr(args, name) for name in GRID_OPTIONS}},
        "extra_layers": args.extra_layers,
        "init_scheme": args.init_scheme if args.extra_layers else None,
        "train_flags": list(args.train_flags),
        "small": args.small,
    }
    for task, result in selection.tasks.items():
        best = result.best
        summary["tasks"][task] = {
            "config": dict(best.config),
            "score_mean": best.mean,
            "score_std": best.std,
            "score_median": best.median,
            "metrics": {
                key: dict(zip(("mean", "std"), best.metric(key), strict=True))
                for key in dev_metric_keys(task)
            },
            "seeds_finished": len(best.runs),
            "best_seed": result.best_run.seed,
            "best_seed_score": result.best_run.score,
            "best_run": result.best_run.directory,
        }
    write_text_atomically(out / "results.json", json.dumps(summary, indent=1) + "\n")
    write_text_atomically(out / "results.md", table)
    console.say(f"results: {out / 'results.json'}")
    print(table, flush=True)
    return selection


def submission(
    args: argparse.Namespace, glue_dir: Path, selection: Any, failed: Sequence[str], console: Console
) -> Path | None:
    """The GLUE server's submission: ``submission.zip`` only when every task has a selected run and no run
    of the grid failed, else ``submission-partial.zip`` (:mod:`macaron_pipelines.glue.submission`); none when
    no task has a finished run. Returns the archive written."""
    from macaron_pipelines.glue.submission import COMPLETE, PARTIAL, remove_submission, write_submission

    out = args.workdir / "glue"
    if not selection.tasks:
        for kind in (COMPLETE, PARTIAL):
            remove_submission(out, kind)
        console.say("no submission: no task has a finished run")
        return None
    files = {"MNLI": {"MNLI-m": "test", "MNLI-mm": "test_mismatched", "AX": "test_ax"}}
    predictions = {}
    for task, result in selection.tasks.items():
        run_dir = Path(result.best_run.directory)
        for name, split in files.get(task, {task: "test"}).items():
            lines = (run_dir / "predictions" / f"{split}.txt").read_text(encoding="utf-8").splitlines()
            predictions[name] = [float(v) for v in lines] if task == "STS-B" else lines
    missing = [task for task in BERT_TASKS if task not in selection.tasks]
    why = []
    if missing:
        run = [task for task in missing if task in args.tasks]
        why.append(f"no finished run of {', '.join(run)}" if run else "not every task was run")
    if failed:
        why.append(f"{len(failed)} run(s) failed, so the grid is incomplete")
    archive = write_submission(glue_dir, predictions, out, partial=bool(why))
    console.say(f"submission: {archive}" + (f" (partial: {'; '.join(why)})" if why else ""))
    return archive


def check_finished(records: dict[str, dict[str, Any]], archive: Path | None) -> None:
    """Every run of the grid finished, or the pipeline ends with an error naming the failed ones (after the
    results and the partial submission were written): exit 2 when each failed on bad input (its own exit
    status 2), else 1."""
    failed = {name: record for name, record in records.items() if record.get("status") != "ok"}
    if not failed:
        return
    names = list(failed)
    shown = "; ".join(f"{name} (log {failed[name].get('log')})" for name in names[:3])
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    wrote = f"wrote {archive}" if archive is not None else "no submission written"
    error = PipelineError(
        f"{len(names)} of {len(records)} runs failed twice: {shown}{more}; results.md lists them, {wrote}; "
        "fix what their logs show and rerun the same command (finished runs are kept)"
    )
    if all(record.get("exit_status") == USAGE_EXIT for record in failed.values()):
        error.exit_status = USAGE_EXIT
    raise error


def floats(text: str) -> list[float]:
    return [float(v) for v in text.replace(",", " ").split()]


def ints(text: str) -> list[int]:
    return [int(v) for v in text.replace(",", " ").split()]


def task_list(text: str) -> list[str]:
    return [x.strip() for x in text.replace(",", " ").split()]


OPTIONS = (
    Option(
        "--workdir",
        "DIR: glue/ (data, runs, results) goes here (the wrapper's default: work_dirs/glue)",
        env="WORKDIR",
        type=Path,
        required=True,
    ),
    Option(
        "--checkpoint",
        "the exported pre-trained model, an export of python -m macaron_fairseq.pretrain "
        "(with --small: optional)",
        env="CHECKPOINT",
        type=Path,
    ),
    Option(
        "--glue-dir",
        "the unpacked GLUE distribution, only read (default: downloaded into WORKDIR/glue/glue-data)",
        env="GLUE_DIR",
        type=Path,
    ),
    Option("--download", "download the tasks missing from --glue-dir into it", env="DOWNLOAD", kind="switch"),
    Option(
        "--tasks",
        f"default: {' '.join(BERT_TASKS)} (also WNLI)",
        env="TASKS",
        type=task_list,
        default=list(BERT_TASKS),
    ),
    Option(
        "--grid-preset",
        "the search space (default bert: Devlin et al. A.3; macaron: the Macaron "
        "authors' grid; macaron-best: their one setting per task, test-our-best-setting.sh; roberta: Liu "
        "et al. table 10)",
        env="GRID_PRESET",
        choices=sorted(PRESETS),
        default=DEFAULT_PRESET,
    ),
    Option("--batch-sizes", f"default: {' '.join(map(str, BATCH_SIZES))}", env="BATCH_SIZES", type=ints),
    Option("--lrs", f"default: {' '.join(f'{x:g}' for x in LEARNING_RATES)}", env="LRS", type=floats),
    Option("--epochs", f"default: {' '.join(map(str, EPOCHS))}", env="EPOCHS", type=ints),
    Option(
        "--weight-decays", f"default: {' '.join(map(str, WEIGHT_DECAYS))}", env="WEIGHT_DECAYS", type=floats
    ),
    Option("--seeds", "seeds, or a count N for 100, 200, ... (default: 5)", env="SEEDS", type=ints),
    Option("--gpus", "parallel runs, one per GPU (default: the CUDA devices)", env="GPUS", type=int),
    Option(
        "--cpu-processes",
        "parallel runs without GPUs (default 2)",
        env="CPU_PROCESSES",
        type=positive_int,
        default=2,
    ),
    Option(
        "--extra-layers", "K new layers under the head (DT-Fixup)", env="EXTRA_LAYERS", type=int, default=0
    ),
    Option(
        "--init-scheme",
        "initialisation of the extra layers (default dt-fixup; auto: DT-Fixup, the "
        "extra layers sit on a pre-trained encoder)",
        env="INIT_SCHEME",
        default="dt-fixup",
        choices=INIT_SCHEMES,
    ),
    Option(
        "--pretrained-lr-multiplier",
        "learning-rate factor of the pre-trained part with --extra-layers",
        env="PRETRAINED_LR_MULTIPLIER",
        type=float,
    ),
    Option(
        "--small",
        "CPU smoke run: reduced grid, generated GLUE (a tiny model pre-trained first without --checkpoint)",
        env="SMALL",
        kind="switch",
    ),
    Option(
        "--step",
        "a part of the pipeline, for Slurm (slurm/glue.sbatch): prepare | count | cell | "
        "collect (default all)",
        choices=STEPS,
        default="all",
    ),
    Option("--cell", "with --step cell: the run's index (default $SLURM_ARRAY_TASK_ID)", type=int),
    Option(
        "--preemption-signal",
        "the runs save and stop on it (default HUP; docs/slurm.md)",
        env="PREEMPT_SIGNAL",
        default=DEFAULT_SIGNAL,
    ),
    SKIP_INSTALL,
)
"""Every option of the pipeline; ``bash pipelines/glue.sh`` and ``slurm/glue.sbatch`` map the [env NAME]
variables to them."""
WRAPPER_DEFAULTS = {"WORKDIR": str(REPO / "work_dirs" / "glue")}
"""What ``--from-env`` uses for a variable that is not set."""


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="python -m macaron_pipelines.glue", description=__doc__)
    add_options(parser, OPTIONS)
    add_from_env(parser)
    return parser


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The options (``--from-env``: and their environment variables) and the flags after ``--``."""
    return parse_with_passthrough(build_parser(), argv, OPTIONS, WRAPPER_DEFAULTS)


def settle(args: argparse.Namespace) -> None:
    """Defaults that depend on --small; the seeds; the task names checked."""
    unknown = [t for t in args.tasks if t not in TASKS or t == "AX"]
    if unknown:
        raise PipelineUsageError(f"--tasks: unknown {unknown}; choose from {', '.join(BERT_TASKS)}, WNLI")
    preset = PRESETS[args.grid_preset]
    args.given_grid_options = [n for n in GRID_OPTIONS if args.small or getattr(args, n) is not None]
    defaults = {name: list(getattr(preset, name)) for name in ("lrs", "epochs", "weight_decays", "seeds")}
    for key, value in {**defaults, **(SMALL if args.small else {})}.items():
        if getattr(args, key) is None:  # batch sizes: per task from the preset unless given (run_specs)
            setattr(args, key, value)
    if len(args.seeds) == 1 and args.seeds[0] < 100:  # a count
        args.seeds = [100 * (i + 1) for i in range(args.seeds[0])]


def visible_gpus() -> int:
    """The CUDA devices the grid runs on when --gpus is not given: asked only by the step that runs the grid
    here (torch takes ~3 s to import; --help, the Slurm steps and the grid count need none)."""
    import torch

    return torch.cuda.device_count()


def grid_size(args: argparse.Namespace) -> int:
    """The number of runs (array tasks) of the grid, known before any data exists."""
    return sum(len(grid_points(args, task)) for task in args.tasks)


def existing_checkpoint(args: argparse.Namespace) -> Path:
    """The checkpoint of the steps after ``prepare`` (which never pre-train)."""
    checkpoint = args.checkpoint or args.workdir / "pretrain" / SMALL_PRETRAINED / "model.pt"
    if not checkpoint.is_file():
        raise PipelineUsageError(f"{checkpoint}: no such checkpoint (run --step prepare first)")
    return checkpoint


def run_cell(args: argparse.Namespace, specs: Sequence[RunSpec], console: Console) -> None:
    """One run of the grid, as a Slurm array task: retried once; on the preemption signal the trainer saves
    and requeues the job (or, if the signal came before the trainer could, this process requeues it)."""
    index = args.cell if args.cell is not None else int(os.environ.get("SLURM_ARRAY_TASK_ID", "-1"))
    if not 0 <= index < len(specs):
        raise PipelineUsageError(
            f"--cell {index}: the grid has {len(specs)} runs, cells 0-{len(specs) - 1} "
            f"(submit the array with --array=0-{len(specs) - 1})"
        )
    spec = specs[index]
    if is_finished(spec):
        console.say(f"cell {index}: {spec.name} has finished already ({spec.run_dir / 'run.json'})")
        return
    console.say(f"cell {index} of {len(specs)}: {spec.name} → {spec.run_dir}")
    preemption = Preemption(args.preemption_signal)  # recorded here; the run saves on it

    def preempted(record: dict[str, Any]) -> bool:
        return preemption.received or record.get("exit_status") == PREEMPTED_EXIT

    def report(_spec: RunSpec, record: dict[str, Any], attempt: int) -> None:
        if record.get("status") != "ok" and not preempted(record):
            console.say(
                f"cell {index}: attempt {attempt} failed (exit {record.get('exit_status')}; log "
                f"{record.get('log')})"
            )

    [record] = run_keys(
        [spec],
        lambda run, slot: execute(run, slot, args.preemption_signal),
        [Slot(inherit=True)],
        ok=lambda record: record.get("status") == "ok" or preempted(record),  # a preempted run is not retried
        attempts=ATTEMPTS,
        on_row=report,
    )
    if record.get("status") == "ok":
        console.say(f"cell {index}: {spec.name} score {record['score']:.2f} ({record['seconds']:.0f}s)")
        return
    if preempted(record):
        if record.get("exit_status") != PREEMPTED_EXIT:  # the signal came before the trainer was ready
            requeue(console.say)
        raise Preempted(
            f"cell {index}: {spec.name} stopped on {preemption.signal.name}; its "
            "checkpoint is kept and the requeued job resumes it"
        )
    raise PipelineError(f"cell {index}: {spec.name} failed twice (log {record.get('log')})")


def collected_records(specs: Sequence[RunSpec]) -> dict[str, dict[str, Any]]:
    records = {spec.name: read_record(spec.run_dir) for spec in specs}
    missing = [name for name, record in records.items() if record is None]
    if missing:
        raise PipelineUsageError(
            f"{len(missing)} of {len(specs)} runs have no run.json (e.g. {missing[0]}): "
            "run their cells first (a resubmitted array skips finished cells)"
        )
    return {name: record for name, record in records.items() if record is not None}


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    settle(args)
    if args.step == "count":
        print(grid_size(args))
        return
    console = Console("glue")
    if args.step in ("all", "prepare"):
        check_inputs(args)
    refuse_file_as_directory("--workdir", args.workdir)
    args.workdir.mkdir(parents=True, exist_ok=True)
    data_root = args.workdir / "glue" / "data"
    if args.step in ("all", "prepare"):
        args.checkpoint = ensure_checkpoint(args, console)
        glue_dir = ensure_glue_dir(args, console)
        q = shlex.quote
        command = shlex.split(
            f"{q(sys.executable)} -m macaron_preprocess.glue --glue-dir {q(str(glue_dir))} "
            f"--dest {q(str(data_root))} --checkpoint {q(str(args.checkpoint))} "
            f"--tasks {q(','.join(args.tasks))}"
        )
        run_command(command, console)
    else:
        args.checkpoint = existing_checkpoint(args)
    specs = run_specs(args, args.checkpoint, data_root)
    runs_dir = specs[0].run_dir.parents[1]
    if args.step == "prepare":
        console.say(
            f"grid: {len(specs)} runs ({len(args.tasks)} tasks) → {runs_dir}; one array task each: "
            f"--array=0-{len(specs) - 1}"
        )
        return
    if args.step == "cell":
        run_cell(args, specs, console)
        return
    if args.step == "collect":
        glue_dir = ensure_glue_dir(args, console)
        records = collected_records(specs)
    else:
        gpus = args.gpus if args.gpus is not None else visible_gpus()
        run_slots: list[Slot] = slots(gpus, args.cpu_processes, available_cores())
        where = f"{gpus} GPU(s)" if gpus else f"{len(run_slots)} CPU process(es)"
        console.say(f"grid: {len(specs)} runs ({len(args.tasks)} tasks) on {where} → {runs_dir}")
        records = run_grid(specs, run_slots, report_run(console, len(specs)))
    selection = results(args, records, console)
    failed = [name for name, record in records.items() if record.get("status") != "ok"]
    archive = submission(args, glue_dir, selection, failed, console)
    check_finished(records, archive)


def cli() -> None:
    """The ``macaron-glue`` console script: what ``python -m macaron_pipelines.glue`` runs."""
    report_errors("macaron_pipelines.glue", main)


if __name__ == "__main__":
    cli()
