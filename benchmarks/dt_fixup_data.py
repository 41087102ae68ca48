"""A small generated translation task for the DT-Fixup benchmarks (≤ 10k training pairs).

Source: 3–10 words from a 50-word vocabulary; target: the word-by-word lexicon translation with the first
word moved to the end (the toy task of the test suite, larger). Learnable within a few hundred updates,
needs attention beyond the diagonal, and small enough to train 32-layer stacks on a CPU.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

VOCAB = 50


def write_split(out: Path, split: str, n: int, rng: random.Random) -> None:
    src_lines, tgt_lines = [], []
    for _ in range(n):
        words = [rng.randrange(VOCAB) for _ in range(rng.randint(3, 10))]
        src_lines.append(" ".join(f"s{w}" for w in words))
        tgt_lines.append(" ".join(f"t{w}" for w in words[1:] + words[:1]))
    (out / f"{split}.src").write_text("\n".join(src_lines) + "\n")
    (out / f"{split}.tgt").write_text("\n".join(tgt_lines) + "\n")


def make_data_bin(root: Path, train: int = 8000, valid: int = 500, seed: int = 0) -> Path:
    """Generate and binarize (fairseq-preprocess, joined dictionary); reuses an existing data-bin."""
    data_bin = root / "data-bin"
    if (data_bin / "train.src-tgt.src.bin").exists():
        return data_bin
    if not 0 < train <= 10_000:
        raise ValueError(f"train size must be in 1..10000, got {train}")
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    write_split(root, "train", train, rng)
    write_split(root, "valid", valid, rng)
    subprocess.run(
        [
            "fairseq-preprocess", "--source-lang", "src", "--target-lang", "tgt",
            "--trainpref", str(root / "train"), "--validpref", str(root / "valid"),
            "--destdir", str(data_bin), "--joined-dictionary", "--workers", "1",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return data_bin
