"""The authors' architectures initialise as the authors' fork does; the plugin's own keep fairseq 0.12's.

The expected distributions are facts read from their fork (zhuohan123/macaron-net, commit 3a84e7a), not
from this plugin's output:

* ``translation/fairseq/models/transformer.py`` ``Linear`` (lines 769-777): ``nn.init.xavier_uniform_``
  weight — uniform on ±√(6/(fan_in + fan_out)) — and ``nn.init.constant_(m.bias, 0.)``; used for ``fc1``,
  ``fc2``, ``macaron_fc1``, ``macaron_fc2`` of every encoder and decoder layer;
* ``translation/fairseq/modules/multihead_attention.py`` ``reset_parameters``: ``in_proj_weight`` of shape
  (3d × d) drawn with ``xavier_uniform_`` (bound √(6/(3d + d)) for each of q, k, v), ``in_proj_bias`` and
  ``out_proj.bias`` zero, ``out_proj.weight`` Xavier-uniform (bound √(6/2d));
* ``Embedding``: N(0, d^-½) with ``weight[padding_idx] = 0``.

fairseq 0.12's ``fc1``/``fc2`` are PyTorch's default ``nn.Linear`` (kaiming-uniform with a = √5: weights
and biases uniform on ±1/√fan_in) and its q/k/v biases keep that default.
"""

from __future__ import annotations

import math

import pytest
import torch
from helpers import build_model
from torch import nn

from macaron_fairseq.models import authors_init
from macaron_fairseq.models.authors_init import AUTHORS_INIT_ARCHS, initialisation_of

D, FFN, HEADS = 64, 128, 4
SMALL = [
    "--encoder-embed-dim",
    str(D),
    "--decoder-embed-dim",
    str(D),
    "--encoder-attention-heads",
    str(HEADS),
    "--decoder-attention-heads",
    str(HEADS),
    "--encoder-layers",
    "2",
    "--decoder-layers",
    "2",
    "--share-all-embeddings",
]
MACARON_ARCHS = [
    "transformer_iwslt_de_en_macaron_v2",
    "transformer_wmt_en_de_macaron_v2",
    "transformer_wmt_en_de_big_t2t_macaron",
    "transformer_iwslt_de_en_macaron",
    "transformer_wmt_en_de_macaron",
]
BASELINE_ARCHS = ["transformer_iwslt_de_en_v2", "transformer_wmt_en_de_v2", "transformer_wmt_en_de_big_t2t"]
PLUGIN_ARCHS = ["macaron_small", "macaron_base", "fixup_transformer_iwslt_de_en", "transformer_iwslt_de_en"]


def flags(arch: str) -> list[str]:
    ffn = FFN // 2 if "macaron" in arch else FFN
    return [*SMALL, "--encoder-ffn-embed-dim", str(ffn), "--decoder-ffn-embed-dim", str(ffn)]


@pytest.fixture(scope="module")
def models(dict_dir) -> dict[str, nn.Module]:
    torch.manual_seed(0)
    return {
        arch: build_model(dict_dir, arch, flags(arch))[0]
        for arch in MACARON_ARCHS + BASELINE_ARCHS + PLUGIN_ARCHS
    }


def layer_linears(model: nn.Module) -> tuple[list[tuple[str, nn.Linear]], list[tuple[str, nn.Module]]]:
    """(the layers' Linear modules outside attention, the layers' attention modules), with names."""
    from fairseq.modules import MultiheadAttention

    linears, attentions = [], []
    for side in ("encoder", "decoder"):
        for i, layer in enumerate(getattr(model, side).layers):
            attn_ids = set()
            for name, m in layer.named_modules():
                if isinstance(m, MultiheadAttention):
                    attentions.append((f"{side}.{i}.{name}", m))
                    attn_ids |= {id(x) for x in m.modules()}
            for name, m in layer.named_modules():
                if isinstance(m, nn.Linear) and id(m) not in attn_ids:
                    linears.append((f"{side}.{i}.{name}", m))
    return linears, attentions


