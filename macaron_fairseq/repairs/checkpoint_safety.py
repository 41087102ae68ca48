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
fairseq's own broadcast placeholder and wraps ``fairseq.checkpoint_utils.load_checkpoint_to_cpu``. The
names below are re-exported from there.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable
from typing import Any

import torch

from macaron_workflow.checkpoint_safety import (
    CHECKPOINT_GLOBALS,
    DEEPSPEED_CHECKPOINT_GLOBALS,
    UnsafeCheckpointError,
    allow_checkpoint_globals,
    conversion_hint,
    deepspeed_globals,
    is_refusal,
    refusal_reason,
    refused_object,
    unsafe_checkpoint,
)
from macaron_workflow.checkpoint_safety import allowed_globals as _allowed_globals

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
    @functools.wraps(load)
    def load_checkpoint_to_cpu(path: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return load(path, *args, **kwargs)
        except UnsafeCheckpointError:
            raise
        except pickle.UnpicklingError as err:
            if not is_refusal(err):
                raise
            raise _explain(path, err) from err

    load_checkpoint_to_cpu.__macaron_guarded__ = True  # type: ignore[attr-defined]
    return load_checkpoint_to_cpu


def install() -> None:
    """Allow-list fairseq's checkpoint classes and give refusals a clear message (idempotent)."""
    global _installed
    if _installed:
        return
    allow_checkpoint_globals()
    torch.serialization.add_safe_globals(allowed_globals())
    from fairseq import checkpoint_utils

    if not getattr(checkpoint_utils.load_checkpoint_to_cpu, "__macaron_guarded__", False):
        checkpoint_utils.load_checkpoint_to_cpu = _guarded(checkpoint_utils.load_checkpoint_to_cpu)
    _installed = True


__all__ = [
    "DEEPSPEED_CHECKPOINT_GLOBALS",
    "FAIRSEQ_CHECKPOINT_GLOBALS",
    "UnsafeCheckpointError",
    "allowed_globals",
    "conversion_hint",
    "deepspeed_globals",
    "install",
    "is_refusal",
    "refusal_reason",
    "refused_object",
    "unsafe_checkpoint",
]
