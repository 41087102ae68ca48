"""Documents -> tokenized sentences, and the document-level train/valid split.

The recipe of the Macaron paper's pre-training data (after BERT): sentences by spaCy; then, per sentence,
Moses punctuation normalization and Unicode cleanup (as for translation), Moses tokenization and
lowercasing. A document is written as one sentence per line followed by one blank line, the input
convention of fairseq's ``BlockPairDataset`` (``break_mode="doc"``).

The split is decided per document from a hash of its key (``wikipedia:<page id>``,
``bookcorpus:<relative path>``), never from the order of processing: the same document lands in the
same split in every run, on any number of workers or shards. A document with fewer than
``min_sentences`` sentences cannot give a next-sentence pair; it is dropped (counted as ``too_short``, or
``empty`` with no sentence at all) unless ``keep_short`` is set.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from macaron_preprocess.text.moses import MosesConfig, MosesPipeline
from macaron_preprocess.text.sentences import RULE_BASED, SentenceSplitter

SPLITS = ("train", "valid")
MOSES = MosesConfig(lang="en", normalize_punctuation=True, remove_non_printing=True, lowercase=True)


@dataclass(frozen=True)
class DocumentConfig:
    """What turns a document into training text (every field changes the output)."""

    sentence_splitter: str = RULE_BASED
    valid_ratio: float = 0.005
    min_sentences: int = 2
    keep_short: bool = False

    def as_params(self) -> dict[str, Any]:
        return {**asdict(self), "moses": MOSES.as_params()}


def split_fraction(key: str) -> float:
    """A number in [0, 1) fixed by the document key (the first 8 bytes of its BLAKE2b hash)."""
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


@dataclass
class ExtractedText:
    """What a worker returns for a batch of documents: their text per split, its counts, and where the
    training document with the smallest split fraction is (see :func:`macaron_preprocess.text.extract`)."""

    text: dict[str, bytearray] = field(default_factory=lambda: {split: bytearray() for split in SPLITS})
    counts: Counter[str] = field(default_factory=Counter)
    smallest_train: tuple[float, int, int] | None = None
    """``(fraction, start, end)``: bytes of ``text["train"]`` holding that document."""
    skipped_files: list[str] = field(default_factory=list)
    """Names of input files that were not read (not text), for the log."""
    decoded_files: list[str] = field(default_factory=list)
    """Names of input files that were not UTF-8 and were decoded with a fallback encoding (books)."""


class DocumentProcessor:
    """Sentence splitting, normalization and tokenization of documents (one instance per process)."""

    def __init__(self, config: DocumentConfig) -> None:
        self.config = config
        self.splitter = SentenceSplitter(config.sentence_splitter)
        self.moses = MosesPipeline(MOSES)

    def add(self, out: ExtractedText, documents: Sequence[tuple[str, Sequence[str]]]) -> None:
        """Append ``(key, paragraphs)`` documents to ``out`` (all paragraphs go to spaCy in one batch)."""
        paragraphs = [paragraph for _, doc_paragraphs in documents for paragraph in doc_paragraphs]
        per_paragraph = iter(self.splitter.split(paragraphs))
        for key, doc_paragraphs in documents:
            sentences = []
            for _ in doc_paragraphs:
                for sentence in next(per_paragraph):
                    tokenized = self.moses(sentence)
                    if tokenized:
                        sentences.append(tokenized)
            self.write(out, key, sentences)

    def write(self, out: ExtractedText, key: str, sentences: list[str]) -> None:
        counts = out.counts
        if len(sentences) < self.config.min_sentences and not self.config.keep_short:
            counts["dropped.empty" if not sentences else "dropped.too_short"] += 1
            return
        if not sentences:
            counts["dropped.empty"] += 1
            return
        fraction = split_fraction(key)
        split = "valid" if fraction < self.config.valid_ratio else "train"
        text = out.text[split]
        start = len(text)
        text += ("\n".join(sentences) + "\n\n").encode("utf-8")
        if split == "train" and (out.smallest_train is None or fraction < out.smallest_train[0]):
            out.smallest_train = (fraction, start, len(text))
        counts[f"{split}.documents"] += 1
        counts[f"{split}.sentences"] += len(sentences)
        counts[f"{split}.tokens"] += sum(sentence.count(" ") + 1 for sentence in sentences)
