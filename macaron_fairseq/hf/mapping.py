"""Parameter names: the plugin's BERT models ↔ HuggingFace's ``BertForPreTraining`` (and the Macaron
modeling file exported with Macaron models, which uses BERT's names plus ``macaron_ffn`` for FFN₁).

Both compute the same function with the same tensors: fairseq's ``MultiheadAttention`` has separate q/k/v
projections (``q_proj``…) as BERT has (``query``…), both ``out × in``, both scale the query by
``head_dim^-½``; the MLM head is dense → activation → LayerNorm → output tied to the token embeddings plus
its own bias in both. Only the vocabulary rows are permuted (:mod:`macaron_fairseq.hf.vocab`).
"""

from __future__ import annotations

#: per layer: fairseq name → HF name (suffix ``.weight``/``.bias`` appended to both)
LAYER_MODULES = {
    "self_attn.q_proj": "attention.self.query",
    "self_attn.k_proj": "attention.self.key",
    "self_attn.v_proj": "attention.self.value",
    "self_attn.out_proj": "attention.output.dense",
    "self_attn_layer_norm": "attention.output.LayerNorm",
    "fc1": "intermediate.dense",
    "fc2": "output.dense",
    "final_layer_norm": "output.LayerNorm",
}
#: FFN₁ of a Macaron layer (only in the exported Macaron modeling file)
MACARON_MODULES = {
    "ffn1_fc1": "macaron_ffn.intermediate.dense",
    "ffn1_fc2": "macaron_ffn.output.dense",
    "ffn1_layer_norm": "macaron_ffn.output.LayerNorm",
}
#: outside the layers: fairseq name → HF name (``BertForPreTraining``)
GLOBAL_MODULES = {
    "encoder.embed_positions": "bert.embeddings.position_embeddings",
    "encoder.embed_segments": "bert.embeddings.token_type_embeddings",
    "encoder.layernorm_embedding": "bert.embeddings.LayerNorm",
    "encoder.layer_norm": "bert.encoder.LayerNorm",  # pre-LN models only (Macaron modeling file)
    "pooler.dense": "bert.pooler.dense",
    "nsp_classifier": "cls.seq_relationship",
    "lm_head.dense": "cls.predictions.transform.dense",
    "lm_head.layer_norm": "cls.predictions.transform.LayerNorm",
}
#: rows indexed by the vocabulary (permuted between the two id orders)
EMBED_TOKENS = ("encoder.embed_tokens.weight", "bert.embeddings.word_embeddings.weight")
OUTPUT_BIAS = ("lm_head.bias", "cls.predictions.bias")
#: fairseq keys with no HF counterpart: the tied MLM output (= the embeddings) and fairseq's version buffer
FAIRSEQ_ONLY = ("lm_head.weight", "encoder.version")
#: HF keys that are ties or buffers, not parameters of their own
HF_TIED = ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias", "bert.embeddings.position_ids")


def name_pairs(layers: int, macaron: bool) -> list[tuple[str, str]]:
    """Every (fairseq key, HF key) of a model with ``layers`` layers (vocabulary rows excluded)."""
    pairs = []
    modules = dict(GLOBAL_MODULES)
    per_layer = {**LAYER_MODULES, **(MACARON_MODULES if macaron else {})}
    for i in range(layers):
        for ours, theirs in per_layer.items():
            modules[f"encoder.layers.{i}.{ours}"] = f"bert.encoder.layer.{i}.{theirs}"
    for ours, theirs in modules.items():
        for suffix in ("weight", "bias"):
            pairs.append((f"{ours}.{suffix}", f"{theirs}.{suffix}"))
    return pairs


def strip_base_prefix(state: dict, prefix: str = "bert.") -> dict:
    """A ``BertModel`` directory's keys (``embeddings.…``) as ``BertForPreTraining``'s
    (``bert.embeddings…``)."""
    if any(k.startswith(prefix) for k in state):
        return state
    return {f"{prefix}{k}": v for k, v in state.items()}
