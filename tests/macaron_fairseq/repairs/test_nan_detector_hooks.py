"""fairseq's NanDetector (run by the trainer after a NaN/Inf gradient) reports the first non-finite module
instead of crashing with StopIteration on modules whose output is a dict of lists (fairseq's encoders)."""

from __future__ import annotations

import logging

import pytest
import torch
from fairseq.nan_detector import NanDetector
from helpers import DT_FIXUP, TINY, build_model

from macaron_fairseq.repairs import nan_detector_hooks


class ListOutput(torch.nn.Module):
    """The output structure of fairseq's encoders: a dict of lists, no tensor at the top level."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> dict:
        return {"encoder_out": [self.proj(x)], "encoder_padding_mask": []}


def test_a_nan_gradient_behind_a_dict_output_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    model = torch.nn.Sequential()
    model.add_module("encoder", ListOutput())
    with caplog.at_level(logging.WARNING), NanDetector(model):
        out = model.encoder(torch.ones(2, 4))["encoder_out"][0]
        (out * torch.tensor(float("nan"))).sum().backward()  # finite forward, NaN gradient
    # the same tensor is the output of encoder.proj and of encoder: the inner hook fires first
    assert "NaN detected in output of encoder.proj, shape: torch.Size([2, 4]), backward" in caplog.text


def test_unrepaired_fairseq_crashes_on_that_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the repair is for (fails if torch or fairseq no longer crash here: the repair can then go)."""

    def fairseq_add_hooks(self: NanDetector, module: torch.nn.Module) -> None:
        self.fhooks.append(module.register_forward_hook(self.fhook_fn))
        self.bhooks.append(module.register_backward_hook(self.bhook_fn))

    monkeypatch.setattr(NanDetector, "add_hooks", fairseq_add_hooks)
    model = torch.nn.Sequential()
    model.add_module("encoder", ListOutput())
    with pytest.raises(StopIteration), NanDetector(model):
        model.encoder(torch.ones(2, 4))


def test_the_first_nan_module_of_a_real_translation_model(dict_dir, caplog: pytest.LogCaptureFixture) -> None:
    model, _ = build_model(dict_dir, "fixup_transformer_iwslt_de_en", [*TINY, *DT_FIXUP])
    with torch.no_grad():
        model.encoder.layers[1].fc2.weight[0, 0] = float("nan")
    tokens = torch.tensor([[5, 6, 7, 2], [8, 9, 10, 2]])
    with caplog.at_level(logging.WARNING), NanDetector(model):
        logits, _ = model(tokens, torch.tensor([4, 4]), tokens)
        logits.sum().backward()
    assert "NaN detected in output of encoder.layers.1.fc2" in caplog.text and "forward" in caplog.text
    assert "StopIteration" not in caplog.text


def test_install_is_idempotent() -> None:
    nan_detector_hooks.install()
    patched = NanDetector.add_hooks
    nan_detector_hooks.install()
    assert NanDetector.add_hooks is patched is nan_detector_hooks.add_hooks
