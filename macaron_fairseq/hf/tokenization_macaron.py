"""The tokenizer of a model pre-trained on this project's data (``trust_remote_code=True``): copied by
``python -m macaron_fairseq.hf export`` next to the model, with the corpus's ``sentencepiece.bpe.model``
and fairseq ``dict.txt``.

It gives the ids the model was trained with on text **processed as the pre-training text was** (Moses
punctuation normalisation, non-printing cleanup, Moses tokenization, lowercasing:
``macaron_preprocess.text``'s ``MOSES`` pipeline): sentencepiece pieces → the fairseq dictionary's ids
(``<s>`` 0, ``<pad>`` 1, ``</s>`` 2, ``<unk>`` 3, the dictionary's symbols from 4, ``<mask>`` last); a piece
the dictionary lacks is ``<unk>``, as in fairseq-preprocess. Pairs are ``<s> A </s> B </s>`` with token types
0 / 1, the plugin's BERT layout. It does **not** apply the Moses steps itself: raw text gives other pieces
than the pipeline's (give it the output of sacremoses with the same settings, or of
``macaron_preprocess.glue``'s text step).

Self-contained: needs only transformers and sentencepiece.
"""

from __future__ import annotations

import os
import shutil

from transformers import PreTrainedTokenizer

VOCAB_FILES_NAMES = {"vocab_file": "dict.txt", "sentencepiece_model": "sentencepiece.bpe.model"}
FAIRSEQ_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")


def read_fairseq_dictionary(path: str) -> list[str]:
    """fairseq's ``Dictionary.load`` order: the four specials, the file's symbols, then ``<mask>``."""
    symbols = list(FAIRSEQ_SPECIALS)
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            word = line.rsplit(" ", 1)[0]
            if word.endswith(" #fairseq:overwrite"):
                word = word[: -len(" #fairseq:overwrite")].rsplit(" ", 1)[0]
            symbols.append(word)
    if "<mask>" not in symbols:
        symbols.append("<mask>")
    return symbols


class MacaronTokenizer(PreTrainedTokenizer):
    vocab_files_names = VOCAB_FILES_NAMES
    model_input_names = ("input_ids", "token_type_ids", "attention_mask")

    def __init__(self, vocab_file: str, sentencepiece_model: str, **kwargs) -> None:
        import sentencepiece as spm

        self.vocab_file, self.sentencepiece_model = vocab_file, sentencepiece_model
        self.symbols = read_fairseq_dictionary(vocab_file)
        self.ids = {}
        for i, symbol in enumerate(self.symbols):
            self.ids.setdefault(symbol, i)
        self.sp = spm.SentencePieceProcessor(model_file=sentencepiece_model)
        defaults = {
            "bos_token": "<s>",
            "cls_token": "<s>",
            "eos_token": "</s>",
            "sep_token": "</s>",
            "pad_token": "<pad>",
            "unk_token": "<unk>",
            "mask_token": "<mask>",
        }
        for key, value in defaults.items():
            kwargs.setdefault(key, value)
        kwargs.setdefault("special_tokens_pattern", "cls_sep")
        super().__init__(**kwargs)

    @property
    def vocab_size(self) -> int:
        return len(self.symbols)

    def get_vocab(self) -> dict[str, int]:
        return dict(self.ids)

    def _tokenize(self, text: str, **kwargs) -> list[str]:
        return self.sp.encode(text, out_type=str)

    def _convert_token_to_id(self, token: str) -> int:
        return self.ids.get(token, self.ids["<unk>"])

    def _convert_id_to_token(self, index: int) -> str:
        return self.symbols[index]

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        return self.sp.decode(tokens)

    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None) -> tuple[str, ...]:
        prefix = f"{filename_prefix}-" if filename_prefix else ""
        out = []
        files = ((self.vocab_file, "dict.txt"), (self.sentencepiece_model, "sentencepiece.bpe.model"))
        for source, name in files:
            target = os.path.join(save_directory, prefix + name)
            if os.path.abspath(source) != os.path.abspath(target):
                shutil.copyfile(source, target)
            out.append(target)
        return tuple(out)
