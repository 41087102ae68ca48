"""Load fairseq checkpoints under torch >= 2.6 without turning off ``weights_only``.

torch 2.6 made ``torch.load(weights_only=True)`` the default. fairseq checkpoints pickle their training
configuration (``argparse.Namespace``, omegaconf containers, enums, numpy scalars), so
``fairseq-generate`` fails with "Unsupported global". Upstream fairseq's fix is ``weights_only=False``,
which executes arbitrary pickled code from any checkpoint file. We instead allow-list the classes that
fairseq checkpoints actually contain (:data:`FAIRSEQ_CHECKPOINT_GLOBALS`) with
``torch.serialization.add_safe_globals``; anything else is still refused by torch's restricted
unpickler, and :func:`install` turns that refusal into an error naming the checkpoint and the global.
"""

from __future__ import annotations

import functools
import importlib
import pickle
from collections.abc import Callable, Iterator
from typing import Any

import torch

#: ``module:qualname`` of the non-tensor classes fairseq checkpoints pickle. fairseq stores its hydra
#: config with ``OmegaConf.to_container(..., enum_to_str=True)`` (plain dicts/lists/str, which torch
#: allows anyway), but the legacy ``args`` and ``cfg.model`` are ``argparse.Namespace``; metric
#: meters and ``best`` scores may be numpy scalars (pickled through numpy's scalar constructor and the
#: dtype, see also :func:`_numpy_dtype_classes`).
#: The omegaconf containers come from distributed resuming: rank 0 loads the checkpoint (its ``cfg`` becomes
#: a ``DictConfig``) and sends the state to the other ranks through ``torch.save``/``torch.load``
#: (``fairseq.distributed.utils._broadcast_object_slow``), which refused it on every rank but 0.
FAIRSEQ_CHECKPOINT_GLOBALS: tuple[str, ...] = (
    "argparse:Namespace",
    "numpy:dtype",
    "numpy.core.multiarray:scalar",
    "numpy._core.multiarray:scalar",
    "omegaconf.dictconfig:DictConfig",
    "fairseq.distributed.utils:_TensorPlaceholder",  # the broadcast sends tensors apart, by index
    "omegaconf.listconfig:ListConfig",
    "omegaconf.base:ContainerMetadata",
    "omegaconf.base:Metadata",
    *(
        f"omegaconf.nodes:{node}"
        for node in (
            "AnyNode",
            "StringNode",
            "IntegerNode",
            "FloatNode",
            "BooleanNode",
            "EnumNode",
            "BytesNode",
            "PathNode",
        )
    ),
    "typing:Any",
    "collections:defaultdict",
    "builtins:dict",
    "builtins:list",
    "builtins:int",
)

_installed = False


class UnsafeCheckpointError(pickle.UnpicklingError):
    """A checkpoint pickles an object that is not on the fairseq allow-list."""


def _resolve(spec: str) -> Any | None:
    module_name, _, qualname = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError:
        return None
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _numpy_dtype_classes() -> Iterator[type]:
    """numpy >= 1.25 pickles a dtype through its class (``numpy.dtypes.Float64DType`` ...)."""
    try:
        from numpy import dtypes
    except ImportError:
        return
    for name in dir(dtypes):
        obj = getattr(dtypes, name)
        if isinstance(obj, type) and name.endswith("DType"):
            yield obj


def allowed_globals() -> list[Any]:
    found = [obj for spec in FAIRSEQ_CHECKPOINT_GLOBALS if (obj := _resolve(spec)) is not None]
    return [*found, *_numpy_dtype_classes()]


def _explain(path: Any, err: pickle.UnpicklingError) -> UnsafeCheckpointError:
    return UnsafeCheckpointError(
        f"refusing to load checkpoint {path!s}: it pickles an object outside the allow-list of fairseq "
        "checkpoint classes (macaron_fairseq.repairs.checkpoint_safety), so loading it could run arbitrary "
        "code.\n"
        f"torch said: {str(err).strip().splitlines()[0] if str(err).strip() else err!r}\n"
        f"{_offending_global(str(err))}"
        "Load it only if you trust its origin, e.g. with torch.load(path, weights_only=False) and re-save "
        "the state you need."
    )


def _offending_global(message: str) -> str:
    for line in message.splitlines():
        if "Unsupported global" in line or "GLOBAL" in line:
            return f"offending global: {line.strip()}\n"
    return ""


def _guarded(load: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(load)
    def load_checkpoint_to_cpu(path: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return load(path, *args, **kwargs)
        except UnsafeCheckpointError:
            raise
        except pickle.UnpicklingError as err:
            raise _explain(path, err) from err

    load_checkpoint_to_cpu.__macaron_guarded__ = True  # type: ignore[attr-defined]
    return load_checkpoint_to_cpu


def install() -> None:
    """Allow-list fairseq's checkpoint classes and give refusals a clear message (idempotent)."""
    global _installed
    if _installed:
        return
    torch.serialization.add_safe_globals(allowed_globals())
    from fairseq import checkpoint_utils

    if not getattr(checkpoint_utils.load_checkpoint_to_cpu, "__macaron_guarded__", False):
        checkpoint_utils.load_checkpoint_to_cpu = _guarded(checkpoint_utils.load_checkpoint_to_cpu)
    _installed = True


__all__ = ["FAIRSEQ_CHECKPOINT_GLOBALS", "UnsafeCheckpointError", "allowed_globals", "install"]
