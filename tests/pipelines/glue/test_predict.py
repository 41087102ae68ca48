"""Fine-tuning through the real ``fairseq-train`` with ``--task macaron_sentence_prediction`` on a
learnable toy pair task binarized by the real ``fairseq-preprocess``, then
:mod:`macaron_pipelines.glue.predict`:

* ``--restore-file`` of a pre-training checkpoint, classification: the loss goes down, and the
  predictions on the valid split (one per example, in file order) give fairseq's logged accuracy;
* ``--regression-target --num-classes 1``: the loss goes down, the predictions give the logged valid loss;
* ``--pretrained-encoder ... --new-encoder-layers 2 --init-scheme dt-fixup --optimizer adam_lr_groups``:
  μ is measured on the training pairs (segment embeddings included) and logged, the run learns.

The pre-training checkpoint is a freshly built ``macaron_bert_tiny`` saved as
``python -m macaron_fairseq.pretrain.export`` saves one (the export itself is tested in
tests/macaron_fairseq/pretrain/test_pretrain_e2e.py).
"""

from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path

import pytest
import torch
from helpers import REPO, fairseq_preprocess_here, run_cli

from macaron_pipelines.glue.predict import load_fine_tuned, predict, predict_labels

pytestmark = pytest.mark.slow

VOCAB = 64  # <s> <pad> </s> <unk> + piece0..piece58 + <mask>
SPLITS = {"train": 480, "valid": 60, "test": 25}
FLIP = {"yes": "no", "no": "yes"}


def toy_example(rng: random.Random) -> tuple[str, str, str]:
    """A first sentence hiding piece0 ("yes") or piece1 ("no") among noise pieces, a noise second one."""
    label = rng.choice(("yes", "no"))
    words = [f"piece{rng.randrange(5, 59)}" for _ in range(rng.randrange(2, 9))]
    words.insert(rng.randrange(len(words) + 1), "piece0" if label == "yes" else "piece1")
    second = [f"piece{rng.randrange(5, 59)}" for _ in range(rng.randrange(1, 7))]
    return " ".join(words), " ".join(second), label


def preprocess(dest: Path, dictionary: Path | None, text: Path, *, name: str) -> None:
    """``fairseq-preprocess --only-source`` of text/{split}.{name} into dest (GLUE's recipe; fairseq's own
    preprocess, in this process)."""
    command = [
        "--only-source",
        "--destdir",
        str(dest),
        "--workers",
        "1",
        "--trainpref",
        str(text / f"train.{name}"),
        "--validpref",
        str(text / f"valid.{name}"),
    ]
    if (text / f"test.{name}").exists():
        command += ["--testpref", str(text / f"test.{name}")]
    if dictionary is not None:
        command += ["--srcdict", str(dictionary)]
    fairseq_preprocess_here(command)


