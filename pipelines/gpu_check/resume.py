"""The GPU check's ``resume`` rows: a run saved at step ``--resume-at`` and resumed to twice that must log the
losses and learning rates of the uninterrupted run (within a relative 1e-6; "exact" when bitwise equal)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from macaron_pipelines.gpu_check.device import Device
from macaron_pipelines.gpu_check.report import Row
from macaron_pipelines.gpu_check.runs import Run, train


def compare_resume(
    whole: Sequence[dict[str, Any]], resumed: Sequence[dict[str, Any]], rel: float = 1e-6
) -> dict[str, Any]:
    """Resumed run's records against the uninterrupted run's, step by step (mlm/nsp loss, lr, tokens)."""
    by_step = {r["step"]: r for r in whole}
    worst, mismatch, missing = 0.0, None, [r["step"] for r in resumed if r["step"] not in by_step]
    for r in resumed:
        a = by_step.get(r["step"])
        if a is None:
            continue
        for key in ("mlm_loss", "nsp_loss", "lr", "tokens"):
            x, y = float(a[key]), float(r[key])
            diff = abs(x - y) / max(abs(x), 1e-12)
            worst = max(worst, diff)
            if diff > rel and mismatch is None:
                mismatch = f"step {r['step']} {key}: {x!r} uninterrupted vs {y!r} resumed"
    steps = [r["step"] for r in resumed]
    ok = bool(steps) and not missing and mismatch is None
    return {
        "ok": ok,
        "steps": steps,
        "max_rel_diff": worst,
        "exact": ok and worst == 0.0,
        "mismatch": mismatch or (f"steps {missing} not in the uninterrupted run" if missing else None),
    }


def resume_row(run: Run, whole: list[dict[str, Any]], corpus: Path, work: Path, args: argparse.Namespace,
               device: Device, peak: float | None) -> Row:  # fmt: skip
    start = time.monotonic()
    end = min(2 * run.resume_at, run.steps)
    try:
        train(run, corpus, work, "split", run.resume_at, args, device, peak)
        resumed, _ = train(run, corpus, work, "split", end, args, device, peak)
    except RuntimeError as error:
        return Row("resume", run.label(), "FAIL", str(error), seconds=time.monotonic() - start)
    after = [r for r in resumed if r["step"] > run.resume_at]
    steps = [r["step"] for r in after]
    result = compare_resume(whole, after)
    ok = result["ok"] and steps == list(range(run.resume_at + 1, end + 1))
    how = "exact" if result["exact"] else f"max rel diff {result['max_rel_diff']:.1e}"
    problem = result["mismatch"] or f"logged steps {steps}"
    detail = f"saved at {run.resume_at}, resumed to {end}: {how if ok else problem}"
    return Row(
        "resume", run.label(), "ok" if ok else "FAIL", detail, seconds=time.monotonic() - start, data=result
    )
