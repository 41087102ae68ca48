"""Resumability: Ctrl-C and kill -9 in the middle of a run, rerun, and the outputs are identical to those of
an uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sentencepiece as spm
from helpers import REPO, run_module

from macaron_synthetic.toy_bitext import sentence_pairs, write_bitext

pytestmark = pytest.mark.slow  # real fairseq-train / preprocessing runs: seconds to minutes


def custom_args(raw: Path, out: Path) -> list[str]:
    return [
        "--src",
        "en",
        "--tgt",
        "de",
        "--trainpref",
        str(raw / "train"),
        "--validpref",
        str(raw / "valid"),
        "--dest",
        str(out),
        "--bpe-vocab-size",
        "300",
    ]


def _default_sigint() -> None:
    # A shell starts background jobs with SIGINT ignored and Python keeps an inherited SIG_IGN, so under
    # `.ci/run &` the Ctrl-C below would be ignored; give the child the disposition of a terminal process.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(args: list[str], workers: int) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen(
        [sys.executable, "-m", "macaron_preprocess.custom", *args, "--workers", str(workers)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_default_sigint,
    )


def wait_for(predicate, process: subprocess.Popen, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if process.poll() is not None:
            pytest.fail(f"process ended before {what}: {process.communicate()}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"timeout waiting for {what}")
        time.sleep(0.01)


def temporaries(directory: Path) -> list[Path]:
    return sorted(directory.rglob(".*.tmp-*"))


def snapshot(out: Path) -> dict[str, object]:
    """Every output file. The fairseq log names the temporary directory it wrote into and spm.model records
    its training paths, so for those two the content that matters is compared: nothing, resp. the pieces."""
    files: dict[str, object] = {
        str(p.relative_to(out)): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and ".stages" not in p.parts and p.name not in ("preprocess.log", "spm.model")
    }
    model = spm.SentencePieceProcessor(model_file=str(out / "spm.model"))
    files["spm.model"] = [(model.id_to_piece(i), model.get_score(i)) for i in range(model.get_piece_size())]
    return files


def test_interrupted_and_killed_runs_resume_to_identical_outputs(tmp_path: Path) -> None:
    raw = tmp_path / "RAW"
    write_bitext(raw / "train", sentence_pairs(20000, seed=4))  # long enough to be interrupted mid-stage
    write_bitext(raw / "valid", sentence_pairs(200, seed=5))
    reference = tmp_path / "reference"
    run_module("macaron_preprocess.custom", *custom_args(raw, reference), "--workers", "2")
    expected = snapshot(reference)

    out = tmp_path / "out"
    # 1. Ctrl-C while the training text is being tokenized
    process = start(custom_args(raw, out), workers=1)
    wait_for(lambda: any((out / "tok").glob(".train.en.tmp-*")), process, "tokenization to start")
    time.sleep(0.1)
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "interrupted: completed stages are kept" in stderr and "Traceback" not in stderr
    assert not (out / "tok" / "train.en").exists() and not (out / "raw" / "train.en").exists()
    assert temporaries(out) == []
    assert not (out / ".stages" / "tokenize-train.json").exists()

    # 2. kill -9 of the whole process group while BPE is being applied (tokenization is complete)
    process = start(custom_args(raw, out), workers=2)
    wait_for(lambda: any((out / "bpe").glob(".train.*.tmp-*")), process, "BPE encoding to start")
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert (out / ".stages" / "learn-bpe.json").exists()
    assert not (out / ".stages" / "bpe-train.json").exists()
    assert temporaries(out), "kill -9 leaves temporary files behind, which the rerun must not trust"

    # 3. rerun: finished stages are skipped, the rest is redone, the result equals the uninterrupted run
    resumed = run_module("macaron_preprocess.custom", *custom_args(raw, out), "--workers", "2")
    assert "[tokenize-train] up to date, skipped" in resumed.stderr
    assert "[learn-bpe] up to date, skipped" in resumed.stderr
    assert "[bpe-train] running" in resumed.stderr
    assert temporaries(out) == []
    assert snapshot(out) == expected
