"""GLUE sentences → an imported WordPiece model's ids, with the model's own tokenizer.

A checkpoint made by ``python -m macaron_fairseq.hf import`` points at a data directory holding its
``dict.txt``, ``hf_vocabulary.json`` (the WordPiece id of every fairseq id) and ``tokenizer/tokenizer.json``
(the model's fast tokenizer: BERT's normalizer — lowercasing and accent stripping as the model's tokenizer
config says —, BERT's pre-tokenizer, WordPiece). A sentence is encoded with that tokenizer, exactly as
transformers' ``BertTokenizerFast`` does it (without ``[CLS]``/``[SEP]``: the fine-tuning task adds
``<s>``/``</s>``, which are ``[CLS]``/``[SEP]``), and each WordPiece id is written as its fairseq symbol, so
that :func:`macaron_preprocess.text.glue_encode.binarize_lines` gives the model's ids. Not the pre-training
corpus's Moses + sentencepiece processing: that belongs to this project's own models.

Needs the ``tokenizers`` library (installed with transformers: the ``hf`` extra).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from macaron_workflow.errors import UserError
from macaron_workflow.workers import chunked, ordered_map

RECORD = "hf_vocabulary.json"
FAIRSEQ_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")
MASK = "<mask>"

_state: dict[str, object] = {}


def wordpiece_tokenizer(data_dir: Path) -> Path | None:
    """The ``tokenizer.json`` of an imported WordPiece model's data directory; None for other data-bins."""
    record = data_dir / RECORD
    if not record.is_file():
        return None
    try:
        tokenizer_dir = json.loads(record.read_text(encoding="utf-8")).get("tokenizer_dir", "tokenizer")
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as err:
        raise UserError(f"{record}: not a record of python -m macaron_fairseq.hf import ({err})") from err
    return data_dir / tokenizer_dir / "tokenizer.json"


def fairseq_symbols(dictionary: Path) -> list[str]:
    """fairseq's ids in order: the four specials, ``dict.txt``'s entries, ``<mask>``."""
    entries = [line.rsplit(" ", 1)[0] for line in dictionary.read_text(encoding="utf-8").splitlines() if line]
    return [*FAIRSEQ_SPECIALS, *entries, MASK]


def _init_encoder(tokenizer_json: str) -> None:
    try:
        from tokenizers import Tokenizer
    except ImportError as err:
        raise UserError(
            "an imported WordPiece model needs the tokenizers library: pip install -e '.[hf]'"
        ) from err

    path = Path(tokenizer_json)
    data_dir = path.parent.parent
    order = json.loads((data_dir / RECORD).read_text(encoding="utf-8"))["order"]
    symbols = fairseq_symbols(data_dir / "dict.txt")
    if len(symbols) != len(order):
        raise UserError(f"{data_dir}: dict.txt gives {len(symbols)} symbols, {RECORD} {len(order)}")
    to_symbol = [""] * len(order)
    for fairseq_id, wordpiece_id in enumerate(order):
        to_symbol[wordpiece_id] = symbols[fairseq_id]
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    _state["tokenizer"], _state["to_symbol"] = tokenizer, to_symbol


def encode_chunk(sentences: list[str]) -> list[str]:
    """Each sentence as space-separated fairseq symbols of its WordPiece tokens."""
    tokenizer, to_symbol = _state["tokenizer"], _state["to_symbol"]
    encodings = tokenizer.encode_batch(sentences, add_special_tokens=False)  # type: ignore[attr-defined]
    return [" ".join(to_symbol[i] for i in encoding.ids) for encoding in encodings]  # type: ignore[index]


def encode_sentences(
    sentences: Sequence[str], tokenizer_json: Path, workers: int, chunk: int = 2000
) -> Iterator[str]:
    """The symbols of every sentence, in order, on ``workers`` processes."""
    for encoded in ordered_map(
        encode_chunk, chunked(iter(sentences), chunk), workers, _init_encoder, (str(tokenizer_json),)
    ):
        yield from encoded
