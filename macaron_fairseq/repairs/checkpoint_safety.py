"""Load fairseq checkpoints under torch >= 2.6 without turning off ``weights_only``.

torch 2.6 made ``torch.load(weights_only=True)`` the default. fairseq checkpoints pickle their training
configuration (``argparse.Namespace``, omegaconf containers, enums, numpy scalars), so
``fairseq-generate`` fails with "Unsupported global". Upstream fairseq's fix is ``weights_only=False``,
which executes arbitrary pickled code from any checkpoint file. We instead allow-list the classes that
fairseq checkpoints actually contain (:data:`FAIRSEQ_CHECKPOINT_GLOBALS`) with
``torch.serialization.add_safe_globals``; anything else is still refused by torch's restricted
unpickler, and :func:`install` turns that refusal into an error naming the checkpoint and the global.

The allow-list, the one-line refusal and the restricted load live in the base layer,
:mod:`macaron_workflow.checkpoint_safety` (the tools read checkpoints without the plugin); this repair adds
fairseq's own broadcast placeholder and wraps fairseq's two checkpoint loaders,
``checkpoint_utils.load_checkpoint_to_cpu`` (``--path``, ``--restore-file``, ``--finetune-from-model``,
the hub) and ``load_ema_from_checkpoint`` (``--ema-seed-model``): each runs inside
:func:`~macaron_workflow.checkpoint_safety.restricted_loads`, so its ``torch.load`` is the allow-listed
``weights_only=True`` load *explicitly* — torch's default alone was not enough, since
``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` (set by users for other tools) turns that default off for every
``torch.load`` that does not pass ``weights_only`` (fairseq's do not). A refused or unreadable file is a
one-line :class:`~macaron_workflow.errors.UserError` naming it.

fairseq's own console scripts (``fairseq-train``, ``fairseq-generate``, ``fairseq-interactive``, ...) load
the plugin through ``--user-dir`` and would print such an error as a 30-line traceback; in those processes
:func:`install` also sets :func:`one_line_user_errors` as ``sys.excepthook``, so the refusal ends the run by
the project's error rule: ``fairseq-generate: error: refusing to load checkpoint ...``, exit 2. Any other
exception keeps its traceback. The names below are re-exported from the base layer.
"""

from __future__ import annotations

import functools
import pickle
import sys
from collections.abc import Callable
from os import PathLike
from pathlib import Path
from types import TracebackType
from typing import Any

import torch

from macaron_workflow.checkpoint_safety import (
    CHECKPOINT_GLOBALS,
    DEEPSPEED_CHECKPOINT_GLOBALS,
    CheckpointError,
    UnsafeCheckpointError,
    allow_checkpoint_globals,
    conversion_hint,
    deepspeed_globals,
    is_refusal,
    refusal_reason,
    refused_object,
    restricted_loads,
    unsafe_checkpoint,
)
from macaron_workflow.checkpoint_safety import allowed_globals as _allowed_globals
from macaron_workflow.cli import report
from macaron_workflow.errors import ReportedError

#: :data:`macaron_workflow.checkpoint_safety.CHECKPOINT_GLOBALS` and fairseq's placeholder of the tensors
#: of a state broadcast between ranks: rank 0 of a resumed distributed run loads the checkpoint (its ``cfg``
#: becomes a ``DictConfig``) and sends the state to the other ranks through ``torch.save``/``torch.load``
#: (``fairseq.distributed.utils._broadcast_object_slow``), which refused it on every rank but 0.
FAIRSEQ_CHECKPOINT_GLOBALS: tuple[str, ...] = (
    *CHECKPOINT_GLOBALS,
    "fairseq.distributed.utils:_TensorPlaceholder",  # the broadcast sends tensors apart, by index
)

_installed = False


def allowed_globals() -> list[Any]:
    """The objects of :data:`FAIRSEQ_CHECKPOINT_GLOBALS` (imports fairseq) and numpy's dtype classes."""
    return _allowed_globals(FAIRSEQ_CHECKPOINT_GLOBALS)


def _explain(path: Any, err: pickle.UnpicklingError) -> UnsafeCheckpointError:
    return unsafe_checkpoint(path, err)


