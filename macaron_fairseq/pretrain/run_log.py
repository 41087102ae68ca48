"""What a pre-training run tells: its messages (``[pretrain]`` lines on rank 0's stderr, above the progress
bar once there is one), the progress display, the step log ``SAVE_DIR/train_log.jsonl`` (one JSON record per
step and per validation), the experiment tracker, and ``SAVE_DIR/loss_curves.png`` drawn from the step log."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from macaron_fairseq.pretrain.progress import PretrainProgress
from macaron_fairseq.pretrain.tracking import Tracker
from macaron_workflow.atomic import write_text_atomically


class RunLog:
    """Rank 0 writes; the other ranks show nothing (their progress display and tracker are inactive)."""

    def __init__(self, rank: int, save_dir: Path, arch: str) -> None:
        self.rank, self.save_dir, self.arch = rank, save_dir, arch
        self.path = save_dir / "train_log.jsonl"
        self.progress: PretrainProgress | None = None
        self.tracker: Tracker | None = None

    def message(self, message: str) -> None:
        if self.progress is not None:
            self.progress.message(message)
        elif self.rank == 0:
            print(f"[pretrain] {message}", file=sys.stderr, flush=True)

    def start(
        self, step: int, max_update: int, log_interval: int, peak: float | None, **tracking: Any
    ) -> None:
        """The progress display and the tracker (``tracking``: :class:`.tracking.Tracker`'s options) of a run
        starting at ``step``."""
        active = self.rank == 0
        self.progress = PretrainProgress(active, step, max_update, log_interval, peak)
        name = f"{self.arch}-{self.save_dir.name}"
        self.tracker = Tracker(
            active=active, save_dir=self.save_dir, run_name=name, start_step=step, **tracking
        )

    def write(self, record: dict[str, Any]) -> None:
        """Append ``record`` to the step log and send it to the tracker (rank 0); a training step's record
        also advances the progress display."""
        if self.rank == 0:
            with open(self.path, "a", encoding="utf-8") as log:
                log.write(json.dumps(record) + "\n")
            if self.tracker is not None:
                self.tracker.log(record)
        if self.progress is not None and record.get("split") != "valid":
            self.progress.step(record)

    def close_display(self) -> None:
        if self.progress is not None:
            self.progress.close()

    def close_tracker(self) -> None:
        if self.tracker is not None:
            self.tracker.close()

    def truncate(self, step: int) -> None:
        """Drop the records after ``step`` (a run killed after its last checkpoint logged them; the resumed
        run logs those steps again)."""
        if not self.path.exists():
            return
        kept = [
            line
            for line in self.path.read_text(encoding="utf-8").splitlines()
            if line.strip() and json.loads(line)["step"] <= step
        ]
        write_text_atomically(self.path, "".join(f"{line}\n" for line in kept))

    def plot(self) -> None:
        """``SAVE_DIR/loss_curves.png`` from the step log so far (a failed plot never stops training)."""
        from macaron_workflow.step_log import plot_step_log, read_step_log

        try:
            plot_step_log(read_step_log(self.path), self.save_dir / "loss_curves.png", self.arch)
        except Exception as err:  # matplotlib, fonts, a full disk: the run matters more than its plot
            self.message(f"warning: loss_curves.png not written ({type(err).__name__}: {err})")
