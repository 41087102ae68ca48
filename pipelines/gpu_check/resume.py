"""The GPU check's ``resume`` rows: a run saved at step ``--resume-at`` and resumed to twice that must log the
losses and learning rates of the uninterrupted run, as closely as a rerun of the uninterrupted run does.

CUDA kernels are not bitwise deterministic (atomic adds in embedding and attention backward, cuBLAS's
split-K reductions), so two identical runs on a GPU may differ after a few steps; demanding 1e-6 of the
resumed run would fail a correct resume. The row therefore also reruns the uninterrupted run to the same
step (the run-to-run baseline) and accepts the resumed run when its largest relative difference is at most
:data:`BASELINE_FACTOR` times the baseline's, and never demands less than :data:`REL_FLOOR` ("exact" when
bitwise equal; a bitwise-equal resume, as on a CPU, passes under any tolerance and needs no rerun). A
wrong restore (optimizer moments, schedule, RNG, data position) shifts the losses by
orders of magnitude more than kernel non-determinism."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from macaron_pipelines.gpu_check.device import Device
from macaron_pipelines.gpu_check.report import Row
from macaron_pipelines.gpu_check.runs import Run, train

#: the resumed run may differ from the uninterrupted one by this many times what a rerun differs
BASELINE_FACTOR = 10.0
#: the tolerance when the rerun is exact (or nearly): CPU runs and deterministic kernels
REL_FLOOR = 1e-6


def tolerance(baseline: float) -> float:
    """The largest relative difference a resumed run may show, given a rerun's (:data:`BASELINE_FACTOR`)."""
    return max(REL_FLOOR, BASELINE_FACTOR * baseline)


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


def resume_row(
    run: Run,
    whole: list[dict[str, Any]],
    corpus: Path,
    work: Path,
    args: argparse.Namespace,
    device: Device,
    peak: float | None,
) -> Row:
    start = time.monotonic()
    end = min(2 * run.resume_at, run.steps)
    expected = list(range(run.resume_at + 1, end + 1))
    try:
        train(run, corpus, work, "split", run.resume_at, args, device, peak)
        resumed, _ = train(run, corpus, work, "split", end, args, device, peak)
        after = [r for r in resumed if r["step"] > run.resume_at]
        result = compare_resume(whole, after, rel=REL_FLOOR)
        exact = result["exact"] and [r["step"] for r in after] == expected
        # an exact resume passes under any tolerance: the rerun that sets one is needed only otherwise
        again = None if exact else train(run, corpus, work, "rerun", end, args, device, peak)[0]
    except RuntimeError as error:
        return Row("resume", run.label(), "FAIL", str(error), seconds=time.monotonic() - start)
    if again is None:
        result.update(baseline_max_rel_diff=None, tolerance=REL_FLOOR)
        detail = f"saved at {run.resume_at}, resumed to {end}: exact (bitwise; no rerun needed)"
        ok = True
    else:
        rerun = [r for r in again if r["step"] <= end]
        baseline = compare_resume(whole, rerun, rel=float("inf"))["max_rel_diff"]
        allowed = tolerance(baseline)
        result = compare_resume(whole, after, rel=allowed)
        result.update(baseline_max_rel_diff=baseline, tolerance=allowed)
        steps = [r["step"] for r in after]
        ok = result["ok"] and steps == expected
        how = f"max rel diff {result['max_rel_diff']:.1e} (allowed {allowed:.1e})"
        problem = result["mismatch"] or f"logged steps {steps}"
        detail = (
            f"saved at {run.resume_at}, resumed to {end}: {how if ok else problem}; a rerun differs by "
            f"{baseline:.1e}"
        )
    return Row(
        "resume", run.label(), "ok" if ok else "FAIL", detail, seconds=time.monotonic() - start, data=result
    )
