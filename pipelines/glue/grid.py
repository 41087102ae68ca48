"""The fine-tuning grid: a search space × seeds, one run per point, and the ``fairseq-train`` command of a
run.

**BERT's grid, the default** (Devlin et al. 2019, appendix A.3): batch size {16, 32}, learning rate
{5e-5, 3e-5, 2e-5}, {2, 3, 4} epochs; everything else as in pre-training — dropout 0.1, Adam with
β = (0.9, 0.999), ε = 1e-6, weight decay 0.01 (not on biases and LayerNorm weights, as BERT's
``optimization.py``), learning rate warmed up linearly over the first 10 % of the updates then decayed
linearly to 0 (Google's ``run_classifier.py``: ``warmup_proportion`` 0.1), gradient clipping at 1.0,
sequences of at most 128 tokens (``max_seq_length``; longer pairs truncated by BERT's rule, never
dropped). Five seeds 100…500.

Other grids are named presets (:data:`PRESETS`, ``--grid-preset``), each with its source:

* ``macaron``: the Macaron authors' GLUE scripts (``bert/`` of their repository): batch {16, 32} (MNLI,
  QNLI, QQP: {16, 24}), lr {5e-5, 3e-5}, {3, 4, 5} epochs, weight decay {0, 0.01}, warm-up 10 %, seeds
  100…600;
* ``macaron-best``: the Macaron authors' searched setting per task (their ``test-our-best-setting.sh``,
  :mod:`macaron_pipelines.glue.authors_best`): one run per task, their batch size, rate, epochs, weight
  decay and seed, no gradient clipping, examples of up to 384 tokens;
* ``roberta``: Liu et al. 2019 (RoBERTa), appendix C, table 10: batch {16, 32}, lr {1e-5, 2e-5, 3e-5},
  10 epochs, weight decay 0.1, warm-up 6 %; Adam β = (0.9, 0.98), ε = 1e-6 as fairseq's
  ``examples/roberta/README.glue.md`` (which also turns gradient clipping off and picks the best epoch on
  dev; here clipping stays 1.0 and a run is scored after its last epoch).

**The model is the checkpoint's model.** ``fairseq-train`` builds the model from ``--arch`` and flags; a
pre-training flag left out (``--macaron-ffn-step``, ``--activation-fn``, ``--layernorm-eps``, the sizes
of an imported model) would silently return to the architecture's default. :func:`checkpoint_model_flags`
turns the checkpoint's saved model configuration into those flags, and refuses extra flags that contradict
it.

A run is identified by its task and configuration; its directory name says both
(``CoLA/bs32-lr5e-05-ep3-wd0.01-seed100``), so a rerun finds finished runs and continues the grid.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

from macaron_pipelines.fairseq_steps import without_options
from macaron_pipelines.glue import authors_best
from macaron_pipelines.glue.authors_best import TaskSetting


@dataclass(frozen=True)
class GridPreset:
    """A published fine-tuning grid."""

    name: str
    source: str
    batch_sizes: tuple[int, ...]
    lrs: tuple[float, ...]
    epochs: tuple[int, ...]
    weight_decays: tuple[float, ...]
    seeds: tuple[int, ...]
    warmup_ratio: float = 0.1
    adam_betas: tuple[float, float] = (0.9, 0.999)
    batch_sizes_by_task: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    settings_by_task: Mapping[str, TaskSetting] = field(default_factory=dict)
    """One setting (and seed) per task instead of the grid, unless a grid option is given."""
    train_flags: tuple[str, ...] = ()
    """Appended to every fairseq-train command of the preset (before the user's extra flags)."""

    def batch_sizes_for(self, task: str) -> tuple[int, ...]:
        return tuple(self.batch_sizes_by_task.get(task, self.batch_sizes))

    def points(self, task: str, args: Any) -> list[tuple[Config, int]]:
        """``(configuration, seed)`` of every run of ``task``: the task's setting when the preset has one and
        no grid option (``args``: batch_sizes, lrs, epochs, weight_decays, seeds; None = not given) is
        set, else the grid × seeds (the preset's values where an option is not given)."""
        setting = self.settings_by_task.get(task)
        options = ("batch_sizes", "lrs", "epochs", "weight_decays", "seeds")
        if setting is not None and all(getattr(args, name, None) is None for name in options):
            config = Config(setting.batch_size, setting.lr, setting.epochs, setting.weight_decay)
            return [(config, setting.seed)]
        configs = grid(
            args.batch_sizes or self.batch_sizes_for(task),
            args.lrs or self.lrs,
            args.epochs or self.epochs,
            args.weight_decays or self.weight_decays,
        )
        return [(config, seed) for config in configs for seed in (args.seeds or self.seeds)]


PRESETS = {
    "bert": GridPreset(
        "bert",
        "Devlin et al. 2019 (BERT), appendix A.3; warm-up 10 % and weight decay 0.01 as in "
        "Google's run_classifier.py / optimization.py",
        (16, 32),
        (5e-5, 3e-5, 2e-5),
        (2, 3, 4),
        (0.01,),
        (100, 200, 300, 400, 500),
    ),
    "macaron": GridPreset(
        "macaron",
        "the Macaron authors' GLUE fine-tuning scripts (bert/ of their repository)",
        (16, 32),
        (5e-5, 3e-5),
        (3, 4, 5),
        (0.0, 0.01),
        (100, 200, 300, 400, 500, 600),
        batch_sizes_by_task={"MNLI": (16, 24), "QNLI": (16, 24), "QQP": (16, 24)},
    ),
    "macaron-best": GridPreset(
        "macaron-best",
        "the Macaron authors' searched setting per task (test-our-best-setting.sh of their "
        "bert/ fork; pipelines/glue/authors_best.py)",
        (16,),
        (5e-5,),
        (4,),
        (0.0,),
        (200,),
        settings_by_task=authors_best.SETTINGS,
        train_flags=authors_best.FLAGS,
    ),
    "roberta": GridPreset(
        "roberta",
        "Liu et al. 2019 (RoBERTa), appendix C, table 10; Adam β and ε as fairseq's "
        "examples/roberta/README.glue.md",
        (16, 32),
        (1e-5, 2e-5, 3e-5),
        (10,),
        (0.1,),
        (100, 200, 300, 400, 500),
        warmup_ratio=0.06,
        adam_betas=(0.9, 0.98),
    ),
}
DEFAULT_PRESET = "bert"

BATCH_SIZES = PRESETS[DEFAULT_PRESET].batch_sizes
LEARNING_RATES = PRESETS[DEFAULT_PRESET].lrs
EPOCHS = PRESETS[DEFAULT_PRESET].epochs
WEIGHT_DECAYS = PRESETS[DEFAULT_PRESET].weight_decays
SEEDS = PRESETS[DEFAULT_PRESET].seeds
WARMUP_RATIO = PRESETS[DEFAULT_PRESET].warmup_ratio
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
    model_flags: tuple[str, ...] = ()  # the checkpoint's model configuration (checkpoint_model_flags)
    warmup_ratio: float = WARMUP_RATIO
    adam_betas: tuple[float, float] = (0.9, 0.999)

    @property
    def name(self) -> str:
        return f"{self.task}/{self.config.name()}-seed{self.seed}"

    def updates(self) -> tuple[int, int]:
        """(total updates, warm-up updates): epochs × batches per epoch, ``warmup_ratio`` of it warm-up."""
        total = self.config.epochs * math.ceil(self.train_examples / self.config.batch_size)
        return total, max(1, round(self.warmup_ratio * total))

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
        fields["model_flags"] = tuple(fields.get("model_flags", ()))
        fields["adam_betas"] = tuple(fields.get("adam_betas", (0.9, 0.999)))
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
    q = shlex.quote
    betas = f"({spec.adam_betas[0]:g}, {spec.adam_betas[1]:g})"
    command = shlex.split(
        f"fairseq-train {q(str(spec.data_dir))} --user-dir {q(str(user_dir))} "
        f"--task macaron_sentence_prediction --criterion sentence_prediction --arch {q(spec.arch)} "
        f"--num-classes {spec.num_classes} --optimizer adam_lr_groups --adam-betas {q(betas)} "
        f"--adam-eps 1e-06 --weight-decay {cfg.weight_decay:g} --no-decay-bias-and-norm --clip-norm 1.0 "
        f"--lr-scheduler polynomial_decay --lr {cfg.lr:g} --end-learning-rate 0 --warmup-updates {warmup} "
        f"--total-num-update {total} --max-update {total} --max-epoch {cfg.epochs} "
        f"--batch-size {cfg.batch_size} --dropout 0.1 --attention-dropout 0.1 --seed {spec.seed} "
        f"--tokens-per-sample {MAX_SEQ_LENGTH} --save-dir {q(str(save_dir))} --no-epoch-checkpoints "
        f"--save-interval-updates {SAVE_INTERVAL_UPDATES} --keep-interval-updates 1 --disable-validation "
        "--log-format json --log-interval 50"
    )
    if spec.regression:
        command += ["--regression-target"]
    if spec.new_layers.count:
        layers = spec.new_layers
        command += ["--pretrained-encoder", str(spec.checkpoint), "--new-encoder-layers", str(layers.count)]
        command += ["--init-scheme", layers.init_scheme]
        # --pretrained-encoder takes the sizes from the checkpoint itself; the rest of its model settings here
        command += without_options(spec.model_flags, SIZE_FLAGS)
        if layers.pretrained_lr_multiplier is not None:
            command += ["--pretrained-lr-multiplier", f"{layers.pretrained_lr_multiplier:g}"]
    else:  # the checkpoint's model, rebuilt from its saved configuration
        command += ["--finetune-from-model", str(spec.checkpoint), *spec.model_flags]
    return command + list(spec.extra_flags)


#: the checkpoint's model configuration → fairseq-train flags: every setting that shapes the model and that
#: fairseq-train would otherwise take from the architecture's defaults (the regularisation of fine-tuning,
#: dropout and attention dropout, is the grid's own: BERT fine-tunes with 0.1)
MODEL_FLAGS = {
    key: "--" + key.replace("_", "-")
    for key in (
        "encoder_layers encoder_embed_dim encoder_ffn_embed_dim encoder_attention_heads activation_fn "
        "activation_dropout encoder_normalize_before max_positions num_segments layernorm_eps "
        "macaron_ffn_step max_relative_positions"
    ).split()
}


#: the flags ``--pretrained-encoder`` sets from the checkpoint itself (models/pretrained_encoder.py)
SIZE_FLAGS = (
    "--encoder-layers",
    "--encoder-embed-dim",
    "--encoder-ffn-embed-dim",
    "--encoder-attention-heads",
)


class ModelConfigError(ValueError):
    """Extra fairseq-train flags contradict the checkpoint's model configuration."""


def _flag_value(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def checkpoint_model_flags(model_config: Any, extra_flags: Sequence[str] = ()) -> tuple[str, ...]:
    """The flags that rebuild the checkpoint's model (``model_config``: its saved ``cfg.model``, a
    Namespace or a mapping); a :class:`ModelConfigError` if ``extra_flags`` set one of them to another
    value."""
    config = dict(model_config) if isinstance(model_config, Mapping) else dict(vars(model_config))
    flags: list[str] = []
    wanted: dict[str, str | None] = {}
    for key, flag in MODEL_FLAGS.items():
        value = config.get(key)
        if value is None or (key == "max_relative_positions" and not value):
            continue
        if isinstance(value, bool):
            wanted[flag] = None if value else "false"
            if value:
                flags.append(flag)
            continue
        wanted[flag] = _flag_value(value)
        flags += [flag, wanted[flag]]
    extra = list(extra_flags)
    for i, token in enumerate(extra):
        flag, _, inline = token.partition("=")
        if flag not in wanted:
            continue
        given = inline or (extra[i + 1] if wanted[flag] is not None and i + 1 < len(extra) else None)
        expected = wanted[flag]
        if expected == "false" or (expected is not None and not _same(given, expected)):
            raise ModelConfigError(
                f"{flag} {given or ''} contradicts the checkpoint's model ({_describe(flag, expected)}): the "
                "fine-tuned model is the pre-trained one; remove the flag"
            )
    return tuple(flags)


def _same(given: str | None, expected: str) -> bool:
    if given is None:
        return False
    try:
        return float(given) == float(expected)
    except ValueError:
        return given == expected


def _describe(flag: str, expected: str | None) -> str:
    if expected == "false":
        return f"pre-trained without {flag}"
    return f"pre-trained with {flag}" if expected is None else f"pre-trained with {flag} {expected}"
