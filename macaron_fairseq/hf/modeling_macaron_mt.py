"""Macaron (and Transformer) translation models for HuggingFace transformers (``trust_remote_code=True``):
the modeling file that ``macaron-hf export`` copies into the directory of a translation checkpoint of the
plugin (``macaron``, ``fixup_transformer`` or fairseq's ``transformer`` model, the authors' archs, and
checkpoints upgraded from the authors' fork by ``macaron-upgrade``).

Self-contained (torch and transformers only): the directory loads on a machine without fairseq or this
project. It computes fairseq 0.12's ``TransformerModel`` with the plugin's layers, parameter names included
(``encoder.layers.0.self_attn.q_proj.weight`` …), so the weights are fairseq's tensors unchanged:

* token ids are the fairseq dictionary's (``<s>`` 0, ``<pad>`` 1, ``</s>`` 2, ``<unk>`` 3); a source sentence
  ends with ``</s>``; the decoder starts from ``</s>`` (``decoder_start_token_id`` = eos), as fairseq's
  ``prev_output_tokens`` do;
* embeddings are scaled by √d (unless ``scale_embedding`` is false), positions are fairseq's: token t of a
  sentence (pads not counted) has position ``padding_idx + 1 + t``, sinusoidal (tensor2tensor's table, the
  padding row zero) or learned (a table of ``max_positions + padding_idx + 1`` rows);
* a Macaron layer (Lu et al., Macaron Net, Eq. 17–19) is ``x ← x + γ·FFN₁(x)`` → self-attention
  (→ encoder–decoder attention) → ``x ← x + γ·FFN₂(x)``, γ = ``macaron_ffn_step`` (½); a vanilla layer has no
  FFN₁ and γ = 1. Post-LN (``LN(x + branch)``) or pre-LN (``x + branch(LN(x))``, a final LayerNorm after
  the stack) per stack; norm-free stacks (DT-Fixup / T-Fixup) have no LayerNorm at all.

Incremental decoding keeps keys and values in transformers' ``EncoderDecoderCache`` (a ``DynamicCache`` for
the self-attention, one for the encoder–decoder attention, computed once), as transformers' own
encoder–decoder models do; ``generate()`` creates and reorders it.

    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(DIR, trust_remote_code=True)
    model = AutoModelForSeq2SeqLM.from_pretrained(DIR, trust_remote_code=True)
    print(tokenizer.batch_decode(model.generate(**tokenizer(["Das ist gut ."], return_tensors="pt")),
                                 skip_special_tokens=True))
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn
from transformers import GenerationMixin, PretrainedConfig, PreTrainedModel
from transformers.cache_utils import Cache, DynamicCache, EncoderDecoderCache
from transformers.generation.logits_process import ForcedEOSTokenLogitsProcessor, LogitsProcessorList
from transformers.modeling_outputs import BaseModelOutput, Seq2SeqLMOutput


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """GELU's tanh approximation (fairseq's ``gelu_accurate``)."""
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))


#: fairseq's ``utils.get_activation_fn``
ACTIVATIONS = {
    "relu": F.relu,
    "gelu": lambda x: F.gelu(x.float()).type_as(x),
    "gelu_accurate": gelu_tanh,
    "tanh": torch.tanh,
    "linear": lambda x: x,
    "swish": F.silu,
}


class MacaronMTConfig(PretrainedConfig):
    """A fairseq translation Transformer with Macaron or vanilla layers (fairseq's option names)."""

    model_type = "macaron_mt"
    attribute_map: ClassVar[dict[str, str]] = {
        "hidden_size": "decoder_embed_dim",
        "num_attention_heads": "decoder_attention_heads",
        "num_hidden_layers": "decoder_layers",
        "vocab_size": "tgt_vocab_size",
    }

    def __init__(
        self,
        src_vocab_size: int = 8,
        tgt_vocab_size: int = 8,
        encoder_embed_dim: int = 512,
        decoder_embed_dim: int = 512,
        encoder_layers: int = 6,
        decoder_layers: int = 6,
        encoder_attention_heads: int = 8,
        decoder_attention_heads: int = 8,
        encoder_ffn_embed_dim: int = 1024,
        decoder_ffn_embed_dim: int = 1024,
        macaron: bool = True,
        macaron_ffn_step: float = 0.5,
        encoder_normalize_before: bool = False,
        decoder_normalize_before: bool = False,
        encoder_norm_free: bool = False,
        decoder_norm_free: bool = False,
        encoder_final_layer_norm: bool = False,
        decoder_final_layer_norm: bool = False,
        encoder_layernorm_embedding: bool = False,
        decoder_layernorm_embedding: bool = False,
        encoder_learned_pos: bool = False,
        decoder_learned_pos: bool = False,
        token_positional_embeddings: bool = True,
        max_source_positions: int = 1024,
        max_target_positions: int = 1024,
        scale_embedding: bool = True,
        share_all_embeddings: bool = False,
        share_decoder_input_output_embed: bool = False,
        activation_fn: str = "relu",
        dropout: float = 0.1,
        attention_dropout: float = 0.0,
        activation_dropout: float = 0.0,
        layer_norm_eps: float = 1e-5,
        bos_token_id: int = 0,
        pad_token_id: int = 1,
        eos_token_id: int = 2,
        unk_token_id: int = 3,
        decoder_start_token_id: int = 2,
        is_encoder_decoder: bool = True,
        use_cache: bool = True,
        **kwargs,
    ) -> None:
        self.use_cache = use_cache
        self.src_vocab_size, self.tgt_vocab_size = src_vocab_size, tgt_vocab_size
        self.encoder_embed_dim, self.decoder_embed_dim = encoder_embed_dim, decoder_embed_dim
        self.encoder_layers, self.decoder_layers = encoder_layers, decoder_layers
        self.encoder_attention_heads = encoder_attention_heads
        self.decoder_attention_heads = decoder_attention_heads
        self.encoder_ffn_embed_dim, self.decoder_ffn_embed_dim = encoder_ffn_embed_dim, decoder_ffn_embed_dim
        self.macaron, self.macaron_ffn_step = macaron, macaron_ffn_step
        self.encoder_normalize_before = encoder_normalize_before
        self.decoder_normalize_before = decoder_normalize_before
        self.encoder_norm_free, self.decoder_norm_free = encoder_norm_free, decoder_norm_free
        self.encoder_final_layer_norm = encoder_final_layer_norm
        self.decoder_final_layer_norm = decoder_final_layer_norm
        self.encoder_layernorm_embedding = encoder_layernorm_embedding
        self.decoder_layernorm_embedding = decoder_layernorm_embedding
        self.encoder_learned_pos, self.decoder_learned_pos = encoder_learned_pos, decoder_learned_pos
        self.token_positional_embeddings = token_positional_embeddings
        self.max_source_positions, self.max_target_positions = max_source_positions, max_target_positions
        self.scale_embedding = scale_embedding
        self.share_all_embeddings = share_all_embeddings
        self.share_decoder_input_output_embed = share_decoder_input_output_embed or share_all_embeddings
        self.activation_fn = activation_fn
        self.dropout, self.attention_dropout = dropout, attention_dropout
        self.activation_dropout = activation_dropout
        self.layer_norm_eps = layer_norm_eps
        self.unk_token_id = unk_token_id
        kwargs.setdefault("tie_word_embeddings", self.share_decoder_input_output_embed)
        super().__init__(
            bos_token_id=bos_token_id,
            pad_token_id=pad_token_id,
            eos_token_id=eos_token_id,
            decoder_start_token_id=decoder_start_token_id,
            is_encoder_decoder=is_encoder_decoder,
            **kwargs,
        )


def sinusoidal_table(rows: int, dim: int, padding_idx: int) -> torch.Tensor:
    """fairseq's ``SinusoidalPositionalEmbedding.get_embedding`` (tensor2tensor's table; padding row 0)."""
    half = dim // 2
    scale = math.log(10000) / (half - 1)
    freq = torch.exp(torch.arange(half, dtype=torch.float) * -scale)
    angles = torch.arange(rows, dtype=torch.float).unsqueeze(1) * freq.unsqueeze(0)
    table = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1).view(rows, -1)
    if dim % 2 == 1:
        table = torch.cat([table, torch.zeros(rows, 1)], dim=1)
    table[padding_idx, :] = 0
    return table