def _guarded(load: Callable[..., Any]) -> Callable[..., Any]:
    """``load`` (one of fairseq's checkpoint loaders) with every ``torch.load`` inside it restricted,
    whatever the environment says."""

    @functools.wraps(load)
    def guarded_load(path: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(path, (str, PathLike)) and Path(path).is_dir():
            raise CheckpointError(f"{path}: is a directory, not a checkpoint file; give the checkpoint file")
        try:
            with restricted_loads():
                return load(path, *args, **kwargs)
        except UnsafeCheckpointError:
            raise
        except pickle.UnpicklingError as err:
            if not is_refusal(err):
                raise
            raise _explain(path, err) from err

    guarded_load.__macaron_guarded__ = True  # type: ignore[attr-defined]
    return guarded_load


#: fairseq's loaders of checkpoint files (``fairseq.checkpoint_utils`` attributes), all guarded
GUARDED_LOADERS = ("load_checkpoint_to_cpu", "load_ema_from_checkpoint")
#: the ``fairseq-train`` options naming a checkpoint to start from, as ``cfg.checkpoint`` fields
RESTORE_OPTIONS = {"restore_file": "--restore-file", "finetune_from_model": "--finetune-from-model"}


def _no_directory_to_restore(load_checkpoint: Callable[..., Any]) -> Callable[..., Any]:
    """``checkpoint_utils.load_checkpoint(cfg, trainer)`` refusing a directory given as ``--restore-file``
    or ``--finetune-from-model``: fairseq's trainer checks ``isfile`` and, for a directory, says "No
    existing checkpoint found" and trains from scratch — a run silently without its pre-trained model."""

    @functools.wraps(load_checkpoint)
    def load_checkpoint_refusing_directories(cfg: Any, trainer: Any, **kwargs: Any) -> Any:
        for field, flag in RESTORE_OPTIONS.items():
            value = getattr(cfg, field, None)
            if value and Path(str(value)).is_dir():
                raise CheckpointError(
                    f"{flag} {value}: is a directory, not a checkpoint file; give the checkpoint file"
                )
        return load_checkpoint(cfg, trainer, **kwargs)

    load_checkpoint_refusing_directories.__macaron_guarded__ = True  # type: ignore[attr-defined]
    return load_checkpoint_refusing_directories


def upstream_program() -> str | None:
    """The name of the running fairseq console script (``fairseq-generate``), or of ``python -m
    fairseq_cli.NAME``; None in any other process (our commands, the hub in a user's script, tests)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and str(spec.name).startswith("fairseq_cli."):
        return f"python -m {spec.name}"
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return name if name.startswith("fairseq-") else None


def one_line_user_errors(prog: str, previous: Callable[..., Any]) -> Callable[..., Any]:
    """A ``sys.excepthook`` that ends a :class:`~macaron_workflow.errors.ReportedError` (a refused or
    unreadable checkpoint) by the error rule — ``PROG: error: message`` and its exit status — and hands any
    other exception to ``previous`` (its traceback)."""

    def hook(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
        if isinstance(error, ReportedError):
            report(prog, error.label, error)
            raise SystemExit(error.exit_status)  # raised by the hook: Python exits with this status
        previous(kind, error, tb)

    hook.__macaron_one_line__ = True  # type: ignore[attr-defined]
    return hook


def install() -> None:
    """Allow-list fairseq's checkpoint classes, load every checkpoint through them explicitly, and, in
    fairseq's own console scripts, end a refusal in one line (idempotent)."""
    global _installed
    if _installed:
        return
    allow_checkpoint_globals()
    torch.serialization.add_safe_globals(allowed_globals())
    from fairseq import checkpoint_utils

    for name in GUARDED_LOADERS:
        loader = getattr(checkpoint_utils, name)
        if not getattr(loader, "__macaron_guarded__", False):
            setattr(checkpoint_utils, name, _guarded(loader))
    if not getattr(checkpoint_utils.load_checkpoint, "__macaron_guarded__", False):
        checkpoint_utils.load_checkpoint = _no_directory_to_restore(checkpoint_utils.load_checkpoint)
    prog = upstream_program()
    if prog is not None and not getattr(sys.excepthook, "__macaron_one_line__", False):
        sys.excepthook = one_line_user_errors(prog, sys.excepthook)
    _installed = True


__all__ = [
    "DEEPSPEED_CHECKPOINT_GLOBALS",
    "FAIRSEQ_CHECKPOINT_GLOBALS",
    "GUARDED_LOADERS",
    "UnsafeCheckpointError",
    "allowed_globals",
    "conversion_hint",
    "deepspeed_globals",
    "install",
    "is_refusal",
    "one_line_user_errors",
    "refusal_reason",
    "refused_object",
    "unsafe_checkpoint",
    "upstream_program",
]
