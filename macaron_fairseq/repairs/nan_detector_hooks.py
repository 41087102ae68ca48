"""A diverging run ends with fairseq's NaN report again, not with ``StopIteration``.

When a training step's gradients are NaN/Inf, fairseq's ``Trainer.train_step`` raises
``FloatingPointError("gradients are Nan/Inf")``, then re-runs the step under
``fairseq.nan_detector.NanDetector`` to log the first module whose output (forward) or output gradient
(backward) is not finite, and re-raises.
``NanDetector`` registers its backward hook with torch's deprecated ``Module.register_backward_hook``; for
such hooks torch's ``Module._call_impl`` looks for a tensor in the module's output, and for a dict output it
takes ``next(v for v in output.values() if isinstance(v, Tensor))`` — fairseq's encoders return
``{"encoder_out": [tensor], ...}`` (lists, no top-level tensor), so the re-run itself raises ``StopIteration``
and the user sees that traceback instead of the NaN report (found when DT-Fixup at too high a learning rate
diverged in the depth ablation).

:func:`install` replaces ``NanDetector.add_hooks``: the forward hook is fairseq's; the backward check is a
forward hook that puts a tensor hook on every tensor of the output (nested dicts, lists and tuples), which
calls fairseq's own ``bhook_fn`` with that tensor's gradient. Same report, any output structure.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import torch
from fairseq.nan_detector import NanDetector


def output_tensors(output: Any) -> Iterator[torch.Tensor]:
    """Every tensor in a module output (tensors, and dicts/lists/tuples of them, nested)."""
    if torch.is_tensor(output):
        yield output
    elif isinstance(output, dict):
        for value in output.values():
            yield from output_tensors(value)
    elif isinstance(output, list | tuple):
        for value in output:
            yield from output_tensors(value)


def add_hooks(detector: NanDetector, module: torch.nn.Module) -> None:
    """fairseq's forward check, and the backward check through tensor hooks on the module's outputs."""
    if detector.forward:
        detector.fhooks.append(module.register_forward_hook(detector.fhook_fn))
    if detector.backward:

        def watch_gradients(mod: torch.nn.Module, _inputs: Any, output: Any) -> None:
            for tensor in output_tensors(output):
                if tensor.requires_grad:
                    tensor.register_hook(functools.partial(_check_gradient, detector, mod))

        detector.bhooks.append(module.register_forward_hook(watch_gradients))


def _check_gradient(detector: NanDetector, module: torch.nn.Module, grad: torch.Tensor) -> None:
    detector.bhook_fn(module, None, grad)  # returns None: the gradient is not changed


def install() -> None:
    """Patch ``NanDetector.add_hooks`` (idempotent)."""
    if not getattr(NanDetector.add_hooks, "__macaron_nan_detector__", False):
        add_hooks.__macaron_nan_detector__ = True  # type: ignore[attr-defined]
        NanDetector.add_hooks = add_hooks
