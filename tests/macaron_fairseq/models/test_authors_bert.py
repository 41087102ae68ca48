"""The authors' Macaron BERT (model ``authors_bert``, their arch names): what differs from the plugin's
``macaron_bert_*`` is what their code has — no LayerNorm parameters in the encoder, sinusoidal positions, no
pooler, a 1-logit next-sentence classifier, no MLM bias — and the parameter difference is exactly
:func:`parameter_difference`. The numerics against their forward are in
``tests/macaron_fairseq/upgrade/test_upgrade_bert.py``."""

from __future__ import annotations

import torch
from fairseq.models import ARCH_MODEL_REGISTRY

from macaron_fairseq.models.authors_bert import AuthorsBertModel, parameter_difference
from macaron_fairseq.models.bert_build import bert_dictionary_dir, build_bert_model

SMALL = ["--encoder-layers", "2", "--encoder-embed-dim", "32", "--encoder-attention-heads", "4"]


def test_their_arch_names_are_registered_on_the_authors_model() -> None:
    for arch in ("transformer_bert_base_macaron", "transformer_classifier_base_macaron"):
        assert ARCH_MODEL_REGISTRY[arch] is AuthorsBertModel


def test_the_parameter_difference_from_macaron_bert_is_what_their_code_lacks() -> None:
    with bert_dictionary_dir(101) as data:
        theirs, _ = build_bert_model(
            data, "transformer_bert_base_macaron", [*SMALL, "--encoder-ffn-embed-dim", "48"]
        )
        ours, _ = build_bert_model(data, "macaron_bert_base", [*SMALL, "--encoder-ffn-embed-dim", "48"])
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(ours) - count(theirs) == parameter_difference(101, dim=32, layers=2, max_positions=512)
    names = [n for n, _ in theirs.named_parameters()]
    assert not [n for n in names if n.startswith("encoder.") and "norm" in n]  # non-affine, as theirs
    assert theirs.nsp_classifier.out_features == 1 and not hasattr(theirs.lm_head, "bias")
    assert theirs.encoder.embed_segments.padding_idx == 0


def test_base_sizes_and_their_initialisation() -> None:
    with bert_dictionary_dir(64) as data:
        model, _ = build_bert_model(data, "transformer_bert_base_macaron", ["--encoder-layers", "1"])
    layer = model.encoder.layers[0]
    assert model.encoder.embed_tokens.embedding_dim == 768 and layer.fc1.out_features == 1536
    assert layer.ffn1_fc1.out_features == 1536 and layer.self_attn.num_heads == 12
    assert layer.fc2.step == layer.ffn1_fc2.step == 0.5
    assert torch.count_nonzero(model.encoder.embed_tokens.weight[1]) == 0  # the padding row
    assert torch.count_nonzero(model.encoder.embed_segments.weight[0]) == 0  # their segment 1: padding row
    assert float(layer.fc1.bias.abs().max()) == 0.0
    std = float(layer.fc2.weight.std())
    assert abs(std - (2 / 1536) ** 0.5) < 0.1 * (2 / 1536) ** 0.5  # Kaiming-normal, ReLU gain
