"""Build BERT models exactly as ``fairseq-train`` does, without a corpus (parameter counts, tests,
benchmarks): fairseq's parser and the ``macaron_bert_pretraining`` task over a ``dict.txt`` alone.

The task appends ``<mask>`` to ``dict.txt``'s symbols (4 specials + the entries). fairseq-preprocess (and
``macaron_preprocess.bert_corpus``) pad a dictionary to a multiple of 8 with ``madeupword`` entries; here no
padding happens, so :func:`bert_dictionary_dir` writes ``vocab − 5`` entries and the model's vocabulary is
exactly ``vocab`` (30,522 for BERT's: ``<s> <pad> </s> <unk>`` + 30,517 + ``<mask>`` ↔ BERT's
``[CLS] [PAD] [SEP] [UNK]`` + 30,517 + ``[MASK]``).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

SPECIALS_AND_MASK = 5  # <s> <pad> </s> <unk> from fairseq's Dictionary, <mask> from the task


def write_bert_dictionary(path: Path, vocab: int) -> None:
    """A ``dict.txt`` giving a model vocabulary of exactly ``vocab`` symbols."""
    if vocab <= SPECIALS_AND_MASK:
        raise ValueError(f"vocab {vocab}: needs more than the {SPECIALS_AND_MASK} special symbols")
    entries = vocab - SPECIALS_AND_MASK
    Path(path).write_text("".join(f"piece{i} {entries + 1 - i}\n" for i in range(entries)))


@contextlib.contextmanager
def bert_dictionary_dir(vocab: int) -> Iterator[Path]:
    """A temporary data dir holding only a ``dict.txt`` for a vocabulary of ``vocab`` symbols."""
    with tempfile.TemporaryDirectory() as tmp:
        write_bert_dictionary(Path(tmp) / "dict.txt", vocab)
        yield Path(tmp)


def build_bert_task(data_dir: Path, arch: str, extra: Sequence[str] = ()) -> tuple[Any, Any]:
    """``(task, args)`` for ``--arch arch`` plus command-line flags ``extra``, parsed as fairseq does."""
    from fairseq import options, tasks

    import macaron_fairseq  # noqa: F401  (registers the task and the archs)

    parser = options.get_training_parser()
    argv = [str(data_dir), "--task", "macaron_bert_pretraining", "--arch", arch, *extra]
    args = options.parse_args_and_arch(parser, input_args=argv)
    return tasks.setup_task(args), args


def build_bert_model(data_dir: Path, arch: str, extra: Sequence[str] = ()) -> tuple[Any, Any]:
    """Return ``(model, task)`` for ``--arch arch`` plus command-line flags ``extra``."""
    task, args = build_bert_task(data_dir, arch, extra)
    return task.build_model(args), task
