"""Model-level tests of the registered ``macaron`` model built through fairseq's own parser/task."""

from __future__ import annotations

import io

import pytest
import torch
from helpers import TINY, build_model

from macaron_fairseq.models.architectures import COUNTERPARTS
from macaron_fairseq.modules.macaron_layer import MacaronDecoderLayer, MacaronEncoderLayer
from macaron_fairseq.param_parity import parity_rows


@pytest.fixture(scope="module")
def tiny_model(dict_dir):
    torch.manual_seed(0)
    model, task = build_model(dict_dir, "macaron_base", [*TINY, "--share-all-embeddings"])
    return model.eval(), task


def random_batch(task, bsz: int = 3, src_len: int = 7, tgt_len: int = 6, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    d = task.source_dictionary
    low, high = d.nspecial, len(d)
    src = torch.randint(low, high, (bsz, src_len), generator=g)
    prev = torch.randint(low, high, (bsz, tgt_len), generator=g)
    prev[:, 0] = d.eos()
    return src, torch.full((bsz,), src_len), prev


def test_archs_follow_the_table(dict_dir) -> None:
    expected = {
        "macaron_small": (512, 4, 512),
        "macaron_base": (512, 8, 1024),
        "macaron_big": (1024, 16, 2048),
    }
    for arch, (dim, heads, ffn) in expected.items():
        model, _ = build_model(dict_dir, arch, ["--encoder-layers", "1", "--decoder-layers", "1"])
        enc, dec = model.encoder.layers[0], model.decoder.layers[0]
        assert isinstance(enc, MacaronEncoderLayer) and isinstance(dec, MacaronDecoderLayer)
        assert enc.embed_dim == dim and enc.self_attn.num_heads == heads
        assert enc.fc1.out_features == enc.ffn1_fc1.out_features == ffn
        assert dec.fc1.out_features == dec.ffn1_fc1.out_features == ffn
        assert enc.fc2.step == dec.ffn1_fc2.step == 0.5


def test_command_line_flags_override_arch_defaults(dict_dir) -> None:
    model, _ = build_model(dict_dir, "macaron_small", [*TINY, "--macaron-ffn-step", "0.3"])
    enc = model.encoder.layers[0]
    assert enc.embed_dim == 32 and enc.fc1.out_features == 48 and len(model.encoder.layers) == 2
    assert model.decoder.layers[1].ffn1_fc1.out_features == 40
    assert {m.step for m in model.modules() if hasattr(m, "step")} == {0.3}


@pytest.mark.parametrize("arch", list(COUNTERPARTS))
def test_parameter_count_matches_counterpart_within_0_1_percent(arch: str) -> None:
    rows = parity_rows(vocab=1000, archs=[arch])
    assert {r.embeddings for r in rows} == {"shared", "unshared"}
    for row in rows:
        assert abs(row.relative_difference) < 1e-3, row
        # exactly one extra LayerNorm (2d) and one extra FFN output bias (d) per layer
        model_dim = 1024 if "big" in arch else 512
        assert row.macaron_params - row.transformer_params == 12 * 3 * model_dim


def test_the_meta_device_count_is_the_count_of_the_built_model(dict_dir) -> None:
    """param_parity counts on the meta device: the same number as the real model's parameters."""
    from macaron_fairseq.param_parity import count_parameters

    for arch in ("macaron_small", "transformer_iwslt_de_en"):
        model, _ = build_model(dict_dir, arch, ["--share-all-embeddings"])
        real = sum(p.numel() for p in model.parameters())
        assert count_parameters(dict_dir, arch, ["--share-all-embeddings"]) == real > 0


def test_incremental_decoding_equals_full_decoding(tiny_model) -> None:
    model, task = tiny_model
    src, src_lengths, prev = random_batch(task)
    with torch.no_grad():
        enc = model.encoder(src, src_lengths=src_lengths)
        full, _ = model.decoder(prev, encoder_out=enc)
        incremental_state: dict = {}
        steps = [
            model.decoder(prev[:, : t + 1], encoder_out=enc, incremental_state=incremental_state)[0]
            for t in range(prev.size(1))
        ]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=1e-5, atol=1e-5)


def test_padding_does_not_change_non_pad_outputs(tiny_model) -> None:
    model, task = tiny_model
    pad = task.source_dictionary.pad()
    src, _, prev = random_batch(task, bsz=2, src_len=7, tgt_len=5, seed=1)
    short = src[1:, 3:]  # 4 tokens
    padded = torch.cat([torch.full((1, 3), pad), short], dim=1)  # fairseq left-pads sources
    tgt_short = prev[1:, :3]
    tgt_padded = torch.cat([tgt_short, torch.full((1, 2), pad)], dim=1)  # and right-pads targets
    with torch.no_grad():
        out_alone, _ = model(short, torch.tensor([4]), tgt_short)
        out_batch, _ = model(
            torch.cat([src[:1], padded]), torch.tensor([7, 4]), torch.cat([prev[:1], tgt_padded])
        )
        enc_alone = model.encoder(short, src_lengths=torch.tensor([4]))["encoder_out"][0]
        enc_batch = model.encoder(torch.cat([src[:1], padded]), src_lengths=torch.tensor([7, 4]))
    torch.testing.assert_close(enc_batch["encoder_out"][0][3:, 1], enc_alone[:, 0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out_batch[1, :3], out_alone[0], rtol=1e-5, atol=1e-5)


def test_every_parameter_receives_a_gradient(dict_dir) -> None:
    torch.manual_seed(0)
    model, task = build_model(dict_dir, "macaron_base", TINY)  # unshared embeddings
    model.train()
    src, src_lengths, prev = random_batch(task)
    logits, _ = model(src, src_lengths, prev)
    logits.logsumexp(-1).sum().backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not torch.any(p.grad != 0)]
    assert not missing, f"parameters without gradient: {missing}"


def test_state_dict_round_trip_is_exact(dict_dir, tiny_model) -> None:
    model, task = tiny_model
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    torch.manual_seed(123)  # a differently initialised twin
    twin, _ = build_model(dict_dir, "macaron_base", [*TINY, "--share-all-embeddings"])
    twin.load_state_dict(torch.load(buffer, weights_only=True), strict=True)
    twin.eval()
    src, src_lengths, prev = random_batch(task, seed=5)
    with torch.no_grad():
        torch.testing.assert_close(
            twin(src, src_lengths, prev)[0], model(src, src_lengths, prev)[0], rtol=0, atol=0
        )