def make_positions(tokens: torch.Tensor, padding_idx: int, offset: int = 0) -> torch.Tensor:
    """fairseq's ``utils.make_positions``: ``padding_idx + 1 + (tokens before it, pads not counted)`` for a
    token, ``padding_idx`` for a pad; ``offset`` tokens already seen (cached decoding)."""
    mask = tokens.ne(padding_idx).int()
    return (torch.cumsum(mask, dim=1).type_as(mask) + offset) * mask + padding_idx


class PositionalEmbedding(nn.Module):
    """fairseq's positional embedding: learned (``weight``, ``max_positions + padding_idx + 1`` rows) or
    sinusoidal (a table computed when first used — not a buffer: transformers builds models on the meta
    device and would leave a non-persistent buffer empty)."""

    def __init__(self, max_positions: int, dim: int, padding_idx: int, learned: bool) -> None:
        super().__init__()
        self.padding_idx, self.dim, self.learned = padding_idx, dim, learned
        self.rows = max_positions + padding_idx + 1
        if learned:
            self.weight = nn.Parameter(torch.zeros(self.rows, dim))
        self._table: torch.Tensor | None = None

    def forward(self, positions: torch.Tensor) -> torch.Tensor:
        if self.learned:
            return F.embedding(positions, self.weight, self.padding_idx)
        needed = max(self.rows, int(positions.max()) + 1 if positions.numel() else 0)
        if self._table is None or self._table.size(0) < needed or self._table.device != positions.device:
            self._table = sinusoidal_table(needed, self.dim, self.padding_idx).to(positions.device)
        return self._table.index_select(0, positions.reshape(-1)).view(*positions.shape, -1)


