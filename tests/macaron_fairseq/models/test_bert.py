"""The BERT pre-training models (``vanilla_bert``, ``macaron_bert``) built as fairseq-train builds them:
architectures, shapes, the MLM head on masked positions only, tied output, BERT's initialisation, padding,
and parameter counts — BERT-base/-large as published, by formula, and Macaron within 0.1 %."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from fairseq import options
from fairseq.modules.transformer_layer import TransformerEncoderLayerBase

from macaron_fairseq.models.bert import BertPretrainingModel
from macaron_fairseq.models.bert_build import bert_dictionary_dir, build_bert_model
from macaron_fairseq.modules.macaron_layer import MacaronEncoderLayer
from macaron_fairseq.param_parity import bert_markdown_table, bert_parity_rows, published_bert_parameters

VOCAB = 120  # <s> <pad> </s> <unk> + 115 pieces + <mask>


@pytest.fixture(scope="module")
def dict_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with bert_dictionary_dir(VOCAB) as d:
        target = tmp_path_factory.mktemp("bert_dict")
        (target / "dict.txt").write_text((d / "dict.txt").read_text())
    return target


@pytest.fixture(scope="module")
def tiny(dict_dir: Path) -> dict[str, tuple[BertPretrainingModel, object]]:
    torch.manual_seed(0)
    return {arch: build_bert_model(dict_dir, arch) for arch in ("vanilla_bert_tiny", "macaron_bert_tiny")}


def random_batch(task, bsz: int = 3, length: int = 9, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    d = task.source_dictionary
    tokens = torch.randint(d.nspecial, len(d) - 1, (bsz, length), generator=g)
    tokens[:, 0] = d.bos()
    segments = (torch.arange(length) >= length // 2).long().expand(bsz, length).clone()
    if bsz > 1:
        tokens[-1, -3:] = d.pad()  # a right-padded row
        segments[-1, -3:] = 0
    return tokens, segments


@pytest.mark.parametrize(
    ("arch", "layers", "dim", "heads", "ffn", "macaron"),
    [
        ("vanilla_bert_tiny", 2, 64, 4, 256, False),
        ("macaron_bert_tiny", 2, 64, 4, 128, True),
        ("vanilla_bert_base", 12, 768, 12, 3072, False),
        ("macaron_bert_base", 12, 768, 12, 1536, True),
        ("vanilla_bert_large", 24, 1024, 16, 4096, False),
        ("macaron_bert_large", 24, 1024, 16, 2048, True),
    ],
)
def test_archs_are_bert_with_their_layers(dict_dir, arch, layers, dim, heads, ffn, macaron) -> None:
    # the depth from the arch's settings; the model itself built with 1 layer (fast)
    argv = [str(dict_dir), "--task", "macaron_bert_pretraining", "--arch", arch]
    assert options.parse_args_and_arch(options.get_training_parser(), argv).encoder_layers == layers
    model, _ = build_bert_model(dict_dir, arch, ["--encoder-layers", "1"])
    assert len(model.encoder.layers) == 1
    layer = model.encoder.layers[0]
    assert isinstance(layer, TransformerEncoderLayerBase)
    assert isinstance(layer, MacaronEncoderLayer) == macaron
    assert layer.embed_dim == dim and layer.self_attn.num_heads == heads and layer.fc1.out_features == ffn
    if macaron:
        assert layer.ffn1_fc1.out_features == ffn and layer.fc2.step == layer.ffn1_fc2.step == 0.5
    # BERT: post-LN, GELU, embedding LayerNorm, no final LayerNorm, no embedding scale, 512 positions
    assert not layer.normalize_before and model.encoder.layer_norm is None
    assert layer.activation_fn.__name__ == "gelu" and model.lm_head.activation_fn.__name__ == "gelu"
    assert model.encoder.layernorm_embedding is not None and model.encoder.embed_scale == 1.0
    assert model.encoder.embed_positions.weight.shape == (512, dim)
    assert model.encoder.embed_segments.weight.shape == (2, dim)
    assert layer.dropout_module.p == 0.1 and layer.self_attn.dropout_module.p == 0.1
    assert layer.activation_dropout_module.p == 0.0
    assert model.nsp_classifier.bias is not None and model.nsp_classifier.out_features == 2


def test_flags_override_arch_defaults(dict_dir) -> None:
    model, _ = build_bert_model(
        dict_dir,
        "macaron_bert_tiny",
        [
            "--encoder-layers",
            "3",
            "--encoder-embed-dim",
            "32",
            "--macaron-ffn-step",
            "0.3",
            "--max-positions",
            "64",
        ],
    )
    assert len(model.encoder.layers) == 3 and model.encoder.layers[0].embed_dim == 32
    assert {m.step for m in model.modules() if hasattr(m, "step")} == {0.3}
    assert model.max_positions() == 64


def test_forward_shapes_and_masked_head(tiny) -> None:
    for model, task in tiny.values():
        model.eval()
        tokens, segments = random_batch(task)
        with torch.no_grad():
            mlm, nsp = model(tokens, segments)
            assert mlm.shape == (3, 9, VOCAB) and nsp.shape == (3, 2)
            masked = torch.zeros_like(tokens, dtype=torch.bool)
            masked[0, 2] = masked[1, 5] = masked[2, 1] = masked[2, 4] = True
            mlm_masked, nsp_masked = model(tokens, segments, masked_tokens=masked)
        assert mlm_masked.shape == (4, VOCAB)
        torch.testing.assert_close(mlm_masked, mlm[masked])
        torch.testing.assert_close(nsp_masked, nsp)


def test_segments_matter_and_default_to_zero(tiny) -> None:
    model, task = tiny["macaron_bert_tiny"]
    model.eval()
    tokens, segments = random_batch(task)
    with torch.no_grad():
        with_segments = model(tokens, segments)[0]
        zeros = model(tokens, torch.zeros_like(segments))[0]
        default = model(tokens)[0]
    torch.testing.assert_close(default, zeros)
    assert not torch.allclose(with_segments, zeros)


def test_right_padding_does_not_change_the_outputs(tiny) -> None:
    for model, task in tiny.values():
        model.eval()
        tokens, segments = random_batch(task, bsz=1, length=7)
        pad = task.source_dictionary.pad()
        padded = torch.cat([tokens, torch.full((1, 4), pad)], dim=1)
        padded_segments = torch.cat([segments, torch.zeros(1, 4, dtype=torch.long)], dim=1)
        with torch.no_grad():
            mlm, nsp = model(tokens, segments)
            mlm_padded, nsp_padded = model(padded, padded_segments)
        torch.testing.assert_close(mlm_padded[:, :7], mlm, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(nsp_padded, nsp, rtol=1e-4, atol=1e-5)


def test_mlm_output_is_tied_to_the_token_embeddings(tiny) -> None:
    model, task = tiny["vanilla_bert_tiny"]
    emb = model.encoder.embed_tokens.weight
    assert model.lm_head.weight is emb
    assert model.lm_head.bias.shape == (VOCAB,)
    names = [n for n, p in model.named_parameters() if p is emb]
    assert names == ["encoder.embed_tokens.weight"]  # one parameter, counted once
    model.train()
    tokens, segments = random_batch(task)
    masked = tokens.ne(task.source_dictionary.pad())
    mlm, _ = model(tokens, segments, masked_tokens=masked)
    mlm.sum().backward()
    # the gradient of the shared matrix includes the output projection's: rows of symbols that are not in
    # the input get a gradient only through the output
    unused = sorted(set(range(task.source_dictionary.nspecial, VOCAB)) - set(tokens.flatten().tolist()))
    assert emb.grad[unused].abs().sum() > 0
    model.zero_grad()


def test_bert_initialisation(dict_dir) -> None:
    torch.manual_seed(1)
    model, task = build_bert_model(dict_dir, "macaron_bert_tiny", ["--encoder-embed-dim", "256"])
    pad = task.source_dictionary.pad()
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear):
            assert abs(module.weight.std().item() - 0.02) < 0.002, name
            assert module.bias is None or not module.bias.any(), name
    for emb in (model.encoder.embed_tokens, model.encoder.embed_positions):
        weight = emb.weight[torch.arange(emb.num_embeddings) != (pad if emb.padding_idx is not None else -1)]
        assert abs(weight.std().item() - 0.02) < 0.002
    assert not model.encoder.embed_tokens.weight[pad].any()
    assert not model.lm_head.bias.any()
    assert all(
        ln.weight.eq(1).all() and not ln.bias.any()
        for ln in model.modules()
        if "LayerNorm" in type(ln).__name__
    )


def formula_bert(vocab: int, layers: int, d: int, ffn: int) -> int:
    """BERT with pre-training heads, term by term from the published architecture."""
    embeddings = vocab * d + 512 * d + 2 * d + 2 * d  # tokens, positions, segments, LayerNorm
    attention = 4 * (d * d + d)  # query, key, value, output
    layer = attention + 2 * d + (d * ffn + ffn) + (ffn * d + d) + 2 * d  # + 2 LayerNorms, 2 FFN linears
    pooler = d * d + d
    mlm_head = d * d + d + 2 * d + vocab  # transform dense, LayerNorm, output bias (weights tied)
    nsp = d * 2 + 2
    return embeddings + layers * layer + pooler + mlm_head + nsp


def test_published_bert_counts_by_formula() -> None:
    # BertModel of bert-base-uncased / bert-large-uncased (embeddings, encoder, pooler): the published counts
    heads_base = (768 * 768 + 768) + 2 * 768 + 30522 + 2 * 768 + 2
    heads_large = (1024 * 1024 + 1024) + 2 * 1024 + 30522 + 2 * 1024 + 2
    assert formula_bert(30522, 12, 768, 3072) - heads_base == 109_482_240
    assert formula_bert(30522, 24, 1024, 4096) - heads_large == 335_141_888
    assert published_bert_parameters(30522, 12, 768, 3072) == formula_bert(30522, 12, 768, 3072)
    assert published_bert_parameters(30522, 24, 1024, 4096) == formula_bert(30522, 24, 1024, 4096)


def test_vanilla_bert_base_has_bert_base_parameter_count() -> None:
    with bert_dictionary_dir(30522) as d:
        model, task = build_bert_model(d, "vanilla_bert_base")
    assert len(task.source_dictionary) == 30522
    assert sum(p.numel() for p in model.parameters()) == formula_bert(30522, 12, 768, 3072)


def test_the_meta_device_count_is_the_count_of_the_built_bert() -> None:
    """param_parity counts BERT on the meta device (no init): the real model's number."""
    from macaron_fairseq.param_parity import count_bert_parameters

    with bert_dictionary_dir(300) as d:
        for arch in ("macaron_bert_tiny", "vanilla_bert_tiny"):
            model, _ = build_bert_model(d, arch)
            assert count_bert_parameters(d, arch) == sum(p.numel() for p in model.parameters()) > 0


def test_macaron_bert_matches_bert_within_0_1_percent() -> None:
    rows = bert_parity_rows(30522)
    assert [(r.arch, r.counterpart) for r in rows] == [
        ("macaron_bert_base", "vanilla_bert_base"),
        ("macaron_bert_large", "vanilla_bert_large"),
    ]
    for row, (layers, d, ffn) in zip(rows, [(12, 768, 3072), (24, 1024, 4096)], strict=True):
        assert row.bert_params == row.published_params == formula_bert(30522, layers, d, ffn)
        # per layer one extra LayerNorm (2d) and one extra FFN output bias (d)
        assert row.macaron_params - row.bert_params == layers * 3 * d
        assert abs(row.relative_difference) < 1e-3
    table = bert_markdown_table(rows, 30522)
    assert "| `macaron_bert_base` | `vanilla_bert_base` |" in table and "110,106,428" in table
