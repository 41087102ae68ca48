"""The tokenizer that travels with an exported model, and the vocabulary's id order on the HF side.

* imported WordPiece model (its data directory holds ``hf_vocabulary.json``): its own tokenizer files, and
  the rows back in the WordPiece ids they came with;
* a model pre-trained on this project's data (a data-bin with ``sentencepiece.bpe.model``): the fairseq ids
  themselves, and :mod:`macaron_fairseq.hf.tokenization_macaron` (sentencepiece + ``dict.txt``, via
  ``auto_map``); without a sentencepiece model only ``dict.txt`` travels and the export says so.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from macaron_fairseq.hf.importer import TOKENIZER_DIR, VOCABULARY_RECORD
from macaron_workflow.errors import UserError

SPM_MODEL = "sentencepiece.bpe.model"
TOKENIZER_FILE = "tokenization_macaron.py"


@dataclass
class ExportTokenizer:
    kind: str  # "wordpiece" | "sentencepiece" | "dictionary-only"
    to_hf_ids: torch.Tensor  # fairseq id → HF id
    hf_pad: int
    save: Callable[[Path], None]

    def to_hf_rows(self, rows: torch.Tensor) -> torch.Tensor:
        """Rows in fairseq id order → HF id order."""
        out = torch.empty_like(rows)
        out[self.to_hf_ids] = rows
        return out


def tokenizer_for(data_dir: Path, dictionary: Any) -> ExportTokenizer:
    record_path = data_dir / VOCABULARY_RECORD
    if record_path.is_file():
        record = json.loads(record_path.read_text(encoding="utf-8"))
        order = torch.tensor(record["order"], dtype=torch.long)
        if len(order) != len(dictionary):
            raise UserError(f"{record_path}: {len(order)} tokens, the model's dictionary {len(dictionary)}")
        source = data_dir / record.get("tokenizer_dir", TOKENIZER_DIR)

        def save_wordpiece(dest: Path) -> None:
            for path in sorted(source.iterdir()):
                if path.is_file():
                    shutil.copyfile(path, dest / path.name)

        return ExportTokenizer("wordpiece", order, int(order[dictionary.pad()]), save_wordpiece)
    identity = torch.arange(len(dictionary), dtype=torch.long)
    spm_model = data_dir / SPM_MODEL

    def save_ours(dest: Path) -> None:
        dictionary_file = data_dir / "dict.txt"
        shutil.copyfile(dictionary_file, dest / "dict.txt")
        if not spm_model.is_file():
            return
        shutil.copyfile(spm_model, dest / SPM_MODEL)
        shutil.copyfile(Path(__file__).with_name(TOKENIZER_FILE), dest / TOKENIZER_FILE)
        stem = TOKENIZER_FILE.removesuffix(".py")
        config = {
            "tokenizer_class": "MacaronTokenizer",
            "auto_map": {"AutoTokenizer": [f"{stem}.MacaronTokenizer", None]},
            "vocab_file": "dict.txt",
            "sentencepiece_model": SPM_MODEL,
            "model_max_length": 512,
        }
        (dest / "tokenizer_config.json").write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")

    kind = "sentencepiece" if spm_model.is_file() else "dictionary-only"
    return ExportTokenizer(kind, identity, dictionary.pad(), save_ours)
