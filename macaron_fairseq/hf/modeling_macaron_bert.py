"""Macaron BERT for HuggingFace transformers (``trust_remote_code=True``): the modeling file that
``python -m macaron_fairseq.hf export`` copies into the directory of a ``macaron_bert_*`` model (and of a
pre-LN or norm-free ``vanilla_bert_*`` one, which ``BertForPreTraining`` cannot express).

Self-contained (torch and transformers only): the directory loads on a machine without fairseq or this
project. Names follow ``BertForPreTraining``'s; a Macaron layer adds ``macaron_ffn`` (FFN₁).

Encoder layer (Lu et al., Macaron Net, Eq. 17–19; post-LN, the paper's setting and the default):

    x ← LN(x + γ·FFN₁(x));  x ← LN(x + SelfAttn(x));  x ← LN(x + γ·FFN₂(x))      (γ = ``macaron_ffn_step``)

pre-LN (``normalize_before``): ``x ← x + γ·FFN₁(LN(x))`` …, and a final LayerNorm after the last layer.
A layer listed in ``norm_free_layers`` (DT-Fixup / T-Fixup) has no LayerNorm. Without ``macaron`` the
layer is BERT's (attention → FFN, γ = 1).

    from transformers import AutoModel, AutoModelForPreTraining, AutoModelForSequenceClassification
    model = AutoModelForPreTraining.from_pretrained(DIR, trust_remote_code=True)   # MLM + NSP logits
    encoder = AutoModel.from_pretrained(DIR, trust_remote_code=True)               # fine-tuning
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutputWithPooling, SequenceClassifierOutput
from transformers.models.bert.modeling_bert import BertForPreTrainingOutput


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """GELU's tanh approximation (fairseq's ``gelu_accurate``)."""
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))


ACTIVATIONS = {
    "gelu": lambda x: F.gelu(x.float()).type_as(x),
    "gelu_accurate": gelu_tanh,
    "relu": F.relu,
    "tanh": torch.tanh,
    "linear": lambda x: x,
}


class MacaronBertConfig(PretrainedConfig):
    model_type = "macaron_bert"

    def __init__(
        self,
        vocab_size: int = 30522,
        hidden_size: int = 768,
        num_hidden_layers: int = 12,
        num_attention_heads: int = 12,
        intermediate_size: int = 1536,
        hidden_act: str = "gelu",
        hidden_dropout_prob: float = 0.1,
        attention_probs_dropout_prob: float = 0.1,
        activation_dropout: float = 0.0,
        max_position_embeddings: int = 512,
        type_vocab_size: int = 2,
        layer_norm_eps: float = 1e-5,
        pad_token_id: int = 1,
        macaron: bool = True,
        macaron_ffn_step: float = 0.5,
        normalize_before: bool = False,
        norm_free_layers: list[int] | None = None,
        embedding_layer_norm: bool = True,
        final_layer_norm: bool | None = None,
        classifier_dropout: float | None = None,
        initializer_range: float = 0.02,
        **kwargs,
    ) -> None:
        super().__init__(pad_token_id=pad_token_id, **kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.activation_dropout = activation_dropout
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.layer_norm_eps = layer_norm_eps
        self.macaron = macaron
        self.macaron_ffn_step = macaron_ffn_step
        self.normalize_before = normalize_before
        self.norm_free_layers = list(norm_free_layers or [])
        self.embedding_layer_norm = embedding_layer_norm
        # a LayerNorm after the last layer (fairseq's pre-LN encoders have one); default: pre-LN
        self.final_layer_norm = normalize_before if final_layer_norm is None else final_layer_norm
        self.classifier_dropout = classifier_dropout
        self.initializer_range = initializer_range


def _norm(config: MacaronBertConfig, present: bool) -> nn.Module:
    return nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps) if present else nn.Identity()


class Embeddings(nn.Module):
    def __init__(self, config: MacaronBertConfig) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = _norm(config, config.embedding_layer_norm)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        positions = self.position_embeddings.weight[: input_ids.size(1)].unsqueeze(0)
        x = self.word_embeddings(input_ids) + positions + self.token_type_embeddings(token_type_ids)
        return self.dropout(self.LayerNorm(x))


class Linear(nn.Module):
    """``dense`` as a submodule, so that the names are BERT's (``intermediate.dense``, ``output.dense``)."""

    def __init__(self, dim_in: int, dim_out: int) -> None:
        super().__init__()
        self.dense = nn.Linear(dim_in, dim_out)


