"""The Macaron authors' BERT for HuggingFace transformers (``trust_remote_code=True``): the modeling file that
``python -m macaron_fairseq.hf export`` copies into the directory of an upgraded
``transformer_bert_base_macaron`` (model ``authors_bert`` of the plugin,
:mod:`macaron_fairseq.models.authors_bert`).

Self-contained (torch and transformers only). Their forward (zhuohan123/macaron-net, ``bert/``):

    x = √d · E[ids] + E_segment[token_type_ids] + sinusoid(position)   (fairseq's position numbering,
                                                                        padding → the zero row)
    per layer:  x += ½ · FFN_ReLU(LN(x));  x += Attn(LN(x));  x += ½ · FFN_GELU(LN(x))
    x = LN(x)                                                           (every LN without gain or bias)
    MLM logits = LN_affine(gelu(dense(x))) @ Eᵀ (no bias)
    next-sentence logit = nsp(x[:, 0])                                  (> 0: B follows A)

Ids and segments are the plugin's (``vocab.json`` of the directory; ``token_type_ids`` 0 for ``<s> A </s>``
and padding, 1 for ``B </s>``). The text is cut as their scripts cut it: Moses, lowercasing, their BPE
(``bpe-code`` of the directory; :mod:`macaron_preprocess.text.authors_bpe_encode` does it).

    from transformers import AutoModel, AutoModelForPreTraining, AutoModelForSequenceClassification
    model = AutoModelForPreTraining.from_pretrained(DIR, trust_remote_code=True)   # MLM + next-sentence
    classifier = AutoModelForSequenceClassification.from_pretrained(DIR, trust_remote_code=True, num_labels=3)
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput, SequenceClassifierOutput
from transformers.models.bert.modeling_bert import BertForPreTrainingOutput


class AuthorsBertConfig(PretrainedConfig):
    model_type = "macaron_authors_bert"

    def __init__(
        self,
        vocab_size: int = 32768,
        hidden_size: int = 768,
        num_hidden_layers: int = 12,
        num_attention_heads: int = 12,
        intermediate_size: int = 1536,
        hidden_dropout_prob: float = 0.1,
        attention_probs_dropout_prob: float = 0.1,
        activation_dropout: float = 0.0,
        layer_norm_eps: float = 1e-5,
        pad_token_id: int = 1,
        **kwargs,
    ) -> None:
        super().__init__(pad_token_id=pad_token_id, **kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.activation_dropout = activation_dropout
        self.layer_norm_eps = layer_norm_eps


def sinusoids(rows: int, dim: int, pad: int) -> torch.Tensor:
    """tensor2tensor's table as fairseq builds it: [sin | cos], row ``pad`` zero."""
    half = dim // 2
    freq = torch.exp(torch.arange(half, dtype=torch.float) * -(math.log(10000) / (half - 1)))
    angles = torch.arange(rows, dtype=torch.float)[:, None] * freq[None]
    table = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)
    if dim % 2:
        table = torch.cat([table, torch.zeros(rows, 1)], dim=1)
    table[pad] = 0
    return table


class Embeddings(nn.Module):
    def __init__(self, config: AuthorsBertConfig) -> None:
        super().__init__()
        self.pad = config.pad_token_id
        self.scale = math.sqrt(config.hidden_size)
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=self.pad)
        self.token_type_embeddings = nn.Embedding(2, config.hidden_size, padding_idx=0)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        real = input_ids.ne(self.pad).long()
        positions = torch.cumsum(real, dim=1) * real + self.pad
        table = sinusoids(int(positions.max()) + 1, self.word_embeddings.embedding_dim, self.pad)
        x = self.scale * self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        return self.dropout(x + table.to(x)[positions])


class HalfStepFFN(nn.Module):
    """``x + ½ · dropout(fc2(dropout(act(fc1(LN(x))))))``, LN without gain or bias."""

    def __init__(self, config: AuthorsBertConfig, activation) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, elementwise_affine=False)
        self.fc1 = nn.Linear(config.hidden_size, config.intermediate_size)
        self.fc2 = nn.Linear(config.intermediate_size, config.hidden_size)
        self.activation = activation
        self.activation_dropout = nn.Dropout(config.activation_dropout)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.activation_dropout(self.activation(self.fc1(self.norm(x))))
        return x + self.dropout(0.5 * self.fc2(h))


