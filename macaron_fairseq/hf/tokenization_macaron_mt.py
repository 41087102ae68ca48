"""The tokenizer of an exported translation model (``trust_remote_code=True``): text in the source language →
the fairseq source dictionary's ids (``</s>`` appended, as fairseq-preprocess binarizes a sentence); the
target dictionary's ids → text. Copied by ``macaron-hf export`` next to the model with the data's files:

* ``dict.source.txt`` / ``dict.target.txt``: fairseq's dictionaries (``<s>`` 0, ``<pad>`` 1, ``</s>`` 2,
  ``<unk>`` 3, then the file's symbols); a piece the dictionary lacks is ``<unk>``, as in fairseq-preprocess;
* the subword model: ``spm.model`` (this project's sentencepiece BPE; pieces ``▁``-marked, fairseq's
  ``--post-process sentencepiece``) or ``bpecodes`` (subword-nmt BPE codes, pieces ``@@``-marked, fairseq's
  ``--remove-bpe``; needs the ``subword-nmt`` package);
* before the subwords, as the data was prepared: the Moses tokenizer (``moses_lang``, sacremoses with Moses'
  default escaping), then lowercasing (``lowercase``); after decoding, the Moses detokenizer.

Self-contained: transformers, sentencepiece or subword-nmt, and sacremoses when ``moses_lang`` is set.
"""

from __future__ import annotations

import os
import shutil
from typing import ClassVar

from transformers import PreTrainedTokenizer

# optional: each is needed only by the files this directory holds (transformers skips imports in try blocks
# when it checks a remote file's requirements)
try:
    import sentencepiece
except ImportError:
    sentencepiece = None
try:
    from subword_nmt.apply_bpe import BPE
except ImportError:
    BPE = None
try:
    from sacremoses import MosesDetokenizer, MosesTokenizer
except ImportError:
    MosesTokenizer = MosesDetokenizer = None

FAIRSEQ_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")
VOCAB_FILES_NAMES = {
    "source_vocab": "dict.source.txt",
    "target_vocab": "dict.target.txt",
    "sentencepiece_model": "spm.model",
    "bpe_codes": "bpecodes",
}


def read_fairseq_dictionary(path: str) -> list[str]:
    """fairseq's ``Dictionary.load`` order: the four specials, then the file's symbols."""
    symbols = list(FAIRSEQ_SPECIALS)
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            word, _, flags = line.rpartition(" ")
            if flags == "#fairseq:overwrite":
                word = word.rpartition(" ")[0]
            symbols.append(word)
    return symbols


class MacaronMTTokenizer(PreTrainedTokenizer):
    vocab_files_names = VOCAB_FILES_NAMES
    model_input_names: ClassVar[list[str]] = ["input_ids", "attention_mask"]

    def __init__(
        self,
        source_vocab: str,
        target_vocab: str,
        sentencepiece_model: str | None = None,
        bpe_codes: str | None = None,
        moses_lang: str | None = None,
        target_lang: str | None = None,
        lowercase: bool = False,
        **kwargs,
    ) -> None:
        if (sentencepiece_model is None) == (bpe_codes is None):
            raise ValueError("give one subword model: sentencepiece_model or bpe_codes")
        self.source_vocab, self.target_vocab = source_vocab, target_vocab
        self.sentencepiece_model, self.bpe_codes = sentencepiece_model, bpe_codes
        self.moses_lang, self.target_lang, self.lowercase = moses_lang, target_lang, lowercase
        self.source_symbols = read_fairseq_dictionary(source_vocab)
        self.target_symbols = read_fairseq_dictionary(target_vocab)
        self.source_ids: dict[str, int] = {}
        for i, symbol in enumerate(self.source_symbols):
            self.source_ids.setdefault(symbol, i)
        if sentencepiece_model is not None:
            if sentencepiece is None:
                raise ImportError("this tokenizer needs sentencepiece: pip install sentencepiece")
            self.sp = sentencepiece.SentencePieceProcessor(model_file=sentencepiece_model)
        else:
            if BPE is None:
                raise ImportError("this tokenizer needs subword-nmt: pip install subword-nmt")
            with open(bpe_codes, encoding="utf-8") as codes:
                self.bpe = BPE(codes)
        self.moses_tokenizer = self.moses_detokenizer = None
        if moses_lang:
            if MosesTokenizer is None:
                raise ImportError("this tokenizer needs sacremoses: pip install sacremoses")
            self.moses_tokenizer = MosesTokenizer(lang=moses_lang)
            self.moses_detokenizer = MosesDetokenizer(lang=target_lang or moses_lang)
        for key, value in {
            "bos_token": "<s>",
            "eos_token": "</s>",
            "pad_token": "<pad>",
            "unk_token": "<unk>",
        }.items():
            kwargs.setdefault(key, value)
        super().__init__(**kwargs)

    @property
    def vocab_size(self) -> int:
        return len(self.source_symbols)

    def get_vocab(self) -> dict[str, int]:
        return dict(self.source_ids)

    def _tokenize(self, text: str, **kwargs) -> list[str]:
        if (
            self.moses_tokenizer is not None
        ):  # tokenizer.perl, then lowercase.perl (prepare-iwslt14.sh's order)
            text = self.moses_tokenizer.tokenize(text, return_str=True, escape=True)
        if self.lowercase:
            text = text.lower()
        if self.sentencepiece_model is not None:
            return self.sp.encode(text, out_type=str)
        return self.bpe.process_line(text).split()

    def _convert_token_to_id(self, token: str) -> int:
        return self.source_ids.get(token, self.source_ids["<unk>"])

    def _convert_id_to_token(self, index: int) -> str:
        """Ids out of the model are target ids."""
        return self.target_symbols[index]

    def build_inputs_with_special_tokens(
        self, token_ids_0: list[int], token_ids_1: list[int] | None = None
    ) -> list[int]:
        """A source sentence as fairseq binarizes it: its ids, then ``</s>``."""
        if token_ids_1 is not None:
            raise ValueError("a translation source is one sentence")
        return [*token_ids_0, self.eos_token_id]

    def get_special_tokens_mask(
        self,
        token_ids_0: list[int],
        token_ids_1: list[int] | None = None,
        already_has_special_tokens: bool = False,
    ) -> list[int]:
        if already_has_special_tokens:
            return [1 if t in (0, 1, 2) else 0 for t in token_ids_0]
        return [0] * len(token_ids_0) + [1]

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        """fairseq's ``--post-process sentencepiece`` / ``--remove-bpe``, then the Moses detokenizer."""
        line = " ".join(tokens)
        if self.sentencepiece_model is not None:
            line = line.replace(" ", "").replace("\u2581", " ").strip()
        else:
            line = (line + " ").replace("@@ ", "").rstrip()
        if self.moses_detokenizer is not None:
            line = self.moses_detokenizer.detokenize(line.split(), unescape=True)
        return line

    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None) -> tuple[str, ...]:
        prefix = f"{filename_prefix}-" if filename_prefix else ""
        out = []
        for attribute, name in VOCAB_FILES_NAMES.items():
            source = getattr(self, attribute)
            if source is None:
                continue
            target = os.path.join(save_directory, prefix + name)
            if os.path.abspath(source) != os.path.abspath(target):
                shutil.copyfile(source, target)
            out.append(target)
        return tuple(out)
