"""Classification heads on the BERT models (``--task macaron_sentence_prediction``): BERT's classifier
(the pre-trained pooler → dropout → a new N(0, 0.02) linear layer), no MLM/NSP heads in a fine-tuning
model, a pre-training checkpoint restored into a model with a head, a fine-tuned checkpoint restoring its
head, and a fresh pooler above new layers on a pre-trained encoder."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from fairseq import checkpoint_utils, options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from omegaconf import OmegaConf

from macaron_fairseq.models.bert import BertClassificationHead, BertPretrainingBase
from macaron_fairseq.models.bert_build import build_bert_model, write_bert_dictionary

VOCAB = 48
HEAD = "sentence_classification_head"  # fairseq's sentence_prediction default


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dictionaries of a sentence-prediction data dir; ``dict.txt`` doubles as the pre-training one."""
    root = tmp_path_factory.mktemp("glue_dicts")
    for key in ("input0", "label"):
        (root / key).mkdir()
    write_bert_dictionary(root / "input0" / "dict.txt", VOCAB)
    write_bert_dictionary(root / "dict.txt", VOCAB)
    (root / "label" / "dict.txt").write_text("yes 3\nno 2\nmaybe 1\n")
    return root


@pytest.fixture(scope="module")
def pretrained(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[BertPretrainingBase, Path]:
    """A pre-training model (MLM + NSP heads) and its fairseq checkpoint (weights + model config)."""
    torch.manual_seed(1)
    model, _ = build_bert_model(data_dir, "macaron_bert_tiny")
    path = tmp_path_factory.mktemp("pretrained") / "model.pt"
    state = {
        "cfg": {"model": model.init_args},
        "model": model.state_dict(),
        "optimizer_history": [
            {
                "criterion_name": "BertPretrainingLoss",
                "optimizer_name": "DeepSpeed",
                "lr_scheduler_state": {},
                "num_updates": 3,
            }
        ],
        "extra_state": {"train_iterator": {"epoch": 1}},
    }
    torch.save(state, path)
    return model, path


def fine_tuning(data_dir: Path, *extra: str, classes: int = 3) -> tuple[BertPretrainingBase, object, object]:
    """Model, task and config as fairseq-train builds them for sentence prediction."""
    argv = [
        str(data_dir),
        "--task",
        "macaron_sentence_prediction",
        "--criterion",
        "sentence_prediction",
        "--arch",
        "macaron_bert_tiny",
        "--num-classes",
        str(classes),
        *extra,
    ]
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_training_parser(), argv))
    task = tasks.setup_task(cfg.task)
    return task.build_model(cfg.model), task, cfg


