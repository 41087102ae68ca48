"""GLUE on any BERT: a HuggingFace BERT imported with ``python -m macaron_fairseq.hf import`` is fine-tuned by
``CHECKPOINT=imported.pt bash pipelines/glue.sh`` with its own WordPiece tokenizer (lowercasing as its
tokenizer config says), not the pre-training corpus's Moses + sentencepiece processing."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import torch
from glue_layout import write_glue_dir
from helpers import REPO

from macaron_fairseq.hf.importer import import_hf
from macaron_preprocess.text.wordpiece_encode import encode_sentences, fairseq_symbols, wordpiece_tokenizer

SENTENCES = ["The Cat sat on the MAT.", "Hello, world: naïve café!", "", "dogs run"]


def glue_text(glue_dir: Path) -> list[str]:
    """Every field of the GLUE files (the tokenizer's training text)."""
    lines = [
        line for path in sorted(glue_dir.rglob("*.tsv")) for line in path.read_text("utf-8-sig").splitlines()
    ]
    return [field for line in lines for field in line.split("\t")]


def save_imported_bert(root: Path, text: list[str], lowercase: bool) -> Path:
    """A tiny random BertForPreTraining with a WordPiece vocabulary trained on ``text``, imported."""
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertForPreTraining, BertTokenizer

    trainer = BertWordPieceTokenizer(lowercase=lowercase)
    trainer.train_from_iterator(text, vocab_size=300, min_frequency=1)
    hf_dir = root / ("uncased" if lowercase else "cased")
    hf_dir.mkdir(parents=True)
    trainer.save_model(str(hf_dir))
    BertTokenizer(str(hf_dir / "vocab.txt"), do_lower_case=lowercase).save_pretrained(str(hf_dir))
    vocab = len((hf_dir / "vocab.txt").read_text(encoding="utf-8").splitlines())
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=vocab,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertForPreTraining(config).save_pretrained(str(hf_dir))
    out = import_hf(hf_dir, root / f"{hf_dir.name}.pt")
    return out


@pytest.fixture(scope="module")
def glue_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_glue_dir(tmp_path_factory.mktemp("glue") / "glue")


@pytest.mark.parametrize("lowercase", [True, False])
def test_sentences_get_the_models_own_wordpiece_ids(tmp_path: Path, glue_dir: Path, lowercase: bool) -> None:
    from fairseq.data import Dictionary
    from transformers import AutoTokenizer

    checkpoint = save_imported_bert(tmp_path, glue_text(glue_dir), lowercase)
    data = checkpoint.with_suffix(".data")
    tokenizer_json = wordpiece_tokenizer(data)
    assert tokenizer_json is not None and wordpiece_tokenizer(tmp_path) is None
    lines = list(encode_sentences(SENTENCES, tokenizer_json, workers=1))
    dictionary = Dictionary.load(str(data / "dict.txt"))
    dictionary.add_symbol("<mask>")
    assert dictionary.symbols == fairseq_symbols(data / "dict.txt")
    order = json.loads((data / "hf_vocabulary.json").read_text())["order"]  # fairseq id → WordPiece id
    theirs = AutoTokenizer.from_pretrained(str(tmp_path / ("uncased" if lowercase else "cased")))
    for sentence, line in zip(SENTENCES, lines, strict=True):
        ids = dictionary.encode_line(line, add_if_not_exist=False, append_eos=False).tolist()
        assert [order[i] for i in ids] == theirs(sentence, add_special_tokens=False)["input_ids"]
    first = lines[0].split()
    assert (first[0] == "the") == lowercase  # "The" lowercased only by the uncased model's tokenizer


@pytest.mark.slow
def test_glue_sh_fine_tunes_an_imported_wordpiece_model(tmp_path: Path, glue_dir: Path) -> None:
    from fairseq.data import Dictionary, data_utils

    checkpoint = save_imported_bert(tmp_path, glue_text(glue_dir), lowercase=True)
    work = tmp_path / "work"
    env = dict(
        os.environ,
        CHECKPOINT=str(checkpoint),
        GLUE_DIR=str(glue_dir),
        WORKDIR=str(work),
        TASKS="SST-2 RTE",
        SEEDS="1",
        BATCH_SIZES="16",
        LRS="1e-3",
        EPOCHS="2",
        SKIP_INSTALL="1",
        CPU_PROCESSES="2",
        PYTHONWARNINGS="ignore",
    )
    proc = subprocess.run(
        ["bash", "pipelines/glue.sh"], cwd=REPO, env=env, capture_output=True, text=True, timeout=1200
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads((work / "glue" / "results.json").read_text())
    assert list(results["tasks"]) == ["SST-2", "RTE"] and results["failed_runs"] == []
    assert "Median seed" in proc.stdout and "optimistic" in proc.stdout
    # the data are the model's WordPiece ids (SST-2's dev sentences through its own tokenizer)
    data = checkpoint.with_suffix(".data")
    dictionary = Dictionary.load(str(work / "glue" / "data" / "SST-2" / "input0" / "dict.txt"))
    dictionary.add_symbol("<mask>")
    valid = data_utils.load_indexed_dataset(
        str(work / "glue" / "data" / "SST-2" / "input0" / "valid"), dictionary
    )
    lines = list(
        encode_sentences(
            ["unflinchingly bleak and desperate ", 'a " wonderful " ride . '],
            wordpiece_tokenizer(data),
            workers=1,
        )
    )
    for i, line in enumerate(lines):
        assert valid[i].tolist() == dictionary.encode_line(line, add_if_not_exist=False).tolist()
    # the fine-tuned model is the checkpoint's: BERT's ε and the imported sizes reach fairseq-train
    (log,) = (work / "glue" / "runs").glob("*/RTE/*-seed100/run.log")
    command = next(line for line in log.read_text().splitlines() if line.startswith("$ "))
    assert "--layernorm-eps 1e-12" in command and "--encoder-embed-dim 32" in command
    assert "--no-decay-bias-and-norm" in command
