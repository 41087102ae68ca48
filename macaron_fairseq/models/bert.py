"""BERT for pre-training (MLM + NSP) with vanilla or Macaron layers: the models ``vanilla_bert`` and
``macaron_bert`` (architectures registered in :mod:`macaron_fairseq.models.architectures`).

``vanilla_bert_base`` / ``vanilla_bert_large`` are BERT as published (Devlin et al. 2019): post-LN layers,
GELU, learned absolute positions 0…511 (exactly 512 rows), two segment embeddings, embedding LayerNorm,
a tanh pooler on the first token, the MLM head (dense → GELU → LayerNorm → output projection tied to the
token embeddings, plus its own bias) and a 2-way NSP classifier with bias; every linear and embedding
weight drawn from N(0, 0.02), biases zero (fairseq's ``init_bert_params``). With BERT's 30,522-symbol
vocabulary ``vanilla_bert_base`` has BERT-base's parameter count exactly (see
``python -m macaron_fairseq.param_parity --bert``). ``macaron_bert_*`` differ only in their layers:
γ·FFN₁ → self-attention → γ·FFN₂ with each FFN half as wide (Lu et al. §5), so the counts match.

Why not fairseq's own ``bert_base`` (model ``masked_lm``): its layers are a separate, legacy layer class
(``TransformerSentenceEncoderLayer``, not ``TransformerEncoderLayerBase``, so a Macaron layer cannot be put
in without copying it), its NSP classifier has no bias, its learned positions are offset by the padding
index (``max_positions + pad + 1`` rows, and ``max_positions`` defaults to ``--tokens-per-sample``, so a
model pre-trained at 128 tokens cannot continue at 512), and it belongs to fairseq's ``legacy_masked_lm``
task with its ``BertDictionary`` (other ids than this project's data-bin). Its architecture otherwise matches
BERT (post-LN, GELU, embedding LayerNorm, tanh pooler, tied MLM output with its own bias).

The encoder is the plugin's :class:`~macaron_fairseq.models.encoder_decoder.PluginEncoder` (fairseq's
``TransformerEncoderBase`` whose layers come from the layer plan: fairseq's ``TransformerEncoderLayerBase``
for vanilla layers, :class:`~macaron_fairseq.modules.MacaronEncoderLayer` for Macaron ones) with BERT's
position and segment embeddings; the MLM head is fairseq's ``RobertaLMHead`` (exactly BERT's).

Fine-tuning (GLUE, ``--task macaron_sentence_prediction --criterion sentence_prediction``): the task
builds the model without its MLM/NSP heads and registers a classification head, BERT's classifier (the
pre-trained pooler → dropout → a new linear layer); a pre-training checkpoint loads into it with
``fairseq-train --restore-file`` (:meth:`BertPretrainingBase.upgrade_state_dict_named`).
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

import torch
from fairseq import utils
from fairseq.models import FairseqEncoderModel, register_model
from fairseq.models.roberta.model import RobertaLMHead
from fairseq.models.transformer import TransformerConfig
from fairseq.modules.transformer_sentence_encoder import init_bert_params
from torch import Tensor, nn

from macaron_fairseq.init.config import add_fixup_args
from macaron_fairseq.init.stacks import NewStack
from macaron_fairseq.models.encoder_decoder import PluginEncoder
from macaron_fairseq.models.fixup_support import FixupModelMixin
from macaron_fairseq.models.layer_plan import LayerKind
from macaron_fairseq.models.macaron_options import MacaronModelMixin

logger = logging.getLogger(__name__)

#: BERT's maximum sequence length and number of segment (token type) embeddings
BERT_MAX_POSITIONS = 512
BERT_SEGMENTS = 2
NSP_CLASSES = 2  # 0: segment B follows A in its document ("IsNext"), 1: B is from another document


FAIRSEQ_LAYERNORM_EPS = 1e-5  # fairseq's LayerNorm default; BERT (and HuggingFace's BertConfig) use 1e-12


def set_layernorm_eps(model: nn.Module, eps: float) -> None:
    """Give every LayerNorm of ``model`` (embeddings, layers, MLM head) the ε ``eps`` (``--layernorm-eps``;
    fairseq builds them all with its default, 1e-5)."""
    for module in model.modules():
        if isinstance(module, nn.LayerNorm) or type(module).__name__ == "FusedLayerNorm":
            module.eps = eps


class BertPositionalEmbedding(nn.Embedding):
    """Learned absolute positions 0…T−1 as in BERT: exactly ``max_positions`` rows, independent of padding
    (the batches are right-padded). Called by fairseq's ``forward_embedding`` as ``embed_positions(tokens)``;
    returns 1 × T × C, broadcast over the batch."""

    def __init__(self, max_positions: int, embedding_dim: int) -> None:
        super().__init__(max_positions, embedding_dim)
        self.max_positions = max_positions

    def forward(
        self, tokens: Tensor, incremental_state: Any = None, positions: Tensor | None = None
    ) -> Tensor:
        if positions is not None:
            return super().forward(positions)
        length = tokens.size(1)
        if length > self.max_positions:
            raise ValueError(f"sequence of {length} tokens, but the model has {self.max_positions} positions")
        return self.weight[:length].unsqueeze(0)


class BertEncoder(PluginEncoder):
    """The plugin's Transformer encoder (layers of ``layer_kind`` from the layer plan) with BERT's input:
    token + position + segment embeddings → LayerNorm → dropout (no embedding scale)."""

    def __init__(
        self,
        cfg: TransformerConfig,
        dictionary: Any,
        embed_tokens: nn.Embedding,
        layer_kind: LayerKind,
        max_positions: int = BERT_MAX_POSITIONS,
        num_segments: int = BERT_SEGMENTS,
    ) -> None:
        if not cfg.no_scale_embedding or not cfg.layernorm_embedding:
            raise ValueError("a BERT encoder needs no_scale_embedding=True and layernorm_embedding=True")
        super().__init__(cfg, dictionary, embed_tokens, layer_kind)
        dim = embed_tokens.embedding_dim
        # fairseq's LearnedPositionalEmbedding offsets positions by the padding index (max + pad + 1 rows);
        # BERT has exactly max_positions rows, positions counted from 0
        self.embed_positions = BertPositionalEmbedding(max_positions, dim)
        self.embed_segments = nn.Embedding(num_segments, dim) if num_segments > 0 else None

    def forward(
        self,
        src_tokens: Tensor,
        segment_labels: Tensor | None = None,
        src_lengths: Tensor | None = None,
        return_all_hiddens: bool = False,
    ) -> dict[str, list[Tensor]]:
        """fairseq's encoder output dict (``encoder_out``: T × B × C); ``segment_labels`` B × T (default:
        all 0, as BERT does without token types)."""
        embedded = self.token_and_segment_embeddings(src_tokens, segment_labels)
        # fairseq adds the positions, then layernorm_embedding and dropout (embed_scale is 1)
        return super().forward(src_tokens, return_all_hiddens=return_all_hiddens, token_embeddings=embedded)

    def token_and_segment_embeddings(self, src_tokens: Tensor, segment_labels: Tensor | None) -> Tensor:
        embedded = self.embed_tokens(src_tokens)
        if self.embed_segments is not None:
            if segment_labels is None:
                segment_labels = torch.zeros_like(src_tokens)
            embedded = embedded + self.embed_segments(segment_labels)
        return embedded

    def stack_input(
        self,
        src_tokens: Tensor,
        upto: int | None = None,
        token_embeddings: Tensor | None = None,
        segment_labels: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """The vectors entering the first new layer (DT-Fixup's μ probe), with BERT's segment embeddings."""
        if token_embeddings is None:
            token_embeddings = self.token_and_segment_embeddings(src_tokens, segment_labels)
        return super().stack_input(src_tokens, upto, token_embeddings)


class BertPooler(nn.Module):
    """BERT's pooler: tanh(dense(first token's vector)), the sentence representation NSP (and GLUE) reads."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dense = nn.Linear(dim, dim)

    def forward(self, features: Tensor) -> Tensor:
        return torch.tanh(self.dense(features[:, 0]))


