"""``--task macaron_sentence_prediction``: BERT's ``<s> A </s> B </s>`` examples with segment labels (and
``<s> A </s>`` for single sentences), BERT's pair truncation rule, no example ever dropped, the labels of
fairseq's ``sentence_prediction`` layout, and the refusals (a dictionary of another size than the
checkpoint's vocabulary, RoBERTa's layout flags, too few classes)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import torch
from fairseq import options, tasks
from fairseq.data import Dictionary, indexed_dataset
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

from macaron_fairseq.models.bert import VocabularyMismatchError
from macaron_fairseq.models.bert_build import build_bert_model, write_bert_dictionary
from macaron_fairseq.tasks.bert_sentence_prediction import (
    BertInputError,
    BertSentencePredictionTask,
    truncated_pair_lengths,
)

VOCAB = 40  # <s> <pad> </s> <unk> + piece0..piece34 + <mask>; piece i has id 4 + i
CLS, PAD, SEP = 0, 1, 2
#: (first sentence, second sentence or None, label or None)
Example = tuple[str, str | None, str | None]


def pieces(*ids: int) -> str:
    return " ".join(f"piece{i}" for i in ids)


def write_binarized(prefix: Path, lines: Sequence[str], dictionary: Dictionary) -> None:
    """What ``fairseq-preprocess --only-source --srcdict`` writes: each line's ids, ``</s>`` appended."""
    builder = indexed_dataset.make_builder(f"{prefix}.bin", impl="mmap", vocab_size=len(dictionary))
    for line in lines:
        builder.add_item(dictionary.encode_line(line, add_if_not_exist=False, append_eos=True).long())
    builder.finalize(f"{prefix}.idx")


def write_glue_dir(
    root: Path,
    splits: dict[str, Sequence[Example]],
    vocab: int = VOCAB,
    labels: Sequence[str] = ("pos", "neg"),
    regression: bool = False,
) -> Path:
    """A data dir in fairseq's ``sentence_prediction`` layout: input0/, input1/ (when the examples have
    second sentences), label/ (dict.txt + binarized labels, or ``{split}.label`` floats for regression)."""
    for key in ("input0", "input1", "label"):
        (root / key).mkdir(parents=True, exist_ok=True)
    write_bert_dictionary(root / "input0" / "dict.txt", vocab)
    (root / "label" / "dict.txt").write_text(
        "".join(f"{label} {100 - i}\n" for i, label in enumerate(labels))
    )
    words = Dictionary.load(str(root / "input0" / "dict.txt"))
    label_dict = Dictionary.load(str(root / "label" / "dict.txt"))
    for split, examples in splits.items():
        write_binarized(root / "input0" / split, [a for a, _, _ in examples], words)
        if examples[0][1] is not None:
            write_binarized(root / "input1" / split, [b for _, b, _ in examples], words)
        if examples[0][2] is None:
            continue
        if regression:
            (root / "label" / f"{split}.label").write_text("".join(f"{y}\n" for _, _, y in examples))
        else:
            write_binarized(root / "label" / split, [y for _, _, y in examples], label_dict)
    return root


def setup_task(data_dir: Path, *extra: str) -> tuple[BertSentencePredictionTask, object]:
    """The task and config as fairseq-train builds them."""
    argv = [
        str(data_dir),
        "--task",
        "macaron_sentence_prediction",
        "--criterion",
        "sentence_prediction",
        "--arch",
        "macaron_bert_tiny",
        "--num-classes",
        "2",
        *extra,
    ]
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_training_parser(), argv))
    return tasks.setup_task(cfg.task), cfg


def collate(task: BertSentencePredictionTask, split: str) -> dict:
    task.load_dataset(split)
    dataset = task.dataset(split)
    return dataset.collater([dataset[i] for i in range(len(dataset))])


def test_pairs_are_cls_a_sep_b_sep_with_segment_labels(tmp_path: Path) -> None:
    data = write_glue_dir(
        tmp_path, {"valid": [(pieces(1, 2, 3), pieces(4, 5), "neg"), (pieces(6), pieces(7, 8, 9, 10), "pos")]}
    )
    task, _ = setup_task(data)
    sample = collate(task, "valid")
    net = sample["net_input"]
    assert net["src_tokens"].tolist() == [[CLS, 5, 6, 7, SEP, 8, 9, SEP], [CLS, 10, SEP, 11, 12, 13, 14, SEP]]
    assert net["segment_labels"].tolist() == [[0, 0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 1, 1, 1]]
    assert net["src_lengths"].tolist() == [8, 8]
    # labels: position in label/dict.txt after the special symbols ("pos" first)
    assert sample["target"].view(-1).tolist() == [1, 0] and sample["id"].tolist() == [0, 1]


