"""The one reader of checkpoints that users hand over (``--checkpoint``, ``--pretrained-encoder``,
``--init-from``, a save directory to export, a HuggingFace conversion).

A checkpoint is untrusted input: it is read with ``torch.load(weights_only=True)`` through the allow-list
of :mod:`macaron_workflow.checkpoint_safety` (the base layer, where :func:`load_checkpoint` and
:func:`restricted_loads` live, re-exported here: the tools read checkpoints without the plugin),
memory-mapped (``mmap=True``: the tensors stay on disk until used, so :func:`describe` costs the pickled
metadata only), and a refused global becomes one line that names it, the file and how to convert a file
the user trusts. Every failure is a
:class:`macaron_workflow.errors.UserError` (the CLIs print it as one line and exit 2):

* :class:`CheckpointError` — missing, unreadable, or not a PyTorch checkpoint;
* :class:`~macaron_workflow.checkpoint_safety.UnsafeCheckpointError` — it pickles a global outside
  the allow-list (nothing of it is executed).

Use::

    info = describe(path)                   # arch, model/task config, data directory, dictionary, vocabulary
    state, info = read_checkpoint(path)     # the whole state (tensors memory-mapped) and its description
    state = load_checkpoint(path)           # the whole state only

Code we do not own that calls ``torch.load(..., weights_only=False)`` itself (DeepSpeed's ``zero_to_fp32``)
runs inside :func:`restricted_loads` (with ``checkpoint_safety.deepspeed_globals()`` for a DeepSpeed save
directory).

The checkpoints the plugin's commands write (an upgrade, an import, an export) have one layout, built by
:func:`fairseq_checkpoint` (with :func:`cfg_of`, the configuration fairseq saves for parsed arguments).
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from macaron_workflow.checkpoint_safety import (  # the reading itself: shared with the tools
    CheckpointError,
    UnsafeCheckpointError,
    load_checkpoint,
    restricted_loads,
)

#: the state-dict key of a BERT encoder's token embedding (its rows are the vocabulary with ``<mask>``)
EMBEDDING_KEY = "encoder.embed_tokens.weight"


@dataclass(frozen=True)
class CheckpointInfo:
    """What a checkpoint says about itself (nothing here needs the tensors' data)."""

    path: Path
    kind: str
    """``"fairseq"`` (a ``model`` state dict), ``"deepspeed"`` (a ``module`` one) or ``"unknown"``."""
    arch: str | None
    """The registered architecture (``cfg.model._name`` / ``arch``, or the legacy ``args.arch``)."""
    model_config: argparse.Namespace | None
    task_config: argparse.Namespace | None
    data: Path | None
    """The task's data directory (the first of a ``:``-separated list), as recorded at training time."""
    embedding_rows: int | None
    """Rows of ``encoder.embed_tokens.weight``: the dictionary's size (with ``<mask>`` for BERT)."""
    embed_dim: int | None
    parameter_names: tuple[str, ...]

    @property
    def dictionary(self) -> Path | None:
        """The training dictionary, ``DATA/dict.txt`` (it may not exist on this machine)."""
        return None if self.data is None else self.data / "dict.txt"


def _namespace(config: Any) -> argparse.Namespace | None:
    if config is None:
        return None
    if isinstance(config, argparse.Namespace):
        return config
    if isinstance(config, Mapping):
        return argparse.Namespace(**{str(key): value for key, value in config.items()})
    return None


def _configs(state: Mapping[str, Any]) -> tuple[argparse.Namespace | None, argparse.Namespace | None]:
    """(model, task) configuration: the hydra ``cfg`` of fairseq >= 0.10, else the legacy ``args``; a
    DeepSpeed checkpoint of the pre-trainer keeps the run's fairseq configuration as ``fairseq_cfg``."""
    cfg = state.get("cfg") or state.get("fairseq_cfg")
    if isinstance(cfg, Mapping):
        model, task = _namespace(cfg.get("model")), _namespace(cfg.get("task"))
        if task is None and model is not None and hasattr(model, "data"):
            task = model  # a legacy Namespace of every option, stored as cfg["model"]
        if model is not None or task is not None:
            return model, task
    args = _namespace(state.get("args"))
    return args, args


def describe_state(path: str | Path, state: Mapping[str, Any]) -> CheckpointInfo:
    """The :class:`CheckpointInfo` of an already loaded state."""
    weights = state.get("model")
    kind = "fairseq"
    if not isinstance(weights, Mapping):
        weights = state.get("module")
        kind = "deepspeed" if isinstance(weights, Mapping) else "unknown"
    weights = weights if isinstance(weights, Mapping) else {}
    model, task = _configs(state)
    arch = None
    if model is not None:
        arch = getattr(model, "arch", None) or getattr(model, "_name", None)
    data = getattr(task, "data", None) if task is not None else None
    embedding = weights.get(EMBEDDING_KEY)
    shape = tuple(embedding.shape) if isinstance(embedding, torch.Tensor) and embedding.dim() == 2 else None
    return CheckpointInfo(
        path=Path(path),
        kind=kind,
        arch=None if arch is None else str(arch),
        model_config=model,
        task_config=task,
        data=Path(str(data).split(":")[0]) if data else None,
        embedding_rows=None if shape is None else int(shape[0]),
        embed_dim=None if shape is None else int(shape[1]),
        parameter_names=tuple(str(name) for name in weights),
    )


def read_checkpoint(path: str | Path, flag: str | None = None) -> tuple[dict[str, Any], CheckpointInfo]:
    """The state (tensors memory-mapped) and its description, from one read of the file."""
    state = load_checkpoint(path, flag)
    return state, describe_state(path, state)


@functools.lru_cache(maxsize=16)
def _describe_cached(path: str, mtime_ns: int, size: int, flag: str | None) -> CheckpointInfo:
    return describe_state(path, load_checkpoint(path, flag))


def describe(path: str | Path, flag: str | None = None) -> CheckpointInfo:
    """What ``path`` is (arch, model and task configuration, data directory, dictionary, vocabulary size),
    read once per process and file version (memory-mapped: the weights are not read)."""
    path = Path(path)
    try:
        stat = path.stat()
    except OSError:
        return describe_state(path, load_checkpoint(path, flag))  # raises the one-line error
    return _describe_cached(str(path), stat.st_mtime_ns, stat.st_size, flag)


def cfg_of(args: argparse.Namespace) -> dict[str, Any]:
    """The configuration fairseq saves for the parsed arguments ``args`` (``cfg`` of a checkpoint): their
    omegaconf form as plain containers, interpolations resolved and enums as strings."""
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from omegaconf import OmegaConf

    return OmegaConf.to_container(convert_namespace_to_omegaconf(args), resolve=True, enum_to_str=True)


def fairseq_checkpoint(
    cfg: Any,
    model: Mapping[str, Any],
    criterion: str,
    *,
    optimizer: str = "none",
    num_updates: int = 0,
    extra_state: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A fairseq checkpoint without optimizer state, as the plugin's commands write it: the six keys
    ``args`` (None), ``cfg``, ``model`` (the state dict), ``optimizer_history`` (one entry naming
    ``criterion``, ``optimizer`` and ``num_updates``), ``extra_state`` (epoch 1, no validation loss, then
    ``extra_state``'s entries) and ``last_optimizer_state`` (None), in that order. ``fairseq-generate``, the
    hub, ``--restore-file`` and ``--finetune-from-model`` load it; the caller saves it."""
    return {
        "args": None,
        "cfg": cfg,
        "model": model,
        "optimizer_history": [
            {
                "criterion_name": criterion,
                "optimizer_name": optimizer,
                "lr_scheduler_state": {},
                "num_updates": num_updates,
            }
        ],
        "extra_state": {"train_iterator": {"epoch": 1}, "val_loss": None, **(extra_state or {})},
        "last_optimizer_state": None,
    }


__all__ = [
    "CheckpointError",
    "CheckpointInfo",
    "UnsafeCheckpointError",
    "cfg_of",
    "describe",
    "describe_state",
    "fairseq_checkpoint",
    "load_checkpoint",
    "read_checkpoint",
    "restricted_loads",
]