def save_pretraining_checkpoint(dictionary_dir: Path, path: Path) -> Path:
    """A ``macaron_bert_tiny`` pre-training model (MLM + NSP heads) as export.py writes it."""
    from fairseq import checkpoint_utils, options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from omegaconf import OmegaConf

    argv = [str(dictionary_dir), "--task", "macaron_bert_pretraining", "--arch", "macaron_bert_tiny"]
    args = options.parse_args_and_arch(options.get_training_parser(), argv)
    torch.manual_seed(0)
    model = tasks.setup_task(args).build_model(args)
    state = {
        "args": None,
        "cfg": OmegaConf.to_container(convert_namespace_to_omegaconf(args), resolve=True, enum_to_str=True),
        "model": model.state_dict(),
        "optimizer_history": [
            {
                "criterion_name": "BertPretrainingLoss",
                "optimizer_name": "DeepSpeed",
                "lr_scheduler_state": {},
                "num_updates": 1000,
            }
        ],
        "extra_state": {"train_iterator": {"epoch": 1}, "val_loss": None},
        "last_optimizer_state": None,
    }
    checkpoint_utils.torch_persistent_save(state, str(path))
    return path


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Classification and regression data dirs (fairseq's sentence_prediction layout), their labels, and
    a pre-training checkpoint over the same dictionary."""
    from macaron_fairseq.models.bert_build import write_bert_dictionary

    root = tmp_path_factory.mktemp("glue_toy")
    text = root / "text"
    text.mkdir()
    write_bert_dictionary(root / "dict.txt", VOCAB)  # the "pre-training data-bin's" dictionary
    rng = random.Random(0)
    labels: dict[str, list[str]] = {}
    for split, count in SPLITS.items():
        rows = [toy_example(rng) for _ in range(count)]
        if split == "valid":  # every 6th label flipped: a perfect model scores 83.3 %, a real check
            rows = [(a, b, FLIP[y]) if i % 6 == 0 else (a, b, y) for i, (a, b, y) in enumerate(rows)]
        (text / f"{split}.input0").write_text("".join(a + "\n" for a, _, _ in rows))
        (text / f"{split}.input1").write_text("".join(b + "\n" for _, b, _ in rows))
        labels[split] = [y for _, _, y in rows]
        if split != "test":  # GLUE's test sets have no labels
            (text / f"{split}.label").write_text("".join(y + "\n" for y in labels[split]))
    classification = root / "classification"
    for key in ("input0", "input1"):
        preprocess(classification / key, root / "dict.txt", text, name=key)
    preprocess(classification / "label", None, text, name="label")
    regression = root / "regression"
    for key in ("input0", "input1"):
        shutil.copytree(classification / key, regression / key)
    (regression / "label").mkdir()
    for split in ("train", "valid"):  # STS-B's layout: label/{split}.label, one float per line
        values = [1.0 if y == "yes" else 0.0 for y in labels[split]]
        (regression / "label" / f"{split}.label").write_text("".join(f"{v}\n" for v in values))
    return {
        "classification": classification,
        "regression": regression,
        "labels": labels,
        "checkpoint": save_pretraining_checkpoint(root, root / "model.pt"),
    }


def fine_tune(data: Path, save_dir: Path, *extra: str, classes: int = 2, lr: str = "1e-3") -> str:
    """``fairseq-train`` as the GLUE pipeline calls it (BERT's optimizer and schedule); returns the log."""
    command = [
        "fairseq-train",
        str(data),
        "--user-dir",
        str(REPO / "macaron_fairseq"),
        "--task",
        "macaron_sentence_prediction",
        "--criterion",
        "sentence_prediction",
        "--arch",
        "macaron_bert_tiny",
        "--num-classes",
        str(classes),
        "--adam-betas",
        "(0.9,0.999)",
        "--adam-eps",
        "1e-6",
        "--weight-decay",
        "0.01",
        "--lr-scheduler",
        "polynomial_decay",
        "--warmup-updates",
        "12",
        "--total-num-update",
        "180",
        "--max-epoch",
        "6",
        "--batch-size",
        "16",
        "--lr",
        lr,
        "--dropout",
        "0.1",
        "--attention-dropout",
        "0.1",
        "--save-dir",
        str(save_dir),
        "--no-epoch-checkpoints",
        "--cpu",
        "--num-workers",
        "0",
        "--seed",
        "1",
        "--log-format",
        "json",
        "--log-interval",
        "10",
        *extra,
    ]
    if "--optimizer" not in extra:
        command += ["--optimizer", "adam"]
    proc = run_cli(command, cwd=save_dir.parent)
    return proc.stdout + proc.stderr


def epoch_records(log: str, kind: str) -> list[dict]:
    """fairseq's JSON end-of-epoch records of ``kind`` ("train" or "valid"), values as floats."""
    records = []
    for line in log.splitlines():
        start = line.find("{")
        if start < 0 or f'"{kind}_loss"' not in line:
            continue
        record = json.loads(line[start:])
        if "epoch" in record:
            records.append({k: float(v) for k, v in record.items()})
    return records


def test_restore_file_classification_learns_and_predict_gives_fairseqs_accuracy(toy, tmp_path: Path) -> None:
    save = tmp_path / "run"
    log = fine_tune(
        toy["classification"],
        save,
        "--restore-file",
        str(toy["checkpoint"]),
        "--reset-optimizer",
        "--reset-dataloader",
        "--reset-meters",
        "--best-checkpoint-metric",
        "accuracy",
        "--maximize-best-checkpoint-metric",
    )
    assert f"Loaded checkpoint {toy['checkpoint']}" in log
    assert "the checkpoint's MLM and NSP heads are not used" in log
    train, valid = epoch_records(log, "train"), epoch_records(log, "valid")
    assert len(train) == len(valid) == 6
    assert train[-1]["train_num_updates"] == 180  # counted from 0, not from the pre-training's 1000
    assert train[-1]["train_loss"] < 0.5 * train[0]["train_loss"], [r["train_loss"] for r in train]
    assert 70 <= valid[-1]["valid_accuracy"] < 100, valid[-1]

    checkpoint = save / "checkpoint_last.pt"
    predicted = predict(checkpoint, toy["classification"], "valid", batch_size=7)
    assert len(predicted) == SPLITS["valid"] and all(isinstance(p, int) for p in predicted)
    words = predict_labels(checkpoint, toy["classification"], "valid", batch_size=7)
    gold = toy["labels"]["valid"]
    accuracy = 100 * sum(w == y for w, y in zip(words, gold, strict=True)) / len(gold)
    assert accuracy == pytest.approx(valid[-1]["valid_accuracy"], abs=0.051)  # fairseq rounds to 0.1
    # the label strings come from label/dict.txt, in file order (one batch size or another)
    fine_tuned = load_fine_tuned(checkpoint, toy["classification"])
    label_dict = fine_tuned.task.label_dictionary
    assert words == [label_dict[i + label_dict.nspecial] for i in predicted]
    assert predict(checkpoint, toy["classification"], "valid", batch_size=64) == predicted
    # the test split has no labels; every example gets a prediction
    assert len(predict_labels(checkpoint, toy["classification"], "test")) == SPLITS["test"]


def test_regression_learns_and_predict_gives_fairseqs_valid_loss(toy, tmp_path: Path) -> None:
    save = tmp_path / "run"
    log = fine_tune(
        toy["regression"],
        save,
        "--restore-file",
        str(toy["checkpoint"]),
        "--reset-optimizer",
        "--reset-dataloader",
        "--reset-meters",
        "--regression-target",
        classes=1,
    )
    train, valid = epoch_records(log, "train"), epoch_records(log, "valid")
    assert train[-1]["train_loss"] < 0.5 * train[0]["train_loss"], [r["train_loss"] for r in train]
    values = predict(save / "checkpoint_last.pt", toy["regression"], "valid")
    gold = [1.0 if y == "yes" else 0.0 for y in toy["labels"]["valid"]]
    assert len(values) == len(gold) and all(isinstance(v, float) for v in values)
    mse_bits = sum((v - y) ** 2 for v, y in zip(values, gold, strict=True)) / len(gold) / math.log(2)
    assert mse_bits == pytest.approx(valid[-1]["valid_loss"], abs=6e-4)  # fairseq rounds to 3 decimals
    assert predict_labels(save / "checkpoint_last.pt", toy["regression"], "valid") == values


def test_dt_fixup_new_layers_on_the_pretrained_encoder(toy, tmp_path: Path) -> None:
    save = tmp_path / "run"
    log = fine_tune(
        toy["classification"],
        save,
        "--pretrained-encoder",
        str(toy["checkpoint"]),
        "--new-encoder-layers",
        "2",
        "--init-scheme",
        "dt-fixup",
        "--optimizer",
        "adam_lr_groups",
        "--pretrained-lr-multiplier",
        "0.5",
    )
    assert "2 macaron layers (d=64, ffn=128) + 2 new layers" in log
    assert "DT-Fixup μ pass (encoder)" in log and "DT-Fixup applied to encoder" in log
    train, valid = epoch_records(log, "train"), epoch_records(log, "valid")
    assert train[-1]["train_loss"] < 0.5 * train[0]["train_loss"], [r["train_loss"] for r in train]

    # μ: the largest norm of the pre-trained encoder's outputs over the training pairs, segments included
    fine_tuned = load_fine_tuned(save / "checkpoint_last.pt", toy["classification"])
    pretrained = load_pretrained(toy["checkpoint"])
    task = fine_tuned.task
    task.load_dataset("train")
    dataset = task.dataset("train")
    sample = dataset.collater([dataset[i] for i in range(len(dataset))])
    with torch.no_grad():
        out = pretrained.encoder(**{k: sample["net_input"][k] for k in ("src_tokens", "segment_labels")})
    norms = out["encoder_out"][0].transpose(0, 1).norm(dim=-1)
    mu = norms[sample["net_input"]["src_tokens"].ne(task.source_dictionary.pad())].max().item()
    assert fine_tuned.model.init_record.get("mu_encoder") == pytest.approx(mu, rel=1e-4)
    predicted = predict(save / "checkpoint_last.pt", toy["classification"], "valid")
    gold = toy["labels"]["valid"]
    label_dict = task.label_dictionary
    accuracy = (
        100
        * sum(label_dict[p + label_dict.nspecial] == y for p, y in zip(predicted, gold, strict=True))
        / len(gold)
    )
    assert accuracy == pytest.approx(valid[-1]["valid_accuracy"], abs=0.051)


def load_pretrained(path: Path) -> torch.nn.Module:
    from fairseq import checkpoint_utils

    (model,), _, _ = checkpoint_utils.load_model_ensemble_and_task([str(path)])
    return model.eval()
