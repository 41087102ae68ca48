"""``python -m macaron_fairseq.hf export model.pt --dest HF_DIR`` for the Macaron authors' BERT (an upgraded
``transformer_bert_base_macaron``, model ``authors_bert``): a directory with its own config and modeling
file (:mod:`macaron_fairseq.hf.modeling_authors_bert`) in ``auto_map`` —
``AutoModelForPreTraining`` / ``AutoModel`` / ``AutoModelForSequenceClassification``
``.from_pretrained(HF_DIR, trust_remote_code=True)``.

The ids stay the plugin's: ``vocab.json`` maps each symbol to its id, ``dict.txt`` and their ``bpe-code``
are copied (their text processing has no HuggingFace tokenizer;
:mod:`macaron_preprocess.text.authors_bpe_encode` cuts text as their scripts do). Before anything is
written the exported model is run beside the fairseq one on a padded batch with two segments: MLM and
next-sentence logits must agree within :data:`TOLERANCE`.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from macaron_fairseq.hf import export_common
from macaron_workflow.atomic import writing
from macaron_workflow.errors import UserError

MODELING_FILE = "modeling_authors_bert.py"
TOLERANCE = 1e-5
#: the upgrade's files beside the checkpoint that travel with the export
DATA_FILES = ("dict.txt", "bpe-code", "authors_bert.json")


def is_authors_bert(model: Any) -> bool:
    from macaron_fairseq.models.authors_bert import AuthorsBertModel

    return isinstance(model, AuthorsBertModel)


def hf_state(model: Any) -> dict[str, torch.Tensor]:
    """The exported model's state dict (``AuthorsBertForPreTraining`` names) from the plugin model's."""
    own = model.state_dict()
    state = {
        "authors_bert.embeddings.word_embeddings.weight": own["encoder.embed_tokens.weight"],
        "authors_bert.embeddings.token_type_embeddings.weight": own["encoder.embed_segments.weight"],
        "lm_head.dense.weight": own["lm_head.dense.weight"],
        "lm_head.dense.bias": own["lm_head.dense.bias"],
        "lm_head.layer_norm.weight": own["lm_head.layer_norm.weight"],
        "lm_head.layer_norm.bias": own["lm_head.layer_norm.bias"],
        "nsp.weight": own["nsp_classifier.weight"],
        "nsp.bias": own["nsp_classifier.bias"],
    }
    for i in range(len(model.encoder.layers)):
        ours, theirs = f"encoder.layers.{i}.", f"authors_bert.encoder.layer.{i}."
        pairs = {
            "ffn1_fc1": "macaron_ffn.fc1",
            "ffn1_fc2": "macaron_ffn.fc2",
            "fc1": "ffn.fc1",
            "fc2": "ffn.fc2",
        }
        pairs |= {f"self_attn.{p}": f"attention.{p}" for p in ("q_proj", "k_proj", "v_proj", "out_proj")}
        for a, b in pairs.items():
            for kind in ("weight", "bias"):
                state[f"{theirs}{b}.{kind}"] = own[f"{ours}{a}.{kind}"]
    return {k: v.detach().float().contiguous() for k, v in state.items()}


def hf_model(model: Any, vocab_size: int, pad: int) -> Any:
    from macaron_fairseq.hf.modeling_authors_bert import AuthorsBertConfig, AuthorsBertForPreTraining

    layer = model.encoder.layers[0]
    config = AuthorsBertConfig(
        vocab_size=vocab_size,
        hidden_size=model.encoder.embed_tokens.embedding_dim,
        num_hidden_layers=len(model.encoder.layers),
        num_attention_heads=layer.self_attn.num_heads,
        intermediate_size=layer.fc1.out_features,
        hidden_dropout_prob=float(layer.dropout_module.p),
        attention_probs_dropout_prob=float(layer.self_attn.dropout_module.p),
        activation_dropout=float(layer.activation_dropout_module.p),
        pad_token_id=pad,
    )
    stem = MODELING_FILE.removesuffix(".py")
    config.architectures = ["AuthorsBertForPreTraining"]
    config.auto_map = {
        "AutoConfig": f"{stem}.AuthorsBertConfig",
        "AutoModel": f"{stem}.AuthorsBertModel",
        "AutoModelForPreTraining": f"{stem}.AuthorsBertForPreTraining",
        "AutoModelForSequenceClassification": f"{stem}.AuthorsBertForSequenceClassification",
    }
    return AuthorsBertForPreTraining(config)


def check_logits(model: Any, exported: Any, pad: int) -> float:
    """Max |Δ| of the MLM (real positions) and next-sentence logits on a padded two-segment batch."""
    tokens, segments = export_common.bert_batch(model.encoder.embed_tokens.num_embeddings, pad)
    segments[tokens.eq(pad)] = 0
    with torch.no_grad():
        mlm, nsp = model(tokens, segment_labels=segments)
        out = exported(input_ids=tokens, token_type_ids=segments)
    return export_common.bert_gap(mlm, nsp, out, tokens.ne(pad), TOLERANCE)


def export_authors(model: Any, task: Any, data_dir: Path, checkpoint: Path, out: Path, arch: Any) -> Path:
    """Write ``out`` for the authors' model ``model`` (loaded by the exporter from ``checkpoint``); built
    aside and renamed into place."""
    dictionary = task.source_dictionary
    exported = hf_model(model, len(dictionary), dictionary.pad()).eval()
    missing, unexpected = exported.load_state_dict(hf_state(model), strict=False)
    if missing or unexpected:
        raise UserError(f"internal: HF model does not match: missing {missing}, unexpected {unexpected}")
    diff = check_logits(model, exported, dictionary.pad())
    # parents made (and removed again on a failure), a full disk one line (macaron_workflow.atomic.writing)
    with writing(out), tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.") as tmp:
        staging = Path(tmp) / "hf"
        exported.save_pretrained(str(staging))
        shutil.copyfile(Path(__file__).with_name(MODELING_FILE), staging / MODELING_FILE)
        for name in DATA_FILES:
            if (data_dir / name).is_file():
                shutil.copyfile(data_dir / name, staging / name)
        vocab = {symbol: i for i, symbol in enumerate(dictionary.symbols)}
        (staging / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False, indent=0) + "\n", "utf-8")
        record = {
            "checkpoint": str(checkpoint),
            "arch": arch,
            "max_abs_logit_difference": diff,
            "tokenizer": "their Moses + BPE (bpe-code; macaron_preprocess.text.authors_bpe_encode)",
        }
        export_common.finish_export(staging, out, record)
    return out
