"""``macaron-upgrade`` for the authors' BERT: a pre-training checkpoint of their ``bert/`` fork (``--task bert
--arch transformer_bert_base_macaron``, e.g. their released ``checkpoint_pretrained.pt``) → a checkpoint of
the plugin's ``authors_bert`` model (:mod:`macaron_fairseq.models.authors_bert`) and the plugin's ``dict.txt``
beside it, so that fairseq (``--data`` = that directory), ``bash pipelines/glue.sh`` and ``macaron-hf export``
load it.

Their file is read as the translation upgrade reads one (:mod:`.reader`: the allow-list, their meters as
inert data, CUDA storage tags mapped to the CPU). Their ``dict.txt`` (not inside the checkpoint) comes from
``--data`` (their data-bin) or from the data directory their ``args`` recorded; its entries and the
embedding's rows must agree (6 special symbols + the entries).

What changes, and why the outputs stay theirs:

* ids: theirs are 0 ``<Lua heritage>``, 1 pad, 2 ``</s>``, 3 unk, 4 ``<mask>``, 5 ``<cls>``, words from 6; the
  plugin's 0 ``<s>`` (their ``<cls>``), 1 pad, 2 ``</s>``, 3 unk, words from 4, ``<mask>`` last (appended by
  the tasks). The embedding's rows are reordered so; their id 0 (never an input) has no row;
* segments: theirs are 1 for ``<cls>``, sentence A and padding, 0 for sentence B (row 1 the padding row);
  the plugin's 0 for ``<s> A </s>`` and padding, 1 for ``B </s>``: the two rows are swapped (row 0 is the
  padding row);
* ``*.self_attn.in_proj_weight/bias`` (q; k; v stacked) → ``q_proj``, ``k_proj``, ``v_proj``;
  ``*.macaron_fc1/2`` → ``*.ffn1_fc1/2``; ``encoder.embed_segment`` → ``encoder.embed_segments``;
* ``mid_layer.0`` / ``mid_layer.2`` → ``lm_head.dense`` / ``lm_head.layer_norm``; ``embed_out`` (the token
  embedding itself) → ``lm_head.weight`` (tied); ``classifier`` (d → 1) → ``nsp_classifier``;
* ``encoder.embed_positions._float_tensor`` dropped, ``encoder.version`` the model's own.

So the MLM logit of every symbol is their logit of the same symbol, and the next-sentence logit is theirs,
on the remapped inputs (``tests/macaron_fairseq/upgrade/test_upgrade_bert.py`` compares both with an
independent implementation of their forward).
"""

from __future__ import annotations

import argparse
import shlex
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from macaron_workflow.atomic import atomic_output
from macaron_workflow.errors import UserError

if TYPE_CHECKING:  # torch is imported where it is used: ``macaron-upgrade --help`` stays light
    import torch

#: what GLUE preprocessing reads beside the checkpoint (the same names as macaron_preprocess.text
#: .authors_bpe_encode: the plugin does not import the preprocessing layer)
RECORD = "authors_bert.json"
BPE_CODES = "bpe-code"
#: their task names: pre-training, and the two GLUE tasks of their fine-tuned classifiers
BERT_TASK = "bert"
GLUE_TASKS = ("glue_single", "glue_pair")
#: their special symbols (fairseq 0.6 Dictionary + BertDictionary): ids 0..5
THEIR_SPECIALS = ("<Lua heritage>", "<pad>", "</s>", "<unk>", "<mask>", "<cls>")
THEIR_MASK, THEIR_CLS = 4, 5
ARCH = "transformer_bert_base_macaron"


def is_authors_bert(state: Mapping[str, Any]) -> bool:
    """Whether a checkpoint read by :func:`~.reader.read_authors_checkpoint` is one of their BERT fork's."""
    args = state.get("args")
    return isinstance(args, argparse.Namespace) and getattr(args, "task", None) in (BERT_TASK, *GLUE_TASKS)


