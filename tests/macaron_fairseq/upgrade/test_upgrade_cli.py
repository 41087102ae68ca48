"""``macaron-upgrade`` as users run it: its refusals (one line, exit 2, nothing written, nothing run — with
``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` set, which turns torch's own guard off), and the upgraded checkpoint
through every entry point that loads translation models: ``fairseq-generate``, ``fairseq-interactive``,
the hub interface and ``fairseq-train --finetune-from-model``, on data binarized in the format of the
authors' released data-bins (fairseq 0.6's indexed dataset, ``--dataset-impl lazy``)."""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from authors_layout import authors_args, write_authors_checkpoint
from helpers import (
    REPO,
    TINY_TASK,
    RunsCode,
    fairseq_preprocess_here,
    run_cli,
    save_model_checkpoint,
    upgrade_here,
)

VOCAB = 40
UNSAFE_ENV = {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}

#: the command as typed: the console script (in this process), ``python -m`` (in a process of its own)
PROGS = ("macaron-upgrade: error: ", "python -m macaron_fairseq.upgrade: error: ")


def upgrade(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The real command, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "macaron_fairseq.upgrade", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=str(REPO), PYTHONWARNINGS="ignore", **(env or {})),
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assert_one_line_refusal(proc: subprocess.CompletedProcess, *words: str) -> None:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith(PROGS), lines
    for word in words:
        assert word in lines[0], (word, lines[0])


# ------------------------------------------------------------------------------------------ refusals
@pytest.mark.slow  # runs the real command in a fresh interpreter: 4-10 s (out of --quick)
def test_a_pickled_payload_is_refused_and_never_runs(tmp_path: Path) -> None:
    args = authors_args()
    args.encoder_embed_path = RunsCode(tmp_path / "PWNED")  # a payload inside their args
    source = tmp_path / "authors.pt"
    write_authors_checkpoint(source, args, VOCAB)
    before = digest(source)
    proc = upgrade(str(source), "--out", str(tmp_path / "model.pt"), cwd=tmp_path, env=UNSAFE_ENV)
    assert_one_line_refusal(proc, str(source), "posix.system", "allow-list")
    assert not (tmp_path / "PWNED").exists()
    assert not (tmp_path / "model.pt").exists() and sorted(p.name for p in tmp_path.iterdir()) == [
        "authors.pt"
    ]
    assert digest(source) == before


