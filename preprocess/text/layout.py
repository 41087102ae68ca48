"""Where the text stages put their files inside a destination directory.

::

    ROOT/raw/{split}.{src,tgt}   raw (detokenized) text of the kept pairs, references for sacreBLEU
    ROOT/tok/{split}.{src,tgt}   Moses-tokenized text, references for tokenized BLEU
    ROOT/spm.model, spm.vocab    joint sentencepiece BPE model
    ROOT/subword_nmt.codes       joint subword-nmt BPE codes (instead of spm.*, where a recipe uses them)
    ROOT/bpe/{split}.{src,tgt}   sentencepiece pieces separated by spaces
    DATA_BIN/                    fairseq-preprocess --joined-dictionary output
    ROOT/.stages/                completion markers of the resumable stages

``src``/``tgt`` stand for the language codes (``train.en``, ``train.de``), the suffixes fairseq expects.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from macaron_preprocess.text.bitext import BitextFiles


@dataclass(frozen=True)
class OutputLayout:
    root: Path
    src: str
    tgt: str
    data_bin: Path

    def _pair(self, folder: str, split: str) -> BitextFiles:
        return BitextFiles.from_prefix(self.root / folder / split, self.src, self.tgt)

    def raw(self, split: str) -> BitextFiles:
        return self._pair("raw", split)

    def tok(self, split: str) -> BitextFiles:
        return self._pair("tok", split)

    def bpe(self, split: str) -> BitextFiles:
        return self._pair("bpe", split)

    def bpe_prefix(self, split: str) -> Path:
        return self.root / "bpe" / split

    @property
    def spm_model(self) -> Path:
        return self.root / "spm.model"

    @property
    def spm_vocab(self) -> Path:
        return self.root / "spm.vocab"

    @property
    def subword_nmt_codes(self) -> Path:
        return self.root / "subword_nmt.codes"

    @property
    def state_dir(self) -> Path:
        return self.root / ".stages"

    @property
    def work(self) -> Path:
        """Intermediate files of the corpus-specific extract stages."""
        return self.root / "work"
