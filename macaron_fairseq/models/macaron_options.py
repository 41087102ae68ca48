"""What makes a registered model's layers Macaron layers (Lu et al., Eq. 8: the Strang–Marchuk splitting
x + γ·FFN₁(x) → attention → x + γ·FFN₂(x)): the layer kind, the options ``--macaron-ffn-step`` and
``--macaron-ffn-impl`` on top of the base model's, applied to every Macaron layer after the base builds
the model. Written once for the translation model (``macaron``) and the BERT model (``macaron_bert``)."""

from __future__ import annotations

import argparse
from typing import Any

from macaron_fairseq.models.layer_plan import LayerKind
from macaron_fairseq.modules.macaron_layer import add_macaron_layer_args, configure_macaron_layers


class MacaronModelMixin:
    """Listed before the base model class (``class MacaronModel(MacaronModelMixin, PluginTransformerModel)``),
    whose build is ``build_from_namespace`` (``FixupModelMixin``, models/fixup_support.py)."""

    LAYER_KIND: LayerKind = "macaron"

    @classmethod
    def add_args(cls, parser: argparse.ArgumentParser) -> None:
        super().add_args(parser)  # type: ignore[misc]
        add_macaron_layer_args(parser)

    @classmethod
    def build_from_namespace(cls, args: argparse.Namespace, task: Any) -> Any:
        model = super().build_from_namespace(args, task)  # type: ignore[misc]
        configure_macaron_layers(model, args)
        return model
