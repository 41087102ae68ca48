"""The tokenizer files that travel with an exported translation model
(:mod:`macaron_fairseq.hf.tokenization_macaron_mt`, through ``auto_map``).

Found in the data directory: the dictionaries ``dict.SRC.txt`` / ``dict.TGT.txt`` (always copied), and the
subword model — ``spm.model`` / ``sentencepiece.bpe.model`` (this project's preprocessing writes
``spm.model`` beside the data-bin's files), or subword-nmt BPE codes (``--bpe-codes``, or a ``code`` /
``bpecodes`` file there, as fairseq's ``prepare-iwslt14.sh`` names it). The text steps before the subwords
are what this project's preprocessing does (Moses tokenizer, lowercased when the dictionary has no upper-case
letter); the tokenizer config records them. Without a subword model only the dictionaries travel (ids in,
ids out) and the export says so.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from macaron_workflow.errors import UserError

TOKENIZER_FILE = "tokenization_macaron_mt.py"
SPM_NAMES = ("spm.model", "sentencepiece.bpe.model")
CODES_NAMES = ("bpecodes", "code", "codes")


def _lowercased(dictionary: Path) -> bool:
    """No symbol of the dictionary has an upper-case letter: its text was lowercased."""
    with dictionary.open(encoding="utf-8") as f:
        return not any(ch.isupper() for line in f for ch in line.rpartition(" ")[0])


def tokenizer_files(data: Path, src: str | None, tgt: str | None, dest: Path, bpe_codes: Path | None) -> str:
    """Copy the tokenizer's files into ``dest``; returns its kind (sentencepiece / bpe / dictionary-only)."""
    src_dict, tgt_dict = data / f"dict.{src}.txt", data / f"dict.{tgt}.txt"
    shutil.copyfile(src_dict, dest / "dict.source.txt")
    shutil.copyfile(tgt_dict, dest / "dict.target.txt")
    if bpe_codes is not None and not bpe_codes.is_file():
        raise UserError(f"--bpe-codes {bpe_codes}: no such file")
    spm = next((data / n for n in SPM_NAMES if (data / n).is_file()), None)
    codes = bpe_codes or next((data / n for n in CODES_NAMES if (data / n).is_file()), None)
    config: dict[str, object] = {
        "tokenizer_class": "MacaronMTTokenizer",
        "auto_map": {"AutoTokenizer": [f"{TOKENIZER_FILE.removesuffix('.py')}.MacaronMTTokenizer", None]},
        "source_vocab": "dict.source.txt",
        "target_vocab": "dict.target.txt",
        "moses_lang": src,
        "target_lang": tgt,
        "lowercase": _lowercased(src_dict),
        "model_max_length": 1024,
    }
    if codes is not None:
        shutil.copyfile(codes, dest / "bpecodes")
        config["bpe_codes"], kind = "bpecodes", "bpe"
    elif spm is not None:
        shutil.copyfile(spm, dest / "spm.model")
        config["sentencepiece_model"], kind = "spm.model", "sentencepiece"
    else:
        return "dictionary-only"
    shutil.copyfile(Path(__file__).with_name(TOKENIZER_FILE), dest / TOKENIZER_FILE)
    (dest / "tokenizer_config.json").write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
    return kind