def assert_uniform(weight: torch.Tensor, bound: float, what: str) -> None:
    """All values within ±bound, reaching close to it, standard deviation bound/√3 (uniform)."""
    w = weight.detach()
    assert w.abs().max() <= bound * (1 + 1e-6), f"{what}: max {w.abs().max():.5f} > bound {bound:.5f}"
    assert w.abs().max() >= 0.95 * bound, f"{what}: max {w.abs().max():.5f} far below bound {bound:.5f}"
    assert w.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.05), what


@pytest.mark.parametrize("arch", MACARON_ARCHS + BASELINE_ARCHS)
def test_authors_arch_linears_are_xavier_uniform_with_zero_bias(models, arch):
    linears, _ = layer_linears(models[arch])
    names = {name.rsplit(".", 1)[-1] for name, _ in linears}
    expected = {"fc1", "fc2", "ffn1_fc1", "ffn1_fc2"} if "macaron" in arch else {"fc1", "fc2"}
    assert names == expected
    for name, linear in linears:
        fan_out, fan_in = linear.weight.shape
        assert_uniform(linear.weight, math.sqrt(6 / (fan_in + fan_out)), f"{arch} {name}")
        assert torch.count_nonzero(linear.bias) == 0, f"{arch} {name}.bias"


@pytest.mark.parametrize("arch", MACARON_ARCHS + BASELINE_ARCHS)
def test_authors_arch_attention_is_one_3d_by_d_xavier_matrix_with_zero_biases(models, arch):
    _, attentions = layer_linears(models[arch])
    assert attentions
    for name, attn in attentions:
        in_proj = torch.cat([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight])
        assert in_proj.shape == (3 * D, D)
        bound = math.sqrt(6 / (3 * D + D))  # xavier_uniform_ of the (3d × d) in_proj_weight
        assert_uniform(in_proj, bound, f"{arch} {name} in_proj")
        for proj in ("q_proj", "k_proj", "v_proj"):
            assert_uniform(getattr(attn, proj).weight, bound, f"{arch} {name}.{proj}")
            assert torch.count_nonzero(getattr(attn, proj).bias) == 0, f"{arch} {name}.{proj}.bias"
        assert_uniform(attn.out_proj.weight, math.sqrt(6 / (2 * D)), f"{arch} {name}.out_proj")
        assert torch.count_nonzero(attn.out_proj.bias) == 0


@pytest.mark.parametrize("arch", MACARON_ARCHS + BASELINE_ARCHS + PLUGIN_ARCHS)
def test_embeddings_are_theirs(models, arch):
    """Their ``Embedding``: N(0, d^-½), padding row zero (fairseq 0.12 draws the same)."""
    emb = models[arch].encoder.embed_tokens
    pad = emb.padding_idx
    assert torch.count_nonzero(emb.weight[pad]) == 0
    rest = torch.cat([emb.weight[:pad], emb.weight[pad + 1 :]]).detach()
    assert rest.std().item() == pytest.approx(D**-0.5, rel=0.05)
    assert abs(rest.mean().item()) < 0.1 * D**-0.5


@pytest.mark.parametrize("arch", PLUGIN_ARCHS)
def test_plugin_and_fairseq_archs_keep_fairseq_012_init(models, arch):
    """PyTorch's default Linear (bound 1/√fan_in, non-zero biases) and default q/k/v biases."""
    assert arch not in AUTHORS_INIT_ARCHS
    linears, attentions = layer_linears(models[arch])
    for name, linear in linears:
        fan_in = linear.weight.shape[1]
        assert_uniform(linear.weight, 1 / math.sqrt(fan_in), f"{arch} {name}")
        assert torch.count_nonzero(linear.bias) > 0, f"{arch} {name}.bias"
    for _name, attn in attentions:
        assert torch.count_nonzero(attn.q_proj.bias) > 0


def test_initialisation_of_names_every_authors_arch():
    for arch in MACARON_ARCHS + BASELINE_ARCHS:
        assert initialisation_of(arch) == authors_init.AUTHORS
    for arch in PLUGIN_ARCHS:
        assert initialisation_of(arch) == authors_init.FAIRSEQ_012


def test_install_is_idempotent():
    from fairseq.models.transformer import TransformerModel

    before = TransformerModel.build_model.__func__
    authors_init.install()
    assert TransformerModel.build_model.__func__ is before