@dataclass(frozen=True)
class AuthorsBert:
    """A pre-training checkpoint of their BERT fork, described by its ``args`` and weights."""

    arch: str
    layers: int
    dim: int
    ffn: int
    heads: int
    dropout: float
    attention_dropout: float
    relu_dropout: float
    max_positions: int
    vocab: int
    data: str
    num_updates: int | None

    def describe(self) -> str:
        updates = "" if self.num_updates is None else f", trained {self.num_updates:,} updates"
        return (
            f"{self.arch}: the authors' Macaron BERT, pre-LN (non-affine LayerNorms), {self.layers} layers, "
            f"d {self.dim}, {self.heads} heads, FFN 2 × {self.ffn} (ReLU half, GELU main), dropout "
            f"{self.dropout:g} / attention {self.attention_dropout:g} / ReLU {self.relu_dropout:g}, their "
            f"vocabulary {self.vocab} (the plugin's {self.vocab - 1}){updates}"
        )


def _need(condition: bool, source: Path, what: str) -> None:
    if not condition:
        raise UserError(f"{source}: {what}: not the authors' Macaron BERT (what this upgrade reproduces)")


def read_bert(state: Mapping[str, Any], source: Path) -> AuthorsBert:
    """:class:`AuthorsBert` of their checkpoint; their settings checked against the weights, and anything
    the plugin's ``authors_bert`` does not compute refused naming it."""
    import torch

    args = state["args"]
    task, arch = getattr(args, "task", None), str(getattr(args, "arch", ""))
    if task in GLUE_TASKS:
        raise UserError(
            f"{source}: a GLUE classifier their fork fine-tuned (task {task}, arch {arch}); upgrade their "
            "pre-trained checkpoint (checkpoint_pretrained.pt) and fine-tune it with bash pipelines/glue.sh"
        )
    weights = state.get("model")
    if not isinstance(weights, Mapping):
        raise UserError(f"{source}: no model state dict ('model') in their checkpoint")
    _need(bool(getattr(args, "macaron", False)), source, f"arch {arch!r} without macaron layers")
    _need(bool(getattr(args, "encoder_normalize_before", False)), source, "post-LN layers")
    _need(bool(getattr(args, "no_normalize_affine", False)), source, "affine LayerNorms")
    _need(getattr(args, "act_fn", None) == "gelu", source, f"activation {getattr(args, 'act_fn', None)!r}")
    _need(not getattr(args, "encoder_learned_pos", False), source, "learned positions")
    _need(not getattr(args, "no_token_positional_embeddings", False), source, "no positions")
    _need(bool(getattr(args, "share_all_embeddings", False)), source, "an MLM output apart from the input")
    embedding = weights.get("encoder.embed_tokens.weight")
    if not isinstance(embedding, torch.Tensor) or embedding.dim() != 2:
        raise UserError(f"{source}: no encoder.embed_tokens.weight in the model state")
    layers = int(getattr(args, "encoder_layers", -1))
    found = {int(k.split(".")[2]) for k in weights if k.startswith("encoder.layers.")}
    if found != set(range(layers)):
        raise UserError(f"{source}: args.encoder_layers is {layers} but the weights have {len(found)} layers")
    affine = sorted(k for k in weights if ".layer_norm" in k and not k.startswith("mid_layer"))
    if affine:
        raise UserError(f"{source}: LayerNorm weights in the encoder ({affine[0]}): theirs are non-affine")
    history = state.get("optimizer_history")
    updates = None
    if isinstance(history, list) and history and isinstance(history[-1], Mapping):
        value = history[-1].get("num_updates")
        updates = int(value) if isinstance(value, int) else None
    return AuthorsBert(
        arch=arch,
        layers=layers,
        dim=int(args.encoder_embed_dim),
        ffn=int(args.encoder_ffn_embed_dim),
        heads=int(args.encoder_attention_heads),
        dropout=float(getattr(args, "dropout", 0.1)),
        attention_dropout=float(getattr(args, "attention_dropout", 0.1)),
        relu_dropout=float(getattr(args, "relu_dropout", 0.0)),
        max_positions=int(getattr(args, "max_positions", 384)),
        vocab=int(embedding.shape[0]),
        data=str(getattr(args, "data", "") or ""),
        num_updates=updates,
    )