class BertClassificationHead(nn.Module):
    """BERT's fine-tuning classifier on the pooled vector: dropout → linear to the classes (Devlin et al.
    2019 §4.1: the only new parameters are a K × H classification layer on the pooled first token;
    Google's ``run_classifier.py`` applies dropout 0.1 to the pooled vector first and draws the weights from
    N(0, 0.02), bias zero). The pooler itself is the model's (pre-trained), shared by all heads."""

    def __init__(self, dim: int, num_classes: int, dropout: float) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.out_proj = nn.Linear(dim, num_classes)
        nn.init.normal_(self.out_proj.weight, mean=0.0, std=0.02)
        nn.init.zeros_(self.out_proj.bias)

    def forward(self, pooled: Tensor) -> Tensor:
        return self.out_proj(self.dropout(pooled))


class VocabularyMismatchError(ValueError):
    """A checkpoint's token embedding does not have a row per symbol of the task's dictionary."""


def check_vocabulary(rows: int | None, symbols: int, source: str, dictionary_file: str | None) -> None:
    """Refuse a checkpoint whose embedding has another number of rows than the dictionary has symbols
    (the data were binarized with another dictionary than the pre-training one; the ids would mean other
    pieces even when a load happened to succeed)."""
    if rows is None or rows == symbols:
        return
    where = f"the dictionary {dictionary_file} + <mask>" if dictionary_file else "the task's dictionary"
    raise VocabularyMismatchError(
        f"{source} has a vocabulary of {rows} symbols (rows of encoder.embed_tokens.weight), but {where} "
        f"gives {symbols}: binarize the data with fairseq-preprocess --srcdict <the pre-training data-bin's "
        "dict.txt>"
    )