class Attention(nn.Module):
    """fairseq's ``MultiheadAttention`` (separate q/k/v projections, the query scaled by head_dim^-½,
    softmax in float32) with transformers' cache."""

    def __init__(self, dim: int, heads: int, dropout: float, layer_idx: int, kdim: int | None = None) -> None:
        super().__init__()
        kdim = kdim or dim
        self.heads, self.head_dim, self.dropout, self.layer_idx = heads, dim // heads, dropout, layer_idx
        self.scaling = self.head_dim**-0.5
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(kdim, dim)
        self.v_proj = nn.Linear(kdim, dim)
        self.out_proj = nn.Linear(dim, dim)

    def _split(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, d) -> (B, heads, T, d/heads)
        return x.view(x.size(0), x.size(1), self.heads, self.head_dim).transpose(1, 2)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None = None,
        key_padding_mask: torch.Tensor | None = None,
        causal_offset: int | None = None,
        cache: Cache | None = None,
    ) -> torch.Tensor:
        """``memory`` None: self-attention (``causal_offset``: keys already cached, or None for no causal
        mask); else attention over ``memory`` (cached once per layer in the cross-attention cache)."""
        q = self._split(self.q_proj(x) * self.scaling)
        cross = memory is not None
        if cross and isinstance(cache, EncoderDecoderCache) and cache.is_updated.get(self.layer_idx):
            layer = cache.cross_attention_cache.layers[self.layer_idx]
            k, v = layer.keys, layer.values
        else:
            source = memory if cross else x
            k, v = self._split(self.k_proj(source)), self._split(self.v_proj(source))
            if isinstance(cache, EncoderDecoderCache):
                target = cache.cross_attention_cache if cross else cache.self_attention_cache
                k, v = target.update(k, v, self.layer_idx)
                if cross:
                    cache.is_updated[self.layer_idx] = True
        scores = torch.matmul(q, k.transpose(-1, -2))
        if causal_offset is not None:
            t_q, t_k = scores.shape[-2:]
            rows = torch.arange(t_q, device=scores.device).unsqueeze(1) + causal_offset
            future = torch.arange(t_k, device=scores.device).unsqueeze(0) > rows
            scores = scores.masked_fill(future, float("-inf"))
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask[:, None, None, :].to(torch.bool), float("-inf"))
        probs = F.softmax(scores.float(), dim=-1).type_as(scores)
        probs = F.dropout(probs, p=self.dropout, training=self.training)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(x.size(0), x.size(1), -1)
        return self.out_proj(out)


def layer_norm(dim: int, eps: float, norm_free: bool) -> nn.Module:
    return nn.Identity() if norm_free else nn.LayerNorm(dim, eps=eps)


