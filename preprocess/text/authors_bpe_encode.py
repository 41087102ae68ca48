"""GLUE sentences → BPE pieces of the Macaron authors' BERT, with their text processing.

``macaron-upgrade`` writes, beside an upgraded checkpoint of their BERT, the plugin's ``dict.txt``, a record
:data:`RECORD` and (when their data directory has it) their ``bpe-code``. A sentence then goes through the
chain of their ``macaron-scripts/glue/process_glue.sh`` (facts read from it and from
``macaron-scripts/common/*.py``), in their order:

1. their ``precleanup_english.py``: tabs to spaces, runs of spaces to one, four or more dots to ``...``,
   ``<<``/``>>`` to ``«``/``»``, ``,,`` to ``,`` then ``,.`` to ``.``, a ``*`` after a space and before a
   non-space removed. Their two bracket rules are written as groups, not character classes, so they only
   ever touch the literal sequences ``" ,:.)]»"`` and ``"[(« "``: kept so;
2. Moses ``normalize-punctuation.perl en`` and ``remove-non-printing-char.perl`` (sacremoses, as
   :mod:`macaron_preprocess.text.moses`);
3. their ``align_text.py`` changes nothing (it discards the results of its substitutions): not applied;
4. ``sed 's/\\\\/ /g'``: every backslash becomes a space;
5. Moses ``tokenizer.perl -no-escape -l en`` (no aggressive hyphen splitting), then lowercasing;
6. BPE with their ``bpe-code``: fastBPE's ``learnbpe 32640`` output (``a b count`` per line), which their
   pre-training corpus was cut with by ``fast applybpe``. Their GLUE script applies it with subword-nmt's
   ``apply_bpe.py``, which refuses a file of three columns (every subword-nmt since 2018: "The line should
   exist of exactly two subword units") and reads a file without a ``#version`` header with version 0.1
   rules, under which fastBPE's word-final merges (``e</w>``) never apply. The codes are therefore given to
   subword-nmt without their counts and with ``#version: 0.2`` — fastBPE's word-final rule, i.e. the
   segmentation the model was pre-trained on.

(Their first step, dropping bytes that are not UTF-8, has nothing to do here: the GLUE reader decodes
UTF-8.)
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from macaron_workflow.errors import UserError
from macaron_workflow.workers import chunked, ordered_map

#: what macaron-upgrade writes beside an upgraded authors' BERT: ``{"bpe_codes": "bpe-code", ...}``
RECORD = "authors_bert.json"
BPE_CODES = "bpe-code"

_state: dict[str, object] = {}


def authors_bpe_codes(data_dir: Path) -> Path | None:
    """Their ``bpe-code`` for a data directory written by ``macaron-upgrade`` for their BERT; None for
    other data-bins; an error naming what to copy when the record is there but the codes are not."""
    record = data_dir / RECORD
    if not record.is_file():
        return None
    try:
        name = json.loads(record.read_text(encoding="utf-8")).get("bpe_codes", BPE_CODES)
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as err:
        raise UserError(f"{record}: not a record of macaron-upgrade ({err})") from err
    codes = data_dir / str(name)
    if not codes.is_file():
        raise UserError(
            f"{data_dir}: the upgraded authors' BERT has no {codes.name}: copy their BPE codes (bpe-code of "
            f"their data-bin/bert_corpus) to {codes}"
        )
    return codes


def pre_cleanup(line: str) -> str:
    """Their ``precleanup_english.py`` (see the module's step 1)."""
    line = " ".join(line.replace("\t", " ").strip().split())
    line = re.sub(r"\.{4,}", "...", line)
    line = line.replace("<<", "«").replace(">>", "»")
    line = line.replace(" ,:.)]»", ",:.)]»")  # their group ' (,:\.\)\]»)': this literal sequence only
    line = line.replace("[(« ", "[(«")  # their group '(\[\(«) ': likewise
    line = line.replace(",,", ",").replace(",.", ".")
    line = re.sub(r" \*([^\s])", r" \1", line)
    return " ".join(line.strip().split())


def subword_nmt_codes(codes: Path) -> io.StringIO:
    """Their fastBPE codes as subword-nmt reads them with fastBPE's rules: ``#version: 0.2``, two columns."""
    merges = []
    for number, line in enumerate(codes.read_text(encoding="utf-8").splitlines(), 1):
        fields = line.split(" ")
        if line.startswith("#version:") and number == 1:
            continue
        if len(fields) not in (2, 3):
            raise UserError(
                f"{codes}:{number}: {line[:60]!r} is not a BPE merge ('a b' or fastBPE's 'a b count')"
            )
        merges.append(f"{fields[0]} {fields[1]}\n")
    return io.StringIO("#version: 0.2\n" + "".join(merges))


def _init_encoder(codes: str) -> None:
    try:
        from subword_nmt.apply_bpe import BPE
    except ImportError as err:
        raise UserError("the authors' BERT tokenisation needs subword-nmt: pip install subword-nmt") from err
    from macaron_preprocess.text.moses import CompiledPunctNormalizer, MosesTokenizerWithCharsets

    _state["normalizer"] = CompiledPunctNormalizer("en")
    _state["tokenizer"] = MosesTokenizerWithCharsets(lang="en")
    _state["bpe"] = BPE(subword_nmt_codes(Path(codes)))


def tokenize(sentence: str) -> str:
    """Steps 1–5 of the module's chain: their tokenized, lowercased text (before BPE)."""
    from macaron_preprocess.text.moses import remove_non_printing

    text = _state["normalizer"].normalize(pre_cleanup(sentence))  # type: ignore[attr-defined]
    text = remove_non_printing(text).replace("\\", " ")
    tokens = _state["tokenizer"].tokenize(  # type: ignore[attr-defined]
        text, aggressive_dash_splits=False, escape=False, return_str=True
    )
    return " ".join(tokens.lower().split())


def encode_chunk(sentences: list[str]) -> list[str]:
    bpe = _state["bpe"]
    return [bpe.process_line(tokenize(s)).strip() for s in sentences]  # type: ignore[attr-defined]


def encode_sentences(sentences: Sequence[str], codes: Path, workers: int, chunk: int = 2000) -> Iterator[str]:
    """The BPE pieces of every sentence, in order, on ``workers`` processes."""
    for encoded in ordered_map(
        encode_chunk, chunked(iter(sentences), chunk), workers, _init_encoder, (str(codes),)
    ):
        yield from encoded
