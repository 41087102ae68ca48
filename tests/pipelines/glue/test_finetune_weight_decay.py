"""Fine-tuning's weight decay skips biases and LayerNorm weights (BERT's ``optimization.py`` and the
pre-trainer do): ``--optimizer adam_lr_groups --no-decay-bias-and-norm``, which the GLUE runs use."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from macaron_fairseq.models.bert_build import bert_dictionary_dir, build_bert_model
from macaron_fairseq.optim.adam_lr_groups import AdamLrGroupsConfig, AdamWithLrMultipliers


@pytest.mark.parametrize("skip", [True, False])
def test_decay_skips_biases_and_layer_norms(skip: bool) -> None:
    with bert_dictionary_dir(40) as data:
        model, _ = build_bert_model(data, "vanilla_bert_tiny")
    named = dict(model.named_parameters())
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)  # no zero weight, on which a decay would not show
    cfg = OmegaConf.structured(
        AdamLrGroupsConfig(
            lr=[0.1], weight_decay=0.5, no_decay_bias_and_norm=skip, tpu=False, fp16_adam_stats=False
        )
    )
    optimizer = AdamWithLrMultipliers(cfg, list(model.parameters()))
    before = {name: p.detach().clone() for name, p in named.items()}
    for p in model.parameters():
        p.grad = torch.zeros_like(p)  # Adam's update is 0: only the decay moves a weight
    optimizer.step()
    for name, p in named.items():
        vector = p.dim() < 2  # biases, LayerNorm weights and biases
        moved = not torch.equal(p.detach(), before[name])
        assert moved == (not (skip and vector)), name
    assert "encoder.layers.0.self_attn_layer_norm.weight" in named and "lm_head.bias" in named
    assert optimizer.get_lr() == pytest.approx(0.1)


def test_fairseq_train_parses_the_flag(tmp_path: Path) -> None:
    """fairseq builds its parser from the config dataclass's field types (a string annotation broke it)."""
    from fairseq import options

    import macaron_fairseq  # noqa: F401

    parser = options.get_training_parser()
    argv = [
        str(tmp_path),
        "--task",
        "macaron_bert_pretraining",
        "--arch",
        "vanilla_bert_tiny",
        "--optimizer",
        "adam_lr_groups",
        "--no-decay-bias-and-norm",
        "--weight-decay",
        "0.01",
    ]
    args = options.parse_args_and_arch(parser, input_args=argv)
    assert args.no_decay_bias_and_norm is True and args.weight_decay == 0.01
