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

Some stages cannot write under temporary names: training writes its checkpoint directory itself and
resumes from it (``fairseq-train`` reloads ``checkpoint_last.pt``). :meth:`StageRunner.run_in_place` runs
those with the same markers: the completion marker is written only after the command succeeded, and a
*start record* ``<stage>.started.json`` remembers the settings the workspace was started with. A rerun with
the same settings resumes in the workspace; with other settings the old workspace is moved aside
(``NAME.before-YYYYmmdd-HHMMSS``, nothing is deleted) and the stage starts afresh.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from macaron_workflow.atomic import remove_stale_temporaries, temporary_path, write_text_atomically

StageReport = dict[str, Any]
"""JSON-serialisable facts a stage returns (line counts, dropped pairs, ...), kept in its marker."""

BuildFunction = Callable[[Mapping[Path, Path]], StageReport]
"""Writes every final output ``path`` to ``temps[path]`` and returns the stage report."""

InPlaceBuild = Callable[[], StageReport]
"""Writes the outputs of an in-place stage directly (resuming from what is in its workspace)."""


def _free_name(path: Path) -> Path:
    """``path``, or ``path.2``, ``path.3``, ... whichever does not exist yet."""
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}.{n}")
    return candidate


def _input_fingerprint(path: Path) -> list[Any]:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return [str(path), None]
    return [str(path.resolve()), stat.st_size, stat.st_mtime_ns]


def _take_over(record_path: Path, field_name: str, former: str, key: str) -> None:
    """Rewrite the JSON record at ``record_path`` with ``key`` when its ``field_name`` is ``former``."""
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return
    if former != key and record.get(field_name) == former:
        record[field_name] = key
        write_text_atomically(record_path, json.dumps(record, indent=1, sort_keys=True))


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

    def start_record_path(self, name: str) -> Path:
        return self.state_dir / f"{name}.started.json"

    def stage_key(self, name: str, inputs: Iterable[Path], params: Mapping[str, Any]) -> str:
        payload = {"stage": name, "params": params, "inputs": [_input_fingerprint(Path(p)) for p in inputs]}
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
        return self._mark_complete(name, key, outputs, report, started)

    def run_in_place(
        self,
        name: str,
        inputs: Iterable[Path],
        outputs: Iterable[Path],
        params: Mapping[str, Any],
        build: InPlaceBuild,
        workspace: Path,
        resume_params: Mapping[str, Any] | None = None,
        former_params: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None,
    ) -> StageReport:
        """Run ``build``, which writes ``outputs`` inside ``workspace`` itself and resumes from what it
        finds there, unless the stage is complete for these inputs and ``params``.

        ``resume_params`` (default: ``params``) are the settings a partial workspace can be resumed
        with; ``params`` may hold more (e.g. the number of updates, which can grow between runs). When the
        workspace was started with other ``resume_params`` (or other inputs), it is moved aside first.
        ``former_params``: (params, resume_params) as an older version of the stage wrote them for the
        same settings; records written with them are taken over (rewritten with the new keys), so that a
        change of what the keys hold does not redo or move aside a finished or started run.
        """
        inputs, outputs, workspace = [Path(p) for p in inputs], [Path(p) for p in outputs], Path(workspace)
        key = self.stage_key(name, inputs, params)
        resume_key = self.stage_key(name, inputs, params if resume_params is None else resume_params)
        if former_params is not None:
            former, former_resume = (self.stage_key(name, inputs, p) for p in former_params)
            _take_over(self.marker_path(name), "key", former, key)
            _take_over(self.start_record_path(name), "resume_key", former_resume, resume_key)
        if not self.force and self.is_complete(name, key, outputs):
            self.log(f"[{name}] up to date, skipped (use --force to redo)")
            return self.reports[name]
        self.marker_path(name).unlink(missing_ok=True)
        start_record = self.start_record_path(name)
        try:
            started_with = json.loads(start_record.read_text(encoding="utf-8")).get("resume_key")
        except (FileNotFoundError, json.JSONDecodeError):
            started_with = None
        if workspace.exists() and any(workspace.iterdir()):
            if self.force or started_with != resume_key:
                stamp = time.strftime("%Y%m%d-%H%M%S")
                aside = _free_name(workspace.with_name(f"{workspace.name}.before-{stamp}"))
                why = "--force" if self.force else "its settings or inputs changed"
                self.log(f"[{name}] {why}: moving the previous {workspace} aside to {aside}")
                workspace.rename(aside)
            else:
                self.log(f"[{name}] resuming in {workspace}")
        workspace.mkdir(parents=True, exist_ok=True)
        write_text_atomically(start_record, json.dumps({"stage": name, "resume_key": resume_key}, indent=1))
        started = time.monotonic()
        self.log(f"[{name}] running")
        report = build()
        missing = [str(out) for out in outputs if not out.exists()]
        if missing:
            raise RuntimeError(f"stage {name} did not write: {', '.join(missing)}")
        return self._mark_complete(name, key, outputs, report, started)

    def adopt_workspace(
        self, name: str, inputs: Iterable[Path], resume_params: Mapping[str, Any], workspace: Path
    ) -> bool:
        """Record a non-empty ``workspace`` that has no start record (one started before this stage had
        markers, e.g. by an older version) as started with ``resume_params``, so that :meth:`run_in_place`
        resumes in it instead of moving it aside. Returns whether it did."""
        workspace, record = Path(workspace), self.start_record_path(name)
        if record.exists() or not workspace.is_dir() or not any(workspace.iterdir()):
            return False
        resume_key = self.stage_key(name, [Path(p) for p in inputs], resume_params)
        write_text_atomically(record, json.dumps({"stage": name, "resume_key": resume_key}, indent=1))
        self.log(f"[{name}] adopting {workspace} (started before its stage had markers)")
        return True

    def _mark_complete(
        self, name: str, key: str, outputs: list[Path], report: StageReport, started: float
    ) -> StageReport:
        """Write the completion marker (after every output is in place) and keep the report."""
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
