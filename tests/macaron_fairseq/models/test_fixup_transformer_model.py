"""The vanilla model ``fixup_transformer``: with its new flags off it is fairseq's ``transformer``."""

from __future__ import annotations

import pytest
import torch
from helpers import TINY, build_model

from macaron_fairseq.modules.vanilla_layer import VanillaDecoderLayer, VanillaEncoderLayer


@pytest.mark.parametrize(
    "ours,fairseqs",
    [("fixup_transformer_iwslt_de_en", "transformer_iwslt_de_en"), ("fixup_transformer", "transformer")],
)
def test_default_flags_give_fairseqs_transformer(dict_dir, ours: str, fairseqs: str) -> None:
    torch.manual_seed(0)
    model, _ = build_model(dict_dir, ours, TINY)
    torch.manual_seed(0)
    ref, _ = build_model(dict_dir, fairseqs, TINY)
    assert isinstance(model.encoder.layers[0], VanillaEncoderLayer)
    assert isinstance(model.decoder.layers[0], VanillaDecoderLayer)
    ours_state, ref_state = model.state_dict(), ref.state_dict()
    assert {k: v.shape for k, v in ours_state.items()} == {k: v.shape for k, v in ref_state.items()}
    for key, value in ref_state.items():  # same construction order → same initial weights
        torch.testing.assert_close(ours_state[key], value, rtol=0, atol=0)
