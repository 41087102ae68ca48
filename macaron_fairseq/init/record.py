"""The initialisation record stored in the model (hence in every checkpoint).

Buffers, so that they ride in ``checkpoint_*.pt`` with the weights: on resume fairseq restores them
with the model's state dict, ``applied`` is 1, and the hook neither re-estimates μ nor re-scales.
Registered only when a scheme other than ``default`` is chosen, so default models keep their state-dict
keys (and old checkpoints load).
"""

from __future__ import annotations

import math

import torch
from torch import nn

SCHEMES = ("default", "dt-fixup", "t-fixup")
FIELDS = (
    "applied",
    "scheme",
    "mu_encoder",
    "mu_decoder",
    "mu_cross",
    "n_encoder",
    "n_decoder",
    "factor_encoder",
    "factor_decoder",
    "sentences",
    "tokens",
    "seconds",
)


class InitRecord(nn.Module):
    """Scheme, μ (encoder input, decoder input, cross-attention input), N and factors per stack."""

    def __init__(self, scheme: str) -> None:
        super().__init__()
        if scheme not in SCHEMES:
            raise ValueError(f"unknown init scheme {scheme!r}; choose from {SCHEMES}")
        for name in FIELDS:
            self.register_buffer(name, torch.tensor(float("nan"), dtype=torch.float64))
        self.applied.fill_(0.0)
        self.scheme.fill_(float(SCHEMES.index(scheme)))

    def get(self, name: str) -> float:
        return float(getattr(self, name))

    def set(self, **values: float | None) -> None:
        for name, value in values.items():
            if name not in FIELDS:
                raise KeyError(name)
            getattr(self, name).fill_(float("nan") if value is None else float(value))

    @property
    def is_applied(self) -> bool:
        return self.get("applied") == 1.0

    @property
    def scheme_name(self) -> str:
        return SCHEMES[int(self.get("scheme"))]

    def as_dict(self) -> dict[str, float | str]:
        out: dict[str, float | str] = {n: self.get(n) for n in FIELDS}
        out["scheme"] = self.scheme_name
        return out

    def describe(self) -> str:
        parts = [f"scheme={self.scheme_name}"]
        for name in FIELDS[2:]:
            value = self.get(name)
            if not math.isnan(value):
                parts.append(f"{name}={value:.6g}")
        return ", ".join(parts)
