"""Joint BPE with the ``subword-nmt`` library, as fairseq's and the Macaron authors' WMT14 scripts run it:

    cat tok/train.SRC tok/train.TGT > TRAIN
    python subword-nmt/learn_bpe.py -s MERGES < TRAIN > code
    python subword-nmt/apply_bpe.py -c code < tok/SPLIT.L > bpe/SPLIT.L      (every split, both sides)

(``prepare-wmt14en2de.sh`` of zhuohan123/macaron-net: ``BPE_TOKENS=32764``). The library's own
``learn_bpe`` (default minimum frequency 2) reads the source side's lines then the target side's, in that
order (ties between equally frequent pairs are broken by that order, as with their concatenated file);
``apply_bpe`` uses its defaults (separator ``@@``, no vocabulary filter). fairseq's ``--remove-bpe``
(``--post-process subword_nmt``) must give every tokenized line back: each line is checked.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

from macaron_preprocess.text.bitext import BitextFiles
from macaron_preprocess.text.bpe import encode_bitext
from macaron_workflow.errors import UserError
from macaron_workflow.files import count_lines
from macaron_workflow.stages import StageReport, StageRunner

SEPARATOR = "@@"


def remove_bpe(line: str) -> str:
    """What fairseq's ``--remove-bpe`` (``--post-process subword_nmt``) does to a line."""
    return (line + " ").replace(SEPARATOR + " ", "").rstrip()


def _text_lines(files: tuple[Path, ...]) -> Iterator[str]:
    for path in files:
        with open(path, encoding="utf-8") as handle:
            yield from handle


def learn_codes(training: BitextFiles, codes: Path, merges: int) -> StageReport:
    """``learn_bpe.py -s merges`` on the training text, source side first, into ``codes``."""
    from subword_nmt.learn_bpe import learn_bpe

    if count_lines(training.src) == 0:
        raise UserError(f"no training sentence in {training.src}; nothing to learn BPE from")
    shown = f"{training.src} + {training.tgt}"
    print(f"learning {merges} subword-nmt merges on {shown}", file=sys.stderr, flush=True)
    with open(codes, "w", encoding="utf-8") as out:
        learn_bpe(_text_lines((training.src, training.tgt)), out, merges)
    learned = count_lines(codes) - 1  # the "#version" line
    return {"merges": learned, "requested_merges": merges}


def learn(runner: StageRunner, training: BitextFiles, codes: Path, merges: int) -> StageReport:
    """Stage "learn-bpe-subword-nmt"."""
    return runner.run(
        "learn-bpe-subword-nmt",
        training.both(),
        [codes],
        {"merges": merges, "min_frequency": 2},
        lambda temps: learn_codes(training, temps[codes], merges),
    )


_bpe: dict[str, object] = {}


def _init_bpe(codes: str) -> None:
    from subword_nmt.apply_bpe import BPE

    with open(codes, encoding="utf-8") as handle:
        _bpe["bpe"] = BPE(handle)


def encode_chunk(lines: list[bytes]) -> tuple[bytes, list[str]]:
    """The BPE'd lines, and the lines whose ``--remove-bpe`` does not give them back."""
    bpe = _bpe["bpe"]
    texts = [line.decode("utf-8").rstrip("\n") for line in lines]
    encoded = [bpe.process_line(text) for text in texts]  # type: ignore[attr-defined]
    broken = [t for t, e in zip(texts, encoded, strict=True) if remove_bpe(e) != " ".join(t.split())]
    return "".join(e + "\n" for e in encoded).encode("utf-8"), broken


def apply(
    runner: StageRunner, split: str, tokenized: BitextFiles, encoded: BitextFiles, codes: Path, workers: int
) -> StageReport:
    """Stage "bpe-<split>": ``apply_bpe.py -c codes`` on both sides, counts checked."""
    subword_nmt = {"bpe": "subword-nmt"}  # the stage's params, and its report's last entry
    return encode_bitext(
        runner,
        split,
        tokenized,
        encoded,
        codes,
        workers,
        2000,
        subword_nmt,
        subword_nmt,
        encode=encode_chunk,
        initializer=_init_bpe,
        failure="subword-nmt BPE does not round-trip",
    )
