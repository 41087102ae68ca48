"""The one grid mechanism: keys → run → row, the done-set, parallel slots, the retry rule.

A *grid* is a set of independent runs, each named by a key (GLUE: task × configuration × seed; a real-text
grid: arm × seed; the DT-Fixup ablation: scheme × depth × rate × seed). :func:`run_grid` runs every key that
is not done yet on a free :class:`Slot` (a GPU, or a CPU process with its share of the cores: as many runs at
a time as there are slots), in the order given; one attempt of a key gives one *row* (a dict), passed to
``on_row`` as it comes (one at a time, in the calling thread); a row that is not ``ok`` is attempted again,
up to ``attempts`` times in all (the retry rule: GLUE retries a failed run once; the benchmarks' grids
record the failure and leave it to a rerun).

The done-set says which keys a rerun skips. The benchmarks' grids append every row to a :class:`RowFile`
(``OUT_DIR/results.jsonl``) and read it back (:meth:`RowFile.done`: the keys with a row that counts — a
finished run, for the DT-Fixup ablation also a diverged one, which the same seed would repeat); the GLUE
pipeline's runs write their own ``run.json`` and stage markers, which its ``done`` reads. Resuming *inside*
one run (a training from its last checkpoint) is the run's own business: :mod:`macaron_workflow.stages`
for stages.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from pathlib import Path
from queue import Queue
from typing import Any, TypeVar

from macaron_workflow.atomic import write_text_atomically
from macaron_workflow.errors import UserError

Row = dict[str, Any]
K = TypeVar("K")
H = TypeVar("H", bound=Hashable)


@dataclass(frozen=True)
class Slot:
    """Where one run executes: a GPU index, or a CPU process with ``threads`` threads; or, ``inherit``, the
    devices and threads this process was given (a Slurm array task: Slurm sets CUDA_VISIBLE_DEVICES)."""

    gpu: int | None = None
    threads: int = 1
    inherit: bool = False

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) with the slot's devices and threads."""
        env = dict(os.environ if base is None else base)
        if self.inherit:
            return env
        if self.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(self.gpu)
        else:
            env["CUDA_VISIBLE_DEVICES"] = ""
            env["OMP_NUM_THREADS"] = str(self.threads)
        return env


def slots(gpus: int, cpu_processes: int, cores: int) -> list[Slot]:
    """One slot per GPU; without GPUs, ``cpu_processes`` slots sharing ``cores`` (≥ 1 thread each)."""
    if gpus > 0:
        return [Slot(gpu=i) for i in range(gpus)]
    processes = max(1, cpu_processes)
    return [Slot(threads=max(1, cores // processes)) for _ in range(processes)]


def run_grid(
    keys: Iterable[K],
    run: Callable[[K, Slot], Row],
    run_slots: Sequence[Slot],
    *,
    done: Callable[[K], Row | None] = lambda key: None,
    ok: Callable[[Row], bool] = lambda row: True,
    attempts: int = 1,
    on_row: Callable[[K, Row, int], None] = lambda key, row, attempt: None,
) -> list[Row]:
    """The row of every key, in the order of ``keys``: ``done(key)`` when that is not None (the key is not
    run), else the row of its last attempt. Each attempt ``run(key, slot)`` holds a free slot while it runs;
    ``on_row(key, row, attempt)`` follows every attempt; a row that is not ``ok`` is attempted again (after
    the keys queued before) until ``attempts`` attempts."""
    keys = list(keys)
    rows: list[Row | None] = [done(key) for key in keys]
    free: Queue[Slot] = Queue()
    for slot in run_slots:
        free.put(slot)

    def attempt(index: int, number: int) -> tuple[int, Row, int]:
        slot = free.get()
        try:
            return index, run(keys[index], slot), number
        finally:
            free.put(slot)

    with ThreadPoolExecutor(max_workers=len(run_slots)) as pool:
        submitted: dict[Future[tuple[int, Row, int]], int] = {}  # future → its place in the queue

        def submit(index: int, number: int) -> Future[tuple[int, Row, int]]:
            future = pool.submit(attempt, index, number)
            submitted[future] = len(submitted)
            return future

        pending = {submit(index, 1) for index, row in enumerate(rows) if row is None}
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in sorted(finished, key=submitted.__getitem__):  # one slot: in the order run
                index, row, number = future.result()
                on_row(keys[index], row, number)
                if not ok(row) and number < attempts:
                    pending.add(submit(index, number + 1))
                else:
                    rows[index] = row
    return [row for row in rows if row is not None]


@dataclass(frozen=True)
class RowFile:
    """The rows of a grid's out-dir: ``OUT_DIR/results.jsonl``, one JSON row per attempt, appended as each
    ends, and ``OUT_DIR/protocol.json``, the protocol the rows were measured with."""

    out_dir: Path

    @property
    def path(self) -> Path:
        return self.out_dir / "results.jsonl"

    def claim(self, protocol: Any) -> None:
        """Record the protocol (a dataclass) in ``protocol.json``; refuse an out-dir holding rows of another
        protocol (they would be mixed with this protocol's)."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        path = self.out_dir / "protocol.json"
        wanted = json.loads(json.dumps(asdict(protocol)))
        if path.exists() and json.loads(path.read_text()) != wanted:
            raise UserError(f"{path}: this out-dir holds runs of another protocol; use a new --out-dir")
        write_text_atomically(path, json.dumps(wanted, indent=2) + "\n")

    def read(self) -> list[Row]:
        """The rows; a line that is not JSON (a run killed while writing) is skipped with a warning naming
        it, so that its run is done again."""
        rows: list[Row] = []
        if not self.path.exists():
            return rows
        for number, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                warning = f"warning: {self.path}:{number}: not a JSON row, ignored (its run is redone)"
                print(warning, file=sys.stderr)
        return rows

    def append(self, row: Row) -> None:
        """Append one row in one write, on a line of its own (also after a line a kill cut short)."""
        path = self.path
        cut_short = path.exists() and path.stat().st_size > 0 and not path.read_bytes().endswith(b"\n")
        with path.open("a", encoding="utf-8") as f:
            f.write(("\n" if cut_short else "") + json.dumps(row) + "\n")

    def done(self, key_of: Callable[[Row], H], counts: Callable[[Row], bool]) -> dict[H, Row]:
        """The done-set: each key (``key_of(row)``) with a row that ``counts``, and its last such row."""
        return {key_of(row): row for row in self.read() if counts(row)}
