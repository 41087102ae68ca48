"""``macaron-hf import NAME_OR_DIR``: a Hugging Face Hub id (``bert-base-uncased``, ``org/name``) is
downloaded through ``huggingface_hub`` into its cache (``HF_HOME`` / ``HF_HUB_CACHE``), honouring its offline
mode (``HF_HUB_OFFLINE=1``: the cache only); a directory is used as it is. Only what the importer reads is
fetched: the config, the tokenizer files and the weights (safetensors when the repository has them, else
``pytorch_model.bin``)."""

from __future__ import annotations

import re
from pathlib import Path

from macaron_workflow.errors import UserError

#: a Hub repository id: NAME or ORG/NAME (letters, digits, - _ .), not a path
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")
CONFIG_AND_TOKENIZER = [
    "config.json",
    "vocab.txt",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
]
SAFETENSORS = ["model.safetensors", "model.safetensors.index.json", "model-*.safetensors"]
PYTORCH_BIN = ["pytorch_model.bin", "pytorch_model.bin.index.json", "pytorch_model-*.bin"]


def is_hub_id(name: str) -> bool:
    return bool(HUB_ID.match(name)) and not name.endswith((".", "..")) and ".." not in name


def _has_weights(folder: Path) -> bool:
    return any(folder.glob("model*.safetensors")) or any(folder.glob("pytorch_model*.bin"))


def resolve(name_or_dir: str | Path) -> Path:
    """The directory to import: ``name_or_dir`` itself when it exists (or looks like a path), else the
    Hub repository's snapshot in the huggingface_hub cache (downloaded unless offline)."""
    path = Path(name_or_dir)
    text = str(name_or_dir)
    if path.exists() or not is_hub_id(text):
        return path
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        folder = Path(snapshot_download(text, allow_patterns=CONFIG_AND_TOKENIZER + SAFETENSORS))
        if not _has_weights(folder):  # an older upload (bert-base-uncased's first): pytorch_model.bin
            folder = Path(snapshot_download(text, allow_patterns=CONFIG_AND_TOKENIZER + PYTORCH_BIN))
    except LocalEntryNotFoundError:
        why = "HF_HUB_OFFLINE is set" if constants.HF_HUB_OFFLINE else "the Hub cannot be reached"
        raise UserError(
            f"{text}: not in the Hugging Face cache and {why}; download it once online (the same command), "
            "or give a directory written by save_pretrained"
        ) from None
    except (RepositoryNotFoundError, GatedRepoError, RevisionNotFoundError) as err:
        raise UserError(
            f"{text}: no such model on the Hugging Face Hub, or not accessible ({type(err).__name__}); "
            "give a Hub id (NAME or ORG/NAME) or a directory written by save_pretrained"
        ) from None
    if not _has_weights(folder):
        raise UserError(
            f"{text}: the Hub repository has no model.safetensors or pytorch_model.bin ({folder})"
        )
    return folder