class Layer(nn.Module):
    """One encoder (``cross`` False) or decoder layer; fairseq's names (``self_attn``, ``encoder_attn``,
    ``fc1``/``fc2``/``final_layer_norm`` = FFN₂, ``ffn1_fc1``/``ffn1_fc2``/``ffn1_layer_norm`` = FFN₁)."""

    def __init__(self, config: MacaronMTConfig, side: str, layer_idx: int) -> None:
        super().__init__()
        dim = getattr(config, f"{side}_embed_dim")
        ffn = getattr(config, f"{side}_ffn_embed_dim")
        heads = getattr(config, f"{side}_attention_heads")
        free, eps = getattr(config, f"{side}_norm_free"), config.layer_norm_eps
        self.normalize_before = getattr(config, f"{side}_normalize_before")
        self.macaron = config.macaron
        self.step = float(config.macaron_ffn_step) if config.macaron else 1.0
        self.dropout, self.activation_dropout = config.dropout, config.activation_dropout
        self.activation = ACTIVATIONS[config.activation_fn]
        self.self_attn = Attention(dim, heads, config.attention_dropout, layer_idx)
        self.self_attn_layer_norm = layer_norm(dim, eps, free)
        self.cross = side == "decoder"
        if self.cross:
            self.encoder_attn = Attention(
                dim, heads, config.attention_dropout, layer_idx, kdim=config.encoder_embed_dim
            )
            self.encoder_attn_layer_norm = layer_norm(dim, eps, free)
        if self.macaron:
            self.ffn1_fc1 = nn.Linear(dim, ffn)
            self.ffn1_fc2 = nn.Linear(ffn, dim)
            self.ffn1_layer_norm = layer_norm(dim, eps, free)
        self.fc1 = nn.Linear(dim, ffn)
        self.fc2 = nn.Linear(ffn, dim)
        self.final_layer_norm = layer_norm(dim, eps, free)

    def _residual(self, x: torch.Tensor, norm: nn.Module, branch) -> torch.Tensor:
        """``LN(x + dropout(branch(x)))`` post-LN, ``x + dropout(branch(LN(x)))`` pre-LN."""
        h = branch(norm(x) if self.normalize_before else x)
        x = x + F.dropout(h, p=self.dropout, training=self.training)
        return x if self.normalize_before else norm(x)

    def _ffn(self, fc1: nn.Linear, fc2: nn.Linear, x: torch.Tensor) -> torch.Tensor:
        h = F.dropout(self.activation(fc1(x)), p=self.activation_dropout, training=self.training)
        out = fc2(h)
        return out if self.step == 1.0 else out * self.step

    def forward(
        self,
        x: torch.Tensor,
        padding_mask: torch.Tensor | None,
        memory: torch.Tensor | None = None,
        memory_padding_mask: torch.Tensor | None = None,
        causal_offset: int | None = None,
        cache: Cache | None = None,
    ) -> torch.Tensor:
        if self.macaron:
            x = self._residual(x, self.ffn1_layer_norm, lambda h: self._ffn(self.ffn1_fc1, self.ffn1_fc2, h))
        x = self._residual(
            x,
            self.self_attn_layer_norm,
            lambda h: self.self_attn(h, None, padding_mask, causal_offset, cache),
        )
        if self.cross:
            x = self._residual(
                x,
                self.encoder_attn_layer_norm,
                lambda h: self.encoder_attn(h, memory, memory_padding_mask, None, cache),
            )
        return self._residual(x, self.final_layer_norm, lambda h: self._ffn(self.fc1, self.fc2, h))


class Stack(nn.Module):
    """Embeddings (scaled token embeddings + positions), the layers, the final LayerNorm of a pre-LN stack."""

    def __init__(self, config: MacaronMTConfig, side: str, embed_tokens: nn.Embedding) -> None:
        super().__init__()
        dim = getattr(config, f"{side}_embed_dim")
        self.side, self.padding_idx, self.dropout = side, config.pad_token_id, config.dropout
        self.embed_tokens = embed_tokens
        self.embed_scale = math.sqrt(dim) if config.scale_embedding else 1.0
        self.embed_positions = (
            PositionalEmbedding(
                getattr(config, "max_source_positions" if side == "encoder" else "max_target_positions"),
                dim,
                config.pad_token_id,
                getattr(config, f"{side}_learned_pos"),
            )
            if config.token_positional_embeddings
            else None
        )
        eps = config.layer_norm_eps
        self.layernorm_embedding = (
            nn.LayerNorm(dim, eps=eps) if getattr(config, f"{side}_layernorm_embedding") else None
        )
        count = getattr(config, f"{side}_layers")
        self.layers = nn.ModuleList(Layer(config, side, i) for i in range(count))
        self.layer_norm = nn.LayerNorm(dim, eps=eps) if getattr(config, f"{side}_final_layer_norm") else None

    def embed(self, tokens: torch.Tensor, offset: int = 0) -> torch.Tensor:
        x = self.embed_scale * self.embed_tokens(tokens)
        if self.embed_positions is not None:
            x = x + self.embed_positions(make_positions(tokens, self.padding_idx, offset)).to(x.dtype)
        if self.layernorm_embedding is not None:
            x = self.layernorm_embedding(x)
        return F.dropout(x, p=self.dropout, training=self.training)

    def finish(self, x: torch.Tensor) -> torch.Tensor:
        return x if self.layer_norm is None else self.layer_norm(x)


