"""The GPU check's ``pretrain`` rows: a run of the real trainer must log every step and save its last one;
its tokens/s and MFU (model FLOPs of :class:`macaron_fairseq.pretrain.flops.BertFlops`, as the trainer logs
them) against the GPU's peak, after the warm-up steps."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from macaron_pipelines.gpu_check.device import Device, peak_tflops
from macaron_pipelines.gpu_check.report import Row
from macaron_pipelines.gpu_check.resume import resume_row
from macaron_pipelines.gpu_check.runs import Run, train


def throughput(
    records: Sequence[dict[str, Any]], warmup: int, peak: float | None, devices: int
) -> dict[str, Any]:
    """tokens/s and MFU over the training records after ``warmup`` steps (sums: long steps weigh more):
    MFU = Σ model FLOPs / Σ seconds / (peak × devices)."""
    timed = [r for r in records if r["step"] > warmup] or list(records)
    seconds = sum(r["seconds"] for r in timed)
    out: dict[str, Any] = {
        "timed_steps": len(timed),
        "tokens_per_second": sum(r["tokens"] for r in timed) / seconds,
        "samples_per_second": sum(r["pairs"] for r in timed) / seconds,
        "median_step_seconds": statistics.median(r["seconds"] for r in timed),
    }
    flops = sum(r.get("model_flops", 0.0) for r in timed)
    out["mfu"] = flops / seconds / (peak * 1e12 * devices) if peak and flops else None
    return out


def part_pretrain(
    run: Run, corpus: Path, work: Path, args: argparse.Namespace, device: Device, peak: float | None
) -> list[Row]:
    """The run's row and, with ``resume_at``, its resume row."""
    if run.skip:
        rows = [Row("pretrain", run.label(), "skip", run.skip)]
        return rows + ([Row("resume", run.label(), "skip", run.skip)] if run.resume_at else [])
    start = time.monotonic()
    try:
        records, save_dir = train(run, corpus, work, "whole", run.steps, args, device, peak)
    except RuntimeError as error:
        return [Row("pretrain", run.label(), "FAIL", str(error), seconds=time.monotonic() - start)]
    saved = sorted(p.name for p in save_dir.glob("step*"))
    speed = throughput(records, args.warmup, peak, device.count)
    first, last = (
        records[0]["mlm_loss"],
        statistics.fmean(r["mlm_loss"] for r in records[-max(1, len(records) // 10) :]),
    )
    ok = [r["step"] for r in records] == list(range(1, run.steps + 1)) and f"step{run.steps}" in saved
    detail = f"{len(records)} steps, mlm loss {first:.2f} → {last:.2f}, saved {', '.join(saved) or 'nothing'}"
    if speed["mfu"] is None:
        detail += f"; MFU {peak_tflops(device.name, args.peak_tflops)[1]}"
    if "loss_scale" in records[-1]:
        detail += f", loss scale {records[-1]['loss_scale']:g}"
    data = {**speed, "first_mlm_loss": first, "last_mlm_loss": last}
    status = "ok" if ok else "FAIL"
    took = time.monotonic() - start
    rows = [
        Row("pretrain", run.label(), status, detail, speed["tokens_per_second"], speed["mfu"], took, data)
    ]
    if run.resume_at:
        rows.append(resume_row(run, records, corpus, work, args, device, peak))
    return rows
