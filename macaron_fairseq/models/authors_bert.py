"""The Macaron authors' BERT (Lu et al. §5): the model of their ``bert/`` fork (zhuohan123/macaron-net,
fairseq 0.6 on StackingBERT), registered as model ``authors_bert`` under their architecture names.

Facts read from their code (``bert/fairseq/models/transformer.py``, ``fairseq_model.py``, ``tasks/glue.py``,
``data/glue_dataset.py``, ``macaron-scripts/``):

* ``transformer_bert_base_macaron`` (pre-training, ``--task bert --share-all-embeddings``) and
  ``transformer_classifier_base_macaron`` (GLUE, ``--load-bert``): d 768, 12 layers, 12 heads, FFN 1536 in
  each half, dropout 0.1, attention dropout 0.1, ReLU dropout 0.
* Every layer is pre-LN with **non-affine** LayerNorms (``no_normalize_affine``: no LayerNorm weights in the
  encoder), a non-affine final LayerNorm after the last layer, and ``x + ½·FFN`` on both halves
  (``fc_factor = 0.5``): the Macaron half-step FFN uses **ReLU**, the main FFN **GELU** (erf).
* Input: token embedding × √d + sinusoidal positions (fairseq's numbering: the first token is position
  ``pad + 1``, pads get the zero row) + a 2-row segment embedding, no embedding LayerNorm. Their segments:
  ``<cls>``, sentence A and padding 1, sentence B 0; row 1 is the segment embedding's padding row (zero at
  initialisation, never updated).
* MLM: ``LN(gelu(mid_layer.0(h))) @ embed_outᵀ`` with an affine LayerNorm and no output bias, ``embed_out``
  the token embedding itself. Next sentence: one logit (``classifier``, d → 1) on the final ``<cls>`` state,
  no pooler; positive means "B follows A" (their label 1).
* GLUE classifier: a zero-initialised linear layer d → classes on the final ``<cls>`` state, no pooler, no
  dropout on it.

How the plugin's version is laid out (the upgrade, :mod:`macaron_fairseq.upgrade.bert`, maps their files to
it): fairseq's ``TransformerEncoderBase`` whose layers are the plugin's
:class:`~macaron_fairseq.modules.macaron_layer.MacaronEncoderLayer` with non-affine norms and a ReLU first
FFN; the plugin's dictionary (``<s>`` = their ``<cls>``, ``<pad>``, ``</s>``, ``<unk>``, the words,
``<mask>`` last, appended by the tasks) and the plugin's segment convention (0 for ``<s> A </s>``, 1 for
``B </s>``, padding 0), so their segment rows are swapped and the padding row is row 0. Their id 0
(``<Lua heritage>``, never an input) has no row: the MLM logits of every other symbol are theirs.
``forward(src_tokens, segment_labels)`` returns ``(mlm_logits, sentence_logits)`` like the plugin's BERT
models, the sentence logits B × 1.

How it differs from the plugin's ``macaron_bert_base`` (BERT as published with Macaron layers): pre-LN with
non-affine LayerNorms and a final one instead of post-LN affine ones, a ReLU first FFN, sinusoidal positions
instead of 512 learned ones, √d-scaled token embeddings without an embedding LayerNorm, no pooler, one
next-sentence logit instead of two, no MLM output bias. Over the same vocabulary it has
:func:`parameter_difference` fewer parameters (1,071,931 with BERT's 30,522 symbols;
``python -m macaron_fairseq.param_parity --bert`` prints both counts).
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import torch
import torch.nn.functional as F
from fairseq.models import FairseqEncoderModel, register_model
from fairseq.models.transformer import TransformerConfig, TransformerEncoderBase
from torch import Tensor, nn

from macaron_fairseq.models.bert import BertPretrainingBase
from macaron_fairseq.models.encoder_decoder import wrap_layer
from macaron_fairseq.modules.macaron_layer import MacaronEncoderLayer

#: their ``fc_factor``: both FFN halves are added as x + ½·FFN(x)
AUTHORS_FFN_STEP = 0.5
#: their tasks' ``--max-positions`` default (bert and glue_single/glue_pair): an example's length bound;
#: the positions are sinusoidal, so the model itself has no limit
AUTHORS_MAX_POSITIONS = 384
SEGMENTS = 2
#: the plugin's segment of ``<s> A </s>`` and of padding: their segment 1, the embedding's padding row
PADDING_SEGMENT = 0


def non_affine_norm(dim: int) -> nn.LayerNorm:
    """Their ``LayerNorm(dim, elementwise_affine=False)`` (ε 1e-5, torch's default)."""
    return nn.LayerNorm(dim, elementwise_affine=False)


class AuthorsBertLayer(MacaronEncoderLayer):
    """Their encoder layer: x + ½·FFN_ReLU(LN(x)) → x + Attn(LN(x)) → x + ½·FFN_GELU(LN(x)), the LayerNorms
    without gain or bias."""

    def __init__(self, cfg: Any) -> None:
        super().__init__(cfg, ffn_step=AUTHORS_FFN_STEP)
        dim = self.embed_dim
        self.self_attn_layer_norm = non_affine_norm(dim)
        self.final_layer_norm = non_affine_norm(dim)
        self.ffn1_layer_norm = non_affine_norm(dim)

    def first_ffn(self, x: Tensor) -> Tensor:
        """Their Macaron half: ``x + ½·dropout(fc2(dropout_relu(relu(fc1(LN(x))))))`` — ReLU, whatever the
        main FFN's activation (``F.relu`` in their layer)."""
        residual = x
        x = F.relu(self.ffn1_fc1(self.ffn1_layer_norm(x)))
        x = self.ffn1_fc2(self.activation_dropout_module(x))  # a ScaledLinear: γ = ½ on its output
        return residual + self.dropout_module(x)


class FirstToken(nn.Module):
    """Their sentence representation: the final state of the first token (``<cls>``), no pooler."""

    def forward(self, features: Tensor) -> Tensor:
        return features[:, 0]


class AuthorsMLMHead(nn.Module):
    """``LN(gelu(dense(h))) @ Wᵀ``: their ``mid_layer`` (Linear, GELU, affine LayerNorm) and the token
    embedding as output projection, no bias."""

    def __init__(self, dim: int, weight: nn.Parameter) -> None:
        super().__init__()
        self.dense = nn.Linear(dim, dim)
        self.layer_norm = nn.LayerNorm(dim)
        self.weight = weight

    def forward(self, features: Tensor, masked_tokens: Tensor | None = None) -> Tensor:
        if masked_tokens is not None:
            features = features[masked_tokens, :]
        return F.linear(self.layer_norm(F.gelu(self.dense(features))), self.weight)


class AuthorsClassificationHead(nn.Module):
    """Their GLUE classifier: a linear layer on the final ``<cls>`` state, weight and bias zero at the start
    (``FairseqClassifierModel``), no dropout."""

    def __init__(self, dim: int, num_classes: int) -> None:
        super().__init__()
        self.out_proj = nn.Linear(dim, num_classes)
        nn.init.zeros_(self.out_proj.weight)
        nn.init.zeros_(self.out_proj.bias)

    def forward(self, features: Tensor) -> Tensor:
        return self.out_proj(features)


class AuthorsBertEncoder(TransformerEncoderBase):
    """fairseq's encoder with their input (√d · token + segment, then fairseq's sinusoidal positions; no
    embedding LayerNorm), their layers and a non-affine final LayerNorm."""

    def __init__(self, cfg: TransformerConfig, dictionary: Any, embed_tokens: nn.Embedding) -> None:
        if not cfg.no_scale_embedding or cfg.layernorm_embedding or cfg.encoder.learned_pos:
            raise ValueError(
                "the authors' encoder scales tokens itself: sinusoidal positions, no embedding norm"
            )
        if not cfg.encoder.normalize_before:
            raise ValueError("the authors' BERT is pre-LN")
        super().__init__(cfg, dictionary, embed_tokens)
        dim = embed_tokens.embedding_dim
        self.token_scale = math.sqrt(dim)
        self.layer_norm = non_affine_norm(dim)
        self.embed_segments = nn.Embedding(SEGMENTS, dim, padding_idx=PADDING_SEGMENT)

    def build_encoder_layer(self, cfg: TransformerConfig) -> nn.Module:
        return wrap_layer(AuthorsBertLayer(cfg), cfg)

    def forward(
        self,
        src_tokens: Tensor,
        segment_labels: Tensor | None = None,
        src_lengths: Tensor | None = None,
        return_all_hiddens: bool = False,
    ) -> dict[str, list[Tensor]]:
        """fairseq's encoder output dict (``encoder_out``: T × B × C); ``segment_labels`` B × T in the
        plugin's convention (default all 0: a single sentence)."""
        if segment_labels is None:
            segment_labels = torch.full_like(src_tokens, PADDING_SEGMENT)
        embedded = self.token_scale * self.embed_tokens(src_tokens) + self.embed_segments(segment_labels)
        # fairseq adds the sinusoidal positions (embed_scale is 1) and applies dropout
        return super().forward(src_tokens, return_all_hiddens=return_all_hiddens, token_embeddings=embedded)


def add_authors_bert_args(parser: argparse.ArgumentParser) -> None:
    """The flags of the authors' model (defaults come from the architecture; everything else is fixed)."""
    parser.add_argument("--encoder-layers", type=int, metavar="N", help="number of layers")
    parser.add_argument("--encoder-embed-dim", type=int, metavar="D", help="hidden size")
    parser.add_argument("--encoder-ffn-embed-dim", type=int, metavar="N", help="inner size of each FFN half")
    parser.add_argument("--encoder-attention-heads", type=int, metavar="N", help="attention heads")
    parser.add_argument("--dropout", type=float, metavar="P", help="hidden dropout (theirs: 0.1)")
    parser.add_argument("--attention-dropout", type=float, metavar="P", help="attention dropout (0.1)")
    parser.add_argument("--activation-dropout", type=float, metavar="P", help="their --relu-dropout (0)")
    parser.add_argument(
        "--max-positions",
        type=int,
        metavar="N",
        help=f"longest example (theirs: {AUTHORS_MAX_POSITIONS}); positions are sinusoidal",
    )


@register_model("authors_bert")
class AuthorsBertModel(BertPretrainingBase):
    """The authors' Macaron BERT; the interface of the plugin's BERT models (:class:`BertPretrainingBase`):
    ``forward(src_tokens, segment_labels, masked_tokens=None) -> (mlm_logits, sentence_logits)``, the
    sentence logits B × 1; ``classification_head_name=`` for GLUE, with their zero-initialised classifier."""

    def __init__(self, args: Any, encoder: AuthorsBertEncoder) -> None:
        FairseqEncoderModel.__init__(self, encoder)  # not BertPretrainingBase's heads: theirs
        dim = encoder.embed_tokens.embedding_dim
        self.pooler = FirstToken()
        self.pretraining_heads = bool(getattr(args, "pretraining_heads", True))
        if self.pretraining_heads:
            self.nsp_classifier = nn.Linear(dim, 1)
            self.lm_head = AuthorsMLMHead(dim, encoder.embed_tokens.weight)
        self.classification_heads = nn.ModuleDict()
        self.pooler_dropout = 0.0
        self.load_checkpoint_heads = bool(getattr(args, "load_checkpoint_heads", False))
        self.dictionary_file: str | None = None

    @staticmethod
    def add_args(parser: argparse.ArgumentParser) -> None:
        add_authors_bert_args(parser)

    @classmethod
    def build_model(cls, args: Any, task: Any) -> AuthorsBertModel:
        authors_bert_defaults(args)
        dictionary = task.source_dictionary
        # their fixed settings go into the encoder's configuration only, not into args (which checkpoints
        # save and fine-tuning turns into flags: these have none)
        fixed = argparse.Namespace(**vars(args))
        fixed.encoder_normalize_before = True
        fixed.no_scale_embedding = True  # the encoder scales the tokens by √d itself, before the segments
        fixed.layernorm_embedding = False
        fixed.encoder_learned_pos = False
        fixed.no_token_positional_embeddings = False
        fixed.activation_fn = "gelu"  # the main FFN; the Macaron half is ReLU (AuthorsBertLayer)
        fixed.max_source_positions = args.max_positions
        fixed.max_relative_positions = 0
        embed_tokens = nn.Embedding(len(dictionary), args.encoder_embed_dim, dictionary.pad())
        encoder = AuthorsBertEncoder(TransformerConfig.from_namespace(fixed), dictionary, embed_tokens)
        model = cls(args, encoder)
        authors_init(model)
        model.dictionary_file = getattr(task, "dictionary_file", None)
        return model

    def register_classification_head(
        self, name: str, num_classes: int | None = None, inner_dim: int | None = None, **kwargs: Any
    ) -> None:
        """Their GLUE classifier ``name`` (d → ``num_classes``, zero at the start) on the final ``<cls>``
        state; ``inner_dim`` can only be d (there is no inner layer)."""
        dim = self.encoder.embed_tokens.embedding_dim
        if num_classes is None or num_classes < 1:
            raise ValueError(f"classification head {name!r}: num_classes must be >= 1 (got {num_classes})")
        if inner_dim is not None and inner_dim != dim:
            raise ValueError(f"classification head {name!r}: inner_dim {inner_dim}: the authors' has none")
        self.classification_heads[name] = AuthorsClassificationHead(dim, num_classes)

    def upgrade_state_dict_named(self, state_dict: dict[str, Tensor], name: str) -> None:
        """As the plugin's BERT models (vocabulary checked, MLM/next-sentence heads dropped by a fine-tuning
        model, classification heads fitted); there are no learned positions to check."""
        prefix = f"{name}." if name else ""
        FairseqEncoderModel.upgrade_state_dict_named(self, state_dict, name)
        self.check_checkpoint_vocabulary(state_dict, prefix)
        if not self.pretraining_heads:
            heads = (f"{prefix}lm_head.", f"{prefix}nsp_classifier.")
            for key in [k for k in state_dict if k.startswith(heads)]:
                del state_dict[key]
        self.upgrade_classification_heads(state_dict, f"{prefix}classification_heads.")


def authors_init(model: AuthorsBertModel) -> None:
    """Their initialisation (``bert/fairseq/models/transformer.py``, ``modules/multihead_attention.py``):
    token and segment embeddings N(0, d^-½) with their padding rows zero; attention in/out projections
    N(0, d^-½), biases 0; every FFN linear Kaiming-normal (fan-in; gain √2 for the second linear of each
    half, ``nonlinearity='relu'``), biases 0; the MLM dense layer and the next-sentence classifier PyTorch's
    default ``nn.Linear``; LayerNorms 1/0."""
    encoder = model.encoder
    dim = encoder.embed_tokens.embedding_dim
    for embedding in (encoder.embed_tokens, encoder.embed_segments):
        nn.init.normal_(embedding.weight, mean=0.0, std=dim**-0.5)
        with torch.no_grad():
            embedding.weight[embedding.padding_idx].zero_()
    for layer in encoder.layers:
        attn = layer.self_attn
        for proj in (attn.q_proj, attn.k_proj, attn.v_proj, attn.out_proj):
            nn.init.normal_(proj.weight, std=dim**-0.5)
            nn.init.zeros_(proj.bias)
        for fc, gain in (
            (layer.fc1, "linear"),
            (layer.fc2, "relu"),
            (layer.ffn1_fc1, "linear"),
            (layer.ffn1_fc2, "relu"),
        ):
            nn.init.kaiming_normal_(fc.weight, nonlinearity=gain)
            nn.init.zeros_(fc.bias)


def authors_bert_defaults(args: Any) -> None:
    """Their ``transformer_bert_base`` settings with ``macaron``: FFN 1536 per half; flags already on
    ``args`` win."""
    args.encoder_layers = getattr(args, "encoder_layers", 12)
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", 768)
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", 1536)
    args.encoder_attention_heads = getattr(args, "encoder_attention_heads", 12)
    args.dropout = getattr(args, "dropout", 0.1)
    args.attention_dropout = getattr(args, "attention_dropout", 0.1)
    args.activation_dropout = getattr(args, "activation_dropout", 0.0)
    args.max_positions = getattr(args, "max_positions", AUTHORS_MAX_POSITIONS)


def parameter_difference(vocab: int, dim: int = 768, layers: int = 12, max_positions: int = 512) -> int:
    """Parameters of the plugin's ``macaron_bert_*`` minus the authors' model of the same sizes over the
    same vocabulary: learned positions, the embedding LayerNorm, the layers' and final LayerNorm gains and
    biases (theirs are non-affine; fairseq's post-LN encoder has no final one), the pooler, the MLM bias and
    the NSP classifier's second row."""
    positions = max_positions * dim
    embedding_norm = 2 * dim
    layer_norms = layers * 3 * 2 * dim
    pooler = dim * dim + dim
    mlm_bias = vocab
    nsp_row = dim + 1
    return positions + embedding_norm + layer_norms + pooler + mlm_bias + nsp_row