def batch(bsz: int = 4, length: int = 11) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(5)
    tokens = torch.randint(4, VOCAB - 1, (bsz, length), generator=g)
    tokens[:, 0] = 0
    segments = (torch.arange(length) > length // 2).long().expand(bsz, length).clone()
    return {"src_tokens": tokens, "segment_labels": segments}


def test_heads_give_num_classes_logits_per_example(data_dir: Path) -> None:
    model, _, _ = fine_tuning(data_dir)
    model.eval()
    logits, extra = model(**batch(), features_only=True, classification_head_name=HEAD)
    assert logits.shape == (4, 3) and "encoder_out" in extra
    model.register_classification_head("other", num_classes=1)
    assert model(**batch(), classification_head_name="other")[0].shape == (4, 1)
    features, _ = model(**batch(), features_only=True)
    assert features.shape == (4, 11, 64)
    with pytest.raises(ValueError, match="inner_dim 32"):
        model.register_classification_head("wide", num_classes=2, inner_dim=32)
    with pytest.raises(RuntimeError, match="no MLM/NSP heads"):
        model(**batch())


def test_the_head_is_dropout_and_a_linear_layer_on_the_pooler(data_dir: Path) -> None:
    model, _, _ = fine_tuning(data_dir)
    head = model.classification_heads[HEAD]
    assert isinstance(head, BertClassificationHead) and head.dropout.p == 0.1  # --dropout
    assert head.out_proj.bias.abs().sum() == 0 and 0.01 < head.out_proj.weight.std().item() < 0.03
    model.eval()
    with torch.no_grad():
        logits, _ = model(**batch(), classification_head_name=HEAD)
        features, _ = model.extract_features(**batch())
        pooled = torch.tanh(model.pooler.dense(features[:, 0]))
    torch.testing.assert_close(logits, head.out_proj(pooled))
    other, _, _ = fine_tuning(data_dir, "--pooler-dropout", "0.3", "--dropout", "0.2")
    assert other.classification_heads[HEAD].dropout.p == 0.3
    assert fine_tuning(data_dir, "--dropout", "0.2")[0].classification_heads[HEAD].dropout.p == 0.2


def test_a_fine_tuning_model_has_no_pretraining_heads_and_every_parameter_gets_a_gradient(
    data_dir: Path,
) -> None:
    model, _, _ = fine_tuning(data_dir)
    names = [name for name, _ in model.named_parameters()]
    assert not [n for n in names if n.startswith(("lm_head.", "nsp_classifier."))]
    logits, _ = model(**batch(), classification_head_name=HEAD)
    logits.sum().backward()
    assert [
        n for n, p in model.named_parameters() if p.grad is None
    ] == []  # DDP needs no unused-params search


def test_a_pretraining_checkpoint_restores_into_a_model_with_a_head(data_dir: Path, pretrained) -> None:
    source, _ = pretrained
    model, _, cfg = fine_tuning(data_dir)
    fresh_head = {k: v.clone() for k, v in model.classification_heads.state_dict().items()}
    # what fairseq-train --restore-file does: a strict load of the checkpoint's state dict
    model.load_state_dict(dict(source.state_dict()), strict=True, model_cfg=cfg.model)
    restored = model.state_dict()
    for name, value in source.state_dict().items():
        if name.startswith(("encoder.", "pooler.")):
            torch.testing.assert_close(restored[name], value, msg=name)
    for name, value in fresh_head.items():
        torch.testing.assert_close(model.classification_heads.state_dict()[name], value, msg=name)
    # the pre-trained pooler is what the head reads
    torch.testing.assert_close(model.pooler.dense.weight, source.pooler.dense.weight)


def test_a_checkpoint_with_other_positions_is_refused_naming_the_flags(data_dir: Path, pretrained) -> None:
    source, _ = pretrained
    model, _, cfg = fine_tuning(data_dir, "--max-positions", "128", "--tokens-per-sample", "128")
    with pytest.raises(ValueError, match=r"512 learned positions, this model 128.*--tokens-per-sample"):
        model.load_state_dict(dict(source.state_dict()), strict=True, model_cfg=cfg.model)


def save_fine_tuned(model: BertPretrainingBase, cfg: object, path: Path) -> Path:
    """The model as fairseq's trainer saves it (the resolved config and the weights)."""
    container = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    state = {
        "args": None,
        "cfg": container,
        "model": model.state_dict(),
        "optimizer_history": [
            {
                "criterion_name": "SentencePredictionCriterion",
                "optimizer_name": "FairseqAdam",
                "lr_scheduler_state": {"best": None},
                "num_updates": 10,
            }
        ],
        "extra_state": {"train_iterator": {"epoch": 2}},
        "last_optimizer_state": None,
    }
    torch.save(state, path)
    return path


def test_a_fine_tuned_checkpoint_restores_its_head(data_dir: Path, tmp_path: Path) -> None:
    model, _, cfg = fine_tuning(data_dir)
    with torch.no_grad():
        model.classification_heads[HEAD].out_proj.weight.normal_()  # not the initialisation
    path = save_fine_tuned(model, cfg, tmp_path / "fine_tuned.pt")
    (loaded,), _, task = checkpoint_utils.load_model_ensemble_and_task([str(path)])
    assert list(loaded.classification_heads) == [HEAD] and task.cfg.num_classes == 3
    for name, value in model.state_dict().items():
        torch.testing.assert_close(loaded.state_dict()[name], value, msg=name)
    model.eval(), loaded.eval()
    with torch.no_grad():
        want, _ = model(**batch(), classification_head_name=HEAD)
        got, _ = loaded(**batch(), classification_head_name=HEAD)
    torch.testing.assert_close(got, want)


def test_a_head_with_another_number_of_classes_is_not_loaded(data_dir: Path) -> None:
    three, _, _ = fine_tuning(data_dir)
    four, _, cfg = fine_tuning(data_dir, classes=4)
    fresh = four.classification_heads[HEAD].out_proj.weight.clone()
    four.load_state_dict(dict(three.state_dict()), strict=True, model_cfg=cfg.model)
    torch.testing.assert_close(four.classification_heads[HEAD].out_proj.weight, fresh)


def test_new_layers_on_a_pretrained_encoder_get_a_fresh_pooler(data_dir: Path, pretrained) -> None:
    source, path = pretrained
    model, _, _ = fine_tuning(
        data_dir,
        "--pretrained-encoder",
        str(path),
        "--new-encoder-layers",
        "2",
        "--init-scheme",
        "dt-fixup",
        "--optimizer",
        "adam_lr_groups",
        "--pretrained-lr-multiplier",
        "0.1",
    )
    assert len(model.encoder.layers) == 4
    for name, value in source.encoder.layers[1].state_dict().items():
        torch.testing.assert_close(model.encoder.layers[1].state_dict()[name], value, msg=name)
    assert not torch.allclose(model.pooler.dense.weight, source.pooler.dense.weight)
    assert getattr(model.encoder.layers[1].fc1.weight, "lr_multiplier", None) == 0.1
    assert not hasattr(model.pooler.dense.weight, "lr_multiplier")
    assert not hasattr(model.classification_heads[HEAD].out_proj.weight, "lr_multiplier")
