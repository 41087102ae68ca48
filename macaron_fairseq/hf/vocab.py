"""A WordPiece vocabulary (``vocab.txt``) as a fairseq dictionary, and the id maps between the two.

fairseq's ``Dictionary`` always starts with ``<s> <pad> </s> <unk>`` (ids 0–3) and the BERT tasks append
``<mask>`` after the file's entries; BERT's ``vocab.txt`` puts ``[PAD]`` at 0 and ``[UNK] [CLS] [SEP]
[MASK]`` at 100–103 (bert-base-uncased). So ``[CLS] [PAD] [SEP] [UNK]`` become ids 0–3 (bos, pad, eos, unk:
BERT's CLS and SEP are what the plugin's tasks use ``<s>`` and ``</s>`` for), every other token keeps its
own string in ``dict.txt`` in vocabulary order, and ``[MASK]`` is the appended ``<mask>``. The model's
embedding rows, MLM output bias and logits are permuted accordingly (:attr:`WordPieceVocabulary.order`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from macaron_workflow.errors import UserError

#: fairseq's special symbols, in id order, and the BERT tasks' appended mask symbol
FAIRSEQ_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")
FAIRSEQ_MASK = "<mask>"
#: which of the tokenizer's special tokens plays which fairseq role, in fairseq's id order
ROLES = ("cls_token", "pad_token", "sep_token", "unk_token")
DEFAULT_SPECIALS = {
    "cls_token": "[CLS]",
    "pad_token": "[PAD]",
    "sep_token": "[SEP]",
    "unk_token": "[UNK]",
    "mask_token": "[MASK]",
}


def _token(value: object) -> str | None:
    """A special token as tokenizer_config.json stores it: a string, or an AddedToken dict."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def special_tokens(hf_dir: Path) -> dict[str, str]:
    """The special tokens of the tokenizer saved in ``hf_dir`` (tokenizer_config.json, then
    special_tokens_map.json; BERT's names otherwise)."""
    specials = dict(DEFAULT_SPECIALS)
    for name in ("special_tokens_map.json", "tokenizer_config.json"):
        path = hf_dir / name
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise UserError(f"{path}: not valid JSON ({err})") from err
        for role in DEFAULT_SPECIALS:
            token = _token(data.get(role))
            if token:
                specials[role] = token
    return specials


def read_vocab_txt(path: Path) -> list[str]:
    """The tokens of a WordPiece ``vocab.txt``, one per line (id = line number)."""
    if not path.is_file():
        raise UserError(f"{path}: no such file (a WordPiece model's directory holds its vocab.txt)")
    tokens = path.read_text(encoding="utf-8").split("\n")
    if tokens and tokens[-1] == "":
        tokens.pop()
    return [t.rstrip("\r") for t in tokens]


def read_tokenizer_json(path: Path) -> list[str]:
    """The tokens of a fast tokenizer's WordPiece model (``model.vocab``: token → id, ids 0…V−1)."""
    try:
        model = json.loads(path.read_text(encoding="utf-8"))["model"]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as err:
        raise UserError(f"{path}: not a tokenizer.json ({err})") from err
    if model.get("type") != "WordPiece" or not isinstance(model.get("vocab"), dict):
        raise UserError(f"{path}: a {model.get('type')!r} tokenizer; only WordPiece (BERT's) is imported")
    by_id = {int(i): token for token, i in model["vocab"].items()}
    if sorted(by_id) != list(range(len(by_id))):
        raise UserError(f"{path}: the vocabulary's ids are not 0…{len(by_id) - 1}")
    return [by_id[i] for i in range(len(by_id))]


@dataclass(frozen=True)
class WordPieceVocabulary:
    """A WordPiece vocabulary and its fairseq dictionary.

    ``order[f]`` is the WordPiece id of fairseq id ``f`` (so ``hf_rows[order]`` gives fairseq's rows);
    ``inverse[h]`` the fairseq id of WordPiece id ``h``."""

    tokens: tuple[str, ...]
    specials: dict[str, str]
    order: torch.Tensor
    inverse: torch.Tensor

    @classmethod
    def build(cls, tokens: list[str], specials: dict[str, str], source: Path) -> WordPieceVocabulary:
        ids: dict[str, int] = {}
        for i, token in enumerate(tokens):
            if not token or token != token.strip() or any(c.isspace() for c in token):
                raise UserError(
                    f"{source}:{i + 1}: token {token!r} is empty or holds whitespace, which a "
                    "fairseq dictionary cannot hold"
                )
            if token in ids:
                raise UserError(f"{source}:{i + 1}: token {token!r} repeats line {ids[token] + 1}")
            ids[token] = i
        reserved = [t for t in (*FAIRSEQ_SPECIALS, FAIRSEQ_MASK) if t in ids]
        if reserved:
            raise UserError(
                f"{source}: tokens {reserved} are fairseq's special symbols; this vocabulary "
                "cannot be carried over token by token"
            )
        roles = [*ROLES, "mask_token"]
        missing = [f"{role}={specials[role]!r}" for role in roles if specials[role] not in ids]
        if missing:
            raise UserError(f"{source}: the special tokens {', '.join(missing)} are not in the vocabulary")
        special_ids = [ids[specials[role]] for role in ROLES]
        mask_id = ids[specials["mask_token"]]
        if len(set([*special_ids, mask_id])) != len(roles):
            raise UserError(f"{source}: two special roles share a token ({specials})")
        taken = {*special_ids, mask_id}
        order = [*special_ids, *(i for i in range(len(tokens)) if i not in taken), mask_id]
        order_t = torch.tensor(order, dtype=torch.long)
        inverse = torch.empty_like(order_t)
        inverse[order_t] = torch.arange(len(order), dtype=torch.long)
        return cls(tuple(tokens), dict(specials), order_t, inverse)

    @classmethod
    def from_dir(cls, hf_dir: Path) -> WordPieceVocabulary:
        """From ``vocab.txt``, or from ``tokenizer.json`` (transformers 5 saves only that one)."""
        path = hf_dir / "vocab.txt"
        if not path.is_file() and (hf_dir / "tokenizer.json").is_file():
            path = hf_dir / "tokenizer.json"
            return cls.build(read_tokenizer_json(path), special_tokens(hf_dir), path)
        return cls.build(read_vocab_txt(path), special_tokens(hf_dir), path)

    def vocab_txt(self) -> str:
        return "".join(f"{token}\n" for token in self.tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    def dictionary_lines(self) -> str:
        """``dict.txt``: every token but the five specials, in fairseq id order (ids 4 … V−2)."""
        body = self.order[len(FAIRSEQ_SPECIALS) : -1].tolist()
        return "".join(f"{self.tokens[i]} 1\n" for i in body)

    def to_fairseq_rows(self, hf_rows: torch.Tensor) -> torch.Tensor:
        """Rows (embeddings, output bias) in WordPiece id order → fairseq id order."""
        return hf_rows.index_select(0, self.order).contiguous()

    def to_hf_rows(self, fairseq_rows: torch.Tensor) -> torch.Tensor:
        return fairseq_rows.index_select(0, self.inverse).contiguous()

    def record(self) -> dict[str, object]:
        """What the checkpoint keeps to undo the permutation on export."""
        return {"kind": "wordpiece", "specials": self.specials, "order": self.order.tolist()}
