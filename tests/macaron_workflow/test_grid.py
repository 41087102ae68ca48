"""macaron_workflow.grid, the one grid mechanism: keys → run → row, the done-set, parallel slots, the retry
rule, and the row file of the benchmarks' grids."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from macaron_workflow.errors import UserError
from macaron_workflow.grid import RowFile, Slot, run_grid, slots


def test_slots_are_gpus_or_cpu_processes_sharing_the_cores() -> None:
    assert [s.gpu for s in slots(3, 2, 8)] == [0, 1, 2]
    cpu = slots(0, 2, 8)
    assert [s.threads for s in cpu] == [4, 4] and all(s.gpu is None for s in cpu)
    assert cpu[0].env()["CUDA_VISIBLE_DEVICES"] == "" and cpu[0].env()["OMP_NUM_THREADS"] == "4"
    assert slots(2, 2, 8)[1].env({"A": "1"}) == {"A": "1", "CUDA_VISIBLE_DEVICES": "1"}
    assert [s.threads for s in slots(0, 3, 2)] == [1, 1, 1]  # never 0 threads
    assert Slot(inherit=True).env({"CUDA_VISIBLE_DEVICES": "3"}) == {"CUDA_VISIBLE_DEVICES": "3"}


def test_done_keys_are_skipped_failures_retried_up_to_the_attempts_and_rows_come_in_key_order() -> None:
    tries: dict[str, int] = {}
    seen: list[tuple[str, bool, int]] = []

    def run(key: str, slot: Slot) -> dict:
        tries[key] = tries.get(key, 0) + 1
        return {"key": key, "ok": key == "flaky" and tries[key] == 2}

    rows = run_grid(
        ["broken", "done", "flaky"],
        run,
        [Slot()],
        done=lambda key: {"key": key, "ok": True} if key == "done" else None,
        ok=lambda row: row["ok"],
        attempts=2,
        on_row=lambda key, row, attempt: seen.append((key, row["ok"], attempt)),
    )
    assert tries == {"broken": 2, "flaky": 2}  # the done key is not run; each failure is attempted twice
    assert [(r["key"], r["ok"]) for r in rows] == [("broken", False), ("done", True), ("flaky", True)]
    # one slot: in the order given, a retry queued after the keys before it
    assert seen == [("broken", False, 1), ("flaky", False, 1), ("broken", False, 2), ("flaky", True, 2)]
    once = run_grid(["x"], lambda key, slot: {"ok": False}, [Slot()], ok=lambda row: row["ok"])
    assert once == [{"ok": False}]  # one attempt by default: the failure is the row


def test_runs_hold_a_slot_each_and_on_row_runs_in_the_calling_thread() -> None:
    running: set[int] = set()
    most = [0]
    lock = threading.Lock()
    callers: set[int] = set()

    def run(key: int, slot: Slot) -> dict:
        with lock:
            assert slot.gpu not in running  # no two runs on one slot
            running.add(slot.gpu)
            most[0] = max(most[0], len(running))
        time.sleep(0.05)
        with lock:
            running.discard(slot.gpu)
        return {"key": key, "gpu": slot.gpu}

    rows = run_grid(range(6), run, slots(2, 0, 0), on_row=lambda *_: callers.add(threading.get_ident()))
    assert [r["key"] for r in rows] == list(range(6)) and most[0] == 2
    assert callers == {threading.get_ident()}


@dataclass(frozen=True)
class Protocol:
    updates: int = 10


def test_the_row_file_gives_the_done_set_and_survives_a_cut_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = RowFile(tmp_path / "out")
    rows.claim(Protocol())
    rows.claim(Protocol())  # the same protocol: the out-dir is its own
    assert json.loads((tmp_path / "out" / "protocol.json").read_text()) == {"updates": 10}
    with pytest.raises(UserError, match="holds runs of another protocol"):
        rows.claim(Protocol(updates=20))
    assert rows.read() == [] and rows.path == tmp_path / "out" / "results.jsonl"
    rows.append({"arm": "a", "seed": 1, "rc": 1})
    rows.append({"arm": "a", "seed": 1, "rc": 0})
    with rows.path.open("a") as f:
        f.write('{"arm": "b", "se')  # a kill while writing
    rows.append({"arm": "b", "seed": 2, "rc": 0})
    assert [r["rc"] for r in rows.read()] == [1, 0, 0]
    assert f"{rows.path}:3: not a JSON row" in capsys.readouterr().err
    done = rows.done(lambda r: (r["arm"], r["seed"]), counts=lambda r: r["rc"] == 0)
    assert done == {("a", 1): {"arm": "a", "seed": 1, "rc": 0}, ("b", 2): {"arm": "b", "seed": 2, "rc": 0}}
