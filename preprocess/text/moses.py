"""Moses-style text normalisation and tokenization with sacremoses (no Perl needed).

One :class:`MosesConfig` describes what happens to a line, in the order of the Moses scripts that
fairseq's ``prepare-*.sh`` chain: ``normalize-punctuation.perl`` -> ``remove-non-printing-char.perl`` ->
``tokenizer.perl`` (``-a`` = aggressive hyphen splitting, escaping unless ``-no-escape``) ->
``lowercase.perl``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

import regex
from sacremoses import MosesPunctNormalizer, MosesTokenizer

_NON_PRINTING = regex.compile(r"\p{C}")
# U+2581 is sentencepiece's word-boundary marker; a literal one in the text would not survive
# ``--remove-bpe sentencepiece``, so it is mapped to the ASCII underscore it depicts.
_SPM_MARKER = "\u2581"


@dataclass(frozen=True)
class MosesConfig:
    """How one side of a corpus is normalised and tokenized."""

    lang: str
    normalize_punctuation: bool = False
    remove_non_printing: bool = False
    aggressive_dash_splits: bool = False
    escape: bool = False
    lowercase: bool = False
    right_quote_to_apostrophe: bool = False
    """Replace U+2019 by ``'`` first (the ``sed "s/’/'/g"`` fairseq applies to IWSLT/WMT test sets)."""

    def as_params(self) -> dict[str, Any]:
        return asdict(self)


def remove_non_printing(text: str) -> str:
    """``remove-non-printing-char.perl``: every Unicode "other" (C*) character becomes a space."""
    return _NON_PRINTING.sub(" ", text)


class MosesTokenizerWithCharsets(MosesTokenizer):
    """sacremoses' tokenizer with its two character-class tests made O(len(token)).

    sacremoses 0.1/0.2 build ``set(self.IsAlpha)`` / ``set(self.IsLower)`` (tens of thousands of code
    points) on every call of ``isanyalpha``/``islower``, i.e. for every token like ``U.S.`` or a
    sentence-internal word followed by a period: on Wikipedia text that was two thirds of the tokenizer's
    time. The sets are built once here; the answers are the same.
    """

    _alpha: frozenset[str] = frozenset(MosesTokenizer.IsAlpha)
    _lower: frozenset[str] = frozenset(MosesTokenizer.IsLower)

    def isanyalpha(self, text: str) -> bool:
        return not self._alpha.isdisjoint(text)

    def islower(self, text: str) -> bool:
        return self._lower.issuperset(text)


class CompiledPunctNormalizer(MosesPunctNormalizer):
    """sacremoses' punctuation normalizer with its ~40 substitutions compiled once.

    ``MosesPunctNormalizer.normalize`` calls ``re.sub(pattern_string, ...)`` per substitution, i.e. a
    pattern-cache lookup per substitution and line: a third of its time on short lines. Same patterns,
    same order, same result.
    """

    def __init__(self, lang: str) -> None:
        super().__init__(lang=lang)
        self.compiled = [(re.compile(pattern), replacement) for pattern, replacement in self.substitutions]

    def normalize(self, text: str) -> str:
        if self.pre_replace_unicode_punct:
            text = self.replace_unicode_punct(text)
        for pattern, replacement in self.compiled:
            text = pattern.sub(replacement, text)
        if self.post_remove_control_chars:
            text = self.remove_control_chars(text)
        return text.strip()


class MosesPipeline:
    """Callable applying a :class:`MosesConfig` to one line (instances are per process, not shared)."""

    def __init__(self, config: MosesConfig) -> None:
        self.config = config
        self.tokenizer = MosesTokenizerWithCharsets(lang=config.lang)
        self.normalizer = CompiledPunctNormalizer(config.lang) if config.normalize_punctuation else None

    def __call__(self, text: str) -> str:
        config = self.config
        if config.right_quote_to_apostrophe:
            text = text.replace("\u2019", "'")
        if self.normalizer is not None:
            text = self.normalizer.normalize(text)
        if config.remove_non_printing:
            text = remove_non_printing(text)
        tokens = self.tokenizer.tokenize(
            text, aggressive_dash_splits=config.aggressive_dash_splits, escape=config.escape, return_str=True
        )
        if config.lowercase:
            tokens = tokens.lower()
        if _SPM_MARKER in tokens:
            tokens = tokens.replace(_SPM_MARKER, "_")
        return " ".join(tokens.split())