class SelfAttention(nn.Module):
    def __init__(self, config: AuthorsBertConfig) -> None:
        super().__init__()
        dim = config.hidden_size
        self.heads = config.num_attention_heads
        self.norm = nn.LayerNorm(dim, eps=config.layer_norm_eps, elementwise_affine=False)
        self.q_proj, self.k_proj = nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.v_proj, self.out_proj = nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.attention_dropout = nn.Dropout(config.attention_probs_dropout_prob)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor) -> torch.Tensor:
        bsz, length, dim = x.shape
        head = dim // self.heads
        h = self.norm(x)

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(bsz, length, self.heads, head).transpose(1, 2)

        q, k, v = split(self.q_proj(h) * head**-0.5), split(self.k_proj(h)), split(self.v_proj(h))
        scores = (q @ k.transpose(-1, -2)).masked_fill(~key_mask[:, None, None, :], float("-inf"))
        attn = self.attention_dropout(torch.softmax(scores.float(), dim=-1).type_as(q)) @ v
        return x + self.dropout(self.out_proj(attn.transpose(1, 2).reshape(bsz, length, dim)))


class Layer(nn.Module):
    def __init__(self, config: AuthorsBertConfig) -> None:
        super().__init__()
        self.macaron_ffn = HalfStepFFN(config, F.relu)
        self.attention = SelfAttention(config)
        self.ffn = HalfStepFFN(config, F.gelu)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor) -> torch.Tensor:
        return self.ffn(self.attention(self.macaron_ffn(x), key_mask))


class Encoder(nn.Module):
    def __init__(self, config: AuthorsBertConfig) -> None:
        super().__init__()
        self.layer = nn.ModuleList(Layer(config) for _ in range(config.num_hidden_layers))
        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, elementwise_affine=False)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor) -> torch.Tensor:
        for layer in self.layer:
            x = layer(x, key_mask)
        return self.norm(x)


class AuthorsBertPreTrainedModel(PreTrainedModel):
    config_class = AuthorsBertConfig
    base_model_prefix = "authors_bert"

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=module.in_features**-0.5)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=module.embedding_dim**-0.5)
            if module.padding_idx is not None:
                with torch.no_grad():
                    module.weight[module.padding_idx].zero_()


class AuthorsBertModel(AuthorsBertPreTrainedModel):
    """Embeddings → layers → final LayerNorm: the last hidden states (the sentence vector is the first)."""

    def __init__(self, config: AuthorsBertConfig) -> None:
        super().__init__(config)
        self.embeddings = Embeddings(config)
        self.encoder = Encoder(config)
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
    ) -> BaseModelOutput:
        if attention_mask is None:
            attention_mask = input_ids.ne(self.config.pad_token_id)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        x = self.encoder(self.embeddings(input_ids, token_type_ids), attention_mask.bool())
        return BaseModelOutput(last_hidden_state=x)


class MLMHead(nn.Module):
    def __init__(self, config: AuthorsBertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, x: torch.Tensor, embeddings: torch.Tensor) -> torch.Tensor:
        return F.linear(self.layer_norm(F.gelu(self.dense(x))), embeddings)


class AuthorsBertForPreTraining(AuthorsBertPreTrainedModel):
    """MLM logits (the token embeddings as output projection, no bias) and one next-sentence logit."""

    def __init__(self, config: AuthorsBertConfig) -> None:
        super().__init__(config)
        self.authors_bert = AuthorsBertModel(config)
        self.lm_head = MLMHead(config)
        self.nsp = nn.Linear(config.hidden_size, 1)
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.authors_bert.embeddings.word_embeddings

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
        x = self.authors_bert(input_ids, attention_mask, token_type_ids).last_hidden_state
        mlm = self.lm_head(x, self.authors_bert.embeddings.word_embeddings.weight)
        nsp = self.nsp(x[:, 0])
        loss = None
        if labels is not None and next_sentence_label is not None:  # next_sentence_label 1: B follows A
            loss = F.cross_entropy(mlm.view(-1, mlm.size(-1)), labels.view(-1), ignore_index=-100)
            loss = loss + F.binary_cross_entropy_with_logits(
                nsp.view(-1), next_sentence_label.float().view(-1)
            )
        return BertForPreTrainingOutput(loss=loss, prediction_logits=mlm, seq_relationship_logits=nsp)


class AuthorsBertForSequenceClassification(AuthorsBertPreTrainedModel):
    """Their GLUE classifier: a linear layer on the first token's final state, zero at the start, no
    dropout, no pooler (regression with ``num_labels == 1``)."""

    def __init__(self, config: AuthorsBertConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.authors_bert = AuthorsBertModel(config)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        if module is getattr(self, "classifier", None):  # also when from_pretrained fills it in
            nn.init.zeros_(module.weight)
            nn.init.zeros_(module.bias)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> SequenceClassifierOutput:
        x = self.authors_bert(input_ids, attention_mask, token_type_ids).last_hidden_state
        logits = self.classifier(x[:, 0])
        loss = None
        if labels is not None:
            if self.num_labels == 1:
                loss = F.mse_loss(logits.squeeze(-1), labels.float())
            else:
                loss = F.cross_entropy(logits, labels.view(-1))
        return SequenceClassifierOutput(loss=loss, logits=logits)