class MacaronMTEncoder(Stack):
    main_input_name = "input_ids"

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        return_dict: bool = True,
        **kwargs,
    ) -> BaseModelOutput:
        padding_mask = input_ids.eq(self.padding_idx)
        if attention_mask is not None:
            padding_mask = padding_mask | attention_mask.eq(0)
        x = self.embed(input_ids)
        has_pads = padding_mask.any()
        x = x * (1 - padding_mask.unsqueeze(-1).type_as(x) * has_pads.type_as(x))
        for layer in self.layers:
            x = layer(x, padding_mask if has_pads else None)
        x = self.finish(x)
        return BaseModelOutput(last_hidden_state=x) if return_dict else (x,)


class MacaronMTDecoder(Stack):
    def __init__(self, config: MacaronMTConfig, embed_tokens: nn.Embedding) -> None:
        super().__init__(config, "decoder", embed_tokens)
        self.output_projection = nn.Linear(config.decoder_embed_dim, config.tgt_vocab_size, bias=False)

    def forward(
        self,
        input_ids: torch.Tensor,
        encoder_hidden_states: torch.Tensor,
        encoder_padding_mask: torch.Tensor | None,
        attention_mask: torch.Tensor | None = None,
        cache: Cache | None = None,
    ) -> torch.Tensor:
        """Logits of the next token after each of ``input_ids`` (the tokens after ``cache``'s)."""
        offset = cache.get_seq_length() if cache is not None else 0
        if offset:  # fairseq's incremental positions: every cached token counts
            positions = torch.arange(1, input_ids.size(1) + 1, device=input_ids.device) + offset
            x = self.embed_scale * self.embed_tokens(input_ids)
            if self.embed_positions is not None:
                pos = (positions + self.padding_idx).unsqueeze(0).expand_as(input_ids)
                x = x + self.embed_positions(pos).to(x.dtype)
            if self.layernorm_embedding is not None:
                x = self.layernorm_embedding(x)
            x = F.dropout(x, p=self.dropout, training=self.training)
        else:
            x = self.embed(input_ids)
        if attention_mask is not None:
            padding_mask = attention_mask.eq(0)
        else:
            padding_mask = input_ids.eq(self.padding_idx) if not offset else None
        if padding_mask is not None and not padding_mask.any():
            padding_mask = None
        for layer in self.layers:
            x = layer(x, padding_mask, encoder_hidden_states, encoder_padding_mask, offset, cache)
        return self.output_projection(self.finish(x))


class MacaronMTPreTrainedModel(PreTrainedModel):
    config_class = MacaronMTConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    _no_split_modules: ClassVar[list[str]] = ["Layer"]

    def _init_weights(self, module: nn.Module) -> None:
        """fairseq's initialisation of new models (weights normally come from a checkpoint)."""
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0, std=module.embedding_dim**-0.5)
            if module.padding_idx is not None:
                with torch.no_grad():
                    module.weight[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)


def shift_tokens_right(labels: torch.Tensor, pad: int, start: int) -> torch.Tensor:
    """fairseq's ``prev_output_tokens``: ``</s>`` then the target without its last token."""
    shifted = labels.new_full(labels.shape, pad)
    shifted[:, 1:] = labels[:, :-1]
    shifted[:, 0] = start
    return shifted.masked_fill(shifted.eq(-100), pad)


class FairseqForcedEOS(ForcedEOSTokenLogitsProcessor):
    """fairseq's length limit: at the last step every token but ``</s>`` is forbidden and ``</s>`` keeps the
    model's score (transformers' own processor sets it to 0, which changes which of the beams hitting the
    limit wins)."""

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor) -> torch.Tensor:
        if input_ids.shape[-1] != self.max_length - 1:
            return scores
        keep = scores[:, self.eos_token_id].clone()
        scores = torch.full_like(scores, float("-inf"))
        scores[:, self.eos_token_id] = keep
        return scores