def test_padding_rows_have_pad_tokens_and_segment_zero(tmp_path: Path) -> None:
    data = write_glue_dir(
        tmp_path, {"valid": [(pieces(1), pieces(2), "pos"), (pieces(1, 2, 3), pieces(4), "neg")]}
    )
    task, _ = setup_task(data)
    net = collate(task, "valid")["net_input"]
    assert net["src_tokens"][0].tolist() == [CLS, 5, SEP, 6, SEP, PAD, PAD]
    assert net["segment_labels"][0].tolist() == [0, 0, 0, 1, 1, 0, 0]


def test_single_sentences_are_cls_a_sep_and_segment_zero(tmp_path: Path) -> None:
    data = write_glue_dir(tmp_path, {"valid": [(pieces(1, 2), None, "pos"), (pieces(3, 4, 5), None, "neg")]})
    task, _ = setup_task(data)
    net = collate(task, "valid")["net_input"]
    assert net["src_tokens"].tolist() == [[CLS, 5, 6, SEP, PAD], [CLS, 7, 8, 9, SEP]]
    assert net["segment_labels"].tolist() == [[0] * 5, [0] * 5]


def berts_truncate_seq_pair(len_a: int, len_b: int, budget: int) -> tuple[int, int]:
    """Google BERT's ``_truncate_seq_pair`` on lengths: pop from the longer, from B when equal."""
    while len_a + len_b > budget:
        if len_a > len_b:
            len_a -= 1
        else:
            len_b -= 1
    return len_a, len_b


def test_pair_truncation_is_berts_rule() -> None:
    grid = [(a, b, budget) for a in range(12) for b in range(12) for budget in range(0, 26)]
    a, b, budgets = (np.array(column) for column in zip(*grid, strict=True))
    for budget in range(26):
        rows = budgets == budget
        got_a, got_b = truncated_pair_lengths(a[rows], b[rows], budget)
        want = [berts_truncate_seq_pair(x, y, budget) for x, y in zip(a[rows], b[rows], strict=True)]
        assert list(zip(got_a.tolist(), got_b.tolist(), strict=True)) == want, budget


def test_long_examples_are_truncated_keeping_each_sep_and_never_dropped(tmp_path: Path) -> None:
    examples: list[Example] = [
        (pieces(*range(10)), pieces(20, 21), "pos"),  # A loses 5: <s> a0..a4 </s> b20 b21 </s>
        (pieces(1, 2), pieces(*range(10, 22)), "neg"),  # B loses 7
        (pieces(*range(6)), pieces(*range(10, 16)), "pos"),  # both lose some (below)
        (pieces(1), pieces(2), "neg"),  # untouched
    ]
    data = write_glue_dir(tmp_path, {"valid": examples})
    task, _ = setup_task(data, "--tokens-per-sample", "10")
    task.load_dataset("valid")
    dataset = task.dataset("valid")
    rows = [dataset[i] for i in range(len(dataset))]
    tokens = [row["net_input.src_tokens"].tolist() for row in rows]
    segments = [row["net_input.segment_labels"].tolist() for row in rows]
    assert tokens[0] == [CLS, 4, 5, 6, 7, 8, SEP, 24, 25, SEP]
    assert tokens[1] == [CLS, 5, 6, SEP, 14, 15, 16, 17, 18, SEP]
    # 6 + 6 content tokens into 7: evened out, then B and A in turn -> A keeps 4, B keeps 3
    assert tokens[2] == [CLS, 4, 5, 6, 7, SEP, 14, 15, 16, SEP]
    assert tokens[3] == [CLS, 5, SEP, 6, SEP]
    assert segments[0] == [0] * 7 + [1] * 3 and segments[2] == [0] * 6 + [1] * 4
    # fairseq's batching sees the truncated sizes: every example in a batch, none filtered
    itr = task.get_batch_iterator(
        dataset, max_sentences=3, max_positions=task.max_positions(), ignore_invalid_inputs=False
    ).next_epoch_itr(shuffle=False)
    seen = sorted(i for batch in itr for i in batch["id"].tolist())
    assert seen == [0, 1, 2, 3] and [dataset.num_tokens(i) for i in range(4)] == [10, 10, 10, 5]


def test_single_sentences_are_truncated_keeping_their_sep(tmp_path: Path) -> None:
    data = write_glue_dir(tmp_path, {"valid": [(pieces(*range(9)), None, "pos")]})
    task, _ = setup_task(data, "--tokens-per-sample", "5")
    assert collate(task, "valid")["net_input"]["src_tokens"].tolist() == [[CLS, 4, 5, 6, SEP]]


