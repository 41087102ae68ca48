"""Joint sentencepiece BPE: learn one model on the tokenized training text of both sides, apply it to
every split, and check that fairseq's ``--remove-bpe sentencepiece`` gives the tokenized text back.

Training runs in a child process so that its memory (bounded by ``input_sentence_size`` with
``shuffle_input_sentence``, as in fairseq's sentencepiece recipes) is returned to the system before the
later stages start. Normalisation is ``identity``: the pieces must reproduce the Moses-tokenized text
exactly, since that text is the reference for tokenized BLEU.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import sentencepiece as spm
from tqdm import tqdm

from macaron_preprocess.text.bitext import BitextFiles, check_bitext_counts
from macaron_workflow.errors import UserError
from macaron_workflow.files import count_lines, iter_lines
from macaron_workflow.stages import StageReport, StageRunner
from macaron_workflow.workers import chunked, ordered_map

SPM_MARKER = "\u2581"


@dataclass(frozen=True)
class BpeConfig:
    """sentencepiece training options (``model_type=bpe``)."""

    vocab_size: int = 8000
    input_sentence_size: int = 1_000_000
    character_coverage: float = 0.9995
    seed: int = 1
    threads: int = 1

    def as_params(self) -> dict[str, Any]:
        params = asdict(self)
        params.pop("threads")  # does not change the model
        return params


def remove_bpe(line: str) -> str:
    """Exactly what ``fairseq-generate --post-process sentencepiece`` does to a line of pieces."""
    return line.replace(" ", "").replace(SPM_MARKER, " ").strip()


def _train_in_child(training_files: Sequence[str], model_prefix: str, config: BpeConfig) -> None:
    spm.set_random_generator_seed(config.seed)  # sentence sampling is reproducible
    spm.SentencePieceTrainer.train(
        input=",".join(training_files),
        model_prefix=model_prefix,
        model_type="bpe",
        vocab_size=config.vocab_size,
        character_coverage=config.character_coverage,
        input_sentence_size=config.input_sentence_size,
        shuffle_input_sentence=True,
        normalization_rule_name="identity",
        hard_vocab_limit=False,
        num_threads=config.threads,
        bos_id=-1,
        eos_id=-1,
        minloglevel=1,
    )


def train_sentencepiece_on(files: Sequence[Path], model: Path, vocab: Path, config: BpeConfig) -> StageReport:
    """Train a BPE model on the lines of ``files`` (at most ``config.input_sentence_size`` of them, sampled
    at random by sentencepiece, so memory does not grow with the files) into ``model``/``vocab``."""
    if all(count_lines(path) == 0 for path in files):
        names = " and ".join(str(path) for path in files)
        raise UserError(f"no training sentence in {names}; nothing to learn BPE from")
    prefix = model.with_name(model.name + ".prefix")
    process = multiprocessing.get_context("fork").Process(
        target=_train_in_child, args=([str(path) for path in files], str(prefix), config)
    )
    print(
        f"training sentencepiece BPE (vocab {config.vocab_size}) on {' + '.join(str(p) for p in files)}",
        file=sys.stderr,
        flush=True,
    )
    try:
        process.start()
        process.join()
        if process.exitcode != 0:
            raise UserError(f"sentencepiece training failed (exit code {process.exitcode}); see above")
        os.replace(f"{prefix}.model", model)
        os.replace(f"{prefix}.vocab", vocab)
    finally:
        if process.is_alive():
            process.terminate()
            process.join()
        for suffix in (".model", ".vocab"):
            Path(f"{prefix}{suffix}").unlink(missing_ok=True)
    return {"vocab_size": count_lines(vocab), "requested_vocab_size": config.vocab_size}


def learn_bpe(
    runner: StageRunner, training: BitextFiles, model: Path, vocab: Path, config: BpeConfig
) -> StageReport:
    """Stage "learn-bpe"."""
    return runner.run(
        "learn-bpe",
        training.both(),
        [model, vocab],
        config.as_params(),
        lambda temps: train_sentencepiece_on(training.both(), temps[model], temps[vocab], config),
    )


_encoder: dict[str, spm.SentencePieceProcessor] = {}


def _init_encoder(model: str) -> None:
    _encoder["sp"] = spm.SentencePieceProcessor(model_file=model)


def encode_chunk(lines: list[bytes]) -> tuple[bytes, list[str]]:
    """Pieces of each tokenized line, space-separated; plus the lines that do not round-trip."""
    processor = _encoder["sp"]
    texts = [line.decode("utf-8") for line in lines]
    # one thread per worker process: the parallelism comes from --workers, not from sentencepiece's pool
    encoded = [" ".join(pieces) for pieces in processor.encode(texts, out_type=str, num_threads=1)]
    broken = [text for text, pieces in zip(texts, encoded, strict=True) if remove_bpe(pieces) != text.strip()]
    return ("\n".join(encoded) + "\n").encode("utf-8") if encoded else b"", broken


def encode_file(
    source: Path,
    target: Path,
    model: Path,
    workers: int,
    label: str,
    chunk_lines: int,
    *,
    encode: Callable[[list[bytes]], tuple[bytes, list[str]]] = encode_chunk,
    initializer: Callable[[str], None] = _init_encoder,
    failure: str = "sentencepiece round trip failed for",
) -> int:
    """Encode ``source`` into ``target``: ``chunk_lines`` lines at a time through ``encode`` (the encoded
    lines, and those that do not decode back to themselves) on ``workers`` processes, each set up by
    ``initializer(model)``; fail on any line that does not decode back to itself (``failure`` opens the
    message). sentencepiece by default; :mod:`~macaron_preprocess.text.subword_bpe` passes subword-nmt's."""
    total = count_lines(source)
    with (
        open(target, "wb") as out,
        tqdm(total=total, desc=f"bpe {label}", unit="lines", file=sys.stderr, delay=0.5) as progress,
    ):
        chunks = chunked(iter_lines(source), chunk_lines)
        for blob, broken in ordered_map(encode, chunks, workers, initializer, (str(model),)):
            if broken:
                raise UserError(f"{failure} {len(broken)} line(s) of {source}, first: {broken[0]!r}")
            out.write(blob)
            progress.update(blob.count(b"\n"))
    return total


