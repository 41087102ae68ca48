"""The fairseq stages both pipelines share, each a resumable stage of
:class:`macaron_workflow.stages.StageRunner`.

* :func:`train` — ``fairseq-train`` with the progress display of :mod:`macaron_tools.train_progress`, in
  place in its checkpoint directory (:meth:`~macaron_workflow.stages.StageRunner.run_in_place`). A rerun
  with the same command is skipped; one that differs only in when training stops or which checkpoints it keeps
  (:data:`STOP_AND_SAVE_OPTIONS`, e.g. a larger ``--max-update``) resumes from ``checkpoint_last.pt``;
  any other change, or changed data, moves the old checkpoint directory aside and starts afresh.
* :func:`average` — :mod:`macaron_tools.average_checkpoints` over the last N interval checkpoints.
* :func:`generate` — ``fairseq-generate`` on the test split into a file renamed into place when done.
* :func:`score` — :mod:`macaron_tools.score_bleu` into a JSON file (and the detokenized hypotheses); the BLEU
  lines are printed on every run, from the stored results when the stage is up to date.
* :func:`plot` — :mod:`macaron_tools.plot_curves` into a PNG.

Every stage's inputs fingerprint the files it reads (data-bin files, checkpoints, generate output, log),
so a new checkpoint or new data invalidates every later stage. The tools run in this process (they import
neither fairseq nor torch); the fairseq commands and checkpoint averaging (torch) run as subprocesses.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from macaron_pipelines.commands import USER_DIR, Console, PipelineError, Preempted, run_command
from macaron_tools import plot_curves, score_bleu, train_progress
from macaron_tools.average_checkpoints import AveragingError, last_checkpoints
from macaron_workflow.preemption import DEFAULT_SIGNAL, PREEMPTED_EXIT, slurm_port
from macaron_workflow.stages import StageReport, StageRunner

STOP_AND_SAVE_OPTIONS = ("--max-update", "--max-epoch", "--save-interval-updates", "--keep-interval-updates")
"""fairseq-train options that decide when training stops and which checkpoints it keeps, not what it
learns: a training started with other values of these is resumed, not restarted."""


def without_options(command: Sequence[str], options: Sequence[str]) -> list[str]:
    """``command`` without the ``--option VALUE`` / ``--option=VALUE`` pairs of ``options``."""
    kept: list[str] = []
    skip_value = False
    for arg in command:
        if skip_value:
            skip_value = False
        elif arg in options:
            skip_value = True
        elif "=" not in arg or arg.split("=", 1)[0] not in options:
            kept.append(arg)
    return kept


def resume_settings(command: Sequence[str]) -> list[str]:
    """What a partial training must have been started with to be resumed by ``command``."""
    return without_options(command, STOP_AND_SAVE_OPTIONS)


def data_bin_files(data_bin: Path) -> list[Path]:
    """The dictionaries and binarized splits of a data-bin (what training and generation read)."""
    if not data_bin.is_dir():
        raise PipelineError(f"no data-bin at {data_bin}")
    files = sorted(
        path
        for path in data_bin.iterdir()
        if path.is_file() and (path.suffix in (".bin", ".idx") or path.name.startswith("dict."))
    )
    if not any(path.name.startswith("dict.") for path in files):
        raise PipelineError(f"{data_bin} holds no dict.*.txt: did preprocessing finish?")
    return files


def slurm_launch(command: Sequence[str], signal_name: str = DEFAULT_SIGNAL) -> list[str]:
    """The ``fairseq-train ARGS`` ``command`` as one task per GPU of the current Slurm allocation: ``srun``
    starts :mod:`macaron_tools.train_preemptible` once per task; fairseq's Slurm inference takes the ranks
    from ``SLURM_PROCID``/``SLURM_LOCALID`` and the master from the first host of the step's nodes, on
    ``--distributed-port`` (derived from the job id, which a requeue keeps)."""
    job, tasks = os.environ.get("SLURM_JOB_ID"), os.environ.get("SLURM_NTASKS")
    if job is None or tasks is None:
        raise PipelineError(
            "--slurm: not inside a Slurm job with tasks (no SLURM_JOB_ID/SLURM_NTASKS): "
            "submit slurm/translate.sbatch with sbatch"
        )
    launcher = ["srun", "--kill-on-bad-exit=1", sys.executable, "-m", "macaron_tools.train_preemptible"]
    world = ["--distributed-world-size", tasks, "--distributed-port", str(slurm_port(job))]
    return [*launcher, "--preemption-signal", signal_name, *command[1:], *world]


def move_aside(path: Path) -> Path:
    """Rename ``path`` to ``PATH.before-YYYYmmdd-HHMMSS`` (the naming of moved-aside workspaces)."""
    aside = path.with_name(f"{path.name}.before-{time.strftime('%Y%m%d-%H%M%S')}")
    suffix = 1
    while aside.exists():
        suffix += 1
        aside = path.with_name(f"{path.name}.before-{time.strftime('%Y%m%d-%H%M%S')}-{suffix}")
    path.rename(aside)
    return aside


def train(
    runner: StageRunner,
    console: Console,
    *,
    stage: str,
    command: Sequence[str],
    data_bin: Path,
    save_dir: Path,
    log: Path,
    outputs: Sequence[str] = ("checkpoint_last.pt",),
    log_per_training: bool = False,
    announce: str | None = None,
    launch: Sequence[str] | None = None,
) -> None:
    """Run the ``fairseq-train`` ``command`` (which writes its checkpoints to ``save_dir``), appending its
    full output to ``log``; ``outputs`` are the file names in ``save_dir`` it must leave behind.

    ``launch``: what actually runs when it is not ``command`` itself (:func:`slurm_launch`); the stage is
    keyed by ``command``, so the same training resumes on another number of nodes. Its exit status
    :data:`macaron_workflow.preemption.PREEMPTED_EXIT` (saved on the preemption signal) raises
    :class:`Preempted`.

    With ``log_per_training`` the log describes only the training in ``save_dir``: a training that starts
    from scratch first moves the previous log aside (a resumed one appends to it).
    """
    command = [str(part) for part in command]

    def build() -> StageReport:
        if log_per_training and log.exists() and not (save_dir / "checkpoint_last.pt").exists():
            console.say(f"training starts from scratch: the previous log is now {move_aside(log)}")
        if announce:
            console.say(announce)
        console.command(launch or command)
        status = train_progress.run(launch or command, log)
        if status == -signal.SIGINT:  # Ctrl-C: train_progress passed it on and waited for fairseq-train
            raise KeyboardInterrupt
        if launch and status == PREEMPTED_EXIT:
            raise Preempted(
                f"training saved {save_dir / 'checkpoint_last.pt'} on the preemption signal and "
                "stopped; the requeued job (or a rerun) resumes from it"
            )
        if status != 0:
            raise PipelineError(f"fairseq-train failed with exit status {status} (full log: {log})")
        return {}

    runner.run_in_place(
        stage,
        inputs=data_bin_files(data_bin),
        outputs=[save_dir / name for name in outputs],
        params={"command": command},
        build=build,
        workspace=save_dir,
        resume_params={"command": resume_settings(command)},
    )


def average(
    runner: StageRunner, console: Console, *, stage: str, save_dir: Path, count: int, output: Path
) -> None:
    """Average the last ``count`` interval checkpoints (``checkpoint_E_U.pt``) of ``save_dir`` into
    ``output``."""
    try:
        reads = last_checkpoints(save_dir, count, by_update=True)
    except AveragingError as err:
        raise PipelineError(f"cannot average: {err}") from err

    def build(temps: Mapping[Path, Path]) -> StageReport:
        command = [sys.executable, "-m", "macaron_tools.average_checkpoints", "--inputs", save_dir]
        run_command([*command, "--num-update-checkpoints", count, "--out", temps[output]], console)
        return {"averaged": [path.name for path in reads]}

    runner.run(stage, reads, [output], {"count": count}, build)


def generate(
    runner: StageRunner,
    console: Console,
    *,
    stage: str,
    data_bin: Path,
    checkpoint: Path,
    src: str,
    tgt: str,
    beam: int,
    lenpen: float,
    output: Path,
    batch_size: int = 128,
    cpu: bool = False,
    announce: str | None = None,
) -> None:
    """Translate the test split of ``data_bin`` with ``checkpoint`` (its BPE removed: sentencepiece, or
    subword-nmt's ``@@`` — fairseq's ``--remove-bpe`` — for a data-bin with ``subword_nmt.codes``): the
    stdout of ``fairseq-generate`` goes to ``output``, its stderr to ``output`` with the suffix ``.log``."""
    q = shlex.quote
    command = shlex.split(
        f"fairseq-generate {q(str(data_bin))} --user-dir {q(str(USER_DIR))} --task translation "
        f"--source-lang {q(src)} --target-lang {q(tgt)} --path {q(str(checkpoint))} --gen-subset test "
        f"--beam {beam} --lenpen {lenpen} --post-process {post_process_of(data_bin)} "
        f"--batch-size {batch_size}"
    )
    if cpu:
        command += ["--num-workers", "0", "--cpu"]
    errors = output.with_suffix(".log")

    def build(temps: Mapping[Path, Path]) -> StageReport:
        if announce:
            console.say(announce)
        run_command(command, console, stdout=temps[output], stderr_log=errors)
        with temps[output].open(encoding="utf-8") as generated:
            return {"hypotheses": sum(line.startswith("H-") for line in generated)}

    runner.run(stage, [checkpoint, *data_bin_files(data_bin)], [output], {"command": command}, build)


def post_process_of(data_bin: Path) -> str:
    """fairseq's ``--post-process`` for the BPE of a data-bin made by this project's preprocessors."""
    return "subword_nmt" if (data_bin / "subword_nmt.codes").is_file() else "sentencepiece"


def authors_reference(data_bin: Path) -> Path | None:
    """The authors' released WMT14 test reference kept by ``macaron-preprocess-wmt14 --authors-test-dir``."""
    path = data_bin / "authors-test" / "en-de.de.tok.atat"
    return path if path.is_file() else None


