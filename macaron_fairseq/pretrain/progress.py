"""What rank 0 shows while pre-training: a progress bar on a terminal (like the translation pipelines'
``macaron_tools/train_progress.py``), and a progress line every ``--log-interval`` steps (on a terminal
written above the bar; in a batch job's log the only output): step, MLM loss, NSP loss and accuracy,
learning rate, loss scale (fp16), tokens/s and samples/s over the interval, and MFU on a GPU."""

from __future__ import annotations

from typing import Any, TextIO

from macaron_workflow.progress import ProgressDisplay


class IntervalRates:
    """Throughput over the steps since the last progress line (one step's rate is too noisy)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.tokens = self.pairs = self.flops = self.seconds = 0.0

    def add(self, record: dict[str, Any]) -> None:
        self.tokens += record["tokens"]
        self.pairs += record["pairs"]
        self.flops += record.get("model_flops", 0.0)
        self.seconds += record["seconds"]

    def rates(self) -> dict[str, float]:
        seconds = max(self.seconds, 1e-9)
        return {
            "tokens_per_second": self.tokens / seconds,
            "samples_per_second": self.pairs / seconds,
            "flops_per_second": self.flops / seconds,
        }


def progress_line(record: dict[str, Any], rates: dict[str, float], max_update: int, mfu: float | None) -> str:
    parts = [
        f"step {record['step']}/{max_update}",
        f"mlm {record['mlm_loss']:.3f} bits",
        f"nsp {record['nsp_loss']:.3f} bits ({record['nsp_accuracy']:.1f}%)",
        f"lr {record['lr']:.3g}",
    ]
    if "loss_scale" in record:
        parts.append(f"loss scale {record['loss_scale']:g}")
    if record.get("skipped_steps"):
        parts.append(f"{record['skipped_steps']} overflow steps skipped")
    parts.append(f"{rates['tokens_per_second']:.0f} tokens/s, {rates['samples_per_second']:.1f} samples/s")
    if mfu is not None:
        parts.append(f"MFU {100 * mfu:.1f}%")
    return " | ".join(parts)


class PretrainProgress(ProgressDisplay):
    """Rank 0's display; other ranks get an instance that shows nothing (the bar and lines of
    :class:`macaron_workflow.progress.ProgressDisplay`)."""

    def __init__(
        self,
        active: bool,
        start_step: int,
        max_update: int,
        log_interval: int,
        peak_flops: float | None,
        stream: TextIO | None = None,
        use_bar: bool | None = None,
    ) -> None:
        super().__init__(
            stream,
            total=max_update,
            initial=start_step,
            unit="step",
            desc="pre-train",
            use_bar=use_bar,
            prefix="[pretrain] ",
            active=active,
        )
        self.max_update = max_update
        self.log_interval = max(1, log_interval)
        self.peak_flops = peak_flops
        self.interval = IntervalRates()

    def step(self, record: dict[str, Any]) -> None:
        """Account one training record; print the progress line at the interval and at the end."""
        self.interval.add(record)
        postfix = f"mlm {record['mlm_loss']:.3f} nsp {record['nsp_accuracy']:.0f}% lr {record['lr']:.2g}"
        self.advance(1, postfix)
        step = record["step"]
        if step % self.log_interval == 0 or step == self.max_update:
            rates = self.interval.rates()
            mfu = rates["flops_per_second"] / self.peak_flops if self.peak_flops else None
            self.message(progress_line(record, rates, self.max_update, mfu))
            self.interval.reset()