def encode_bitext(
    runner: StageRunner,
    split: str,
    tokenized: BitextFiles,
    encoded: BitextFiles,
    model: Path,
    workers: int,
    chunk_lines: int,
    params: Mapping[str, Any],
    report: Mapping[str, Any],
    **encoding: Any,
) -> StageReport:
    """Stage "bpe-<split>" with stage ``params``: encode both sides (:func:`encode_file` with ``encoding``),
    then check counts (in == out, src == tgt); the stage's report is split, lines and ``report``."""

    def build(temps: Mapping[Path, Path]) -> StageReport:
        counts = {}
        for side in ("src", "tgt"):
            source, target = getattr(tokenized, side), getattr(encoded, side)
            label = f"{split}.{side}"
            counts[side] = encode_file(source, temps[target], model, workers, label, chunk_lines, **encoding)
        written = check_bitext_counts(
            BitextFiles(temps[encoded.src], temps[encoded.tgt]), f"after stage bpe ({split})"
        )
        if written != counts["src"]:
            raise UserError(f"bpe {split}: {tokenized.src} has {counts['src']} lines, output {written}")
        return {"split": split, "lines": written, **report}

    return runner.run(f"bpe-{split}", [*tokenized.both(), model], encoded.both(), params, build)


def apply_bpe(
    runner: StageRunner, split: str, tokenized: BitextFiles, encoded: BitextFiles, model: Path, workers: int
) -> StageReport:
    """Stage "bpe-<split>": encode both sides with sentencepiece, then check counts (in == out,
    src == tgt)."""
    return encode_bitext(runner, split, tokenized, encoded, model, workers, 2000, {"version": 1}, {})
