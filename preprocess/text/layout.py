"""Where the text stages put their files inside a destination directory.

::

    ROOT/raw/{split}.{src,tgt}   raw (detokenized) text of the kept pairs, references for sacreBLEU
    ROOT/tok/{split}.{src,tgt}   Moses-tokenized text, references for tokenized BLEU
    ROOT/spm.model, spm.vocab    joint sentencepiece BPE model
    ROOT/subword_nmt.codes       joint subword-nmt BPE codes (instead of spm.*, where a recipe uses them)
    ROOT/bpe/{split}.{src,tgt}   sentencepiece pieces separated by spaces
    DATA_BIN/                    fairseq-preprocess --joined-dictionary output: ROOT itself (the --dest of
                                 every text preprocessor is the data-bin), or ROOT/data-bin in a directory
                                 that ``macaron-preprocess-custom`` wrote before it followed the others
    ROOT/.stages/                completion markers of the resumable stages

``src``/``tgt`` stand for the language codes (``train.en``, ``train.de``), the suffixes fairseq expects.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from macaron_preprocess.text.bitext import BitextFiles

#: where ``macaron-preprocess-custom`` put the data-bin inside ``--dest`` before ``--dest`` was the data-bin
LEGACY_DATA_BIN = "data-bin"


def _has_dictionary(folder: Path) -> bool:
    return folder.is_dir() and any(folder.glob("dict.*.txt"))


def legacy_data_bin(dest: Path) -> Path | None:
    """``dest/data-bin`` if ``dest`` is a preprocessed directory of the old ``macaron-preprocess-custom``
    layout (the dictionaries in ``dest/data-bin/``, none in ``dest``), else ``None``."""
    old = dest / LEGACY_DATA_BIN
    return old if _has_dictionary(old) and not _has_dictionary(dest) else None


def data_bin_of(dest: Path) -> Path:
    """The fairseq data-bin of a text preprocessor's ``--dest``: ``dest`` itself, or, for a directory of the
    old ``macaron-preprocess-custom`` layout, ``dest/data-bin`` (one line on stderr says so)."""
    old = legacy_data_bin(dest)
    if old is None:
        return dest
    print(
        f"[data-bin] {dest} has the old layout of macaron-preprocess-custom (its data-bin in {old}): reading "
        f"it there (a rerun with --force writes the data-bin into {dest} itself)",
        file=sys.stderr,
        flush=True,
    )
    return old


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
