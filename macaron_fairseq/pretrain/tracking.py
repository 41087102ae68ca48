"""Experiment tracking for the pre-trainer (rank 0): TensorBoard scalars with ``--tensorboard-logdir``,
Weights & Biases with ``--wandb-project`` (fairseq's own flags, honoured here).

Per step: ``train/mlm_loss`` and ``train/nsp_loss`` (bits, as the log), the accuracies, ``train/lr``,
``train/loss_scale`` (fp16), ``train/tokens_per_second``, ``train/samples_per_second`` and ``train/mfu``
(on a GPU whose peak is known); per validation ``valid/mlm_loss``, ``valid/ppl``, ``valid/nsp_accuracy``.
TensorBoard is written with ``tensorboardX`` (a project requirement). A resumed run purges the events after
its checkpoint's step (TensorBoard's ``purge_step``) and continues the same W&B run (its id is kept in
``SAVE_DIR/wandb_run_id``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from macaron_workflow.errors import UserError

TRAIN_SCALARS = (
    "mlm_loss",
    "nsp_loss",
    "mlm_accuracy",
    "nsp_accuracy",
    "lr",
    "loss_scale",
    "tokens_per_second",
    "samples_per_second",
    "mfu",
)
VALID_SCALARS = ("mlm_loss", "ppl", "nsp_accuracy")


def scalars(record: dict[str, Any]) -> dict[str, float]:
    """The tracked scalars of one log record (a training step, or a validation: ``split`` = valid)."""
    if record.get("split") == "valid":
        return {f"valid/{key}": float(record[key]) for key in VALID_SCALARS if key in record}
    return {f"train/{key}": float(record[key]) for key in TRAIN_SCALARS if key in record}


class Tracker:
    """Sends the log records to TensorBoard and/or W&B; does nothing when neither is asked for (or on a rank
    other than 0)."""

    def __init__(
        self,
        *,
        active: bool,
        tensorboard_logdir: str | None,
        wandb_project: str | None,
        save_dir: Path,
        run_name: str,
        config: dict[str, Any],
        start_step: int,
    ) -> None:
        self.tensorboard = None
        self.wandb_run = None
        if not active:
            return
        if tensorboard_logdir:
            from tensorboardX import SummaryWriter

            self.tensorboard = SummaryWriter(
                logdir=str(tensorboard_logdir), purge_step=start_step + 1 if start_step else None
            )
        if wandb_project:
            self.wandb_run = start_wandb(wandb_project, save_dir, run_name, config)

    def log(self, record: dict[str, Any]) -> None:
        values = scalars(record)
        step = int(record["step"])
        if self.tensorboard is not None:
            for name, value in values.items():
                self.tensorboard.add_scalar(name, value, step)
        if self.wandb_run is not None:
            self.wandb_run.log(values, step=step)

    def close(self) -> None:
        if self.tensorboard is not None:
            self.tensorboard.close()
            self.tensorboard = None
        if self.wandb_run is not None:
            self.wandb_run.finish()
            self.wandb_run = None


def start_wandb(project: str, save_dir: Path, run_name: str, config: dict[str, Any]) -> Any:
    """A W&B run of ``project``, resumed if this save directory started one before."""
    try:
        import wandb
    except ImportError as err:
        raise UserError(
            f"--wandb-project {project}: the wandb package is not installed (pip install wandb)"
        ) from err
    id_file = save_dir / "wandb_run_id"
    run_id = id_file.read_text(encoding="utf-8").strip() if id_file.exists() else wandb.util.generate_id()
    save_dir.mkdir(parents=True, exist_ok=True)
    id_file.write_text(run_id, encoding="utf-8")
    return wandb.init(
        project=project, id=run_id, name=run_name, resume="allow", dir=str(save_dir), config=config
    )
