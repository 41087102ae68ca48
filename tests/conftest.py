"""Shared fixtures: a tiny dictionary/task for building models, and a tiny binarized parallel corpus."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

warnings.filterwarnings("ignore", category=DeprecationWarning)


from macaron_fairseq.build_offline import build_translation_model  # noqa: E402  (registers the models)


def write_dictionary(path: Path, size: int) -> None:
    path.write_text("".join(f"tok{i} {1000 - i}\n" for i in range(size)))


@pytest.fixture(scope="session")
def dict_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir holding only a joined dictionary (enough for the translation task to build models)."""
    d = tmp_path_factory.mktemp("dicts")
    for lang in ("src", "tgt"):
        write_dictionary(d / f"dict.{lang}.txt", 120)
    return d


def build_model(data_dir: Path, arch: str, extra: Sequence[str] = ()) -> tuple[object, object]:
    """Build (model, task) exactly as fairseq-train does from command-line flags."""
    return build_translation_model(data_dir, arch, extra)


TINY = [
    "--encoder-embed-dim", "32", "--decoder-embed-dim", "32",
    "--encoder-ffn-embed-dim", "48", "--decoder-ffn-embed-dim", "40",
    "--encoder-attention-heads", "4", "--decoder-attention-heads", "4",
    "--encoder-layers", "2", "--decoder-layers", "2",
]  # fmt: skip


def make_bitext(out_dir: Path, seed: int = 0, sizes: dict[str, int] | None = None) -> None:
    """A tiny learnable 'translation': word-by-word lexicon + moving the first word to the end."""
    rng = random.Random(seed)
    src_vocab = [f"w{i}" for i in range(30)]
    lexicon = {w: f"v{i}" for i, w in enumerate(src_vocab)}
    for split, n in (sizes or {"train": 400, "valid": 30, "test": 30}).items():
        src_lines, tgt_lines = [], []
        for _ in range(n):
            words = [rng.choice(src_vocab) for _ in range(rng.randint(3, 8))]
            target = [lexicon[w] for w in words]
            src_lines.append(" ".join(words))
            tgt_lines.append(" ".join(target[1:] + target[:1]))
        (out_dir / f"{split}.src").write_text("\n".join(src_lines) + "\n")
        (out_dir / f"{split}.tgt").write_text("\n".join(tgt_lines) + "\n")


def run_cli(argv: Sequence[str], cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"command failed ({proc.returncode}): {' '.join(argv)}\n--- stdout\n{proc.stdout[-4000:]}"
            f"\n--- stderr\n{proc.stderr[-4000:]}"
        )
    return proc


@pytest.fixture(scope="session")
def tiny_data_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A binarized joined-dictionary parallel corpus made with the real fairseq-preprocess."""
    root = tmp_path_factory.mktemp("tiny_corpus")
    make_bitext(root)
    run_cli(
        [
            "fairseq-preprocess", "--source-lang", "src", "--target-lang", "tgt",
            "--trainpref", str(root / "train"), "--validpref", str(root / "valid"),
            "--testpref", str(root / "test"), "--destdir", str(root / "data-bin"),
            "--joined-dictionary", "--workers", "1",
        ]
    )  # fmt: skip
    return root / "data-bin"
