"""Helpers shared by the preprocessing tests: tiny parallel corpora and running the CLIs."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

EN_WORDS = (
    "the a house cat dog runs quickly slowly over under big small red green blue table chair window door "
    "garden river mountain city street teacher student book letter music evening morning friend"
).split()
DE_WORDS = (
    "das ein haus katze hund läuft schnell langsam über unter groß klein rot grün blau tisch stuhl fenster "
    "tür garten fluss berg stadt straße lehrer schüler buch brief musik abend morgen freund"
).split()


def sentence_pair(rng: random.Random, min_words: int = 3, max_words: int = 14) -> tuple[str, str]:
    """A random "translation": the same word indices in both vocabularies, so lengths always match."""
    idx = [rng.randrange(len(EN_WORDS)) for _ in range(rng.randint(min_words, max_words))]
    en = " ".join(EN_WORDS[i] for i in idx).capitalize() + ", isn't it?"
    de = " ".join(DE_WORDS[i] for i in idx).capitalize() + ", nicht wahr?"
    return en, de


def write_parallel(prefix: Path, pairs: list[tuple[str, str]], src: str = "en", tgt: str = "de") -> None:
    prefix.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{prefix}.{src}").write_text("".join(a + "\n" for a, _ in pairs), encoding="utf-8")
    Path(f"{prefix}.{tgt}").write_text("".join(b + "\n" for _, b in pairs), encoding="utf-8")


def random_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    return [sentence_pair(rng) for _ in range(n)]


def run_module(
    module: str, *args: str, check: bool = True, timeout: float = 120
) -> subprocess.CompletedProcess:
    """Run ``python -m module args`` from the repository root; returns the completed process."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    completed = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and completed.returncode != 0:
        raise AssertionError(
            f"{module} failed ({completed.returncode}):\n{completed.stdout}\n{completed.stderr}"
        )
    return completed


def read_lines(path: Path) -> list[str]:
    return Path(path).read_text(encoding="utf-8").split("\n")[:-1]


def remove_bpe(line: str) -> str:
    """fairseq's ``--post-process sentencepiece`` (copied here on purpose, to test against the real rule)."""
    return line.replace(" ", "").replace("\u2581", " ").strip()


def mmap_index_length(path: Path) -> int:
    """Sentences in a fairseq mmap .idx, read through fairseq itself."""
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    return len(MMapIndexedDataset(str(path).removesuffix(".idx")))
