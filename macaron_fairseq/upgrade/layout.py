"""What an authors' checkpoint is: their training arguments read into :class:`AuthorsModel`, checked against
the weights, and the refusals of everything else.

The model configuration comes from the checkpoint's own ``args`` (fairseq 0.6 stores every architecture
setting there after the arch function ran), not from the architecture's name: dimensions, layers, heads,
pre-/post-LN per stack, the three dropouts, shared embeddings, positions. Settings the plugin cannot
reproduce exactly (adaptive softmax; a Macaron decoder whose FFN width differs from the encoder's, which
their decoder used for its first FFN) are refused, never approximated.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from macaron_workflow.errors import UserError

#: the key that marks fairseq 0.6's attention layout (one stacked q/k/v projection)
IN_PROJ = "encoder.layers.0.self_attn.in_proj_weight"
_LAYER = re.compile(r"^(encoder|decoder)\.layers\.(\d+)\.")


class NotAnAuthorsCheckpoint(UserError):
    """The file is a checkpoint, but not one of the authors' fairseq 0.6 translation models."""


@dataclass(frozen=True)
class Stack:
    """One side's settings, as their ``args`` hold them."""

    embed_dim: int
    ffn_embed_dim: int
    layers: int
    attention_heads: int
    normalize_before: bool
    learned_pos: bool


@dataclass(frozen=True)
class AuthorsModel:
    """A translation model of the authors' fork, described by its checkpoint."""

    arch: str
    macaron: bool
    source_lang: str
    target_lang: str
    data: str
    encoder: Stack
    decoder: Stack
    decoder_output_dim: int
    decoder_input_dim: int
    dropout: float
    attention_dropout: float
    relu_dropout: float
    share_all_embeddings: bool
    share_decoder_input_output_embed: bool
    no_token_positional_embeddings: bool
    max_source_positions: int
    max_target_positions: int
    left_pad_source: bool
    left_pad_target: bool
    source_vocab: int
    target_vocab: int
    num_updates: int | None

    def describe(self) -> str:
        """One line: what the model is."""
        e, d = self.encoder, self.decoder
        norm = {(True, True): "pre-LN", (False, False): "post-LN"}.get(
            (e.normalize_before, d.normalize_before),
            f"encoder {'pre' if e.normalize_before else 'post'}-LN, "
            f"decoder {'pre' if d.normalize_before else 'post'}-LN",
        )
        ffn = f"2 × {e.ffn_embed_dim}" if self.macaron else str(e.ffn_embed_dim)
        vocab = (
            f"shared embeddings, vocabulary {self.source_vocab}"
            if self.share_all_embeddings
            else f"vocabularies {self.source_vocab}/{self.target_vocab}"
        )
        updates = "" if self.num_updates is None else f", trained {self.num_updates:,} updates"
        return (
            f"{self.arch}: {'Macaron' if self.macaron else 'Transformer'}, {norm}, {e.layers}+{d.layers} "
            f"layers, d {e.embed_dim}, {e.attention_heads} heads, FFN {ffn}, dropout {self.dropout:g} / "
            f"attention {self.attention_dropout:g} / ReLU {self.relu_dropout:g}, {vocab}, "
            f"{self.source_lang}→{self.target_lang}{updates}"
        )


def _bool(value: Any) -> bool:
    """fairseq 0.6 kept ``--left-pad-source`` as the string 'True'/'False'."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def _layer_count(weights: Mapping[str, Any], side: str) -> int:
    found = {int(m.group(2)) for key in weights if (m := _LAYER.match(key)) and m.group(1) == side}
    return max(found) + 1 if found else 0


def _require(args: argparse.Namespace, name: str, source: Path) -> Any:
    if not hasattr(args, name):
        raise NotAnAuthorsCheckpoint(f"{source}: its args have no '{name}' (not a fairseq 0.6 Transformer)")
    return getattr(args, name)


def classify(state: Mapping[str, Any], source: Path) -> tuple[argparse.Namespace, dict[str, Any]]:
    """``(args, model state dict)`` of an authors' checkpoint; anything else is refused naming what it is."""
    if "cfg" in state and state.get("cfg") is not None:
        raise NotAnAuthorsCheckpoint(
            f"{source}: a checkpoint of fairseq 0.10 or later (it has a 'cfg'): nothing to upgrade, load it "
            "as it is (fairseq-generate --user-dir macaron_fairseq --path ...)"
        )
    if "module" in state and "model" not in state:
        raise NotAnAuthorsCheckpoint(
            f"{source}: a DeepSpeed model state (key 'module'), not a fairseq 0.6 one"
        )
    weights = state.get("model")
    if not isinstance(weights, Mapping):
        tensors = [k for k in state if isinstance(k, str) and k.startswith(("encoder.", "decoder."))]
        what = "a bare state dict without training args" if tensors else f"keys {sorted(map(str, state))[:6]}"
        raise NotAnAuthorsCheckpoint(
            f"{source}: not a fairseq training checkpoint ({what}; it needs 'args' and 'model')"
        )
    args = state.get("args")
    if not isinstance(args, argparse.Namespace):
        raise NotAnAuthorsCheckpoint(
            f"{source}: no training args (an argparse.Namespace 'args'): not a fairseq 0.6 checkpoint"
        )
    arch, task = getattr(args, "arch", None), getattr(args, "task", None)
    if task != "translation":
        raise NotAnAuthorsCheckpoint(
            f"{source}: a fairseq checkpoint of task {task!r} (arch {arch!r}); only translation "
            "models are upgraded"
        )
    if IN_PROJ not in weights:
        if any(k.startswith("encoder.layers.0.self_attn.q_proj") for k in weights):
            raise NotAnAuthorsCheckpoint(
                f"{source}: arch {arch!r} with separate q/k/v projections, the layout of fairseq 0.7 or "
                "later; upgrade it with that fairseq's own checkpoint upgrade, not this fairseq 0.6 one"
            )
        raise NotAnAuthorsCheckpoint(
            f"{source}: a fairseq 0.6 checkpoint of arch {arch!r} that is not a Transformer/Macaron "
            f"translation model (no {IN_PROJ}); only the Macaron authors' transformer_* models are upgraded"
        )
    return args, dict(weights)


