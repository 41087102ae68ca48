"""One fine-tuning run of the grid: ``python -m macaron_pipelines.glue.run_one RUN_DIR/spec.json``.

1. ``fairseq-train`` with the run's configuration (:func:`macaron_pipelines.glue.grid.train_command`) into
   ``RUN_DIR/checkpoint/``, under :mod:`macaron_tools.train_preemptible` (its output goes to this process's
   stdout: the scheduler's ``run.log``), the ``train`` stage of :class:`macaron_workflow.stages.StageRunner`
   (markers in ``RUN_DIR/.stages/``): a rerun resumes an unfinished training from its
   ``checkpoint_last.pt``; its completion marker marks a finished one. On the preemption signal
   (``--preemption-signal``, which this process passes on to the trainer) the trainer saves and exits 3,
   and so does this run;
2. predictions of the final model for every split but ``train`` (dev and test, AX for MNLI), in file
   order, as label strings (STS-B: the regression output × 5, clipped to [0, 5]) →
   ``RUN_DIR/predictions/SPLIT.txt``;
3. the dev metrics (:func:`macaron_pipelines.glue.metrics.dev_metrics`) and ``RUN_DIR/run.json``, written last
   (steps 1-3 are the ``result`` stage, whose marker says the run has finished: :func:`is_finished`; a run
   directory of an older version, with ``checkpoint/trained`` and a ``run.json`` but no markers, resumes);
4. the checkpoint is deleted (``--keep-checkpoint`` keeps it): the predictions are all selection and the
   submission need, and a full grid of BERT-base checkpoints would take hundreds of GB.

Runs as a child of the scheduler (one per GPU or CPU slot), or as one task of a Slurm job array.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from macaron_pipelines.commands import USER_DIR
from macaron_pipelines.glue.grid import RunSpec, train_command
from macaron_pipelines.glue.metrics import dev_metrics, task_score
from macaron_workflow import processes
from macaron_workflow.cli import ArgumentParser, run_cli
from macaron_workflow.errors import USAGE_EXIT, ReportedError, UserError
from macaron_workflow.preemption import DEFAULT_SIGNAL, PREEMPTED_EXIT, signal_number
from macaron_workflow.stages import StageReport, StageRunner

STSB_RANGE = (0.0, 5.0)


def label_values(
    raw: Sequence[int | float], labels: list[str] | None, scale: float | None
) -> list[str | float]:
    """Class indices → label strings; regression outputs × ``scale`` clipped to STS-B's range."""
    if labels is None:
        low, high = STSB_RANGE
        return [min(high, max(low, float(value) * (scale or 1.0))) for value in raw]
    return [labels[int(index)] for index in raw]


def read_gold(path: Path, regression: bool) -> list[str | float]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [float(line) for line in lines] if regression else lines


def predict_splits(checkpoint: Path, data_dir: Path, meta: dict[str, Any]) -> dict[str, list[str | float]]:
    """Label predictions of every non-training split of the task directory."""
    from macaron_pipelines.glue.predict import load_fine_tuned, run

    fine_tuned = load_fine_tuned(checkpoint, data_dir)
    return {
        split: label_values(run(fine_tuned, split), meta["labels"], meta.get("label_scale"))
        for split in meta["splits"]
        if split != "train"
    }


RUN_RECORD = "run.json"
"""``RUN_DIR/run.json``: the run's record (``"status": "ok"``, its metrics), or the scheduler's failure
record."""
STATE_DIR = ".stages"
"""``RUN_DIR/.stages/``: the completion markers of the run's two stages (:class:`StageRunner`)."""
TRAIN_STAGE, RESULT_STAGE = "train", "result"
LEGACY_TRAINED = "trained"
"""Before the stage markers, ``checkpoint/trained`` marked a finished training: still read, so that a work
directory of an older version resumes (its ``run.json`` with ``"status": "ok"`` marks a finished run)."""


def stage_runner(spec: RunSpec) -> StageRunner:
    return StageRunner(
        spec.run_dir / STATE_DIR, log=lambda message: print(message, file=sys.stderr, flush=True)
    )


def result_stage(spec: RunSpec) -> tuple[list[Path], dict[str, Any]]:
    """The inputs and parameters of the run's ``result`` stage (its key)."""
    return [spec.data_dir / "meta.json"], {"spec": spec.record()}


