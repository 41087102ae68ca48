"""Small random HuggingFace BERT directories built with transformers and saved locally (nothing is
downloaded), and the comparison of fairseq and HF logits, for the converter tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

WORDS = [
    "the",
    "a",
    "cat",
    "dog",
    "sat",
    "on",
    "mat",
    "##s",
    "run",
    "##ning",
    "hello",
    "world",
    ".",
    ",",
    "is",
    "café",
    "über",
    "naïve",
]
#: BERT's layout: [PAD] first, unused slots, then [UNK] [CLS] [SEP] [MASK] (ids 0, 2, 3, 4, 5 here)
TOKENS = ["[PAD]", "[unused0]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
HF_CLS, HF_SEP, HF_PAD = 3, 4, 0


def bert_config(**overrides: Any) -> Any:
    from transformers import BertConfig

    settings = {
        "vocab_size": len(TOKENS),
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 48,
        "max_position_embeddings": 40,
    }
    settings.update(overrides)
    return BertConfig(**settings)


def perturb(model: torch.nn.Module, seed: int = 0) -> None:
    """Random values everywhere (biases and LayerNorms included, so that no mapping error hides behind a
    zero or a one)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.1 * torch.randn(parameter.shape, generator=generator))


def save_hf_bert(directory: Path, kind: str = "pretraining", lowercase: bool = True, **config: Any) -> Path:
    """A ``BertForPreTraining`` (or ``BertModel``) with random weights and its WordPiece tokenizer."""
    from transformers import BertForPreTraining, BertModel, BertTokenizer

    torch.manual_seed(0)
    model = (BertForPreTraining if kind == "pretraining" else BertModel)(bert_config(**config))
    perturb(model)
    model.save_pretrained(str(directory))
    vocab = directory / "vocab.txt"
    vocab.write_text("".join(f"{t}\n" for t in TOKENS), encoding="utf-8")
    BertTokenizer(str(vocab), do_lower_case=lowercase).save_pretrained(str(directory))
    return directory


def random_batch(vocab: int, pad: int, cls: int, seed: int = 1) -> tuple[torch.Tensor, ...]:
    """HF-side ids (B × T) with [CLS] first, a padded row and two segments; attention mask; token types."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(6, vocab, (3, 12), generator=generator)
    ids[:, 0] = cls
    attention = torch.ones_like(ids)
    attention[1, 9:] = 0
    ids[1, 9:] = pad
    types = torch.zeros_like(ids)
    types[:, 6:] = 1
    return ids, attention, types * attention


def hf_to_fairseq_ids(data_dir: Path) -> torch.Tensor:
    """HF id → fairseq id, from the importer's record."""
    order = torch.tensor(json.loads((data_dir / "hf_vocabulary.json").read_text())["order"])
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(len(order))
    return inverse


def load_fairseq(checkpoint: Path) -> Any:
    from fairseq import checkpoint_utils

    import macaron_fairseq  # noqa: F401

    models, _, _ = checkpoint_utils.load_model_ensemble_and_task([str(checkpoint)])
    return models[0].eval()


def fairseq_logits_in_hf_order(
    model: Any, to_fairseq: torch.Tensor, ids: torch.Tensor, types: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    with torch.no_grad():
        mlm, nsp = model(to_fairseq[ids], segment_labels=types)
    return mlm[..., to_fairseq], nsp


def max_diff(a: torch.Tensor, b: torch.Tensor, keep: torch.Tensor | None = None) -> float:
    delta = (a - b).abs()
    return float((delta[keep.bool()] if keep is not None else delta).max())