def add_bert_args(parser: argparse.ArgumentParser) -> None:
    """The flags of the BERT models (defaults come from the architecture)."""
    parser.add_argument("--encoder-layers", type=int, metavar="N", help="number of layers")
    parser.add_argument("--encoder-embed-dim", type=int, metavar="D", help="hidden size")
    parser.add_argument("--encoder-ffn-embed-dim", type=int, metavar="N", help="FFN inner size (each FFN)")
    parser.add_argument("--encoder-attention-heads", type=int, metavar="N", help="attention heads")
    parser.add_argument("--dropout", type=float, metavar="P", help="hidden dropout (BERT: 0.1)")
    parser.add_argument("--attention-dropout", type=float, metavar="P", help="attention dropout (BERT: 0.1)")
    parser.add_argument("--activation-dropout", type=float, metavar="P", help="dropout inside the FFN (0)")
    parser.add_argument(
        "--activation-fn", choices=utils.get_available_activation_fns(), help="FFN activation (BERT: gelu)"
    )
    parser.add_argument(
        "--encoder-normalize-before",
        action="store_true",
        help="pre-LN layers (BERT, the default, is post-LN)",
    )
    parser.add_argument(
        "--pooler-dropout",
        type=float,
        metavar="P",
        help="dropout on the pooled vector before a classification head (default: --dropout; BERT: 0.1)",
    )
    parser.add_argument(
        "--layernorm-eps",
        type=float,
        metavar="EPS",
        help="ε of every LayerNorm (default: fairseq's 1e-5; BERT's and HuggingFace's: 1e-12)",
    )
    parser.add_argument("--max-positions", type=int, metavar="N", help="learned positions (BERT: 512)")
    parser.add_argument("--num-segments", type=int, metavar="N", help="segment embeddings (BERT: 2)")
    parser.add_argument(
        "--checkpoint-activations", action="store_true", help="recompute activations in backward"
    )


