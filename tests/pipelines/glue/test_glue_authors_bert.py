"""GLUE on the Macaron authors' BERT: their checkpoint (exact on-disk layout, random weights, their fastBPE
codes and dictionary) upgraded by ``macaron-upgrade`` is fine-tuned by ``CHECKPOINT=model.pt bash
pipelines/glue.sh`` with their text processing (``macaron_preprocess.text.authors_bpe_encode``)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from glue_layout import write_glue_dir
from helpers import REPO

from macaron_preprocess.text import authors_bpe_encode as enc

sys.path.insert(0, str(REPO / "tests" / "macaron_fairseq" / "upgrade"))
from authors_layout import authors_bert_args, write_authors_bert_checkpoint


def test_the_upgrade_writes_what_preprocessing_reads() -> None:
    from macaron_fairseq.upgrade import bert

    assert (bert.RECORD, bert.BPE_CODES) == (enc.RECORD, enc.BPE_CODES)


def test_their_cleanup_rules_as_written() -> None:
    assert enc.pre_cleanup("a\tb   c.....  <<x>> ,, y ,. *bold") == "a b c... «x» , y . bold"
    # their two bracket rules are groups: only the literal sequences change, not each character
    assert enc.pre_cleanup("a ) b ( c") == "a ) b ( c"
    assert enc.pre_cleanup("x ,:.)]» y") == "x,:.)]» y"


def test_their_fastbpe_codes_apply_with_fastbpes_word_final_rule(tmp_path: Path) -> None:
    """fastBPE's ``a b count`` codes: given to subword-nmt as version 0.2 (``e</w>`` merges apply), which
    subword-nmt reading the file as it is would refuse (three columns)."""
    from subword_nmt.apply_bpe import BPE

    codes = tmp_path / "bpe-code"
    codes.write_text("t h 9\nth e</w> 7\nc a 3\n", encoding="utf-8")
    enc._init_encoder(str(codes))
    assert enc.encode_chunk(["The CAT\\sat."]) == ["the ca@@ t s@@ a@@ t ."]  # "\\" became a space
    with pytest.raises(SystemExit):
        BPE(io.StringIO(codes.read_text()))  # what their process_glue.sh line would have done
    # two columns without a header: subword-nmt's version 0.1 rule, under which "e</w>" never merges
    assert BPE(io.StringIO("t h\nth e</w>\n")).process_line("the") == "th@@ e"


def their_codes_and_dictionary(glue_dir: Path, out: Path) -> int:
    """fastBPE-format codes learned on the tokenized GLUE text, and their dict.txt of the pieces; returns
    their vocabulary size (6 specials + entries)."""
    from subword_nmt.learn_bpe import learn_bpe

    sentences = [
        f
        for p in sorted(glue_dir.rglob("*.tsv"))
        for line in p.read_text("utf-8-sig").splitlines()
        for f in line.split("\t")
    ]
    codes = io.StringIO()
    enc._init_encoder.__globals__["_state"].clear()
    from macaron_preprocess.text.moses import CompiledPunctNormalizer, MosesTokenizerWithCharsets

    enc._state.update(
        normalizer=CompiledPunctNormalizer("en"), tokenizer=MosesTokenizerWithCharsets(lang="en")
    )
    tokenized = [enc.tokenize(s) for s in sentences]
    learn_bpe(io.StringIO("\n".join(tokenized)), codes, 200, min_frequency=2)
    merges = [line for line in codes.getvalue().splitlines() if not line.startswith("#")]
    (out / "bpe-code").write_text("".join(f"{m} {100 - i % 50}\n" for i, m in enumerate(merges)))
    enc._init_encoder(str(out / "bpe-code"))
    counts = Counter(piece for s in sentences for piece in enc.encode_chunk([s])[0].split())
    (out / "dict.txt").write_text("".join(f"{w} {c}\n" for w, c in counts.most_common()))
    return 6 + len(counts)


@pytest.mark.slow
def test_glue_sh_fine_tunes_an_upgraded_authors_bert(tmp_path: Path) -> None:
    glue_dir = write_glue_dir(tmp_path / "glue")
    theirs = tmp_path / "bert_corpus"
    theirs.mkdir()
    vocab = their_codes_and_dictionary(glue_dir, theirs)
    source = tmp_path / "checkpoint_pretrained.pt"
    write_authors_bert_checkpoint(source, authors_bert_args(layers=2, dim=16, heads=2, ffn=8), vocab)
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    up = subprocess.run(
        [
            sys.executable,
            "-m",
            "macaron_fairseq.upgrade",
            str(source),
            "--data",
            str(theirs),
            "--out",
            str(tmp_path / "up" / "model.pt"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert up.returncode == 0, up.stderr[-3000:]
    assert (tmp_path / "up" / "bpe-code").read_bytes() == (theirs / "bpe-code").read_bytes()
    work = tmp_path / "work"
    env |= dict(
        CHECKPOINT=str(tmp_path / "up" / "model.pt"),
        GLUE_DIR=str(glue_dir),
        WORKDIR=str(work),
        TASKS="RTE STS-B",
        SKIP_INSTALL="1",
        CPU_PROCESSES="2",
        GRID_PRESET="macaron-best",
    )
    proc = subprocess.run(
        ["bash", "pipelines/glue.sh"], cwd=REPO, env=env, capture_output=True, text=True, timeout=1800
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads((work / "glue" / "results.json").read_text())
    assert sorted(results["tasks"]) == ["RTE", "STS-B"] and results["failed_runs"] == []
    # the data are their BPE pieces of their tokenisation, in the plugin's ids
    from fairseq.data import Dictionary, data_utils

    dictionary = Dictionary.load(str(work / "glue" / "data" / "RTE" / "input0" / "dict.txt"))
    dictionary.add_symbol("<mask>")
    valid = data_utils.load_indexed_dataset(
        str(work / "glue" / "data" / "RTE" / "input0" / "valid"), dictionary
    )
    first = (glue_dir / "RTE" / "dev.tsv").read_text().splitlines()[1].split("\t")[1]
    enc._init_encoder(str(theirs / "bpe-code"))
    expected = dictionary.encode_line(enc.encode_chunk([first])[0], add_if_not_exist=False).tolist()
    assert valid[0].tolist() == expected
    # their recipe, flag for flag where fairseq 0.12 has the flag (pipelines/glue/authors_best.py)
    (log,) = (work / "glue" / "runs").glob("*/RTE/*/run.log")
    command = next(line for line in log.read_text().splitlines() if line.startswith("$ "))
    assert "--arch transformer_bert_base_macaron" in command and "--clip-norm 0.0" in command
    assert "--batch-size 16" in command and "--lr 5e-05" in command and "--seed 200" in command