def read_model(state: Mapping[str, Any], source: Path) -> AuthorsModel:
    """The :class:`AuthorsModel` of a checkpoint, its ``args`` checked against its weights."""
    args, weights = classify(state, source)

    def stack(side: str) -> Stack:
        return Stack(
            embed_dim=int(_require(args, f"{side}_embed_dim", source)),
            ffn_embed_dim=int(_require(args, f"{side}_ffn_embed_dim", source)),
            layers=int(_require(args, f"{side}_layers", source)),
            attention_heads=int(_require(args, f"{side}_attention_heads", source)),
            normalize_before=bool(getattr(args, f"{side}_normalize_before", False)),
            learned_pos=bool(getattr(args, f"{side}_learned_pos", False)),
        )

    encoder, decoder = stack("encoder"), stack("decoder")
    if getattr(args, "adaptive_softmax_cutoff", None):
        raise UserError(
            f"{source}: adaptive softmax (--adaptive-softmax-cutoff {args.adaptive_softmax_cutoff}) "
            "is not upgraded: the plugin's models have a plain output projection"
        )
    macaron = bool(getattr(args, "macaron", False))
    has_macaron_weights = "encoder.layers.0.macaron_fc1.weight" in weights
    if macaron != has_macaron_weights:
        raise UserError(
            f"{source}: args.macaron is {getattr(args, 'macaron', None)!r} but the weights "
            f"{'have' if has_macaron_weights else 'lack'} macaron_fc1: args and weights disagree"
        )
    if macaron and encoder.ffn_embed_dim != decoder.ffn_embed_dim:
        raise UserError(
            f"{source}: a Macaron model whose decoder FFN width ({decoder.ffn_embed_dim}) differs from the "
            f"encoder's ({encoder.ffn_embed_dim}): the authors' decoder sized its first FFN with the "
            "encoder's width, the plugin's with the decoder's; this model cannot be reproduced exactly"
        )
    for side, settings in (("encoder", encoder), ("decoder", decoder)):
        found = _layer_count(weights, side)
        if found != settings.layers:
            raise UserError(
                f"{source}: args.{side}_layers is {settings.layers} but the weights have {found} "
                f"{side} layers"
            )
        final_norm = f"{side}.layer_norm.weight" in weights
        if final_norm != settings.normalize_before:
            raise UserError(
                f"{source}: args.{side}_normalize_before is {settings.normalize_before} but the "
                f"weights {'have' if final_norm else 'lack'} {side}.layer_norm"
            )
    enc_emb, dec_emb = weights.get("encoder.embed_tokens.weight"), weights.get("decoder.embed_tokens.weight")
    if enc_emb is None or dec_emb is None:
        raise UserError(f"{source}: no encoder/decoder.embed_tokens.weight in the model state")
    share_all = bool(getattr(args, "share_all_embeddings", False))
    share_out = bool(getattr(args, "share_decoder_input_output_embed", False)) or share_all
    updates = None
    history = state.get("optimizer_history")
    if isinstance(history, list) and history and isinstance(history[-1], Mapping):
        value = history[-1].get("num_updates")
        updates = int(value) if isinstance(value, int) else None
    return AuthorsModel(
        arch=str(getattr(args, "arch", "transformer")),
        macaron=macaron,
        source_lang=str(_require(args, "source_lang", source)),
        target_lang=str(_require(args, "target_lang", source)),
        data=str(getattr(args, "data", "")),
        encoder=encoder,
        decoder=decoder,
        decoder_output_dim=int(getattr(args, "decoder_output_dim", decoder.embed_dim)),
        decoder_input_dim=int(getattr(args, "decoder_input_dim", decoder.embed_dim)),
        dropout=float(getattr(args, "dropout", 0.1)),
        attention_dropout=float(getattr(args, "attention_dropout", 0.0)),
        relu_dropout=float(getattr(args, "relu_dropout", 0.0)),
        share_all_embeddings=share_all,
        share_decoder_input_output_embed=share_out,
        no_token_positional_embeddings=bool(getattr(args, "no_token_positional_embeddings", False)),
        max_source_positions=int(getattr(args, "max_source_positions", 1024)),
        max_target_positions=int(getattr(args, "max_target_positions", 1024)),
        left_pad_source=_bool(getattr(args, "left_pad_source", True)),
        left_pad_target=_bool(getattr(args, "left_pad_target", False)),
        source_vocab=int(enc_emb.shape[0]),
        target_vocab=int(dec_emb.shape[0]),
        num_updates=updates,
    )