def their_dictionary(model: AuthorsBert, data: Path | None, source: Path) -> Path:
    """Their ``dict.txt``: ``--data``'s, else the one in the data directory their args recorded; it must
    give the embedding's rows (6 special symbols + its entries)."""
    recorded = Path(model.data.split(":")[0]) if model.data else None
    directory = data if data is not None else recorded
    path = None if directory is None else directory / "dict.txt"
    if path is None or not path.is_file():
        where = f"--data {data}" if data is not None else f"the data directory of their args ({model.data!r})"
        raise UserError(
            f"{source}: no dict.txt in {where}; give --data THEIR_DATA_BIN, the directory of their dict.txt "
            "(data-bin/bert_corpus of their scripts, or a GLUE task directory of their released data)"
        )
    entries = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    if entries + len(THEIR_SPECIALS) != model.vocab:
        raise UserError(
            f"{path}: {entries} entries + their {len(THEIR_SPECIALS)} special symbols = "
            f"{entries + len(THEIR_SPECIALS)}, but the checkpoint's embedding has {model.vocab} rows: not "
            "the dictionary this model was trained with"
        )
    return path


def token_order(vocab: int) -> torch.Tensor:
    """Their id of each plugin id: ``<cls>``, pad, ``</s>``, unk, the words, ``<mask>`` (their 0 dropped)."""
    import torch

    return torch.tensor([THEIR_CLS, 1, 2, 3, *range(len(THEIR_SPECIALS), vocab), THEIR_MASK])


def plugin_weights(theirs: Mapping[str, Any], model: AuthorsBert, source: Path) -> dict[str, torch.Tensor]:
    """Their state dict in the plugin's names, ids and segment convention (see the module's table)."""
    import torch

    order = token_order(model.vocab)
    state: dict[str, torch.Tensor] = {}
    for key, value in theirs.items():
        if not isinstance(value, torch.Tensor):
            raise UserError(f"{source}: model entry {key!r} is a {type(value).__name__}, not a tensor")
        value = value.float()
        if key in (
            "encoder.version",
            "encoder.embed_positions._float_tensor",
            "encoder.embed_positions.weights",
        ):
            continue
        if key == "embed_out":
            if not torch.equal(value, theirs["encoder.embed_tokens.weight"].float()):
                raise UserError(f"{source}: embed_out differs from encoder.embed_tokens.weight (not shared)")
            continue
        if key == "encoder.embed_tokens.weight":
            state[key] = value[order]
            state["lm_head.weight"] = state[key]
            continue
        if key == "encoder.embed_segment.weight":
            state["encoder.embed_segments.weight"] = value.flip(0)  # their segment 1 is the plugin's 0
            continue
        if key.endswith((".in_proj_weight", ".in_proj_bias")):
            prefix, kind = key.rsplit(".in_proj_", 1)
            if value.shape[0] != 3 * model.dim:
                raise UserError(f"{source}: {key} has {value.shape[0]} rows, not 3 × {model.dim}")
            for name, part in zip(("q_proj", "k_proj", "v_proj"), value.chunk(3, dim=0), strict=True):
                state[f"{prefix}.{name}.{kind}"] = part.clone()
            continue
        key = key.replace(".macaron_fc1.", ".ffn1_fc1.").replace(".macaron_fc2.", ".ffn1_fc2.")
        key = key.replace("mid_layer.0.", "lm_head.dense.").replace("mid_layer.2.", "lm_head.layer_norm.")
        key = key.replace("classifier.", "nsp_classifier.") if key.startswith("classifier.") else key
        state[key] = value
    return {k: v.contiguous() for k, v in state.items()}


