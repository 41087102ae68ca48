"""The initialisation record stored in the model (hence in every checkpoint).

Buffers, so that they ride in ``checkpoint_*.pt`` with the weights: on resume fairseq restores them
with the model's state dict, ``applied`` is 1, and the hook neither re-estimates μ nor re-scales.
Registered only when a scheme other than ``default`` is chosen, so default models keep their state-dict
keys. Per new stack ``S`` (see :mod:`.stacks`): ``mu_S``, ``n_S``, ``factor_S``, and ``mu_S_cross`` for a
stack with cross-attention. The buffers stay float64 whatever the model is cast to (``--fp16`` halves the
model: a token count above 65504 would become inf, μ keep three digits); they follow its device moves.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn

from macaron_fairseq.init.config import SCHEMES
from macaron_fairseq.init.stacks import StackResult

RUN_FIELDS = ("applied", "scheme", "requested_scheme")
APPLIED_SCHEMES = ("dt-fixup", "t-fixup")  # what a record's ``scheme`` can be (``auto`` resolves to one)
PASS_FIELDS = ("sentences", "tokens", "seconds")  # of the μ pass


def stack_fields(name: str, cross: bool) -> tuple[str, ...]:
    return (f"mu_{name}", *((f"mu_{name}_cross",) if cross else ()), f"n_{name}", f"factor_{name}")


class InitRecord(nn.Module):
    """Applied scheme, requested scheme (``--init-scheme``: ``auto`` or the applied one), applied flag, and
    per stack μ (input, cross input), N and factor; the μ pass's size/time."""

    def __init__(
        self,
        scheme: str,
        stacks: Sequence[str],
        cross_stacks: Sequence[str] = (),
        requested: str | None = None,
    ) -> None:
        super().__init__()
        requested = scheme if requested is None else requested
        if scheme not in APPLIED_SCHEMES:
            raise ValueError(f"init scheme {scheme!r} cannot be applied; one of {APPLIED_SCHEMES}")
        if requested not in SCHEMES:
            raise ValueError(f"unknown init scheme {requested!r}; choose from {SCHEMES}")
        per_stack = [f for s in stacks for f in stack_fields(s, s in cross_stacks)]
        self.fields: tuple[str, ...] = (*RUN_FIELDS, *per_stack, *PASS_FIELDS)
        for name in self.fields:
            self.register_buffer(name, torch.tensor(float("nan"), dtype=torch.float64))
        self.applied.fill_(0.0)
        self.scheme.fill_(float(SCHEMES.index(scheme)))
        self.requested_scheme.fill_(float(SCHEMES.index(requested)))

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> InitRecord:
        """``.to(device)``, ``.cuda()``, ``.cpu()`` move the record; ``.half()``, ``.to(torch.bfloat16)``,
        ``.float()`` leave it float64 (every ``nn.Module`` cast goes through ``_apply``)."""
        for name, buf in self._buffers.items():
            if buf is not None:
                device = fn(torch.zeros((), dtype=torch.float64, device=buf.device)).device
                self._buffers[name] = buf.to(device=device, dtype=torch.float64)
        return self

    def get(self, name: str) -> float:
        return float(getattr(self, name))

    def set(self, **values: float | None) -> None:
        for name, value in values.items():
            if name not in self.fields:
                raise KeyError(f"{name} (the record holds {', '.join(self.fields)})")
            getattr(self, name).fill_(float("nan") if value is None else float(value))

    @property
    def is_applied(self) -> bool:
        return self.get("applied") == 1.0

    @property
    def scheme_name(self) -> str:
        """The applied scheme."""
        return SCHEMES[int(self.get("scheme"))]

    @property
    def requested_scheme_name(self) -> str:
        """What ``--init-scheme`` asked for (``auto``, or the applied scheme itself)."""
        return SCHEMES[int(self.get("requested_scheme"))]

    def describe(self) -> str:
        parts = [f"scheme={self.scheme_name}"]
        if self.requested_scheme_name != self.scheme_name:
            parts.append(f"requested={self.requested_scheme_name}")
        for name in self.fields[len(RUN_FIELDS) :]:
            value = self.get(name)
            if not math.isnan(value):
                parts.append(f"{name}={value:.6g}")
        return ", ".join(parts)

    def upgrade_state_dict_named(self, state_dict: dict, name: str) -> None:
        """Checkpoints written before per-stack cross fields called the decoder's ``mu_cross``; those written
        before the record kept the requested scheme get their applied scheme as the requested one (what
        ``--init-scheme`` said is not in them)."""
        old, new = f"{name}.mu_cross", f"{name}.mu_decoder_cross"
        if old in state_dict and new not in state_dict:
            state_dict[new] = state_dict.pop(old)
        scheme, requested = f"{name}.scheme", f"{name}.requested_scheme"
        if scheme in state_dict and requested not in state_dict:
            state_dict[requested] = state_dict[scheme].clone()

    def store_results(self, results: Sequence[StackResult], with_pass: bool) -> None:
        """Record what a scheme did to each stack; ``with_pass``: also the μ pass's sentences, tokens and
        seconds (DT-Fixup; 0 s when μ was given)."""
        seconds = 0.0
        for r in results:
            s = r.scaling
            values: dict[str, float | None] = {f"n_{s.name}": s.n_layers, f"factor_{s.name}": s.factor}
            if not math.isnan(s.mu):
                values[f"mu_{s.name}"] = s.mu
            if s.mu_cross is not None:
                values[f"mu_{s.name}_cross"] = s.mu_cross
            self.set(**values)
            if r.estimate is not None:
                seconds += r.estimate.seconds
                self.set(sentences=r.estimate.sentences, tokens=r.estimate.tokens)
        if with_pass:
            self.set(seconds=seconds)
