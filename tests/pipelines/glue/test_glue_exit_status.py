"""Issue #41 item 5: ``bash pipelines/glue.sh`` says whose fault a failure is. A trainer that crashes — a real
fairseq ``IndexError`` with ``-- --max-tokens 2``, nothing replaced — made the pipeline exit 2, the
user's-mistake status, because every trainer exit status became a ``UserError``; it exits 1 now, in one
error line naming the failed run. ``--workdir FILE`` (an existing file) is one line, exit 2."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import sentencepiece as spm
from helpers import REPO, save_bert_checkpoint

from macaron_preprocess.sources.glue import read_split
from macaron_synthetic.glue import write_synthetic_glue

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a generated GLUE with RTE, a tiny BERT checkpoint with its sentencepiece data directory)."""
    root = tmp_path_factory.mktemp("glue_exit")
    glue = write_synthetic_glue(root / "GLUE", ("RTE", "WNLI"), scale=0.02)
    text = root / "text.txt"
    examples = read_split(glue, "RTE", "train").examples
    text.write_text("".join(f"{e.sentence1}\n{e.sentence2}\n" for e in examples))
    spm_bin = root / "spm-bin"
    spm_bin.mkdir()
    spm.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(spm_bin / "sentencepiece.bpe"),
        vocab_size=60,
        model_type="bpe",
        minloglevel=2,
    )
    pieces = [line.split("\t")[0] for line in (spm_bin / "sentencepiece.bpe.vocab").read_text().splitlines()]
    (spm_bin / "dict.txt").write_text("".join(f"{p} 1\n" for p in pieces[3:]))
    return glue, save_bert_checkpoint(root / "bert.pt", spm_bin)


def glue_sh(work: Path, glue: Path, checkpoint: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        GLUE_DIR=str(glue),
        CHECKPOINT=str(checkpoint),
        WORKDIR=str(work),
        SKIP_INSTALL="1",
        TASKS="RTE",
        SEEDS="100",
        BATCH_SIZES="8",
        LRS="1e-3",
        EPOCHS="1",
        CPU_PROCESSES="1",
        OMP_NUM_THREADS="1",
        PYTHONWARNINGS="ignore",
    )
    return subprocess.run(
        ["bash", str(REPO / "pipelines" / "glue.sh"), *extra],
        cwd=work.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ": error: " in line]


def test_a_crashing_trainer_is_not_the_users_mistake(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    glue, checkpoint = inputs
    proc = glue_sh(tmp_path / "work", glue, checkpoint, "--", "--max-tokens", "2")
    assert proc.returncode == 1, proc.stderr[-4000:]
    (line,) = error_lines(proc.stderr)
    assert "1 of 1 runs failed twice: RTE/" in line, line
    logs = list((tmp_path / "work").rglob("run.log"))
    assert logs and "IndexError" in logs[0].read_text(), "the trainer did not crash the expected way"


def test_an_existing_file_as_workdir_is_one_line(inputs: tuple[Path, Path], tmp_path: Path) -> None:
    glue, checkpoint = inputs
    work = tmp_path / "work"
    work.write_text("a file\n")
    proc = glue_sh(work, glue, checkpoint)
    assert proc.returncode == 2, proc.stderr[-4000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "error: " in lines[0] and str(work) in lines[0], lines
    assert work.read_text() == "a file\n"
