"""Resumable stages with atomic outputs.

Every stage writes its outputs under temporary names (``.NAME.tmp-PID`` next to the final file), renames
them into place only after the stage finished and its checks passed, and then records a *completion
marker* ``<state_dir>/<stage>.json``. The marker holds a key computed from the stage's parameters and
the size/mtime of its inputs, plus the sizes of its outputs. A rerun skips a stage only when its marker
exists, the key is unchanged and every output still has the recorded size; ``force=True`` redoes it.

Crash safety: the marker of a stage is deleted *before* the stage starts rewriting, and written (itself
atomically) only after all outputs are renamed. A crash, ``kill -9`` or Ctrl-C at any point therefore
leaves either temporary files (never trusted, removed by the next run) or final files without a marker
(never trusted, rebuilt by the next run). Because renamed outputs get a new mtime, redoing one stage
invalidates every later stage that reads its files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

StageReport = dict[str, Any]
"""JSON-serialisable facts a stage returns (line counts, dropped pairs, ...), kept in its marker."""

BuildFunction = Callable[[Mapping[Path, Path]], StageReport]
"""Writes every final output ``path`` to ``temps[path]`` and returns the stage report."""


def temporary_path(final: Path) -> Path:
    """Where a stage writes ``final`` before renaming it; unique per process."""
    return final.with_name(f".{final.name}.tmp-{os.getpid()}")


def remove_stale_temporaries(directory: Path) -> None:
    """Delete temporary files/dirs left by a killed run (``.NAME.tmp-PID`` whose PID is not running)."""
    if not directory.is_dir():
        return
    for entry in directory.iterdir():
        name = entry.name
        if not (name.startswith(".") and ".tmp-" in name):
            continue
        pid_text = name.rsplit(".tmp-", 1)[1]
        if pid_text.isdigit() and int(pid_text) != os.getpid() and _pid_alive(int(pid_text)):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def write_text_atomically(path: Path, text: str) -> None:
    tmp = temporary_path(path)
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _input_fingerprint(path: Path) -> list[Any]:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return [str(path), None]
    return [str(path.resolve()), stat.st_size, stat.st_mtime_ns]


@dataclass
class StageRunner:
    """Runs named stages, skipping those whose completion marker is valid."""

    state_dir: Path
    force: bool = False
    log: Callable[[str], None] = field(default=lambda message: print(message, file=sys.stderr, flush=True))
    reports: dict[str, StageReport] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)

    def marker_path(self, name: str) -> Path:
        return self.state_dir / f"{name}.json"

    def stage_key(self, name: str, inputs: Iterable[Path], params: Mapping[str, Any]) -> str:
        payload = {
            "stage": name,
            "params": params,
            "inputs": [_input_fingerprint(Path(p)) for p in inputs],
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()

    def is_complete(self, name: str, key: str, outputs: Iterable[Path]) -> bool:
        marker = self.marker_path(name)
        try:
            recorded = json.loads(marker.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return False
        if recorded.get("key") != key:
            return False
        sizes = recorded.get("outputs", {})
        for out in outputs:
            try:
                if Path(out).stat().st_size != sizes.get(str(out)):
                    return False
            except FileNotFoundError:
                return False
        self.reports[name] = recorded.get("report", {})
        return True

    def run(
        self,
        name: str,
        inputs: Iterable[Path],
        outputs: Iterable[Path],
        params: Mapping[str, Any],
        build: BuildFunction,
    ) -> StageReport:
        """Run ``build`` unless the stage is already complete for these inputs and parameters."""
        inputs, outputs = [Path(p) for p in inputs], [Path(p) for p in outputs]
        key = self.stage_key(name, inputs, params)
        if not self.force and self.is_complete(name, key, outputs):
            self.log(f"[{name}] up to date, skipped (use --force to redo)")
            return self.reports[name]
        self.marker_path(name).unlink(missing_ok=True)
        for directory in {out.parent for out in outputs}:
            directory.mkdir(parents=True, exist_ok=True)
            remove_stale_temporaries(directory)
        temps = {out: temporary_path(out) for out in outputs}
        started = time.monotonic()
        self.log(f"[{name}] running")
        try:
            report = build(temps)
            missing = [str(out) for out, tmp in temps.items() if not tmp.exists()]
            if missing:
                raise RuntimeError(f"stage {name} did not write: {', '.join(missing)}")
            for out, tmp in temps.items():
                os.replace(tmp, out)
        finally:
            for tmp in temps.values():
                tmp.unlink(missing_ok=True)
        report = dict(report)
        report["seconds"] = round(time.monotonic() - started, 2)
        record = {
            "stage": name,
            "key": key,
            "outputs": {str(out): out.stat().st_size for out in outputs},
            "report": report,
        }
        write_text_atomically(self.marker_path(name), json.dumps(record, indent=1, sort_keys=True))
        self.reports[name] = report
        self.log(f"[{name}] done in {report['seconds']:.1f}s")
        return report
