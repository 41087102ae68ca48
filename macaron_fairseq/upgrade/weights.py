"""The authors' fairseq 0.6 parameter names → the plugin's (fairseq 0.12 layout).

| theirs (fairseq 0.6 fork)                                | the plugin                                    |
|----------------------------------------------------------|-----------------------------------------------|
| ``*.self_attn/encoder_attn.in_proj_weight/bias`` (q;k;v) | ``*.q_proj``, ``*.k_proj``, ``*.v_proj``       |
| ``encoder.layers.N.layer_norms.0`` / ``.1`` / ``.2``     | ``self_attn_``/``final_``/``ffn1_layer_norm`` |
| ``*.macaron_fc1`` / ``*.macaron_fc2``                    | ``*.ffn1_fc1`` / ``*.ffn1_fc2`` (FFN₁)         |
| ``decoder.layers.N.macaron_layer_norm``                  | ``ffn1_layer_norm``                           |
| ``decoder.layers.N.layer_norms.0/1/2`` (older files)      | ``self_attn/encoder_attn/final_layer_norm``   |
| ``decoder.embed_out`` (unshared output)                  | ``decoder.output_projection.weight``          |
| ``*.embed_positions._float_tensor`` / ``.weights``       | dropped (sinusoidal positions are computed)   |
| ``encoder.version`` / ``decoder.version`` (2)            | the model's own (3)                           |

The version matters: fairseq 0.12's decoder reads ``decoder.version`` ≤ 2 as "a checkpoint from before the
final LayerNorm" and deletes that norm (``TransformerDecoderBase.upgrade_state_dict_named``), but the
authors' pre-LN decoders store version 2 *with* a final LayerNorm; kept as it is, the upgraded model would
silently lose it. Everything else (``fc1``/``fc2``, ``out_proj``, ``self_attn_layer_norm``,
``encoder_attn_layer_norm``, ``final_layer_norm`` of the decoder, ``embed_tokens``, the final
``layer_norm`` of each stack, learned positions, ``project_in_dim``/``project_out_dim``) keeps its name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import torch

from macaron_workflow.errors import UserError

_ENCODER_NORMS = {"0": "self_attn_layer_norm", "1": "final_layer_norm", "2": "ffn1_layer_norm"}
_DECODER_NORMS = {"0": "self_attn_layer_norm", "1": "encoder_attn_layer_norm", "2": "final_layer_norm"}
_RENAMES = (
    (re.compile(r"^(encoder|decoder)\.layers\.(\d+)\.macaron_fc([12])\."), r"\1.layers.\2.ffn1_fc\3."),
    (re.compile(r"^decoder\.layers\.(\d+)\.macaron_layer_norm\."), r"decoder.layers.\1.ffn1_layer_norm."),
)
_LAYER_NORMS = re.compile(r"^(encoder|decoder)\.layers\.(\d+)\.layer_norms\.(\d)\.(weight|bias)$")
_IN_PROJ = re.compile(r"^(.*)\.in_proj_(weight|bias)$")
_DROPPED = re.compile(r"^(encoder|decoder)\.embed_positions\.(_float_tensor|weights)$")


def _rename(key: str) -> str:
    found = _LAYER_NORMS.match(key)
    if found:
        side, layer, index, kind = found.groups()
        names = _ENCODER_NORMS if side == "encoder" else _DECODER_NORMS
        return f"{side}.layers.{layer}.{names[index]}.{kind}"
    for pattern, replacement in _RENAMES:
        key = pattern.sub(replacement, key)
    return key


def plugin_state(
    theirs: Mapping[str, torch.Tensor], ours: Mapping[str, torch.Tensor], source: Path
) -> dict[str, torch.Tensor]:
    """The plugin model's state dict from the authors' one. ``ours`` is the freshly built plugin model's
    (names, shapes, version buffers); every one of its keys must be filled and every one of theirs used,
    with equal shapes, or the upgrade is refused naming the key."""
    state: dict[str, torch.Tensor] = {}
    for key, value in theirs.items():
        if not isinstance(value, torch.Tensor):
            raise UserError(f"{source}: model entry {key!r} is a {type(value).__name__}, not a tensor")
        if _DROPPED.match(key) or key in ("encoder.version", "decoder.version"):
            continue
        if key == "decoder.embed_out":
            state["decoder.output_projection.weight"] = value
            continue
        in_proj = _IN_PROJ.match(key)
        if in_proj:
            prefix, kind = in_proj.groups()
            if value.shape[0] % 3:
                raise UserError(f"{source}: {key} has {value.shape[0]} rows, not 3 × the model dimension")
            q, k, v = value.chunk(3, dim=0)  # fairseq 0.6 stacks q, k, v in this order
            for name, part in (("q_proj", q), ("k_proj", k), ("v_proj", v)):
                state[f"{prefix}.{name}.{kind}"] = part.clone()
            continue
        state[_rename(key)] = value
    for key in ("encoder.version", "decoder.version"):
        if key in ours:
            state[key] = ours[key].clone()  # the current layout: keeps the pre-LN decoder's final norm
    if "decoder.output_projection.weight" in ours and "decoder.output_projection.weight" not in state:
        state["decoder.output_projection.weight"] = state.get("decoder.embed_tokens.weight")  # tied output
    unknown = sorted(k for k in state if k not in ours)
    missing = sorted(k for k in ours if k not in state or state[k] is None)
    if unknown:
        raise UserError(
            f"{source}: weights the plugin model has no place for: {unknown[:6]}"
            + (f" (+{len(unknown) - 6} more)" if len(unknown) > 6 else "")
        )
    if missing:
        raise UserError(
            f"{source}: the plugin model needs weights the checkpoint lacks: {missing[:6]}"
            + (f" (+{len(missing) - 6} more)" if len(missing) > 6 else "")
        )
    for key, value in state.items():
        if tuple(value.shape) != tuple(ours[key].shape):
            raise UserError(
                f"{source}: {key} has shape {tuple(value.shape)} after the upgrade, the model built "
                f"from the checkpoint's args {tuple(ours[key].shape)}"
            )
    return {k: v.float().contiguous() if v.is_floating_point() else v.contiguous() for k, v in state.items()}