def read_record(run_dir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((run_dir / RUN_RECORD).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def is_finished(spec: RunSpec) -> bool:
    """The run's ``result`` stage is complete (its marker), or, in a run directory of an older version
    (no marker), its ``run.json`` says ``"status": "ok"``."""
    marker = spec.run_dir / STATE_DIR / f"{RESULT_STAGE}.json"
    if not marker.exists():
        record = read_record(spec.run_dir)
        return record is not None and record.get("status") == "ok"
    runner = stage_runner(spec)
    inputs, params = result_stage(spec)
    return runner.is_complete(
        RESULT_STAGE, runner.stage_key(RESULT_STAGE, inputs, params), [spec.run_dir / RUN_RECORD]
    )


def train(spec: RunSpec, runner: StageRunner, save_dir: Path, signal_name: str = DEFAULT_SIGNAL) -> None:
    """fairseq-train, resumable and preemptible (the ``train`` stage, in place in ``save_dir``); the signal
    is passed on to it."""
    if (save_dir / LEGACY_TRAINED).exists() and not runner.marker_path(TRAIN_STAGE).exists():
        print(f"[{TRAIN_STAGE}] finished before (old marker {save_dir / LEGACY_TRAINED})", file=sys.stderr)
        return
    fairseq_args = train_command(spec, save_dir, USER_DIR)[1:]
    params = {"fairseq_args": fairseq_args}
    runner.adopt_workspace(TRAIN_STAGE, [], params, save_dir)  # a training started by an older version
    command = [sys.executable, "-m", "macaron_tools.train_preemptible", "--preemption-signal", signal_name]
    command += fairseq_args

    def build() -> StageReport:
        print("$ " + " ".join(command), flush=True)
        status = processes.run(command, forward=[signal_number(signal_name)]).status
        if status == PREEMPTED_EXIT:
            raise SystemExit(PREEMPTED_EXIT)
        if status == USAGE_EXIT:  # the trainer's one-line error about its input: the user's to fix
            raise UserError(f"{spec.name}: fairseq-train refused its input (exit status {status})")
        if status != 0:  # a crash or a killed trainer is not the user's mistake
            raise ReportedError(f"{spec.name}: fairseq-train failed with exit status {status}")
        return {}

    runner.run_in_place(TRAIN_STAGE, [], [save_dir / "checkpoint_last.pt"], params, build, workspace=save_dir)


def run(spec: RunSpec, keep_checkpoint: bool = False, signal_name: str = DEFAULT_SIGNAL) -> dict[str, Any]:
    started = time.monotonic()
    meta = json.loads((spec.data_dir / "meta.json").read_text(encoding="utf-8"))
    save_dir = spec.run_dir / "checkpoint"
    out = spec.run_dir / "predictions"
    record_path = spec.run_dir / RUN_RECORD
    outputs = [out / f"{split}.txt" for split in meta["splits"] if split != "train"]
    runner = stage_runner(spec)

    def build(temps: Mapping[Path, Path]) -> StageReport:
        train(spec, runner, save_dir, signal_name)
        predictions = predict_splits(save_dir / "checkpoint_last.pt", spec.data_dir, meta)
        for split, values in predictions.items():
            temps[out / f"{split}.txt"].write_text("".join(f"{v}\n" for v in values), encoding="utf-8")
        dev = {
            meta["splits"][split]["glue_split"]: (
                predictions[split],
                read_gold(spec.data_dir / f"{split}.gold", meta["regression"]),
            )
            for split in predictions
            if split.startswith("valid") and meta["splits"][split]["labeled"]
        }
        metrics = dev_metrics(spec.task, dev)
        record = {
            "status": "ok",
            "task": spec.task,
            "config": spec.record()["config"],
            "seed": spec.seed,
            "metrics": metrics,
            "score": task_score(spec.task, metrics),
            "directory": str(spec.run_dir),
            "predictions": {split: str(out / f"{split}.txt") for split in predictions},
            "seconds": round(time.monotonic() - started, 1),
        }
        temps[record_path].write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        return {"score": record["score"]}

    inputs, params = result_stage(spec)
    runner.run(RESULT_STAGE, inputs, [*outputs, record_path], params, build)  # run.json is renamed last
    if not keep_checkpoint:
        shutil.rmtree(save_dir, ignore_errors=True)
    record = read_record(spec.run_dir)
    assert record is not None
    return record


def main(argv: Sequence[str] | None = None) -> None:
    parser = ArgumentParser(prog="python -m macaron_pipelines.glue.run_one", description=__doc__)
    parser.add_argument("spec", type=Path, help="RUN_DIR/spec.json written by the scheduler")
    parser.add_argument("--keep-checkpoint", action="store_true", help="keep RUN_DIR/checkpoint/")
    parser.add_argument("--preemption-signal", default=DEFAULT_SIGNAL, help="passed on to the trainer (HUP)")
    args = parser.parse_args(argv)
    spec = RunSpec.from_record(json.loads(args.spec.read_text(encoding="utf-8")))
    record = run(spec, args.keep_checkpoint, args.preemption_signal)
    print(f"{spec.name}: score {record['score']:.2f} {record['metrics']}", file=sys.stderr)


if __name__ == "__main__":
    run_cli(main, "python -m macaron_pipelines.glue.run_one")
