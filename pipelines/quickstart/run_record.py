"""The run record (``results/quickstart.json``): what ran where, how long it took, what it scored."""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shlex
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from macaron_pipelines.quickstart.threads import NUMERIC_ENVIRONMENT
from macaron_pipelines.quickstart.workdir import Workdir
from macaron_tools import score_bleu
from macaron_workflow.cli import available_cores
from macaron_workflow.machine import cpu_model

STARTED_ENV = "MACARON_QUICKSTART_STARTED"
"""Set by quickstart.sh: the time (seconds since the epoch) before the installer ran, so that the recorded
wall time is the whole command's."""
COMMAND_ENV = "MACARON_QUICKSTART_COMMAND"
"""Set by quickstart.sh: the command as typed (recorded in results/quickstart.json)."""
EXAMPLES = 3
"""How many test translations (the first ones of the test split) the run record keeps."""
VERSIONS_OF = ("torch", "ve-fairseq", "sentencepiece", "sacremoses", "sacrebleu")


def package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def stage_markers(*state_dirs: Path) -> dict[str, int]:
    """Completion markers (``stage -> mtime``): a stage that ran rewrote its marker, a skipped one did not."""
    markers = {}
    for state_dir in state_dirs:
        for marker in state_dir.glob("*.json"):
            if not marker.name.endswith(".started.json"):
                markers[marker.stem] = marker.stat().st_mtime_ns
    return markers


def exact_matches(hypotheses: Sequence[str], references: Sequence[str], lowercase: bool) -> int:
    """How many hypotheses equal their reference (case-folded with ``--lowercase``)."""
    fold: Callable[[str], str] = str.lower if lowercase else str
    return sum(
        fold(hyp.strip()) == fold(ref.strip()) for hyp, ref in zip(hypotheses, references, strict=True)
    )


def read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def run_record(
    args: argparse.Namespace,
    paths: Workdir,
    bleu: Mapping[str, Any],
    *,
    started: float,
    load_at_start: Sequence[float],
    timings: Mapping[str, float],
    ran: Sequence[str],
    skipped: Sequence[str],
    cpu_capability: str | None,
) -> dict[str, Any]:
    """The run record (``results/quickstart.json``): what ran where, how long it took, what it scored."""
    sources = read_lines(paths.data / "raw" / f"test.{args.src}")
    references = read_lines(paths.data / "raw" / f"test.{args.tgt}")
    hypotheses = read_lines(paths.results / f"test.hyp.{args.tgt}")
    copy_source = score_bleu.bleu_record(sources, references, "13a", args.lowercase, "copy the source")
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = resource.getrusage(resource.RUSAGE_SELF)
    command = os.environ.get(COMMAND_ENV) or shlex.join(
        [sys.executable, "-m", "macaron_pipelines.quickstart", *sys.argv[1:]]
    )
    settings = {
        key: str(value) if isinstance(value, Path) else value
        for key, value in sorted(vars(args).items())
        if key not in ("workdir", "force", "skip_install")
    }
    return {
        "command": command,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "machine": {
            "cpu": cpu_model(),
            "cpu_count": os.cpu_count(),
            "usable_cores": available_cores(),
            "torch_cpu_capability": cpu_capability,
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "load_average": {"start": list(load_at_start), "end": [round(x, 2) for x in os.getloadavg()]},
        "versions": {name: package_version(name) for name in VERSIONS_OF},
        "threads": args.threads,
        "environment": {name: os.environ.get(name) for name in NUMERIC_ENVIRONMENT},
        "settings": settings,
        "wall_time_s": round(time.time() - started, 1),
        "cpu_time_s": round(children.ru_utime + children.ru_stime + own.ru_utime + own.ru_stime, 1),
        "seconds": {step: round(seconds, 1) for step, seconds in timings.items()},
        "stages_run": list(ran),
        "stages_skipped": list(skipped),
        "n_sentences": bleu["n_sentences"],
        "sacrebleu": bleu["scores"]["sacrebleu"]["score"],
        "tokenized_bleu": bleu["scores"]["tokenized"]["score"],
        "exact_matches": exact_matches(hypotheses, references, args.lowercase),
        "copy_source_sacrebleu": copy_source["score"],
        "examples": [
            {"source": src, "reference": ref, "hypothesis": hyp}
            for src, ref, hyp in list(zip(sources, references, hypotheses, strict=True))[:EXAMPLES]
        ],
    }


def wrapper_start_time() -> float | None:
    """When quickstart.sh started (before its installer), if it is this program's wrapper."""
    try:
        started = float(os.environ[STARTED_ENV])
    except (KeyError, ValueError):
        return None
    return started if 0 <= time.time() - started < 24 * 3600 else None
