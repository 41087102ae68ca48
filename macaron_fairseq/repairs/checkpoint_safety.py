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
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from macaron_workflow.errors import UserError

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

#: what DeepSpeed's own checkpoint files pickle besides tensors and containers (its ZeRO optimizer states:
#: the loss scaler, the ZeRO stage enum, the fragment addresses of the flat fp32 groups); allowed only while
#: reading a DeepSpeed save directory (:func:`deepspeed_globals`, ``pretrain/export.py``), never globally
DEEPSPEED_CHECKPOINT_GLOBALS: tuple[str, ...] = (
    "deepspeed.runtime.fp16.loss_scaler:LossScaler",
    "deepspeed.runtime.fp16.loss_scaler:DynamicLossScaler",
    "deepspeed.runtime.zero.config:ZeroStageEnum",
    "deepspeed.utils.tensor_fragment:fragment_address",
)

_installed = False


class UnsafeCheckpointError(UserError, pickle.UnpicklingError):
    """A checkpoint pickles an object that is not on the fairseq allow-list (a user error: exit 2)."""


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


def deepspeed_globals() -> list[Any]:
    """:data:`DEEPSPEED_CHECKPOINT_GLOBALS` that the installed DeepSpeed has (imports DeepSpeed)."""
    return [obj for spec in DEEPSPEED_CHECKPOINT_GLOBALS if (obj := _resolve(spec)) is not None]


#: how torch names the refused global ("Unsupported global: GLOBAL posix.system ...")
_GLOBAL = re.compile(r"GLOBAL\s+([\w.]+)")
#: how torch names an opcode its restricted unpickler does not run
_OPERAND = re.compile(r"Unsupported operand\s+(\S+)")


def is_refusal(err: BaseException) -> bool:
    """Whether ``err`` is torch's restricted unpickler refusing something (not a corrupt file)."""
    return isinstance(err, pickle.UnpicklingError) and "Weights only load failed" in str(err)


def refused_object(message: str) -> str | None:
    """The global torch's restricted unpickler refused (``posix.system``), from its error message."""
    found = _GLOBAL.search(message)
    return found.group(1) if found else None


def refusal_reason(message: str) -> str:
    """Why torch refused the file, as a clause of one line."""
    if (name := refused_object(message)) is not None:
        return (
            f"it pickles {name}, which is not on the allow-list of fairseq checkpoint classes "
            "(macaron_fairseq.repairs.checkpoint_safety), so loading it could run arbitrary code"
        )
    if found := _OPERAND.search(message):
        return (
            f"it uses pickle opcode {found.group(1)}, which torch's restricted unpickler refuses (a corrupt "
            "file, or a pickle that is not a plain checkpoint)"
        )
    return "torch's restricted unpickler refused it"


def conversion_hint(path: Any) -> str:
    """The one-liner a user runs on a file they trust: keep the weights and the configuration only."""
    out = f"{Path(str(path)).with_suffix('')}.safe.pt"
    return (
        'if you trust the file, convert it yourself with python -c "import torch; '
        f"s = torch.load('{path}', weights_only=False); "
        f"torch.save({{k: s[k] for k in ('model', 'cfg', 'args') if k in s}}, '{out}')\" and use {out}"
    )


def unsafe_checkpoint(path: Any, err: BaseException, flag: str | None = None) -> UnsafeCheckpointError:
    """torch's refusal of ``path`` as one line: which object, which file, and how to convert a trusted file;
    ``flag`` (``"--checkpoint"``) names the option the file came from."""
    where = f"{flag} {path!s}" if flag else str(path)
    return UnsafeCheckpointError(
        f"refusing to load checkpoint {where}: {refusal_reason(str(err))}; {conversion_hint(path)}"
    )


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
    "deepspeed_globals",
    "install",
    "unsafe_checkpoint",
]
