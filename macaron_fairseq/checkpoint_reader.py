"""The one reader of checkpoints that users hand over (``--checkpoint``, ``--pretrained-encoder``,
``--init-from``, a save directory to export, a HuggingFace conversion).

A checkpoint is untrusted input: it is read with ``torch.load(weights_only=True)`` through the allow-list
of :mod:`macaron_fairseq.repairs.checkpoint_safety`, memory-mapped (``mmap=True``: the tensors stay on disk
until used, so :func:`describe` costs the pickled metadata only), and a refused global becomes one line that
names it, the file and how to convert a file the user trusts. Every failure is a
:class:`macaron_workflow.errors.UserError` (the CLIs print it as one line and exit 2):

* :class:`CheckpointError` — missing, unreadable, or not a PyTorch checkpoint;
* :class:`~macaron_fairseq.repairs.checkpoint_safety.UnsafeCheckpointError` — it pickles a global outside
  the allow-list (nothing of it is executed).

Use::

    info = describe(path)                   # arch, model/task config, data directory, dictionary, vocabulary
    state, info = read_checkpoint(path)     # the whole state (tensors memory-mapped) and its description
    state = load_checkpoint(path)           # the whole state only

Code we do not own that calls ``torch.load(..., weights_only=False)`` itself (DeepSpeed's ``zero_to_fp32``)
runs inside :func:`restricted_loads` (with ``checkpoint_safety.deepspeed_globals()`` for a DeepSpeed save
directory).
"""

from __future__ import annotations

import argparse
import functools
import os
import pickle
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from macaron_fairseq.repairs import checkpoint_safety
from macaron_fairseq.repairs.checkpoint_safety import UnsafeCheckpointError, is_refusal, unsafe_checkpoint
from macaron_workflow.errors import UserError, cannot_read

#: the state-dict key of a BERT encoder's token embedding (its rows are the vocabulary with ``<mask>``)
EMBEDDING_KEY = "encoder.embed_tokens.weight"


class CheckpointError(UserError):
    """A checkpoint file that is missing, unreadable or not a PyTorch checkpoint."""


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

    @property
    def is_bert_encoder(self) -> bool:
        return self.kind == "fairseq" and self.arch is not None and self.embedding_rows is not None


def _label(path: Path, flag: str | None) -> str:
    return f"{flag} {path}" if flag else str(path)


def _torch_load(path: Path, mmap: bool) -> Any:
    return torch.load(str(path), map_location="cpu", mmap=mmap, weights_only=True)


def _starts_like_a_pickle(path: Path) -> bool:
    """A pickle (torch's legacy format) starts with the PROTO opcode 0x80 (protocol 2 and later)."""
    with path.open("rb") as f:
        return f.read(1) == b"\x80"


def load_checkpoint(path: str | Path, flag: str | None = None) -> dict[str, Any]:
    """The whole state of ``path``, tensors memory-mapped (a checkpoint in torch's legacy, non-zip format is
    read into memory), through the allow-list. ``flag`` (``"--checkpoint"``) prefixes the messages.

    Raises :class:`CheckpointError` or :class:`UnsafeCheckpointError` (both :class:`UserError`)."""
    path = Path(path)
    label = _label(path, flag)
    if not path.exists():
        raise CheckpointError(f"{label}: no such file")
    if path.is_dir():
        raise CheckpointError(f"{label}: is a directory, not a checkpoint file")
    checkpoint_safety.install()
    try:
        try:
            state = _torch_load(path, mmap=True)
        except RuntimeError as err:
            if "mmap can only be used" not in str(err):
                raise
            if not _starts_like_a_pickle(path):
                raise CheckpointError(f"{label}: not a PyTorch checkpoint (neither zip nor pickle)") from None
            state = _torch_load(path, mmap=False)  # the legacy format cannot be memory-mapped
    except CheckpointError:
        raise
    except pickle.UnpicklingError as err:
        if is_refusal(err):
            raise unsafe_checkpoint(path, err, flag) from None
        raise CheckpointError(f"{label}: not a PyTorch checkpoint ({_first_line(err)})") from None
    except OSError as err:
        raise CheckpointError(str(cannot_read(label, err))) from None
    except Exception as err:  # torch reports a truncated or foreign file with many exception types
        raise CheckpointError(f"{label}: not a PyTorch checkpoint ({_first_line(err)})") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{label}: not a checkpoint (it holds a {type(state).__name__}, not a dict)")
    return state


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    if not text:
        return type(err).__name__
    first = text.splitlines()[0]
    return f"{type(err).__name__}: {first.split('. ')[0]}"


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


@contextmanager
def restricted_loads(extra_globals: Sequence[Any] = ()) -> Iterator[None]:
    """Inside: every ``torch.load`` — also one of code we do not own that asks for ``weights_only=False``
    (DeepSpeed's ``zero_to_fp32``) — is the allow-listed restricted load; a refusal names the file.
    ``extra_globals`` are allowed too, inside only (e.g. ``checkpoint_safety.deepspeed_globals()``)."""
    checkpoint_safety.install()
    original = torch.load

    @functools.wraps(original)
    def load(f: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs["weights_only"] = True
        try:
            return original(f, *args, **kwargs)
        except pickle.UnpicklingError as err:
            if is_refusal(err):
                where = f if isinstance(f, (str, os.PathLike)) else getattr(f, "name", f)
                raise unsafe_checkpoint(where, err) from None
            raise

    torch.load = load
    try:
        with torch.serialization.safe_globals(list(extra_globals)):
            yield
    finally:
        torch.load = original


__all__ = [
    "CheckpointError",
    "CheckpointInfo",
    "UnsafeCheckpointError",
    "describe",
    "describe_state",
    "load_checkpoint",
    "read_checkpoint",
    "restricted_loads",
]
