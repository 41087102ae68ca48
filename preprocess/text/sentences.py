"""Sentence segmentation with spaCy, one paragraph at a time.

The default is spaCy's rule-based ``sentencizer`` on ``spacy.blank("en")`` (no model download); a trained
pipeline such as ``en_core_web_sm`` can be named instead, and then only its statistical sentence
segmenter (``senter``) runs, which handles abbreviations better. docs/reports/sentence_splitters.md
compares them (speed and hard cases).

Paragraphs, not documents, are fed to spaCy, so a long article never reaches ``nlp.max_length`` (spaCy's
E088); a single paragraph longer than that is cut at whitespace first.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from macaron_workflow.errors import UserError

RULE_BASED = "sentencizer"
"""The name of the default splitter: ``spacy.blank("en")`` + ``sentencizer``."""

_TRAINED_PIPES_NOT_NEEDED = ("tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "ner")


def load_pipeline(model: str) -> Any:
    """The spaCy pipeline that splits sentences for ``model`` (:data:`RULE_BASED` or an installed one)."""
    import spacy

    if model == RULE_BASED:
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        return nlp
    try:
        nlp = spacy.load(model, exclude=list(_TRAINED_PIPES_NOT_NEEDED))
    except OSError as exc:
        raise UserError(
            f"the spaCy pipeline {model!r} is not installed (python -m spacy download {model}), or use the "
            f"default --sentence-splitter {RULE_BASED}"
        ) from exc
    if "senter" not in nlp.pipe_names:
        raise UserError(f"the spaCy pipeline {model!r} has no 'senter' component to split sentences with")
    nlp.enable_pipe("senter")
    return nlp


def cut_long(paragraph: str, limit: int) -> Iterator[str]:
    """``paragraph`` in pieces of at most ``limit`` characters, cut at whitespace where there is some."""
    while len(paragraph) > limit:
        cut = paragraph.rfind(" ", 0, limit)
        cut = cut if cut > 0 else limit
        yield paragraph[:cut]
        paragraph = paragraph[cut:].lstrip()
    if paragraph:
        yield paragraph


class SentenceSplitter:
    """Splits paragraphs into sentences with a spaCy pipeline (one instance per process)."""

    def __init__(self, model: str = RULE_BASED, batch_size: int = 256) -> None:
        self.nlp = load_pipeline(model)
        self.batch_size = batch_size

    def split(self, paragraphs: Sequence[str]) -> list[list[str]]:
        """The sentences of each paragraph (stripped, no empty ones), one list per paragraph.

        All paragraphs go through ``nlp.pipe`` together, which batches them.
        """
        limit = self.nlp.max_length
        owners, pieces = [], []
        for owner, paragraph in enumerate(paragraphs):
            for piece in cut_long(paragraph, limit):
                owners.append(owner)
                pieces.append(piece)
        sentences: list[list[str]] = [[] for _ in paragraphs]
        for owner, doc in zip(owners, self.nlp.pipe(pieces, batch_size=self.batch_size), strict=True):
            for span in doc.sents:
                text = span.text.strip()
                if text:
                    sentences[owner].append(text)
        return sentences
