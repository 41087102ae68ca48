"""What makes a model of this plugin trainable with DT-Fixup / T-Fixup, or on a pre-trained encoder:
the ``build_model`` wrapper every plugin model shares.

Mixed in before the fairseq model class. The model describes its new layers with ``new_stacks()``
(:class:`~macaron_fairseq.init.stacks.NewStack` list); nothing here assumes an encoder *and* a decoder.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from torch import nn

from macaron_fairseq.init.config import log_init_scheme, prepare_fixup_args
from macaron_fairseq.init.fairseq_hook import attach_init_scheme
from macaron_fairseq.init.stacks import NewStack
from macaron_fairseq.models.hydra_config import as_namespace, check_model_keys, is_hydra_config, write_back
from macaron_fairseq.models.pretrained_encoder import PretrainedEncoder, prepare_pretrained_encoder

logger = logging.getLogger(__name__)


class FixupModelMixin:
    """``build_model``: options → pre-trained encoder (loaded here, before μ is measured on its outputs)
    → the scheme's initialisation and hook."""

    @classmethod
    def build_model(cls, args: argparse.Namespace, task: Any) -> Any:
        """``args``: ``fairseq-train``'s namespace, or ``fairseq-hydra-train``'s model node, which is built
        from the same namespace ``fairseq-train`` would give (:mod:`macaron_fairseq.models.hydra_config`)."""
        if not is_hydra_config(args):
            return cls.build_from_namespace(args, task)
        check_model_keys(args, cls, PretrainedEncoder.DERIVED_OPTIONS)
        namespace = as_namespace(args)
        before = argparse.Namespace(**vars(namespace))
        model = cls.build_from_namespace(namespace, task)
        write_back(args, before, namespace)
        return model

    @classmethod
    def build_from_namespace(cls, args: argparse.Namespace, task: Any) -> Any:
        """The build from ``fairseq-train``'s namespace (what subclasses extend, not ``build_model``)."""
        prepare_fixup_args(args)
        pretrained = prepare_pretrained_encoder(args)
        model = super().build_model(args, task)  # type: ignore[misc]
        model.init_args = args
        if pretrained is not None:
            pretrained.load_into(model.encoder, args)
        scheme = log_init_scheme(args)  # `auto` resolved here, at build time (logged with its reason)
        attach_init_scheme(model, scheme, task, requested=args.init_scheme)
        return model

    def new_stacks(self) -> list[NewStack]:
        """The model's from-scratch stacks, in the order DT-Fixup processes them."""
        raise NotImplementedError(f"{type(self).__name__} must describe its new layers (new_stacks)")

    def new_layers(self) -> list[nn.Module]:
        return [layer for stack in self.new_stacks() for layer in stack.layers]