class FFN(nn.Module):
    """``x + γ·dropout(fc2(act(fc1(x))))`` with the layer's norm placement (γ = 1 for BERT's FFN);
    ``intermediate.dense`` = fc1, ``output.dense`` = fc2, ``output.LayerNorm``: BERT's names."""

    def __init__(self, config: MacaronBertConfig, step: float, norm: bool) -> None:
        super().__init__()
        self.intermediate = Linear(config.hidden_size, config.intermediate_size)
        self.output = Linear(config.intermediate_size, config.hidden_size)
        self.output.LayerNorm = _norm(config, norm)
        self.step = step
        self.act = ACTIVATIONS[config.hidden_act]
        self.normalize_before = config.normalize_before
        self.activation_dropout = nn.Dropout(config.activation_dropout)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return feed_forward(self, x)


def feed_forward(ffn: nn.Module, x: torch.Tensor) -> torch.Tensor:
    residual, norm = x, ffn.output.LayerNorm
    if ffn.normalize_before:
        x = norm(x)
    x = ffn.activation_dropout(ffn.act(ffn.intermediate.dense(x)))
    x = residual + ffn.dropout(ffn.step * ffn.output.dense(x))
    return x if ffn.normalize_before else norm(x)


class SelfAttention(nn.Module):
    def __init__(self, config: MacaronBertConfig) -> None:
        super().__init__()
        dim = config.hidden_size
        self.heads = config.num_attention_heads
        self.query, self.key, self.value = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch, length, dim = x.shape
        head = dim // self.heads

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(batch, length, self.heads, head).transpose(1, 2)

        q = split(self.query(x)) * head**-0.5
        k, v = split(self.key(x)), split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) + mask
        probs = self.dropout(torch.softmax(scores.float(), dim=-1).type_as(scores))
        return torch.matmul(probs, v).transpose(1, 2).reshape(batch, length, dim)


class Attention(nn.Module):
    def __init__(self, config: MacaronBertConfig, norm: bool) -> None:
        super().__init__()
        self.self = SelfAttention(config)
        self.output = Linear(config.hidden_size, config.hidden_size)
        self.output.LayerNorm = _norm(config, norm)
        self.normalize_before = config.normalize_before
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        residual, norm = x, self.output.LayerNorm
        if self.normalize_before:
            x = norm(x)
        x = residual + self.dropout(self.output.dense(self.self(x, mask)))
        return x if self.normalize_before else norm(x)


class Layer(nn.Module):
    def __init__(self, config: MacaronBertConfig, index: int) -> None:
        super().__init__()
        norm = index not in config.norm_free_layers
        step = config.macaron_ffn_step if config.macaron else 1.0
        if config.macaron:
            self.macaron_ffn = FFN(config, step, norm)
        self.attention = Attention(config, norm)
        # the FFN (FFN₂ of a Macaron layer) with BERT's names: intermediate.dense, output.dense/LayerNorm
        self.intermediate = Linear(config.hidden_size, config.intermediate_size)
        self.output = Linear(config.intermediate_size, config.hidden_size)
        self.output.LayerNorm = _norm(config, norm)
        self.step = step
        self.act = ACTIVATIONS[config.hidden_act]
        self.normalize_before = config.normalize_before
        self.activation_dropout = nn.Dropout(config.activation_dropout)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if hasattr(self, "macaron_ffn"):
            x = self.macaron_ffn(x)
        return feed_forward(self, self.attention(x, mask))


class Encoder(nn.Module):
    def __init__(self, config: MacaronBertConfig) -> None:
        super().__init__()
        self.layer = nn.ModuleList(Layer(config, i) for i in range(config.num_hidden_layers))
        if config.final_layer_norm:
            self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        for layer in self.layer:
            x = layer(x, mask)
        return self.LayerNorm(x) if hasattr(self, "LayerNorm") else x