class BertPretrainingBase(FairseqEncoderModel):
    """Encoder + pooler + MLM head + NSP classifier, and BERT's classification heads for fine-tuning.

    ``forward(src_tokens, segment_labels, masked_tokens=None) -> (mlm_logits, nsp_logits)``: MLM logits
    B × T × V, or N × V for the N positions where ``masked_tokens`` (B × T bool) is true (the head then
    runs only there); NSP logits B × 2.

    ``forward(..., classification_head_name=NAME) -> (logits, extra)``: the head registered by
    :meth:`register_classification_head` on the pooled first token (B × num_classes; fairseq's
    ``sentence_prediction`` criterion calls this); ``features_only=True`` alone gives the last layer's
    vectors B × T × C.

    A model built for fine-tuning (``args.pretraining_heads = False``, set by
    ``--task macaron_sentence_prediction``) has no MLM/NSP heads: nothing in it is left without a gradient
    (DistributedDataParallel needs no ``--find-unused-parameters``), and loading a pre-training checkpoint
    drops the checkpoint's MLM/NSP weights (:meth:`upgrade_state_dict_named`).
    """

    LAYER_KIND: LayerKind

    def __init__(self, args: Any, encoder: BertEncoder) -> None:
        super().__init__(encoder)
        dim = encoder.embed_tokens.embedding_dim
        self.pooler = BertPooler(dim)
        self.pretraining_heads = bool(getattr(args, "pretraining_heads", True))
        if self.pretraining_heads:
            self.nsp_classifier = nn.Linear(dim, NSP_CLASSES)
            vocab = encoder.embed_tokens.num_embeddings
            self.lm_head = RobertaLMHead(dim, vocab, args.activation_fn, weight=encoder.embed_tokens.weight)
        self.classification_heads = nn.ModuleDict()
        pooler_dropout = getattr(args, "pooler_dropout", None)
        self.pooler_dropout = float(args.dropout if pooler_dropout is None else pooler_dropout)
        self.load_checkpoint_heads = bool(getattr(args, "load_checkpoint_heads", False))
        self.dictionary_file: str | None = None  # named in vocabulary errors (set by build_model)

    @classmethod
    def hub_models(cls) -> dict[str, Any]:
        return {}

    @classmethod
    def build_model(cls, args: Any, task: Any) -> BertPretrainingBase:
        bert_defaults(args)  # checkpoints and hand-made namespaces may lack some
        dictionary = task.source_dictionary
        # fairseq's encoder reads its settings from a TransformerConfig; BERT fixes these three
        args.no_scale_embedding = True
        args.layernorm_embedding = True
        args.max_source_positions = args.max_positions
        embed_tokens = nn.Embedding(len(dictionary), args.encoder_embed_dim, dictionary.pad())
        encoder = BertEncoder(
            TransformerConfig.from_namespace(args),
            dictionary,
            embed_tokens,
            cls.LAYER_KIND,
            max_positions=args.max_positions,
            num_segments=args.num_segments,
        )
        model = cls(args, encoder)
        if not embed_tokens.weight.is_meta:  # a meta-device build (a parameter count) has nothing to draw
            model.apply(init_bert_params)
        set_layernorm_eps(model, args.layernorm_eps)
        model.dictionary_file = getattr(task, "dictionary_file", None)
        return model

    def extract_features(
        self, src_tokens: Tensor, segment_labels: Tensor | None = None, return_all_hiddens: bool = False
    ) -> tuple[Tensor, dict[str, Any]]:
        """The last layer's vectors B × T × C, and fairseq's encoder output dict."""
        out = self.encoder(src_tokens, segment_labels=segment_labels, return_all_hiddens=return_all_hiddens)
        return out["encoder_out"][0].transpose(0, 1), out

    def forward(
        self,
        src_tokens: Tensor,
        segment_labels: Tensor | None = None,
        masked_tokens: Tensor | None = None,
        features_only: bool = False,
        classification_head_name: str | None = None,
        return_all_hiddens: bool = False,
        **unused: Any,
    ) -> tuple[Tensor, Any]:
        features, extra = self.extract_features(src_tokens, segment_labels, return_all_hiddens)
        if classification_head_name is not None:
            head = self.classification_heads[classification_head_name]
            return head(self.pooler(features)), extra
        if features_only:
            return features, extra
        if not self.pretraining_heads:
            raise RuntimeError(
                "this BERT model was built for fine-tuning (no MLM/NSP heads): pass classification_head_name"
            )
        mlm_logits = self.lm_head(features, masked_tokens=masked_tokens)
        nsp_logits = self.nsp_classifier(self.pooler(features))
        return mlm_logits, nsp_logits

    def register_classification_head(
        self, name: str, num_classes: int | None = None, inner_dim: int | None = None, **kwargs: Any
    ) -> None:
        """Add (or replace) the classification head ``name``: BERT's classifier, dropout
        (``--pooler-dropout``) → linear to ``num_classes``, on the model's pooler. fairseq's signature;
        ``inner_dim`` can only be the hidden size (BERT's pooler is C → C; there is no other inner layer)."""
        dim = self.encoder.embed_tokens.embedding_dim
        if num_classes is None or num_classes < 1:
            raise ValueError(f"classification head {name!r}: num_classes must be >= 1 (got {num_classes})")
        if inner_dim is not None and inner_dim != dim:
            raise ValueError(
                f"classification head {name!r}: inner_dim {inner_dim}, but BERT's classifier reads the "
                f"pooler's {dim}-dim vector (no other inner layer)"
            )
        if name in self.classification_heads:
            previous = self.classification_heads[name].out_proj.out_features
            if previous != num_classes:
                logger.warning("re-registering head %r with %d classes (was %d)", name, num_classes, previous)
        self.classification_heads[name] = BertClassificationHead(dim, num_classes, self.pooler_dropout)

    def upgrade_state_dict_named(self, state_dict: dict[str, Tensor], name: str) -> None:
        """Fit a checkpoint to this model before the strict load (fairseq-train ``--restore-file``,
        ``checkpoint_utils.load_model_ensemble_and_task``): the vocabulary must match; a fine-tuning
        model drops the checkpoint's MLM/NSP heads; classification heads as fairseq's
        ``RobertaModel.upgrade_state_dict_named`` does (those of the checkpoint that this model lacks or
        has with another number of classes are dropped, unless ``load_checkpoint_heads``; this model's
        heads missing from the checkpoint keep their fresh initialisation)."""
        prefix = f"{name}." if name else ""
        super().upgrade_state_dict_named(state_dict, name)
        self.check_checkpoint_vocabulary(state_dict, prefix)
        positions = state_dict.get(f"{prefix}encoder.embed_positions.weight")
        own_positions = self.encoder.embed_positions.max_positions
        if positions is not None and positions.shape[0] != own_positions:
            raise ValueError(
                f"the checkpoint has {positions.shape[0]} learned positions, this model {own_positions} "
                "(--max-positions): drop --max-positions to take the checkpoint's (the examples' length is "
                "--tokens-per-sample)"
            )
        if not self.pretraining_heads:
            unused = (f"{prefix}lm_head.", f"{prefix}nsp_classifier.")
            dropped = [k for k in state_dict if k.startswith(unused)]
            for k in dropped:
                del state_dict[k]
            if dropped:
                logger.info("fine-tuning model: the checkpoint's MLM and NSP heads are not used")
        self.upgrade_classification_heads(state_dict, f"{prefix}classification_heads.")

    def check_checkpoint_vocabulary(self, state_dict: dict[str, Tensor], prefix: str) -> None:
        """:func:`check_vocabulary` of the checkpoint's token embedding, when it has one."""
        embedding = state_dict.get(f"{prefix}encoder.embed_tokens.weight")
        rows = None if embedding is None else int(embedding.shape[0])
        check_vocabulary(
            rows, self.encoder.embed_tokens.num_embeddings, "the checkpoint", self.dictionary_file
        )

    def upgrade_classification_heads(self, state_dict: dict[str, Tensor], prefix: str) -> None:
        stored = {k[len(prefix) :].split(".")[0] for k in state_dict if k.startswith(prefix)}
        for head in sorted(stored):
            weight = state_dict.get(f"{prefix}{head}.out_proj.weight")
            classes = None if weight is None else int(weight.shape[0])
            if head not in self.classification_heads and self.load_checkpoint_heads and classes:
                self.register_classification_head(head, classes)
                continue
            current = self.classification_heads[head] if head in self.classification_heads else None
            if current is None or current.out_proj.out_features != classes:
                logger.warning(
                    "dropping the checkpoint's classification head %r (%s classes): %s",
                    head,
                    classes,
                    "not in this model"
                    if current is None
                    else f"this model's has {current.out_proj.out_features}",
                )
                for k in [k for k in state_dict if k.startswith(f"{prefix}{head}.")]:
                    del state_dict[k]
        for key, value in self.classification_heads.state_dict().items():
            if f"{prefix}{key}" not in state_dict:
                logger.info("%s%s: not in the checkpoint, freshly initialised", prefix, key)
                state_dict[f"{prefix}{key}"] = value

    def max_positions(self) -> int:
        return self.encoder.max_positions()