class MacaronMTForConditionalGeneration(MacaronMTPreTrainedModel, GenerationMixin):
    """Encoder, decoder and output projection of a fairseq translation model; ``generate()`` works."""

    def __init__(self, config: MacaronMTConfig) -> None:
        super().__init__(config)
        pad = config.pad_token_id
        src = nn.Embedding(config.src_vocab_size, config.encoder_embed_dim, padding_idx=pad)
        tgt = (
            src
            if config.share_all_embeddings
            else nn.Embedding(config.tgt_vocab_size, config.decoder_embed_dim, padding_idx=pad)
        )
        self.encoder = MacaronMTEncoder(config, "encoder", src)
        self.decoder = MacaronMTDecoder(config, tgt)
        tied = {}
        if config.share_all_embeddings:
            tied["decoder.embed_tokens.weight"] = "encoder.embed_tokens.weight"
        if config.share_decoder_input_output_embed:
            tied["decoder.output_projection.weight"] = (
                "encoder.embed_tokens.weight"
                if config.share_all_embeddings
                else "decoder.embed_tokens.weight"
            )
            self.decoder.output_projection.weight = self.decoder.embed_tokens.weight
        self._tied_weights_keys = tied
        self.post_init()

    def _get_logits_processor(self, *args, **kwargs) -> LogitsProcessorList:
        """transformers' processors, ``forced_eos_token_id``'s replaced by :class:`FairseqForcedEOS`."""
        processors = super()._get_logits_processor(*args, **kwargs)
        for i, processor in enumerate(processors):
            if type(processor) is ForcedEOSTokenLogitsProcessor:
                replacement = FairseqForcedEOS(processor.max_length, 0)
                replacement.eos_token_id = processor.eos_token_id
                processors[i] = replacement
        return processors

    def get_encoder(self, *args, **kwargs) -> MacaronMTEncoder:
        return self.encoder

    def get_decoder(self, *args, **kwargs) -> MacaronMTDecoder:
        return self.decoder

    def get_input_embeddings(self) -> nn.Embedding:
        return self.encoder.embed_tokens

    def get_output_embeddings(self) -> nn.Linear:
        return self.decoder.output_projection

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.Tensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: BaseModelOutput | tuple | None = None,
        cache: Cache | None = None,
        past_key_values: Cache | None = None,
        use_cache: bool | None = None,
        labels: torch.Tensor | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> Seq2SeqLMOutput:
        """Logits over the target dictionary (fairseq's ids) of the token after each decoder input."""
        cache = cache if cache is not None else past_key_values
        if encoder_outputs is None:
            encoder_outputs = self.encoder(input_ids, attention_mask)
        elif not isinstance(encoder_outputs, BaseModelOutput):
            encoder_outputs = BaseModelOutput(last_hidden_state=encoder_outputs[0])
        if decoder_input_ids is None:
            if labels is None:
                raise ValueError("give decoder_input_ids (they start with </s>) or labels")
            decoder_input_ids = shift_tokens_right(
                labels, self.config.pad_token_id, self.config.decoder_start_token_id
            )
        if use_cache is None:  # no cache when training on labels
            use_cache = labels is None and getattr(self.config, "use_cache", True)
        if use_cache and cache is None:
            cache = EncoderDecoderCache(DynamicCache(config=self.config), DynamicCache(config=self.config))
        memory_padding_mask = None
        if input_ids is not None:
            memory_padding_mask = input_ids.eq(self.config.pad_token_id)
            if attention_mask is not None:
                memory_padding_mask = memory_padding_mask | attention_mask.eq(0)
        elif attention_mask is not None:
            memory_padding_mask = attention_mask.eq(0)
        if memory_padding_mask is not None and not memory_padding_mask.any():
            memory_padding_mask = None
        logits = self.decoder(
            decoder_input_ids,
            encoder_outputs.last_hidden_state,
            memory_padding_mask,
            attention_mask=decoder_attention_mask,
            cache=cache if use_cache else None,
        )
        loss = None
        if labels is not None:
            target = labels.masked_fill(labels.eq(self.config.pad_token_id), -100)
            loss = F.cross_entropy(
                logits.float().view(-1, logits.size(-1)), target.view(-1), ignore_index=-100
            )
        return Seq2SeqLMOutput(
            loss=loss,
            logits=logits,
            cache=cache if use_cache else None,
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
        )