def build_plugin(
    model: AuthorsBert, dictionary: Path, weights: Mapping[str, Any], source: Path
) -> tuple[Any, Any]:
    """``(plugin model with their weights, fairseq args)``: built as ``fairseq-train --task
    macaron_bert_pretraining --arch transformer_bert_base_macaron`` builds it over their dictionary, every
    size from their checkpoint; strict load, then a check that every tensor is theirs."""
    import torch
    from fairseq import options, tasks

    import macaron_fairseq  # noqa: F401  (registers the model, the archs and the task)

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "dict.txt").write_bytes(dictionary.read_bytes())
        q = shlex.quote
        argv = shlex.split(
            f"{q(tmp)} --task macaron_bert_pretraining --criterion macaron_bert_loss --arch {q(ARCH)} "
            f"--encoder-layers {model.layers} --encoder-embed-dim {model.dim} "
            f"--encoder-ffn-embed-dim {model.ffn} --encoder-attention-heads {model.heads} "
            f"--dropout {q(repr(model.dropout))} --attention-dropout {q(repr(model.attention_dropout))} "
            f"--activation-dropout {q(repr(model.relu_dropout))} --max-positions {model.max_positions} "
            f"--tokens-per-sample {model.max_positions}"
        )
        args = options.parse_args_and_arch(options.get_training_parser(), input_args=argv)
        try:
            task = tasks.setup_task(args)
        except Exception as err:  # fairseq's Dictionary refuses e.g. a duplicated word
            raise UserError(f"{dictionary}: fairseq cannot load it as a dictionary ({err})") from None
        plugin = task.build_model(args)
    if plugin.encoder.embed_tokens.num_embeddings != model.vocab - 1:
        raise UserError(
            f"{dictionary}: gives the plugin {plugin.encoder.embed_tokens.num_embeddings} symbols, the "
            f"checkpoint {model.vocab} - 1 (their <Lua heritage> has no row here)"
        )
    state = plugin_weights(weights, model, source)
    ours = plugin.state_dict()
    state["encoder.version"] = ours["encoder.version"].clone()
    unknown = sorted(set(state) - set(ours))
    missing = sorted(set(ours) - set(state))
    if unknown or missing:
        raise UserError(
            f"{source}: their weights do not fill the plugin's authors_bert model (no place for "
            f"{unknown[:4]}, missing {missing[:4]})"
        )
    for key, value in state.items():
        if tuple(value.shape) != tuple(ours[key].shape):
            raise UserError(
                f"{source}: {key} has shape {tuple(value.shape)}, the model built from their args "
                f"{tuple(ours[key].shape)}"
            )
    plugin.load_state_dict(state, strict=True)
    loaded = plugin.state_dict()
    changed = [k for k, v in state.items() if not torch.equal(loaded[k], v)]
    if changed:
        raise RuntimeError(f"the upgraded model does not hold the checkpoint's weights: {changed[:6]}")
    return plugin.eval(), args


def write_or_keep(content: bytes, target: Path, what: str) -> None:
    """``target`` with ``content``, written atomically; an existing identical file is kept, a different one
    refused (never replaced)."""
    if target.exists():
        if target.read_bytes() == content:
            return
        raise UserError(
            f"{target} exists and is another {what}; write the upgrade into a directory of its own"
        )
    with atomic_output(target) as tmp:
        Path(tmp).write_bytes(content)


def write_beside(directory: Path, their_data: Path, model: AuthorsBert, source: Path) -> None:
    """:data:`RECORD` and their ``bpe-code`` (when their data directory has it) next to the checkpoint."""
    import json

    codes = their_data / BPE_CODES
    if codes.is_file():
        write_or_keep(codes.read_bytes(), directory / BPE_CODES, "BPE codes")
    record = {"bpe_codes": BPE_CODES, "authors_arch": model.arch, "source": str(source)}
    with atomic_output(directory / RECORD) as tmp:
        Path(tmp).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def upgrade_bert(state: Mapping[str, Any], source: Path, out: Path, data: Path | None) -> AuthorsBert:
    """Upgrade their BERT checkpoint ``state`` (read from ``source``) to ``out`` and ``out``'s directory's
    ``dict.txt``; a :class:`UserError` and nothing written for a file that is not one, or inconsistent."""
    import torch

    from macaron_fairseq.checkpoint_reader import cfg_of
    from macaron_fairseq.upgrade.convert import upgraded_fairseq_checkpoint

    model = read_bert(state, source)
    dictionary = their_dictionary(model, data, source)
    plugin, args = build_plugin(model, dictionary, state["model"], source)
    args.data = str(out.parent.resolve())
    checkpoint = upgraded_fairseq_checkpoint(
        cfg_of(args), plugin.state_dict(), "BertPretrainingLoss", model, source
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    # the plugin's dict.txt: their entries in their order (the plugin's ids follow from fairseq's 4 specials)
    write_or_keep(dictionary.read_bytes(), out.parent / "dict.txt", "dictionary")
    write_beside(out.parent, dictionary.parent, model, source)
    with atomic_output(out) as tmp:
        torch.save(checkpoint, tmp)
    return model