class Pooler(nn.Module):
    def __init__(self, config: MacaronBertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(x[:, 0]))


class MacaronBertPreTrainedModel(PreTrainedModel):
    config_class = MacaronBertConfig
    base_model_prefix = "bert"

    def _init_weights(self, module: nn.Module) -> None:
        std = self.config.initializer_range
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=std)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)


class MacaronBertModel(MacaronBertPreTrainedModel):
    """Embeddings → layers → (last layer's vectors, pooled first token)."""

    def __init__(self, config: MacaronBertConfig) -> None:
        super().__init__(config)
        self.embeddings = Embeddings(config)
        self.encoder = Encoder(config)
        self.pooler = Pooler(config)
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings.word_embeddings = value

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> BaseModelOutputWithPooling:
        if attention_mask is None:
            attention_mask = input_ids.ne(self.config.pad_token_id)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        x = self.embeddings(input_ids, token_type_ids)
        mask = torch.zeros(attention_mask.shape, dtype=x.dtype, device=x.device)
        mask = mask.masked_fill(~attention_mask.bool(), float("-inf"))[:, None, None, :]
        x = self.encoder(x, mask)
        return BaseModelOutputWithPooling(last_hidden_state=x, pooler_output=self.pooler(x))


class PredictionHead(nn.Module):
    def __init__(self, config: MacaronBertConfig) -> None:
        super().__init__()
        self.transform = nn.Module()
        self.transform.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.transform.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.act = ACTIVATIONS[config.hidden_act]

    def forward(self, x: torch.Tensor, embeddings: torch.Tensor) -> torch.Tensor:
        x = self.transform.LayerNorm(self.act(self.transform.dense(x)))
        return F.linear(x, embeddings) + self.bias


class MacaronBertForPreTraining(MacaronBertPreTrainedModel):
    """MLM logits (output tied to the token embeddings, own bias) and NSP logits (0: IsNext)."""

    def __init__(self, config: MacaronBertConfig) -> None:
        super().__init__(config)
        self.bert = MacaronBertModel(config)
        self.cls = nn.Module()
        self.cls.predictions = PredictionHead(config)
        self.cls.seq_relationship = nn.Linear(config.hidden_size, 2)
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        if isinstance(module, PredictionHead):
            nn.init.zeros_(module.bias)

    def get_input_embeddings(self) -> nn.Embedding:
        return self.bert.embeddings.word_embeddings

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        next_sentence_label: torch.Tensor | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> BertForPreTrainingOutput:
        out = self.bert(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        mlm = self.cls.predictions(out.last_hidden_state, self.bert.embeddings.word_embeddings.weight)
        nsp = self.cls.seq_relationship(out.pooler_output)
        loss = None
        if labels is not None and next_sentence_label is not None:
            loss = F.cross_entropy(mlm.view(-1, mlm.size(-1)), labels.view(-1), ignore_index=-100)
            loss = loss + F.cross_entropy(nsp.view(-1, 2), next_sentence_label.view(-1))
        return BertForPreTrainingOutput(loss=loss, prediction_logits=mlm, seq_relationship_logits=nsp)


class MacaronBertForSequenceClassification(MacaronBertPreTrainedModel):
    """BERT's classifier: pooled first token → dropout → linear (regression with ``num_labels == 1``)."""

    def __init__(self, config: MacaronBertConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.bert = MacaronBertModel(config)
        dropout = config.classifier_dropout
        self.dropout = nn.Dropout(config.hidden_dropout_prob if dropout is None else dropout)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> SequenceClassifierOutput:
        out = self.bert(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        logits = self.classifier(self.dropout(out.pooler_output))
        loss = None
        if labels is not None:
            if self.num_labels == 1:
                loss = F.mse_loss(logits.squeeze(-1), labels.float())
            else:
                loss = F.cross_entropy(logits, labels.view(-1))
        return SequenceClassifierOutput(loss=loss, logits=logits)