class BertPretrainingModel(FixupModelMixin, BertPretrainingBase):
    """The pre-training model with the plugin's new-layer options: ``--init-scheme dt-fixup|t-fixup``
    (norm-free new layers rescaled before the first update) and ``--pretrained-encoder CKPT
    --new-encoder-layers K`` (K new layers on the encoder of an exported BERT checkpoint)."""

    @staticmethod
    def add_args(parser: argparse.ArgumentParser) -> None:
        add_bert_args(parser)
        add_fixup_args(parser)

    def new_stacks(self) -> list[NewStack]:
        """One stack: the encoder's new layers; their input is the embeddings (from scratch) or the
        pre-trained layers' output."""
        encoder = self.encoder
        if not encoder.new_layers():
            return []

        def stack_input(sample: dict) -> tuple[Tensor, Tensor]:
            tokens, segments = sample["net_input"]["src_tokens"], sample["net_input"].get("segment_labels")
            return encoder.stack_input(tokens, segment_labels=segments)

        from_scratch = encoder.first_new_layer == 0
        # positions and segments are summed into the stack's input with the tokens: T-Fixup treats all three
        # as its input embeddings; the layers hold init_bert_params' N(0, 0.02), not fairseq's init
        inputs = [encoder.embed_positions, encoder.embed_segments] if from_scratch else []
        return [
            NewStack(
                "encoder",
                encoder.new_layers(),
                stack_input,
                t_fixup_side="encoder",
                embeddings=encoder.embed_tokens if from_scratch else None,
                extra_embeddings=[e for e in inputs if e is not None],
                fairseq_init=False,
            )
        ]


