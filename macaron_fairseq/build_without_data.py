"""Build translation models exactly as ``fairseq-train`` does, without a corpus (for analyses,
benchmarks and tests): fairseq's own parser and translation task over a joined dictionary."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from fairseq import options, tasks

import macaron_fairseq  # noqa: F401  (registers the macaron archs)


@contextlib.contextmanager
def joined_dictionary_dir(vocab: int) -> Iterator[Path]:
    """A temporary data dir whose src/tgt dictionaries hold ``vocab`` symbols (incl. fairseq's 4 specials)."""
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        entries = "".join(f"tok{i} {vocab - i}\n" for i in range(vocab - 4))
        for lang in ("src", "tgt"):
            (data_dir / f"dict.{lang}.txt").write_text(entries)
        yield data_dir


def build_translation_model(data_dir: Path, arch: str, extra: Sequence[str] = ()) -> tuple[Any, Any]:
    """Return ``(model, task)`` for ``--arch arch`` plus command-line flags ``extra``."""
    parser = options.get_training_parser()
    argv = [str(data_dir), "--task", "translation", "-s", "src", "-t", "tgt", "--arch", arch, *extra]
    args = options.parse_args_and_arch(parser, input_args=argv)
    task = tasks.setup_task(args)
    return task.build_model(args), task