@dataclass(frozen=True)
class BleuSettings:
    """Which BLEU variants :mod:`macaron_tools.score_bleu` computes, and how."""

    metrics: tuple[str, ...] = ("sacrebleu", "tokenized")
    lowercase: bool = False
    compound_split: bool = False


def score(
    runner: StageRunner,
    *,
    stage: str,
    generated: Path,
    ref: Path,
    tok_ref: Path,
    lang: str,
    bleu: BleuSettings,
    name: str,
    json_out: Path,
    hyp_out: Path | None = None,
    atat_ref: Path | None = None,
) -> dict[str, Any]:
    """Score ``generated`` against the raw (``ref``) and tokenized (``tok_ref``) references into
    ``json_out`` (and the detokenized hypotheses into ``hyp_out``); print the BLEU lines; return the
    results."""
    outputs = [json_out] if hyp_out is None else [json_out, hyp_out]

    def build(temps: Mapping[Path, Path]) -> StageReport:
        try:
            results, hypotheses = score_bleu.score_file(
                str(generated),
                ref,
                tok_ref,
                lang,
                bleu.metrics,
                lowercase=bleu.lowercase,
                split_compounds=bleu.compound_split,
                name=name,
                atat_ref_path=atat_ref,
            )
        except (score_bleu.ScoreError, OSError) as err:
            raise PipelineError(f"cannot score {generated}: {err}") from err
        if hyp_out is not None:
            temps[hyp_out].write_text(score_bleu.hypotheses_text(hypotheses), encoding="utf-8")
            results["hypotheses_file"] = str(hyp_out)
        temps[json_out].write_text(score_bleu.results_text(results), encoding="utf-8")
        return {"bleu": {metric: record["score"] for metric, record in results["scores"].items()}}

    params = {"lang": lang, "bleu": asdict(bleu), "name": name, "hyp_out": str(hyp_out)}
    inputs = [generated, ref, tok_ref] + ([atat_ref] if atat_ref is not None else [])
    runner.run(stage, inputs, outputs, params, build)
    results = json.loads(json_out.read_text(encoding="utf-8"))
    print(score_bleu.format_report(results), flush=True)
    return results


def plot(runner: StageRunner, *, stage: str, log: Path, out: Path, title: str) -> None:
    """Plot the train/valid loss curves of the fairseq-train ``log`` into the image ``out``."""

    def build(temps: Mapping[Path, Path]) -> StageReport:
        try:
            curves = plot_curves.read_curves(log)
        except (OSError, plot_curves.PlotError) as err:
            raise PipelineError(f"cannot plot the loss curves: {err}") from err
        plot_curves.plot(curves, temps[out], title, image_format=out.suffix.lstrip(".") or "png")
        return {"epochs": len(set(curves.train_epoch) | set(curves.valid_epoch))}

    runner.run(stage, [log], [out], {"title": title}, build)
