"""What the GPU check reports: one row per check, the table it prints, and its results file (the schema of
every results file under ``docs/results/``: command, commit, machine with the load at start and end,
results)."""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from macaron_pipelines.commands import REPO
from macaron_workflow.atomic import write_text_atomically
from macaron_workflow.cli import available_cores
from macaron_workflow.machine import cpu_model

RESULTS_DIR = REPO / "docs" / "results"
RESULTS_FILE = (RESULTS_DIR if RESULTS_DIR.is_dir() else Path()) / "gpu_check.json"
"""Where the results go by default: ``docs/results/`` of a checkout, the current directory from a wheel."""


@dataclass
class Row:
    part: str
    case: str
    status: str  # ok | FAIL | skip
    detail: str = ""
    tokens_per_second: float | None = None
    mfu: float | None = None
    seconds: float | None = None
    data: dict[str, Any] = field(default_factory=dict)


def render(rows: Sequence[Row], header: str) -> str:
    """The one table the check prints."""
    cells = [("part", "case", "result", "tokens/s", "MFU", "time", "detail")]
    for r in rows:
        tps = f"{r.tokens_per_second:,.0f}" if r.tokens_per_second is not None else "-"
        mfu = "n/a" if r.tokens_per_second is not None else "-"
        if r.mfu is not None:
            mfu = f"{100 * r.mfu:.1f}%"
        took = f"{r.seconds:.0f}s" if r.seconds is not None else "-"
        cells.append((r.part, r.case, r.status, tps, mfu, took, r.detail))
    widths = [max(len(c[i]) for c in cells) for i in range(6)]
    lines = [header]
    for i, c in enumerate(cells):
        lines.append("  ".join(c[j].ljust(widths[j]) for j in range(6)) + "  " + c[6])
        if i == 0:
            lines.append("-" * (sum(widths) + 12 + 6))
    failed = sum(r.status == "FAIL" for r in rows)
    lines.append(
        f"{len(rows)} rows: {sum(r.status == 'ok' for r in rows)} ok, {failed} failed, "
        f"{sum(r.status == 'skip' for r in rows)} skipped"
    )
    return "\n".join(lines)


def machine_info() -> dict[str, Any]:
    """The machine and software the check ran on, and the load when it started."""
    info: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "cpu": cpu_model(),
        "usable_cores": available_cores(),
        "python": platform.python_version(),
        "load_average_1min_at_start": round(os.getloadavg()[0], 2),
    }
    torch = sys.modules.get("torch")  # never imported here: that would fix torch's thread count too early
    if torch is not None:
        info.update(torch=torch.__version__, torch_threads=torch.get_num_threads())
    return info


def source_commit() -> str | None:
    """The checkout's commit (12 hex digits), with ``+changes`` when tracked files differ from it; None for an
    installed wheel."""
    if not (REPO / ".git").exists():
        return None
    git = ["git", "-C", str(REPO)]
    try:
        head = subprocess.run(
            [*git, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=30
        )
        if head.returncode != 0:
            return None
        status = subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):  # no git on the machine
        return None
    return head.stdout.strip() + ("+changes" if status.returncode != 0 or status.stdout.strip() else "")


def write_json(
    path: Path, rows: Sequence[Row], context: dict[str, Any], machine: dict[str, Any], prog: str
) -> None:
    """The results file (``results``: the context and the rows), written atomically; ``machine``:
    :func:`machine_info` at the start; ``prog``: how the check was run."""
    machine = {**machine, "load_average_1min_at_end": round(os.getloadavg()[0], 2)}
    torch = sys.modules.get("torch")
    if torch is not None and "torch" not in machine:  # imported after the start (by the measurement)
        machine.update(torch=torch.__version__, torch_threads=torch.get_num_threads())
    payload = {
        "command": shlex.join([*prog.split(), *sys.argv[1:]]),
        "commit": source_commit(),
        "machine": machine,
        "results": {**context, "rows": [asdict(r) for r in rows]},
    }
    write_text_atomically(Path(path), json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    print(f"results: {path}")
