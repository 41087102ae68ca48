"""The results file every benchmark writes: what was measured, by which command, on which machine, when.

The README and docs quote these files (kept under ``docs/results/``): ``python -m benchmarks.doc_tables``
renders them (:mod:`benchmarks.reports`), and ``tests/test_docs_numbers.py`` checks that every quoted table
is what its renderer makes of its file — so a number in the docs is always the output of a command, never
typed.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

from macaron_workflow.atomic import write_text_atomically
from macaron_workflow.machine import cpu_model

REPO = Path(__file__).resolve().parents[1]

RESULTS_DIR = REPO / "docs" / "results"


def machine_info() -> dict[str, Any]:
    """The machine and software a measurement ran on, and the load when it started."""
    info: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "cpu": cpu_model(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": platform.python_version(),
        "load_average_1min_at_start": round(os.getloadavg()[0], 2),
    }
    torch = sys.modules.get("torch")  # never imported here: that would fix torch's thread count too early
    if torch is not None:
        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
    return info


def command_line(without: Collection[str] = ()) -> str:
    """How this benchmark was run: ``python -m benchmarks.NAME ARGS`` (a script run by its path is shown
    relative to the repository root), leaving out the flags ``without`` (``--publish-only``: the results file
    names the grid's command)."""
    args = [arg for arg in sys.argv[1:] if arg not in without]
    main_spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if main_spec is not None and main_spec.name.startswith("benchmarks."):
        return shlex.join(["python", "-m", main_spec.name, *args])
    script = Path(sys.argv[0]).resolve()
    shown = script.relative_to(REPO) if script.is_relative_to(REPO) else script
    return shlex.join(["python", str(shown), *args])


def source_commit() -> str | None:
    """The checkout's commit (12 hex digits), with ``+changes`` when tracked files differ from it; None
    outside a git checkout."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=30
        )
        if head.returncode != 0:
            return None
        status_argv = ["git", "status", "--porcelain", "--untracked-files=no"]
        status = subprocess.run(status_argv, cwd=REPO, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + ("+changes" if status.returncode != 0 or status.stdout.strip() else "")


def write_results(
    path: Path, results: dict[str, Any], machine: dict[str, Any], command: str | None = None
) -> None:
    """``{"command", "commit", "machine" (+ load at the end), "results"}`` as indented JSON, written
    atomically: the one schema of every results file under docs/results (``command`` defaults to how
    this process was started, :func:`command_line`)."""
    machine = {**machine, "load_average_1min_at_end": round(os.getloadavg()[0], 2)}
    torch = sys.modules.get("torch")
    if torch is not None and "torch" not in machine:  # imported after the start (by the measurement)
        machine.update(torch=torch.__version__, torch_threads=torch.get_num_threads())
    payload = {
        "command": command or command_line(),
        "commit": source_commit(),
        "machine": machine,
        "results": results,
    }
    write_text_atomically(Path(path), json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    print(f"results: {path} (its tables: python -m benchmarks.doc_tables --show {path})")


def read_results(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def current_form(command: str) -> str:
    """A recorded command as it is run today: files written before ``benchmarks`` became a package hold
    ``python benchmarks/NAME.py ...``, which is now ``python -m benchmarks.NAME ...`` (the same module)."""
    return re.sub(r"^python benchmarks/(\w+)\.py\b", r"python -m benchmarks.\1", command)


RETIRED = {
    "sentence_splitters": "a4078de",
    "pair_index_build": "a4078de",
    "bert_corpus_baseline": "a4078de",  # the baseline row of bert_corpus_throughput.json
    "authors_eval_cost": "6b00cef",
    "profile_macaron_step": "6b00cef",
    "pretrain_speed": "053e182",  # and its parts (pretrain_step_speed, …)
    "preprocess_throughput": "053e182",  # with process_memory
    "bert_corpus_throughput": "053e182",
    "glue_small_run": "053e182",
}
"""Finished decision studies whose code is retired (docs/architecture.md, layer 5): benchmark -> the last
commit holding ``benchmarks/NAME.py``. Their results files and reports stay."""


def retired_code(name: str) -> str:
    """Where the retired study ``benchmarks/NAME.py`` is: ``git show COMMIT:benchmarks/NAME.py``."""
    return f"`git show {RETIRED[name]}:benchmarks/{name}.py`"


def retired_note(command: str) -> str:
    """Where a retired study's code is, for the line under its table (empty for a living benchmark)."""
    match = re.match(r"^python -m benchmarks\.(\w+)", current_form(command))
    if match is None or match.group(1) not in RETIRED:
        return ""
    return f" (a finished study, its code retired: {retired_code(match.group(1))})"


def provenance(payload: dict[str, Any]) -> str:
    """One line naming the command, commit, date, machine and load of a results file (quoted under its
    table; files written before the commit was recorded have none), and where a retired study's code is."""
    m = payload["machine"]
    threads = m.get("torch_threads")
    thread_part = f" ({threads} thread{'s' if threads != 1 else ''})" if threads else ""
    torch_part = f", torch {m['torch']}{thread_part}" if "torch" in m else ""
    commit = f" at commit `{payload['commit']}`" if payload.get("commit") else ""
    return (
        f"`{current_form(payload['command'])}`{commit} on {m['date']}: {m['cpu']}, "
        f"{m['usable_cores']} cores{torch_part}, "
        f"1-min load {m['load_average_1min_at_start']} → {m['load_average_1min_at_end']}"
        f"{retired_note(payload['command'])}"
    )
