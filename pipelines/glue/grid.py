"""The fine-tuning grid: BERT's search space × seeds, one run per point, and the ``fairseq-train`` command
of a run.

BERT (Devlin et al. 2019, §A.3): batch size 16 or 32, learning rate 5e-5, 3e-5 (and 2e-5), 3 or 4 epochs
(the Macaron authors' scripts: 3, 4, 5; seeds 100-600; weight decay 0 or 0.01), linear warm-up over the
first 10 % of the updates then linear decay to 0, dropout 0.1, Adam β = (0.9, 0.999), ε = 1e-6 with
decoupled weight decay (fairseq's ``adam``), gradient clipping at 1.0, sequences of at most 128 tokens
(``--tokens-per-sample``; longer pairs truncated by BERT's rule, never dropped). The defaults here are
that space: {16, 32} × {5e-5, 3e-5} × {3, 4, 5} epochs, weight decay 0.01, five seeds 100…500.

A run is identified by its task and configuration; its directory name says both
(``CoLA/bs32-lr5e-05-ep3-wd0.01-seed100``), so a rerun finds finished runs and continues the grid.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

BATCH_SIZES = (16, 32)
LEARNING_RATES = (5e-5, 3e-5)
EPOCHS = (3, 4, 5)
WEIGHT_DECAYS = (0.01,)
SEEDS = (100, 200, 300, 400, 500)
WARMUP_RATIO = 0.1
MAX_SEQ_LENGTH = 128  # BERT's run_classifier.py max_seq_length (pairs truncated by BERT's rule)


@dataclass(frozen=True, order=True)
class Config:
    """One point of the search space (what selection compares, over seeds)."""

    batch_size: int
    lr: float
    epochs: int
    weight_decay: float

    def name(self) -> str:
        return f"bs{self.batch_size}-lr{self.lr:g}-ep{self.epochs}-wd{self.weight_decay:g}"


@dataclass(frozen=True)
class NewLayers:
    """DT-Fixup's mixed setting: K new layers between the pre-trained encoder and the head."""

    count: int = 0
    init_scheme: str = "dt-fixup"
    pretrained_lr_multiplier: float | None = None


@dataclass(frozen=True)
class RunSpec:
    task: str
    config: Config
    seed: int
    data_dir: Path
    checkpoint: Path
    arch: str
    num_classes: int
    regression: bool
    train_examples: int
    run_dir: Path
    new_layers: NewLayers = field(default_factory=NewLayers)
    extra_flags: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.task}/{self.config.name()}-seed{self.seed}"

    def updates(self) -> tuple[int, int]:
        """(total updates, warm-up updates): epochs × batches per epoch, 10 % of it warm-up."""
        total = self.config.epochs * math.ceil(self.train_examples / self.config.batch_size)
        return total, max(1, round(WARMUP_RATIO * total))

    def record(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("data_dir", "checkpoint", "run_dir"):
            out[key] = str(out[key])
        return out

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> RunSpec:
        fields = dict(record)
        fields["config"] = Config(**fields["config"])
        fields["new_layers"] = NewLayers(**fields.get("new_layers", {}))
        fields["extra_flags"] = tuple(fields.get("extra_flags", ()))
        for key in ("data_dir", "checkpoint", "run_dir"):
            fields[key] = Path(fields[key])
        return cls(**fields)


def grid(
    batch_sizes: Sequence[int] = BATCH_SIZES,
    lrs: Sequence[float] = LEARNING_RATES,
    epochs: Sequence[int] = EPOCHS,
    weight_decays: Sequence[float] = WEIGHT_DECAYS,
) -> list[Config]:
    return [Config(b, lr, e, wd) for b, lr, e, wd in product(batch_sizes, lrs, epochs, weight_decays)]


SAVE_INTERVAL_UPDATES = 2000
"""A periodic checkpoint inside long epochs (MNLI, QQP: ~12k updates an epoch at batch 32), which a run
requeued after a node failure resumes from."""


def train_command(spec: RunSpec, save_dir: Path, user_dir: Path) -> list[str]:
    """``fairseq-train`` for one run: the pre-trained model restored (or its encoder under new layers),
    BERT's optimizer and schedule; ``checkpoint_last.pt`` at each epoch end and every
    :data:`SAVE_INTERVAL_UPDATES` updates (with the optimizer state, so that a preempted run resumes where
    it stopped: ``--finetune-from-model`` starts from the pre-trained model only when the run has no
    checkpoint yet); no per-epoch checkpoints."""
    total, warmup = spec.updates()
    cfg = spec.config
    command = [
        "fairseq-train", str(spec.data_dir), "--user-dir", str(user_dir),
        "--task", "macaron_sentence_prediction", "--criterion", "sentence_prediction",
        "--arch", spec.arch, "--num-classes", str(spec.num_classes),
        "--optimizer", "adam", "--adam-betas", "(0.9, 0.999)", "--adam-eps", "1e-06",
        "--weight-decay", f"{cfg.weight_decay:g}", "--clip-norm", "1.0",
        "--lr-scheduler", "polynomial_decay", "--lr", f"{cfg.lr:g}", "--end-learning-rate", "0",
        "--warmup-updates", str(warmup), "--total-num-update", str(total), "--max-update", str(total),
        "--max-epoch", str(cfg.epochs), "--batch-size", str(cfg.batch_size),
        "--dropout", "0.1", "--attention-dropout", "0.1", "--seed", str(spec.seed),
        "--tokens-per-sample", str(MAX_SEQ_LENGTH),
        "--save-dir", str(save_dir), "--no-epoch-checkpoints",
        "--save-interval-updates", str(SAVE_INTERVAL_UPDATES), "--keep-interval-updates", "1",
        "--disable-validation", "--log-format", "json", "--log-interval", "50",
    ]  # fmt: skip
    if spec.regression:
        command += ["--regression-target"]
    if spec.new_layers.count:
        layers = spec.new_layers
        command += ["--pretrained-encoder", str(spec.checkpoint), "--new-encoder-layers", str(layers.count),
                    "--init-scheme", layers.init_scheme]  # fmt: skip
        command[command.index("--optimizer") + 1] = "adam_lr_groups"
        if layers.pretrained_lr_multiplier is not None:
            command += ["--pretrained-lr-multiplier", f"{layers.pretrained_lr_multiplier:g}"]
    else:
        command += ["--finetune-from-model", str(spec.checkpoint)]
    return command + list(spec.extra_flags)
