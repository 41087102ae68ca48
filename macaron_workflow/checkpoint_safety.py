"""Read checkpoints that users hand over without running code from them: the allow-list, the one-line
refusal, the restricted load. Shared by the plugin (:mod:`macaron_fairseq.checkpoint_reader`,
:mod:`macaron_fairseq.repairs.checkpoint_safety`) and the stand-alone tools
(``python -m macaron_tools.average_checkpoints``), which need neither the plugin nor fairseq.

torch >= 2.6 loads with ``weights_only=True`` by default: its restricted unpickler refuses every global that
is not allow-listed. fairseq checkpoints pickle their training configuration (``argparse.Namespace``,
omegaconf containers, numpy scalars); upstream fairseq's answer is ``weights_only=False``, which executes
arbitrary pickled code. We allow-list the classes such files contain (:data:`CHECKPOINT_GLOBALS`, with
``torch.serialization.add_safe_globals``); anything else is still refused, and :func:`unsafe_checkpoint`
turns the refusal into one line that names the file, the global and how to convert a file the user trusts.

* :func:`load_checkpoint` — the whole state of a file, memory-mapped, every failure a
  :class:`~macaron_workflow.errors.UserError` (:class:`CheckpointError`, :class:`UnsafeCheckpointError`);
* :func:`restricted_loads` — inside, every ``torch.load``, also one asking for ``weights_only=False`` (code we
  do not own: DeepSpeed's ``zero_to_fp32``), is the allow-listed load.

torch is imported by the functions that load, not with this module.
"""

from __future__ import annotations

import functools
import importlib
import os
import pickle
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from macaron_workflow.errors import UserError, cannot_read