@register_model("vanilla_bert")
class VanillaBertModel(BertPretrainingModel):
    """BERT with fairseq's Transformer encoder layers (BERT as published with the ``*_base/_large`` archs)."""

    LAYER_KIND = "vanilla"


@register_model("macaron_bert")
class MacaronBertModel(MacaronModelMixin, BertPretrainingModel):
    """BERT whose layers are Macaron layers: γ·FFN₁ → self-attention → γ·FFN₂."""


def bert_defaults(args: Any, layers: int = 12, dim: int = 768, heads: int = 12, ffn: int = 3072) -> None:
    """BERT's settings (default: BERT-base); flags already on ``args`` win."""
    args.encoder_layers = getattr(args, "encoder_layers", layers)
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", dim)
    args.encoder_attention_heads = getattr(args, "encoder_attention_heads", heads)
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", ffn)
    args.dropout = getattr(args, "dropout", 0.1)
    args.attention_dropout = getattr(args, "attention_dropout", 0.1)
    args.activation_dropout = getattr(args, "activation_dropout", 0.0)
    args.activation_fn = getattr(args, "activation_fn", "gelu")
    args.encoder_normalize_before = getattr(args, "encoder_normalize_before", False)
    args.pooler_dropout = getattr(args, "pooler_dropout", None)
    args.layernorm_eps = getattr(args, "layernorm_eps", None) or FAIRSEQ_LAYERNORM_EPS
    args.max_positions = getattr(args, "max_positions", BERT_MAX_POSITIONS)
    args.num_segments = getattr(args, "num_segments", BERT_SEGMENTS)
    args.checkpoint_activations = getattr(args, "checkpoint_activations", False)


def vanilla_bert_tiny(args: argparse.Namespace) -> None:
    """2 layers, d 64, 4 heads, FFN 256: for CPU tests."""
    bert_defaults(args, layers=2, dim=64, heads=4, ffn=256)


def vanilla_bert_base(args: argparse.Namespace) -> None:
    """BERT-base: 12 layers, d 768, 12 heads, FFN 3072."""
    bert_defaults(args, layers=12, dim=768, heads=12, ffn=3072)


def vanilla_bert_large(args: argparse.Namespace) -> None:
    """BERT-large: 24 layers, d 1024, 16 heads, FFN 4096."""
    bert_defaults(args, layers=24, dim=1024, heads=16, ffn=4096)
