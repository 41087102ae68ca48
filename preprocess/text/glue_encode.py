"""GLUE sentences → the pre-training corpus's pieces → fairseq's ``sentence_prediction`` data layout.

A sentence is processed exactly as the pre-training text was (:data:`macaron_preprocess.text.documents.MOSES`:
Moses punctuation normalization, non-printing cleanup, Moses tokenization, lowercasing), then encoded with
the corpus's sentencepiece model and binarized with its dictionary (fairseq's ``Dictionary.encode_line``
and mmap writer, as ``fairseq-preprocess --only-source --srcdict`` does; pieces outside the dictionary
become ``<unk>`` and are counted).

Layout of one task directory (what fairseq's ``sentence_prediction`` task and its
``macaron_sentence_prediction`` subclass read)::

    input0/dict.txt, input0/{split}.{bin,idx}    first sentences
    input1/dict.txt, input1/{split}.{bin,idx}    second sentences (pair tasks only)
    label/dict.txt, label/{split}.{bin,idx}      class labels, dict.txt in the task's label order, so that
                                                 class i is ``TaskSpec.labels[i]`` (classification)
    label/{split}.label                          score / 5 per line (STS-B, regression; mapped back ×5)
    {split}.index                                the GLUE file's index of every example, in file order
    {split}.gold                                 the file's labels (dev/train; STS-B scores unscaled)
    meta.json                                    labels, classes, and per split its GLUE file and counts
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from macaron_preprocess.text.documents import MOSES
from macaron_preprocess.text.moses import MosesPipeline
from macaron_workflow.workers import chunked, ordered_map

#: STS-B scores lie in [0, 5]; the regression head is trained on score / 5 (fairseq's RoBERTa GLUE recipe)
STSB_SCALE = 5.0

_state: dict[str, object] = {}


def _init_encoder(sentencepiece_model: str) -> None:
    import sentencepiece as spm

    _state["moses"] = MosesPipeline(MOSES)
    _state["sp"] = spm.SentencePieceProcessor(model_file=sentencepiece_model)


def encode_chunk(sentences: list[str]) -> list[str]:
    """Space-separated pieces of each sentence (an empty sentence gives an empty line)."""
    moses, sp = _state["moses"], _state["sp"]
    tokenized = [moses(sentence) if sentence.strip() else "" for sentence in sentences]  # type: ignore[operator]
    pieces = sp.encode(tokenized, out_type=str, num_threads=1)  # type: ignore[attr-defined]
    return [" ".join(p) for p in pieces]


def encode_sentences(
    sentences: Sequence[str], sentencepiece_model: Path, workers: int, chunk: int = 2000
) -> Iterator[str]:
    """The pieces of every sentence, in order, on ``workers`` processes."""
    for encoded in ordered_map(
        encode_chunk, chunked(iter(sentences), chunk), workers, _init_encoder, (str(sentencepiece_model),)
    ):
        yield from encoded


@dataclass
class BinarizeCounts:
    sentences: int = 0
    tokens: int = 0
    unknown: int = 0


def binarize_lines(lines: Iterator[str], dictionary: object, prefix: Path) -> BinarizeCounts:
    """``prefix.bin`` / ``prefix.idx`` with fairseq's mmap builder, one item per line (``</s>`` appended)."""
    from fairseq.data import indexed_dataset

    counts = BinarizeCounts()
    unk = dictionary.unk()  # type: ignore[attr-defined]
    builder = indexed_dataset.make_builder(
        str(prefix) + ".bin",
        impl="mmap",
        vocab_size=len(dictionary),  # type: ignore[arg-type]
    )
    for line in lines:
        ids = dictionary.encode_line(line, add_if_not_exist=False, append_eos=True)  # type: ignore[attr-defined]
        counts.sentences += 1
        counts.tokens += len(ids)
        counts.unknown += int((ids == unk).sum())
        builder.add_item(ids)
    builder.finalize(str(prefix) + ".idx")
    return counts


def label_dictionary(labels: Sequence[str], path: Path) -> object:
    """A fairseq ``Dictionary`` of the labels in this order (written to ``path``, ``dict.txt`` format)."""
    from fairseq.data import Dictionary

    path.write_text("".join(f"{label} 1\n" for label in labels), encoding="utf-8")
    return Dictionary.load(str(path))