#: ``module:qualname`` of the non-tensor classes fairseq checkpoint files pickle. fairseq stores its hydra
#: config with ``OmegaConf.to_container(..., enum_to_str=True)`` (plain dicts/lists/str, which torch allows
#: anyway), but the legacy ``args`` and ``cfg.model`` are ``argparse.Namespace``; metric meters and ``best``
#: scores may be numpy scalars (pickled through numpy's scalar constructor and the dtype, see also
#: :func:`_numpy_dtype_classes`); omegaconf containers come with older checkpoints and with the state that
#: fairseq broadcasts between ranks when a distributed run resumes (the plugin adds fairseq's own
#: placeholder class for that: ``macaron_fairseq.repairs.checkpoint_safety.FAIRSEQ_CHECKPOINT_GLOBALS``).
CHECKPOINT_GLOBALS: tuple[str, ...] = (
    "argparse:Namespace",
    "numpy:dtype",
    "numpy.core.multiarray:scalar",
    "numpy._core.multiarray:scalar",
    "omegaconf.dictconfig:DictConfig",
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
#: reading a DeepSpeed save directory (:func:`deepspeed_globals` inside :func:`restricted_loads`), never
#: globally
DEEPSPEED_CHECKPOINT_GLOBALS: tuple[str, ...] = (
    "deepspeed.runtime.fp16.loss_scaler:LossScaler",
    "deepspeed.runtime.fp16.loss_scaler:DynamicLossScaler",
    "deepspeed.runtime.zero.config:ZeroStageEnum",
    "deepspeed.utils.tensor_fragment:fragment_address",
)

#: how torch names the refused global ("Unsupported global: GLOBAL posix.system ...")
_GLOBAL = re.compile(r"GLOBAL\s+([\w.]+)")
#: how torch names an opcode its restricted unpickler does not run
_OPERAND = re.compile(r"Unsupported operand\s+(\S+)")

_allowed = False


class UnsafeCheckpointError(UserError, pickle.UnpicklingError):
    """A checkpoint pickles an object that is not on the allow-list (a user error: exit 2)."""


class CheckpointError(UserError):
    """A checkpoint file that is missing, unreadable or not a PyTorch checkpoint."""


# ------------------------------------------------------------------------------------- the allow-list
def resolve(spec: str) -> Any | None:
    """The object ``module:qualname`` names (importing its module), or None where it does not exist."""
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


def allowed_globals(specs: Sequence[str] = CHECKPOINT_GLOBALS) -> list[Any]:
    """The objects of ``specs`` that exist here, and numpy's dtype classes."""
    found = [obj for spec in specs if (obj := resolve(spec)) is not None]
    return [*found, *_numpy_dtype_classes()]


def deepspeed_globals() -> list[Any]:
    """:data:`DEEPSPEED_CHECKPOINT_GLOBALS` that the installed DeepSpeed has (imports DeepSpeed)."""
    return [obj for spec in DEEPSPEED_CHECKPOINT_GLOBALS if (obj := resolve(spec)) is not None]


def allow_checkpoint_globals() -> None:
    """Add :data:`CHECKPOINT_GLOBALS` to torch's safe globals, for every ``torch.load`` (idempotent)."""
    global _allowed
    if _allowed:
        return
    import torch

    torch.serialization.add_safe_globals(allowed_globals())
    _allowed = True


# --------------------------------------------------------------------------------- the refusal, in one line
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
            "(macaron_workflow.checkpoint_safety), so loading it could run arbitrary code"
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


def unsafe_checkpoint(
    path: Any, err: BaseException, flag: str | None = None, hint: str | None = None
) -> UnsafeCheckpointError:
    """torch's refusal of ``path`` as one line: which object, which file, and how to convert a trusted file
    (or ``hint``: what to do instead); ``flag`` (``"--checkpoint"``) names the option the file came from."""
    where = f"{flag} {path!s}" if flag else str(path)
    return UnsafeCheckpointError(
        f"refusing to load checkpoint {where}: {refusal_reason(str(err))}; {hint or conversion_hint(path)}"
    )


# ------------------------------------------------------------------------------------------- reading
def _torch_load(path: Path, mmap: bool) -> Any:
    import torch

    return torch.load(str(path), map_location="cpu", mmap=mmap, weights_only=True)


def _starts_like_a_pickle(path: Path) -> bool:
    """A pickle (torch's legacy format) starts with the PROTO opcode 0x80 (protocol 2 and later)."""
    with path.open("rb") as f:
        return f.read(1) == b"\x80"


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    if not text:
        return type(err).__name__
    first = text.splitlines()[0]
    return f"{type(err).__name__}: {first.split('. ')[0]}"


NOT_A_CHECKPOINT = "not a PyTorch checkpoint"
#: the fix of a file torch cannot read: what the user should give instead
DAMAGED_HINT = "it is truncated (a copy or save cut short) or not a checkpoint at all: give the complete file"


#: torch refuses every load when both are set ("Only one of ... should be set"): not the file's fault
FORCE_VARIABLES = ("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")


def _is_set(name: str) -> bool:
    return os.environ.get(name, "0").strip().lower() in ("1", "y", "yes", "true")


def check_environment() -> None:
    """One line (exit 2) when the environment makes torch refuse every load, before a file is blamed."""
    if all(_is_set(name) for name in FORCE_VARIABLES):
        raise UserError(
            f"{FORCE_VARIABLES[0]} and {FORCE_VARIABLES[1]} are both set, and torch refuses to load any "
            f"checkpoint then: unset one (checkpoints are read through the allow-list whatever they say)"
        )


def empty_checkpoint(label: str, hint: str | None = None) -> CheckpointError:
    """A file of 0 bytes given as a checkpoint, as one line naming it and the fix."""
    return CheckpointError(f"{label}: {NOT_A_CHECKPOINT} (an empty file, 0 bytes); {hint or DAMAGED_HINT}")


def _is_empty(f: Any) -> bool:
    """Whether ``f`` (a path or an open file) is a file of 0 bytes."""
    try:
        if isinstance(f, (str, os.PathLike)):
            return os.path.isfile(f) and os.path.getsize(f) == 0
        return os.fstat(f.fileno()).st_size == 0
    except (OSError, AttributeError, ValueError):  # not a file of the file system (a buffer, a stream)
        return False


def damaged_checkpoint(label: str, err: BaseException, hint: str | None = None) -> CheckpointError:
    """A file torch cannot read (truncated, empty, foreign) as one line naming it and the fix (``hint``, by
    default: give the complete file)."""
    return CheckpointError(f"{label}: {NOT_A_CHECKPOINT} ({_first_line(err)}); {hint or DAMAGED_HINT}")


def load_checkpoint(
    path: str | Path, flag: str | None = None, extra_globals: Sequence[Any] = (), hint: str | None = None
) -> dict[str, Any]:
    """The whole state of ``path``, tensors memory-mapped (a checkpoint in torch's legacy, non-zip format is
    read into memory), through the allow-list. ``flag`` (``"--checkpoint"``) prefixes the messages;
    ``extra_globals`` are allowed for this read only (:func:`deepspeed_globals` for a DeepSpeed save
    directory's files); ``hint`` replaces the advice of a refusal (how to convert a trusted file) and of a
    damaged file (give the complete file).

    Raises :class:`CheckpointError` or :class:`UnsafeCheckpointError` (both :class:`UserError`)."""
    import torch

    path = Path(path)
    label = f"{flag} {path}" if flag else str(path)
    check_environment()
    if not path.exists():
        raise CheckpointError(f"{label}: no such file")
    if path.is_dir():
        raise CheckpointError(f"{label}: is a directory, not a checkpoint file; give the checkpoint file")
    allow_checkpoint_globals()
    if path.stat().st_size == 0:
        raise empty_checkpoint(label, hint)
    try:
        with torch.serialization.safe_globals(list(extra_globals)):
            try:
                state = _torch_load(path, mmap=True)
            except RuntimeError as err:
                if "mmap can only be used" not in str(err):
                    raise
                if not _starts_like_a_pickle(path):
                    raise CheckpointError(
                        f"{label}: {NOT_A_CHECKPOINT} (neither zip nor pickle); {hint or DAMAGED_HINT}"
                    ) from None
                state = _torch_load(path, mmap=False)  # the legacy format cannot be memory-mapped
    except CheckpointError:
        raise
    except pickle.UnpicklingError as err:
        if is_refusal(err):
            raise unsafe_checkpoint(path, err, flag, hint) from None
        raise damaged_checkpoint(label, err, hint) from None
    except OSError as err:
        raise CheckpointError(str(cannot_read(label, err))) from None
    except Exception as err:  # torch reports a truncated or foreign file with many exception types
        raise damaged_checkpoint(label, err, hint) from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{label}: not a checkpoint (it holds a {type(state).__name__}, not a dict)")
    return state


@contextmanager
def restricted_loads(extra_globals: Sequence[Any] = ()) -> Iterator[None]:
    """Inside: every ``torch.load`` — also one of code we do not own that asks for ``weights_only=False``
    (DeepSpeed's ``zero_to_fp32`` and ``engine.load_checkpoint``, fairseq's ``load_checkpoint_to_cpu``),
    whatever ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` says — is the allow-listed restricted load; a refusal,
    and a file torch cannot read (truncated, empty, foreign), is a one-line :class:`UserError` naming the
    file. ``extra_globals`` are allowed too, inside only (e.g. :func:`deepspeed_globals`)."""
    import torch

    allow_checkpoint_globals()
    original = torch.load

    @functools.wraps(original)
    def load(f: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs["weights_only"] = True
        where = f if isinstance(f, (str, os.PathLike)) else getattr(f, "name", f)
        check_environment()
        if _is_empty(f):
            raise empty_checkpoint(str(where))
        try:
            return original(f, *args, **kwargs)
        except OSError:
            raise  # a missing or unreadable file: the caller's to report (DeepSpeed checks for some itself)
        except pickle.UnpicklingError as err:
            if is_refusal(err):
                raise unsafe_checkpoint(where, err) from None
            raise damaged_checkpoint(str(where), err) from None
        except Exception as err:  # a truncated or foreign file (many exception types): one line naming it
            raise damaged_checkpoint(str(where), err) from None

    torch.load = load
    try:
        with torch.serialization.safe_globals(list(extra_globals)):
            yield
    finally:
        torch.load = original


__all__ = [
    "CHECKPOINT_GLOBALS",
    "DEEPSPEED_CHECKPOINT_GLOBALS",
    "CheckpointError",
    "UnsafeCheckpointError",
    "allow_checkpoint_globals",
    "allowed_globals",
    "conversion_hint",
    "damaged_checkpoint",
    "deepspeed_globals",
    "empty_checkpoint",
    "is_refusal",
    "load_checkpoint",
    "refusal_reason",
    "refused_object",
    "resolve",
    "restricted_loads",
    "unsafe_checkpoint",
]