def test_splits_without_labels_and_regression_targets(tmp_path: Path) -> None:
    data = write_glue_dir(
        tmp_path,
        {
            "train": [(pieces(1), pieces(2), "0.5"), (pieces(3), pieces(4), "-1.25")],
            "test": [(pieces(5), pieces(6), None)],
        },
        regression=True,
    )
    task, _ = setup_task(data, "--regression-target", "--num-classes", "1")
    assert collate(task, "train")["target"].tolist() == [[0.5], [-1.25]]
    assert "target" not in collate(task, "test")


def test_the_dictionary_must_have_the_checkpoints_vocabulary(tmp_path: Path) -> None:
    data = write_glue_dir(tmp_path / "glue", {"valid": [(pieces(1), pieces(2), "pos")]}, vocab=VOCAB)
    pre_dict = tmp_path / "pretraining"
    pre_dict.mkdir()
    write_bert_dictionary(pre_dict / "dict.txt", VOCAB + 8)
    pretrained, _ = build_bert_model(pre_dict, "macaron_bert_tiny")
    checkpoint = tmp_path / "model.pt"
    torch.save({"cfg": {"model": pretrained.init_args}, "model": pretrained.state_dict()}, checkpoint)
    dict_file = str(data / "input0" / "dict.txt")

    # --restore-file: fairseq loads the state dict into the task's model
    task, cfg = setup_task(data)
    model = task.build_model(cfg.model)
    with pytest.raises(VocabularyMismatchError) as restore:
        model.load_state_dict(pretrained.state_dict(), strict=True, model_cfg=cfg.model)
    # --pretrained-encoder: refused while the model is built
    task, cfg = setup_task(data, "--pretrained-encoder", str(checkpoint), "--new-encoder-layers", "1")
    with pytest.raises(VocabularyMismatchError) as encoder:
        task.build_model(cfg.model)
    for error in (restore, encoder):
        assert f"{VOCAB + 8} symbols" in str(error.value) and f"gives {VOCAB}" in str(error.value)
        assert dict_file in str(error.value) and "--srcdict" in str(error.value)
    assert str(checkpoint) in str(encoder.value)


@pytest.mark.parametrize(
    "flags", [("--init-token", "0"), ("--separator-token", "2"), ("--shorten-method", "truncate")]
)
def test_robertas_layout_flags_are_refused(tmp_path: Path, flags: tuple[str, str]) -> None:
    data = write_glue_dir(tmp_path, {"valid": [(pieces(1), pieces(2), "pos")]})
    with pytest.raises(BertInputError, match=flags[0]):
        setup_task(data, *flags)


def test_fewer_classes_than_labels_are_refused(tmp_path: Path) -> None:
    data = write_glue_dir(tmp_path, {"valid": [(pieces(1), None, "a")]}, labels=("a", "b", "c"))
    with pytest.raises(BertInputError, match=r"--num-classes 2, but .* 3 labels"):
        setup_task(data)
    setup_task(data, "--num-classes", "3")


def test_examples_longer_than_the_models_positions_are_refused(tmp_path: Path) -> None:
    data = write_glue_dir(tmp_path, {"valid": [(pieces(1), None, "pos")]})
    task, cfg = setup_task(data, "--tokens-per-sample", "600")
    with pytest.raises(BertInputError, match="--tokens-per-sample 600 is longer than the model's 512"):
        task.build_model(cfg.model)


def test_a_malicious_pretrained_encoder_is_refused_before_it_runs(tmp_path: Path) -> None:
    """``--pretrained-encoder`` of the task goes through the allow-listed checkpoint reader."""
    from helpers import write_malicious_checkpoint

    from macaron_fairseq.checkpoint_reader import UnsafeCheckpointError

    data = write_glue_dir(tmp_path / "glue", {"valid": [(pieces(1), pieces(2), "pos")]})
    marker = tmp_path / "MARKER"
    evil = write_malicious_checkpoint(tmp_path / "evil.pt", marker)
    task, cfg = setup_task(data, "--pretrained-encoder", str(evil), "--new-encoder-layers", "1")
    with pytest.raises(UnsafeCheckpointError) as error:
        task.build_model(cfg.model)
    assert str(error.value).startswith(f"refusing to load checkpoint --pretrained-encoder {evil}: it pickles")
    assert "posix.system" in str(error.value) and "\n" not in str(error.value)
    assert not marker.exists()
