"""Where ``python -m macaron_preprocess.bert_corpus`` puts its files::

DEST/dict.txt, train.{bin,idx}, valid.{bin,idx}   the fairseq data-bin (one item per sentence, an
                                                 empty item between documents)
DEST/sentencepiece.bpe.model, .vocab             the BPE model
DEST/text/{train,valid}.txt                      tokenized, lowercased sentences before BPE,
                                                 documents separated by a blank line
DEST/summary.json                                counts per source and split, drops, stage times
DEST/work/extract/<source>/{train,valid}.txt     one source's text (a dump file, the books)
DEST/work/bpe/{train,valid}.bpe                  the text in sentencepiece pieces
DEST/work/downloads/                             --wikipedia latest
DEST/.stages/                                    completion markers of the resumable stages
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from macaron_preprocess.text.extract import ExtractOutputs

SPLITS = ("train", "valid")


@dataclass(frozen=True)
class CorpusLayout:
    dest: Path

    @property
    def state_dir(self) -> Path:
        return self.dest / ".stages"

    def extract(self, label: str) -> ExtractOutputs:
        return ExtractOutputs(self.dest / "work" / "extract" / label)

    def text(self, split: str) -> Path:
        return self.dest / "text" / f"{split}.txt"

    def bpe(self, split: str) -> Path:
        return self.dest / "work" / "bpe" / f"{split}.bpe"

    @property
    def downloads(self) -> Path:
        return self.dest / "work" / "downloads"

    @property
    def spm_model(self) -> Path:
        return self.dest / "sentencepiece.bpe.model"

    @property
    def spm_vocab(self) -> Path:
        return self.dest / "sentencepiece.bpe.vocab"

    @property
    def dictionary(self) -> Path:
        return self.dest / "dict.txt"

    def binarized(self, split: str) -> list[Path]:
        return [self.dest / f"{split}.bin", self.dest / f"{split}.idx"]

    @property
    def summary(self) -> Path:
        return self.dest / "summary.json"
