"""``--pretrained-encoder`` (``macaron_fairseq/models/pretrained_encoder.py``): the documented error and
warning (docs/dt_fixup.md §6) through ``build_model`` — a pre-norm checkpoint is refused, and
``--pretrained-lr-multiplier`` warns with an optimizer that does not honour it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch
from helpers import TINY, build_model, save_model_checkpoint

LOGGER = "macaron_fairseq.models.pretrained_encoder"


@pytest.fixture(scope="module")
def encoders(dict_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two checkpoints of fairseq's own Transformer (2 encoder layers), post-norm and pre-norm."""
    d = tmp_path_factory.mktemp("pretrained")
    arch, pre_norm = "transformer_iwslt_de_en", [*TINY, "--encoder-normalize-before"]
    return {
        "post-norm": save_model_checkpoint(d / "post_norm.pt", dict_dir, arch, TINY),
        "pre-norm": save_model_checkpoint(d / "pre_norm.pt", dict_dir, arch, pre_norm),
    }


def on_top_of(dict_dir: Path, checkpoint: Path, *extra: str) -> object:
    """A macaron_small model with 1 new layer on the checkpoint's encoder."""
    flags = [*TINY, "--pretrained-encoder", str(checkpoint), "--new-encoder-layers", "1", *extra]
    return build_model(dict_dir, "macaron_small", flags)[0]


def test_a_pre_norm_encoder_is_refused(dict_dir: Path, encoders: dict[str, Path]) -> None:
    pre_norm = encoders["pre-norm"]
    weights = torch.load(pre_norm, weights_only=False)["model"]
    assert "encoder.layer_norm.weight" in weights  # a real pre-norm encoder: its final LayerNorm
    with pytest.raises(ValueError, match="pre-norm encoders are not supported") as error:
        on_top_of(dict_dir, pre_norm)
    assert str(error.value).startswith(f"--pretrained-encoder {pre_norm}: ")  # names the file
    assert "use a post-norm checkpoint" in str(error.value)  # and says what to do instead
    model = on_top_of(dict_dir, encoders["post-norm"])  # the same model, post-norm, is accepted
    assert len(model.encoder.layers) == 3 and model.encoder.first_new_layer == 2


def multiplier_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


def test_lr_multiplier_warns_without_adam_lr_groups(
    dict_dir: Path, encoders: dict[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        on_top_of(dict_dir, encoders["post-norm"], "--optimizer", "adam")
    assert multiplier_warnings(caplog) == [
        "--pretrained-lr-multiplier 0.008 is only honoured by --optimizer adam_lr_groups (got adam): "
        "the pre-trained encoder will train at the full learning rate"
    ]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        on_top_of(dict_dir, encoders["post-norm"], "--optimizer", "sgd", "--pretrained-lr-multiplier", "0.1")
    assert multiplier_warnings(caplog) == [
        "--pretrained-lr-multiplier 0.1 is only honoured by --optimizer adam_lr_groups (got sgd): "
        "the pre-trained encoder will train at the full learning rate"
    ]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        model = on_top_of(dict_dir, encoders["post-norm"], "--optimizer", "adam_lr_groups")
    assert multiplier_warnings(caplog) == []
    assert model.encoder.embed_tokens.weight.lr_multiplier == 8e-3


def test_a_malicious_checkpoint_is_refused_before_it_runs(dict_dir: Path, tmp_path: Path) -> None:
    """``--pretrained-encoder`` reads through the allow-listed checkpoint reader: nothing of the file runs."""
    from helpers import write_malicious_checkpoint

    from macaron_fairseq.checkpoint_reader import UnsafeCheckpointError

    marker = tmp_path / "MARKER"
    evil = write_malicious_checkpoint(tmp_path / "evil.pt", marker)
    with pytest.raises(UnsafeCheckpointError) as error:
        on_top_of(dict_dir, evil)
    message = str(error.value)
    assert message.startswith(f"refusing to load checkpoint --pretrained-encoder {evil}: it pickles posix")
    assert "\n" not in message and not marker.exists()
