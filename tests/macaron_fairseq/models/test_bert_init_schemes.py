"""DT-Fixup / T-Fixup and activation checkpointing on the BERT pre-training models: norm-free new layers,
the μ probe (the vectors entering the first new layer, segment embeddings included), the scaling factors
against the paper's formulas, and checkpointed layers giving the gradients of plain ones."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from helpers import DT_FIXUP

from macaron_fairseq.init.fairseq_hook import run_init_scheme
from macaron_fairseq.init.formulas import dt_fixup_scale, vanilla_scale
from macaron_fairseq.init.targets import residual_blocks
from macaron_fairseq.models.bert_build import bert_dictionary_dir, build_bert_model

VOCAB = 120


@pytest.fixture(scope="module")
def dict_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with bert_dictionary_dir(VOCAB) as d:
        target = tmp_path_factory.mktemp("bert_dict")
        (target / "dict.txt").write_text((d / "dict.txt").read_text())
    return target


def batch(task, bsz: int = 3, length: int = 10) -> dict:
    g = torch.Generator().manual_seed(1)
    d = task.source_dictionary
    tokens = torch.randint(d.nspecial, len(d) - 1, (bsz, length), generator=g)
    tokens[:, 0] = d.bos()
    segments = (torch.arange(length) >= length // 2).long().expand(bsz, length).clone()
    return {"net_input": {"src_tokens": tokens, "segment_labels": segments}}


@pytest.mark.parametrize("arch", ["vanilla_bert_tiny", "macaron_bert_tiny"])
def test_dt_fixup_bert_is_norm_free_and_scaled_by_the_formula(dict_dir: Path, arch: str) -> None:
    mu = 1.5
    model, _ = build_bert_model(dict_dir, arch, [*DT_FIXUP, "--dt-fixup-mu", str(mu)])
    names = [name for name, _ in model.named_parameters()]
    assert not [n for n in names if n.startswith("encoder.") and "norm" in n], names
    assert "lm_head.layer_norm.weight" in names  # BERT's MLM head keeps its LayerNorm
    layers = model.encoder.layers
    before = {
        "v": [layer.self_attn.v_proj.weight.clone() for layer in layers],
        "q": [layer.self_attn.q_proj.weight.clone() for layer in layers],
        "fc1": [layer.fc1.weight.clone() for layer in layers],
    }
    run_init_scheme(model, task=None)  # μ is given: no data pass
    n = len(layers)
    for i, layer in enumerate(layers):
        want = dt_fixup_scale(residual_blocks(layer), n, mu)
        if arch.startswith("vanilla"):
            assert want == pytest.approx(vanilla_scale(n, mu)) == pytest.approx(n**-0.5 / (2 * mu))
        torch.testing.assert_close(layer.self_attn.v_proj.weight, before["v"][i] * want)
        torch.testing.assert_close(layer.fc1.weight, before["fc1"][i] * want)
        torch.testing.assert_close(layer.self_attn.q_proj.weight, before["q"][i])  # queries/keys untouched
    assert model.init_record.is_applied


def test_mu_probe_reads_what_enters_the_first_layer_segments_included(dict_dir: Path) -> None:
    model, task = build_bert_model(dict_dir, "macaron_bert_tiny", [*DT_FIXUP])
    model.eval()
    sample = batch(task)
    seen = []
    model.encoder.layers[0].register_forward_pre_hook(lambda _m, args: seen.append(args[0].detach()))
    with torch.no_grad():
        model(**sample["net_input"])
        (stack,) = model.new_stacks()
        probed, keep = stack.input_probe(sample)
        without_segments, _ = model.encoder.stack_input(sample["net_input"]["src_tokens"])
    torch.testing.assert_close(probed, seen[0])
    assert keep.all() and not torch.allclose(probed, without_segments)


def test_activation_checkpointing_gives_the_gradients_of_plain_layers(dict_dir: Path) -> None:
    plain, task = build_bert_model(dict_dir, "macaron_bert_tiny")
    checkpointed, _ = build_bert_model(dict_dir, "macaron_bert_tiny", ["--checkpoint-activations"])
    checkpointed.load_state_dict(plain.state_dict())
    assert hasattr(checkpointed.encoder.layers[0], "precheckpoint_forward")  # fairseq's checkpoint_wrapper
    assert not hasattr(plain.encoder.layers[0], "precheckpoint_forward")
    sample = batch(task)
    grads = []
    for model in (plain, checkpointed):
        model.train()  # dropout on: the recomputation must replay the same masks
        torch.manual_seed(7)
        mlm, nsp = model(**sample["net_input"])
        (mlm.float().pow(2).mean() + nsp.float().pow(2).mean()).backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys()
    for name in grads[0]:
        torch.testing.assert_close(grads[0][name], grads[1][name], msg=name)
