"""Run the grid's fine-tuning runs in parallel: one run per GPU, or a few CPU processes; a failed run is
retried once, then reported (never silently dropped); finished runs are skipped on a rerun.

Each run is a child process ``python -m pipelines.glue.run_one RUN_DIR/spec.json`` (train, predict, score:
:mod:`pipelines.glue.run_one`), which writes ``RUN_DIR/run.json`` last; a run counts as finished when its
``result`` stage's completion marker (``RUN_DIR/.stages/``, :class:`macaron_workflow.stages.StageRunner`)
says so (:func:`pipelines.glue.run_one.is_finished`; without markers, an older version's ``run.json`` with
``"status": "ok"``). A slot is a GPU (``CUDA_VISIBLE_DEVICES=i``) or, without GPUs, a CPU process
with its share of the cores (``OMP_NUM_THREADS``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from queue import Queue
from typing import Any

from macaron_workflow import processes
from macaron_workflow.atomic import write_text_atomically
from macaron_workflow.preemption import DEFAULT_SIGNAL
from pipelines.commands import REPO
from pipelines.glue.grid import RunSpec
from pipelines.glue.run_one import RUN_RECORD, is_finished, read_record

ATTEMPTS = 2  # a failed run is retried once


@dataclass(frozen=True)
class Slot:
    """Where one run executes: a GPU index, or a CPU process with ``threads`` threads; or, ``inherit``, the
    devices and threads this process was given (a Slurm array task: Slurm sets CUDA_VISIBLE_DEVICES)."""

    gpu: int | None = None
    threads: int = 1
    inherit: bool = False

    def env(self) -> dict[str, str]:
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        if self.inherit:
            return env
        if self.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(self.gpu)
        else:
            env["CUDA_VISIBLE_DEVICES"] = ""
            env["OMP_NUM_THREADS"] = str(self.threads)
        return env


def slots(gpus: int, cpu_processes: int, cores: int) -> list[Slot]:
    if gpus > 0:
        return [Slot(gpu=i) for i in range(gpus)]
    processes = max(1, cpu_processes)
    return [Slot(threads=max(1, cores // processes)) for _ in range(processes)]


def run_record(run_dir: Path) -> dict[str, Any] | None:
    """``RUN_DIR/run.json`` (:data:`pipelines.glue.run_one.RUN_RECORD`), if there is a readable one."""
    return read_record(run_dir)


def execute(spec: RunSpec, slot: Slot, signal_name: str = DEFAULT_SIGNAL) -> dict[str, Any]:
    """One attempt in a child process; its record (a failure record when the child wrote none). The child
    stops on ``signal_name`` after saving (exit :data:`macaron_workflow.preemption.PREEMPTED_EXIT`); the next
    attempt
    resumes its training."""
    spec.run_dir.mkdir(parents=True, exist_ok=True)
    (spec.run_dir / RUN_RECORD).unlink(missing_ok=True)
    spec_path = spec.run_dir / "spec.json"
    write_text_atomically(spec_path, json.dumps(spec.record(), indent=1) + "\n")
    log = spec.run_dir / "run.log"
    started = time.monotonic()
    command = [sys.executable, "-m", "pipelines.glue.run_one", str(spec_path),
               "--preemption-signal", signal_name]  # fmt: skip
    completed = processes.run(command, cwd=REPO, env=slot.env(), log=log, append=True)
    status = completed.status
    record = run_record(spec.run_dir)
    if record is None or status != 0:
        tail = completed.tail(15)
        record = {"status": "failed", "exit_status": status, "log": str(log), "tail": tail,
                  "seconds": round(time.monotonic() - started, 1)}  # fmt: skip
        write_text_atomically(spec.run_dir / RUN_RECORD, json.dumps(record, indent=1) + "\n")
    return record


def run_grid(
    specs: Sequence[RunSpec],
    run_slots: Sequence[Slot],
    report: Callable[[RunSpec, dict[str, Any], int], None],
) -> dict[str, dict[str, Any]]:
    """Run every unfinished spec on the slots (retrying a failure once); the records by run name."""
    records = {spec.name: run_record(spec.run_dir) or {} for spec in specs if is_finished(spec)}
    todo = [spec for spec in specs if spec.name not in records]
    free: Queue[Slot] = Queue()
    for slot in run_slots:
        free.put(slot)

    def attempt(spec: RunSpec, number: int) -> tuple[RunSpec, dict[str, Any], int]:
        slot = free.get()
        try:
            return spec, execute(spec, slot), number
        finally:
            free.put(slot)

    with ThreadPoolExecutor(max_workers=len(run_slots)) as pool:
        pending: set[Future] = {pool.submit(attempt, spec, 1) for spec in todo}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                spec, record, number = future.result()
                report(spec, record, number)
                if record.get("status") != "ok" and number < ATTEMPTS:
                    pending.add(pool.submit(attempt, spec, number + 1))
                else:
                    records[spec.name] = record
    return records
