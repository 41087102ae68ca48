"""``macaron-upgrade`` prints each model's own test command, as the Macaron authors' test scripts ran it
(zhuohan123/macaron-net, ``translation/macaron-scripts/test/``): ``test-iwslt14.sh`` — ``generate.py``,
``--batch-size 128 --beam 5 --lenpen 1.0 --remove-bpe``, its BLEU4 line (``tail -n 1``);
``test-wmt14-base.sh`` / ``-big.sh`` — ``interactive.py``, ``--batch-size 128 --beam 4 --lenpen 0.6
--remove-bpe --buffer-size 12800`` on ``raw-test/en-de.en.bpe``, detokenize → tokenize → ``##AT##`` split,
``multi-bleu.perl`` against ``raw-test/en-de.de.tok.atat``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from authors_layout import authors_args, write_authors_checkpoint
from helpers import REPO

from macaron_fairseq.upgrade.evaluation import authors_test


def flags(line: str) -> dict[str, str]:
    words = line.split()
    return {
        w: (words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else "")
        for i, w in enumerate(words)
        if w.startswith("--")
    }


def test_iwslt14_is_their_generate_command() -> None:
    test = authors_test("de", "en", "data-bin/iwslt14", "model.pt")
    (line,) = test.lines
    assert line.startswith("fairseq-generate data-bin/iwslt14 ") and line.endswith("| tail -n 1")
    f = flags(line)
    assert (f["--beam"], f["--lenpen"], f["--batch-size"]) == ("5", "1.0", "128") and "--remove-bpe" in f
    assert "IWSLT14" in test.benchmark and "BLEU4" in test.benchmark


def test_wmt14_is_their_interactive_command_and_compound_split_bleu() -> None:
    test = authors_test("en", "de", "data-bin/wmt14", "model.pt")
    translate, score = test.lines
    f = flags(translate)
    assert translate.startswith("fairseq-interactive data-bin/wmt14 ")
    assert (f["--beam"], f["--lenpen"], f["--batch-size"], f["--buffer-size"]) == ("4", "0.6", "128", "12800")
    assert "--remove-bpe" in f and "< data-bin/wmt14/raw-test/en-de.en.bpe" in translate
    assert (
        "--metrics retokenized" in score and "--atat-ref data-bin/wmt14/raw-test/en-de.de.tok.atat" in score
    )
    assert "WMT14" in test.benchmark and "compound-split" in test.benchmark


@pytest.mark.slow  # runs the real command in a fresh interpreter: 4-10 s (out of --quick)
@pytest.mark.parametrize(
    ("src", "tgt", "tool"), [("de", "en", "fairseq-generate"), ("en", "de", "fairseq-interactive")]
)
def test_the_cli_prints_the_models_own_command(src: str, tgt: str, tool: str, tmp_path: Path) -> None:
    write_authors_checkpoint(
        tmp_path / "authors.pt", authors_args(source_lang=src, target_lang=tgt, dim=32, heads=4, ffn=24), 40
    )
    proc = subprocess.run(
        [sys.executable, "-m", "macaron_fairseq.upgrade", "authors.pt", "--out", "model.pt"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={
            "PYTHONPATH": str(REPO),
            "PYTHONWARNINGS": "ignore",
            "PATH": "/usr/bin:/bin",
            "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1",
        },
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    printed = [line.strip() for line in proc.stdout.splitlines()]
    expected = authors_test(src, tgt, "data-bin/iwslt14.tokenized.de-en.joined", "model.pt").lines
    assert printed[-len(expected) :] == list(expected), proc.stdout
    assert printed[-len(expected) :][0].startswith(tool)
