"""Run the grid's fine-tuning runs in parallel: one run per GPU, or a few CPU processes; a failed run is
retried once, then reported (never silently dropped); finished runs are skipped on a rerun.

Each run is a child process ``python -m macaron_pipelines.glue.run_one RUN_DIR/spec.json`` (train, predict,
score: :mod:`macaron_pipelines.glue.run_one`), which writes ``RUN_DIR/run.json`` last; a run counts as
finished when its ``result`` stage's completion marker (``RUN_DIR/.stages/``,
:class:`macaron_workflow.stages.StageRunner`) says so (:func:`macaron_pipelines.glue.run_one.is_finished`;
without markers, an older version's ``run.json`` with ``"status": "ok"``). A slot is a GPU
(``CUDA_VISIBLE_DEVICES=i``) or, without GPUs, a CPU process with its share of the cores
(``OMP_NUM_THREADS``). The parallel slots, the retry and the skipping are the project's one grid mechanism,
:mod:`macaron_workflow.grid`; this module says what a GLUE run is.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from macaron_pipelines.commands import REPO
from macaron_pipelines.glue.grid import RunSpec
from macaron_pipelines.glue.run_one import RUN_RECORD, is_finished, read_record
from macaron_workflow import processes
from macaron_workflow.atomic import write_text_atomically
from macaron_workflow.grid import Slot
from macaron_workflow.grid import run_grid as run_keys
from macaron_workflow.preemption import DEFAULT_SIGNAL

ATTEMPTS = 2  # a failed run is retried once


def execute(spec: RunSpec, slot: Slot, signal_name: str = DEFAULT_SIGNAL) -> dict[str, Any]:
    """One attempt in a child process; its record (a failure record when the child wrote none). The child
    stops on ``signal_name`` after saving (exit :data:`macaron_workflow.preemption.PREEMPTED_EXIT`); the next
    attempt resumes its training."""
    spec.run_dir.mkdir(parents=True, exist_ok=True)
    (spec.run_dir / RUN_RECORD).unlink(missing_ok=True)
    spec_path = spec.run_dir / "spec.json"
    write_text_atomically(spec_path, json.dumps(spec.record(), indent=1) + "\n")
    log = spec.run_dir / "run.log"
    started = time.monotonic()
    command = [sys.executable, "-m", "macaron_pipelines.glue.run_one", str(spec_path)]
    command += ["--preemption-signal", signal_name]
    env = slot.env(dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")))
    completed = processes.run(command, cwd=REPO, env=env, log=log, append=True)
    status = completed.status
    record = read_record(spec.run_dir)
    if record is None or status != 0:
        tail = completed.tail(15)
        record = {
            "status": "failed",
            "exit_status": status,
            "log": str(log),
            "tail": tail,
            "seconds": round(time.monotonic() - started, 1),
        }
        write_text_atomically(spec.run_dir / RUN_RECORD, json.dumps(record, indent=1) + "\n")
    return record


def run_grid(
    specs: Sequence[RunSpec],
    run_slots: Sequence[Slot],
    report: Callable[[RunSpec, dict[str, Any], int], None],
) -> dict[str, dict[str, Any]]:
    """Run every unfinished spec on the slots, a failure retried once (the one grid mechanism,
    :func:`macaron_workflow.grid.run_grid`); the records by run name (a finished run's from its
    ``run.json``)."""
    records = run_keys(
        specs,
        lambda spec, slot: execute(spec, slot),
        run_slots,
        done=lambda spec: (read_record(spec.run_dir) or {}) if is_finished(spec) else None,
        ok=lambda record: record.get("status") == "ok",
        attempts=ATTEMPTS,
        on_row=report,
    )
    return {spec.name: record for spec, record in zip(specs, records, strict=True)}