def test_a_plugin_checkpoint_is_refused_as_nothing_to_upgrade(
    tmp_path: Path, dict_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ckpt = save_model_checkpoint(tmp_path / "plugin.pt", dict_dir, "macaron_small", ["--encoder-layers", "1"])
    proc = upgrade_here(str(ckpt), "--out", str(tmp_path / "model.pt"), cwd=tmp_path, capsys=capsys)
    assert_one_line_refusal(proc, "fairseq 0.10 or later", "nothing to upgrade")
    assert not (tmp_path / "model.pt").exists()


def test_another_fairseq_06_model_is_refused_naming_its_arch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lstm = argparse.Namespace(
        arch="lstm_wiseman_iwslt_de_en", task="translation", source_lang="de", target_lang="en"
    )
    torch.save(
        {"args": lstm, "model": {"encoder.embed_tokens.weight": torch.zeros(8, 4)}}, tmp_path / "lstm.pt"
    )
    lm = authors_args()
    lm.task = "language_modeling"
    torch.save({"args": lm, "model": {}}, tmp_path / "lm.pt")
    proc = upgrade_here(
        str(tmp_path / "lstm.pt"), "--out", str(tmp_path / "a.pt"), cwd=tmp_path, capsys=capsys
    )
    assert_one_line_refusal(proc, "lstm_wiseman_iwslt_de_en", "not a Transformer/Macaron")
    proc = upgrade_here(str(tmp_path / "lm.pt"), "--out", str(tmp_path / "b.pt"), cwd=tmp_path, capsys=capsys)
    assert_one_line_refusal(proc, "task 'language_modeling'", "only translation models")


def test_bad_paths_are_refused_before_anything_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "authors.pt"
    write_authors_checkpoint(source, authors_args(), VOCAB)
    before = digest(source)
    (tmp_path / "dir").mkdir()
    assert_one_line_refusal(
        upgrade_here(str(source), "--out", str(tmp_path / "dir"), cwd=tmp_path, capsys=capsys),
        "is a directory",
    )
    assert_one_line_refusal(
        upgrade_here(str(source), "--out", str(source), cwd=tmp_path, capsys=capsys),
        f"--out {source} the same path as CHECKPOINT {source}",
    )
    (tmp_path / "empty.pt").write_bytes(b"")
    assert_one_line_refusal(
        upgrade_here(str(tmp_path / "empty.pt"), "--out", "x.pt", cwd=tmp_path, capsys=capsys), "empty.pt"
    )
    (tmp_path / "cut.pt").write_bytes(source.read_bytes()[:5000])
    assert_one_line_refusal(
        upgrade_here(str(tmp_path / "cut.pt"), "--out", "x.pt", cwd=tmp_path, capsys=capsys), "cut.pt"
    )
    assert_one_line_refusal(
        upgrade_here(str(tmp_path / "dir"), "--out", "x.pt", cwd=tmp_path, capsys=capsys), "is a directory"
    )
    assert digest(source) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["authors.pt", "cut.pt", "dir", "empty.pt"]


def test_a_data_dir_with_other_dictionaries_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "authors.pt"
    write_authors_checkpoint(source, authors_args(), VOCAB)
    data = tmp_path / "data"
    data.mkdir()
    for lang in ("de", "en"):
        (data / f"dict.{lang}.txt").write_text("".join(f"w{i} 1\n" for i in range(VOCAB - 5)))
    proc = upgrade_here(
        str(source), "--out", str(tmp_path / "model.pt"), "--data", str(data), cwd=tmp_path, capsys=capsys
    )
    assert_one_line_refusal(proc, "dict.de.txt has 39 entries", "40 rows")
    assert not (tmp_path / "model.pt").exists()


@pytest.mark.parametrize("name", ["old.pt", "new.pt", "notes.txt"])
def test_nothing_is_written_into_the_data_bin_whatever_the_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """``--data D --out D/old.pt`` replaced ``D/old.pt`` (only non-``.pt`` names were refused)."""
    source = tmp_path / "authors.pt"
    write_authors_checkpoint(source, authors_args(), VOCAB)
    data = tmp_path / "data"
    data.mkdir()
    for lang in ("de", "en"):
        (data / f"dict.{lang}.txt").write_text("".join(f"w{i} 1\n" for i in range(VOCAB - 4)))
    (data / "old.pt").write_bytes(b"the user's other model")
    before = {p.name: digest(p) for p in data.iterdir()}
    out = data / name
    proc = upgrade_here(str(source), "--out", str(out), "--data", str(data), cwd=tmp_path, capsys=capsys)
    assert_one_line_refusal(proc, f"--out {out}", f"--data {data}", "an input")
    assert {p.name: digest(p) for p in data.iterdir()} == before


@pytest.mark.slow  # runs the real command in a fresh interpreter: 4-10 s (out of --quick)
def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    """A real full file system (a small tmpfs): torch.save's own RuntimeError used to be a traceback, exit 1,
    and the directory the upgrade created was left behind."""
    from full_disk import TRAINING_LOG, fill, leftovers, other_stderr_lines, small_filesystem

    source = tmp_path / "authors.pt"
    write_authors_checkpoint(source, authors_args(), VOCAB)
    with small_filesystem(tmp_path / "disk", "1m") as disk:
        fill(disk, 8192)
        before = set(leftovers(disk))
        out = disk / "new" / "model.pt"
        proc = upgrade(str(source), "--out", str(out), cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr[-3000:]
        (line,) = [line for line in proc.stderr.splitlines() if line.startswith(PROGS[1])]
        assert f"cannot write {out}: No space left on device (ENOSPC)" in line
        prog = PROGS[1].removesuffix(": error: ")
        assert other_stderr_lines(proc.stderr, prog, TRAINING_LOG) == [], proc.stderr
        assert leftovers(disk, before) == []  # no temporary file, no empty directory


# ------------------------------------------------------------------------------ the upgraded model, used
@pytest.fixture(scope="module")
def authors_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny corpus binarized as fairseq 0.6 did (its indexed-dataset format), by fairseq's own preprocess
    in this process."""
    root = tmp_path_factory.mktemp("authors_data")
    TINY_TASK.write(root)
    dest = root / "data-bin"
    splits = [
        "--trainpref",
        str(root / "train"),
        "--validpref",
        str(root / "valid"),
        "--testpref",
        str(root / "test"),
    ]
    fairseq_preprocess_here(
        [
            "--source-lang",
            "src",
            "--target-lang",
            "tgt",
            *splits,
            "--destdir",
            str(dest),
            "--joined-dictionary",
            "--dataset-impl",
            "lazy",
            "--workers",
            "1",
        ]
    )
    assert (dest / "test.src-tgt.src.idx").read_bytes()[:8] == b"TNTIDX\x00\x00"  # the 0.6 format
    return dest


@pytest.fixture(scope="module")
def upgraded(authors_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from fairseq.data import Dictionary

    tmp = tmp_path_factory.mktemp("upgraded")
    vocab = len(Dictionary.load(str(authors_data / "dict.src.txt")))
    args = authors_args(source_lang="src", target_lang="tgt", dim=32, heads=4, ffn=24)
    write_authors_checkpoint(tmp / "checkpoint_pretrained.pt", args, vocab)
    proc = upgrade(
        str(tmp / "checkpoint_pretrained.pt"),
        "--out",
        str(tmp / "model.pt"),
        "--data",
        str(authors_data),
        cwd=tmp,
        env=UNSAFE_ENV,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "transformer_iwslt_de_en_macaron_v2: Macaron, pre-LN, 2+2 layers, d 32" in proc.stdout, proc.stdout
    return tmp / "model.pt"


@pytest.mark.slow
def test_fairseq_generate_with_the_authors_test_flags(
    upgraded: Path, authors_data: Path, tmp_path: Path
) -> None:
    test_flags = [
        "--batch-size",
        "128",
        "--beam",
        "5",
        "--lenpen",
        "1.0",
        "--remove-bpe",
        "--source-lang",
        "src",
        "--target-lang",
        "tgt",
    ]  # fmt: skip  (their test-iwslt14.sh)
    proc = run_cli(
        [
            "fairseq-generate",
            str(authors_data),
            "--user-dir",
            str(REPO / "macaron_fairseq"),
            "--path",
            str(upgraded),
            *test_flags,
        ],
        cwd=tmp_path,
    )
    hyps = [line for line in proc.stdout.splitlines() if line.startswith("H-")]
    assert len(hyps) == TINY_TASK.sizes["test"]
    assert re.search(r"Generate test with beam=5: BLEU4 = [\d.]+", proc.stdout), proc.stdout[-1000:]


@pytest.mark.slow
def test_fairseq_interactive_and_the_hub_load_it(upgraded: Path, authors_data: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            "fairseq-interactive",
            str(authors_data),
            "--user-dir",
            str(REPO / "macaron_fairseq"),
            "--path",
            str(upgraded),
            "--beam",
            "4",
            "--lenpen",
            "0.6",
            "-s",
            "src",
            "-t",
            "tgt",
        ],
        input="w1 w2 w3\nw4 w5\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    interactive = [line.split("\t")[2] for line in proc.stdout.splitlines() if line.startswith("H-")]
    assert len(interactive) == 2
    script = (
        "from macaron_fairseq.models import MacaronModel\n"
        f"hub = MacaronModel.from_pretrained({str(upgraded.parent)!r}, checkpoint_file='model.pt', "
        f"data_name_or_path={str(authors_data)!r})\n"
        "print('OUT', hub.translate('w1 w2 w3', beam=4, lenpen=0.6))\n"
    )
    hub = run_cli([sys.executable, "-c", script], cwd=tmp_path)
    assert re.search(r"^OUT (.*)$", hub.stdout, re.M).group(1) == interactive[0]


@pytest.mark.slow
def test_finetune_from_the_upgraded_model_with_the_authors_arch(
    upgraded: Path, authors_data: Path, tmp_path: Path
) -> None:
    proc = run_cli(
        [
            "fairseq-train",
            str(authors_data),
            "--user-dir",
            str(REPO / "macaron_fairseq"),
            "--arch",
            "transformer_iwslt_de_en_macaron_v2",
            "--share-all-embeddings",
            "-s",
            "src",
            "-t",
            "tgt",
            "--encoder-embed-dim",
            "32",
            "--decoder-embed-dim",
            "32",
            "--encoder-ffn-embed-dim",
            "24",
            "--decoder-ffn-embed-dim",
            "24",
            "--encoder-attention-heads",
            "4",
            "--decoder-attention-heads",
            "4",
            "--encoder-layers",
            "2",
            "--decoder-layers",
            "2",
            "--finetune-from-model",
            str(upgraded),
            "--optimizer",
            "adam",
            "--lr",
            "1e-4",
            "--max-tokens",
            "500",
            "--max-update",
            "2",
            "--save-dir",
            str(tmp_path / "ft"),
            "--cpu",
            "--num-workers",
            "0",
            "--criterion",
            "label_smoothed_cross_entropy",
            "--label-smoothing",
            "0.1",
        ],
        cwd=tmp_path,
    )
    log = proc.stdout + proc.stderr
    assert f"loading pretrained model from {upgraded}" in log, log[-2000:]
    assert (tmp_path / "ft" / "checkpoint_last.pt").is_file()
