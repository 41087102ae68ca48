"""``python -m macaron_preprocess.glue`` on a generated GLUE distribution in the real layout: the
``sentence_prediction`` layout, sentences processed as the pre-training text was, labels in the task's
order, STS-B scaled, AX inside MNLI, indices and gold labels in file order; resumable; the dictionary checked
against the checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest
import sentencepiece as spm
import torch
from helpers import run_module, save_bert_checkpoint

from macaron_fairseq.models.bert_build import write_bert_dictionary
from macaron_preprocess import glue as preprocess_glue
from macaron_preprocess.sources.glue import TASKS, read_split
from macaron_preprocess.text.documents import MOSES
from macaron_preprocess.text.moses import MosesPipeline
from macaron_synthetic.glue import write_synthetic_glue

TASK_LIST = ("CoLA", "STS-B", "MNLI", "RTE")


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("glue_pre")
    glue_dir = write_synthetic_glue(root / "GLUE", [*TASK_LIST, "WNLI"], scale=0.25)
    moses = MosesPipeline(MOSES)
    text = root / "text.txt"
    sentences = [e.sentence1 for e in read_split(glue_dir, "MNLI", "train").examples]
    text.write_text("".join(moses(s) + "\n" for s in sentences))
    data_bin = root / "data-bin"
    data_bin.mkdir()
    spm.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(data_bin / "sentencepiece.bpe"),
        vocab_size=120,
        model_type="bpe",
        minloglevel=2,
    )
    pieces = [line.split("\t")[0] for line in (data_bin / "sentencepiece.bpe.vocab").read_text().splitlines()]
    (data_bin / "dict.txt").write_text("".join(f"{p} 1\n" for p in pieces[3:]))  # without <unk> <s> </s>
    checkpoint = save_bert_checkpoint(root / "model.pt", data_bin)  # its embeddings fit the dictionary
    dest = root / "glue-bin"
    preprocess_glue.main(
        [
            "--glue-dir",
            str(glue_dir),
            "--dest",
            str(dest),
            "--checkpoint",
            str(checkpoint),
            "--tasks",
            ",".join(TASK_LIST),
            "--workers",
            "1",
        ]
    )
    return {"root": root, "glue": glue_dir, "data_bin": data_bin, "checkpoint": checkpoint, "dest": dest}


def items(prefix: Path) -> list[list[int]]:
    from fairseq.data import data_utils

    dataset = data_utils.load_indexed_dataset(str(prefix), None, "mmap")
    return [dataset[i].tolist() for i in range(len(dataset))]


def test_sentences_are_the_corpus_pieces_and_labels_follow_the_task_order(setup: dict[str, Path]) -> None:
    import json

    from fairseq.data import Dictionary

    dest, glue_dir = setup["dest"], setup["glue"]
    meta = json.loads((dest / "RTE" / "meta.json").read_text())
    assert meta["labels"] == ["entailment", "not_entailment"] and meta["num_classes"] == 2
    examples = read_split(glue_dir, "RTE", "train").examples
    assert meta["splits"]["train"]["examples"] == len(examples)
    dictionary = Dictionary.load(str(dest / "RTE" / "input0" / "dict.txt"))
    sp = spm.SentencePieceProcessor(model_file=str(setup["data_bin"] / "sentencepiece.bpe.model"))
    moses = MosesPipeline(MOSES)
    first, second = items(dest / "RTE" / "input0" / "train"), items(dest / "RTE" / "input1" / "train")
    for example, ids0, ids1 in zip(examples, first, second, strict=True):
        assert dictionary.string(ids0[:-1]) == " ".join(sp.encode(moses(example.sentence1), out_type=str))
        assert dictionary.string(ids1[:-1]) == " ".join(sp.encode(moses(example.sentence2), out_type=str))
        assert ids0[-1] == dictionary.eos()
    labels = Dictionary.load(str(dest / "RTE" / "label" / "dict.txt"))
    got = [ids[0] - labels.nspecial for ids in items(dest / "RTE" / "label" / "train")]
    assert got == [TASKS["RTE"].labels.index(e.label) for e in examples]
    assert (dest / "RTE" / "valid.gold").read_text().split() == [
        e.label for e in read_split(glue_dir, "RTE", "dev").examples
    ]
    test = read_split(glue_dir, "RTE", "test").examples
    assert (dest / "RTE" / "test.index").read_text().split() == [e.index for e in test]
    assert not (dest / "RTE" / "label" / "test.bin").exists() and meta["splits"]["test"]["labeled"] is False


def test_single_sentences_regression_and_mnli_with_ax(setup: dict[str, Path]) -> None:
    import json

    dest, glue_dir = setup["dest"], setup["glue"]
    assert not (dest / "CoLA" / "input1").exists()
    cola = read_split(glue_dir, "CoLA", "train").examples
    assert len(items(dest / "CoLA" / "input0" / "train")) == len(cola)
    scores = [float(x) for x in (dest / "STS-B" / "label" / "train.label").read_text().split()]
    gold = [e.label for e in read_split(glue_dir, "STS-B", "train").examples]
    assert scores == pytest.approx([g / 5 for g in gold])  # type: ignore[operator]
    assert json.loads((dest / "STS-B" / "meta.json").read_text())["regression"] is True
    meta = json.loads((dest / "MNLI" / "meta.json").read_text())
    assert set(meta["splits"]) == {"train", "valid", "valid_mismatched", "test", "test_mismatched", "test_ax"}
    assert meta["splits"]["valid_mismatched"]["glue_split"] == "dev_mismatched"
    assert meta["splits"]["test_ax"]["examples"] == len(read_split(glue_dir, "AX", "test").examples)
    assert meta["splits"]["test_ax"]["glue_task"] == "AX"


@pytest.mark.slow  # runs the real command in subprocesses: 5-15 s here (out of --quick)
def test_a_rerun_skips_every_task_and_a_wrong_dictionary_is_refused(setup: dict[str, Path]) -> None:
    args = [
        "--glue-dir",
        str(setup["glue"]),
        "--dest",
        str(setup["dest"]),
        "--checkpoint",
        str(setup["checkpoint"]),
        "--tasks",
        ",".join(TASK_LIST),
        "--workers",
        "1",
    ]
    rerun = run_module("macaron_preprocess.glue", *args)
    assert rerun.stderr.count("up to date, skipped") == len(TASK_LIST)
    other_bin = setup["root"] / "other-bin"
    other_bin.mkdir()
    write_bert_dictionary(other_bin / "dict.txt", 7)
    wrong = save_bert_checkpoint(setup["root"] / "wrong.pt", other_bin)  # 7 embeddings
    state = torch.load(wrong, weights_only=True)
    state["cfg"]["task"]["data"] = str(setup["data_bin"])  # recorded with the corpus's data-bin
    torch.save(state, wrong)
    dest = setup["root"] / "other"
    refused = run_module(
        "macaron_preprocess.glue", *args[:2], "--dest", str(dest), "--checkpoint", str(wrong), check=False
    )
    assert refused.returncode == 2 and "has 7 embeddings" in refused.stderr and "dict.txt" in refused.stderr
    assert not dest.exists()
    translation = setup["root"] / "translation.pt"
    torch.save(
        {
            "model": {"decoder.embed_tokens.weight": torch.zeros(7, 4)},
            "cfg": {"task": {"data": str(setup["data_bin"])}},
        },
        translation,
    )
    foreign = run_module(
        "macaron_preprocess.glue",
        *args[:2],
        "--dest",
        str(dest),
        "--checkpoint",
        str(translation),
        check=False,
    )
    assert foreign.returncode == 2 and "not a BERT checkpoint of this plugin" in foreign.stderr
    missing = run_module(
        "macaron_preprocess.glue",
        "--glue-dir",
        str(setup["root"] / "nowhere"),
        "--dest",
        str(dest),
        "--checkpoint",
        str(setup["checkpoint"]),
        "--tasks",
        "RTE",
        check=False,
    )
    assert missing.returncode == 2 and "nowhere: no such directory" in missing.stderr
    assert "--download" in missing.stderr and not (setup["root"] / "nowhere").exists()  # read, never written


def test_an_existing_file_as_dest_is_one_line(setup: dict[str, Path]) -> None:
    """#41: ``--dest FILE`` was a FileExistsError traceback, exit 1."""
    dest = setup["root"] / "a-file"
    dest.write_text("the user's\n")
    proc = run_module(
        "macaron_preprocess.glue",
        "--glue-dir",
        str(setup["glue"]),
        "--dest",
        str(dest),
        "--checkpoint",
        str(setup["checkpoint"]),
        "--tasks",
        "RTE",
        check=False,
    )
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-3000:]
    assert (
        lines[0].startswith("python -m macaron_preprocess.glue: error: --dest ")
        and "not a directory" in lines[0]
    )
    assert dest.read_text() == "the user's\n"
