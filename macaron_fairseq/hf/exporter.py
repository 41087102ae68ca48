"""``python -m macaron_fairseq.hf export model.pt --dest HF_DIR``: a plugin BERT checkpoint → a HuggingFace
directory.

* ``vanilla_bert_*`` (post-LN, with its LayerNorms, absolute positions): a native ``BertForPreTraining``
  directory (``BertForPreTraining.from_pretrained(HF_DIR)``, ``AutoModel…``), config and weights only.
* ``macaron_bert_*`` (and vanilla models BERT's class cannot express: pre-LN, norm-free layers): a
  directory with its own config and modeling file (:mod:`macaron_fairseq.hf.modeling_macaron_bert`) in
  ``auto_map``: ``AutoModelForPreTraining`` / ``AutoModel`` / ``AutoModelForSequenceClassification``
  ``.from_pretrained(HF_DIR, trust_remote_code=True)``.

Before anything is written the exported model is run beside the fairseq one on a random batch (padding,
two segments): MLM and NSP logits must agree within 1e-4, otherwise the export stops.

The tokenizer travels (:mod:`macaron_fairseq.hf.tokenizer_export`): an imported WordPiece model gets its own
tokenizer files back (and its rows their original ids); a model pre-trained on this project's Moses +
sentencepiece data gets ``tokenization_macaron.py`` (sentencepiece model + fairseq dictionary → our ids).
Relation-aware attention (``--max-relative-positions``) has no HuggingFace form here and is refused. The
Macaron authors' BERT (an upgraded ``transformer_bert_base_macaron``) has its own form
(:mod:`macaron_fairseq.hf.authors_export`).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from macaron_fairseq.hf import authors_export, export_common
from macaron_fairseq.hf.mapping import EMBED_TOKENS, OUTPUT_BIAS, name_pairs
from macaron_workflow.atomic import writing
from macaron_workflow.errors import UserError
from macaron_workflow.overlap import refuse_overlap

MODELING_FILE = "modeling_macaron_bert.py"
TOLERANCE = 1e-4
#: fairseq --activation-fn → HF hidden_act (BertConfig) of the same function
HF_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_accurate": "gelu_new",
    "relu": "relu",
    "tanh": "tanh",
    "linear": "linear",
}


def load_fairseq(checkpoint: Path, data: Path | None) -> tuple[Any, Any, Path, dict[str, Any]]:
    """The fairseq model (eval mode) and task of ``checkpoint``, the data directory it reads, its model
    config (as a dict)."""
    from macaron_fairseq.bert_checkpoint import BERT_SOURCES, check_bert_weights

    # the allow-listed reader; the kind, and weights that fit the model its configuration builds
    info = check_bert_weights(checkpoint)
    data_dir = Path(data) if data else info.data
    if data_dir is None or not (data_dir / "dict.txt").is_file():
        raise UserError(
            f"{checkpoint}: its dictionary {data_dir}/dict.txt is not there; give --data DIR "
            "(the pre-training data-bin)"
        )
    task_name = getattr(info.task_config, "_name", None)
    if task_name != "macaron_bert_pretraining":
        raise UserError(
            f"{checkpoint}: task {task_name!r}; export takes a pre-trained BERT "
            f"(macaron_bert_pretraining): {BERT_SOURCES}"
        )
    model, task = export_common.load_model(checkpoint, data_dir, f"the dictionary {data_dir}/dict.txt")
    return model, task, data_dir, dict(vars(info.model_config or argparse.Namespace()))


def model_settings(model: Any, model_cfg: dict[str, Any]) -> dict[str, Any]:
    """What the HF config must say, read from the built fairseq model (not from flags)."""
    from macaron_fairseq.models.bert import BertPretrainingBase
    from macaron_fairseq.modules.macaron_layer import MacaronEncoderLayer

    if not isinstance(model, BertPretrainingBase) or not getattr(model, "pretraining_heads", False):
        raise UserError(f"not a pre-training BERT model of this plugin ({type(model).__name__})")
    encoder = model.encoder
    layers = list(encoder.layers)
    if any(getattr(layer.self_attn, "max_relative_positions", 0) for layer in layers):
        raise UserError("relation-aware self-attention (--max-relative-positions) has no HuggingFace export")
    macaron = all(isinstance(layer, MacaronEncoderLayer) for layer in layers)
    if not macaron and any(isinstance(layer, MacaronEncoderLayer) for layer in layers):
        raise UserError("a model mixing Macaron and vanilla layers has no HuggingFace export")
    norms = [m for m in model.modules() if isinstance(m, torch.nn.LayerNorm)]
    eps = {m.eps for m in norms} or {1e-5}
    if len(eps) != 1:
        raise UserError(f"LayerNorms with different ε {sorted(eps)}: not expressible in one config")
    norm_free = [
        i for i, layer in enumerate(layers) if not isinstance(layer.self_attn_layer_norm, torch.nn.LayerNorm)
    ]
    activation = model_cfg.get("activation_fn")
    first = layers[0]
    return {
        "macaron": macaron,
        "layers": len(layers),
        "hidden": encoder.embed_tokens.embedding_dim,
        "heads": first.self_attn.num_heads,
        "ffn": first.fc1.out_features,
        "activation": activation,
        "eps": eps.pop(),
        "normalize_before": bool(first.normalize_before),
        "norm_free_layers": norm_free,
        "embedding_layer_norm": isinstance(encoder.layernorm_embedding, torch.nn.LayerNorm),
        "final_layer_norm": isinstance(getattr(encoder, "layer_norm", None), torch.nn.LayerNorm),
        "positions": encoder.embed_positions.max_positions,
        "segments": encoder.embed_segments.num_embeddings if encoder.embed_segments is not None else 0,
        "step": float(getattr(first, "ffn_step", 1.0)) if macaron else 1.0,
        "dropout": float(first.dropout_module.p),
        "attention_dropout": float(first.self_attn.dropout_module.p),
        "activation_dropout": float(first.activation_dropout_module.p),
    }


def hf_state(model: Any, macaron: bool, rows_to_hf: Any) -> dict[str, torch.Tensor]:
    """The HF state dict (BertForPreTraining names) of the fairseq model."""
    own = model.state_dict()
    state = {}
    for ours, theirs in name_pairs(len(model.encoder.layers), macaron):
        if ours in own:
            state[theirs] = own[ours]
    for ours, theirs in (EMBED_TOKENS, OUTPUT_BIAS):
        state[theirs] = rows_to_hf(own[ours])
    return {k: v.detach().float().contiguous() for k, v in state.items()}


def native(settings: dict[str, Any]) -> bool:
    """Whether ``BertForPreTraining`` computes this model."""
    return (
        not settings["macaron"]
        and not settings["normalize_before"]
        and not settings["norm_free_layers"]
        and settings["embedding_layer_norm"]
        and not settings["final_layer_norm"]
        and settings["segments"] > 0
    )


def hf_model(settings: dict[str, Any], vocab_size: int, pad: int) -> Any:
    common = {
        "vocab_size": vocab_size,
        "hidden_size": settings["hidden"],
        "num_hidden_layers": settings["layers"],
        "num_attention_heads": settings["heads"],
        "intermediate_size": settings["ffn"],
        "hidden_dropout_prob": settings["dropout"],
        "attention_probs_dropout_prob": settings["attention_dropout"],
        "max_position_embeddings": settings["positions"],
        "type_vocab_size": settings["segments"],
        "layer_norm_eps": settings["eps"],
        "pad_token_id": pad,
    }
    if settings["activation"] not in HF_ACTIVATIONS:
        raise UserError(f"--activation-fn {settings['activation']!r} has no HuggingFace equivalent")
    if native(settings):
        from transformers import BertConfig, BertForPreTraining

        if settings["activation_dropout"]:
            raise UserError("BertForPreTraining has no dropout inside the FFN (--activation-dropout > 0)")
        config = BertConfig(hidden_act=HF_ACTIVATIONS[settings["activation"]], **common)
        config.architectures = ["BertForPreTraining"]
        return BertForPreTraining(config)
    from macaron_fairseq.hf.modeling_macaron_bert import MacaronBertConfig, MacaronBertForPreTraining

    stem = MODELING_FILE.removesuffix(".py")
    config = MacaronBertConfig(
        hidden_act=settings["activation"],
        activation_dropout=settings["activation_dropout"],
        macaron=settings["macaron"],
        macaron_ffn_step=settings["step"],
        normalize_before=settings["normalize_before"],
        norm_free_layers=settings["norm_free_layers"],
        embedding_layer_norm=settings["embedding_layer_norm"],
        final_layer_norm=settings["final_layer_norm"],
        **common,
    )
    config.architectures = ["MacaronBertForPreTraining"]
    config.auto_map = {
        "AutoConfig": f"{stem}.MacaronBertConfig",
        "AutoModel": f"{stem}.MacaronBertModel",
        "AutoModelForPreTraining": f"{stem}.MacaronBertForPreTraining",
        "AutoModelForSequenceClassification": f"{stem}.MacaronBertForSequenceClassification",
    }
    return MacaronBertForPreTraining(config)


def check_logits(model: Any, exported: Any, to_hf_ids: torch.Tensor, fairseq_pad: int, hf_pad: int) -> float:
    """Max |Δ| of MLM (non-pad positions) and NSP logits on a random batch; raises above the tolerance."""
    ours, segments = export_common.bert_batch(len(to_hf_ids), fairseq_pad)
    if exported.config.type_vocab_size == 0:
        segments.zero_()
    theirs = to_hf_ids[ours]
    attention = ours.ne(fairseq_pad).long()
    segments = segments * attention
    with torch.no_grad():
        mlm, nsp = model(ours, segment_labels=segments if model.encoder.embed_segments is not None else None)
        out = exported(input_ids=theirs, attention_mask=attention, token_type_ids=segments)
    mlm_hf = torch.empty_like(mlm)
    mlm_hf[..., to_hf_ids] = mlm
    return export_common.bert_gap(mlm_hf, nsp, out, attention.bool(), TOLERANCE)


def export_hf(checkpoint: Path, out: Path, data: Path | None = None) -> Path:
    """Write the HuggingFace directory ``out`` (``--dest``) of ``checkpoint`` (``data``: its data-bin, when
    not the one it records); built aside and renamed into place."""
    from macaron_fairseq.hf.tokenizer_export import tokenizer_for

    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"--dest {out}: exists and is not an empty directory; give a new directory")
    refuse_overlap({"--dest": out}, {"CHECKPOINT": checkpoint, "--data": data})
    model, task, data_dir, model_cfg = load_fairseq(checkpoint, data)
    refuse_overlap({"--dest": out}, {"the checkpoint's data directory": data_dir}, change="--dest")
    if authors_export.is_authors_bert(model):  # the Macaron authors' BERT: its own modeling file
        return authors_export.export_authors(model, task, data_dir, checkpoint, out, model_cfg.get("arch"))
    settings = model_settings(model, model_cfg)
    tokenizer = tokenizer_for(data_dir, task.source_dictionary)
    exported = hf_model(settings, len(task.source_dictionary), tokenizer.hf_pad)
    state = hf_state(model, settings["macaron"], tokenizer.to_hf_rows)
    missing, unexpected = exported.load_state_dict(state, strict=False)
    tied = {
        "cls.predictions.decoder.weight",
        "cls.predictions.decoder.bias",
        "bert.embeddings.position_ids",
        "bert.embeddings.token_type_ids",
    }
    if set(missing) - tied or unexpected:
        raise UserError(
            f"internal: HF model does not match: missing {sorted(set(missing) - tied)}, "
            f"unexpected {unexpected}"
        )
    exported.eval()
    diff = check_logits(model, exported, tokenizer.to_hf_ids, task.source_dictionary.pad(), tokenizer.hf_pad)
    # parents made (and removed again on a failure), a full disk one line (macaron_workflow.atomic.writing)
    with writing(out), tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.") as tmp:
        staging = Path(tmp) / "hf"
        exported.save_pretrained(str(staging))
        if not native(settings):
            shutil.copyfile(Path(__file__).with_name(MODELING_FILE), staging / MODELING_FILE)
        tokenizer.save(staging)
        record = {
            "checkpoint": str(checkpoint),
            "arch": model_cfg.get("arch"),
            "max_abs_logit_difference": diff,
            "tokenizer": tokenizer.kind,
        }
        export_common.finish_export(staging, out, record)
    return out
