"""Reading a HuggingFace model directory's weights without running code from it.

``save_pretrained`` writes ``model.safetensors`` (or shards listed in ``model.safetensors.index.json``);
older directories, such as bert-base-uncased's original upload, hold ``pytorch_model.bin`` (a pickle, or
shards in ``pytorch_model.bin.index.json``). safetensors files hold tensors only and are read with the
safetensors library; a ``.bin`` through :func:`macaron_fairseq.checkpoint_reader.load_checkpoint`
(``torch.load(weights_only=True)`` with the plugin's allow-list, which holds no callable): a file pickling
anything else is refused and nothing of it runs. Legacy LayerNorm names (``gamma``/``beta``) become
``weight``/``bias``, as transformers renames them on load.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from macaron_workflow.errors import UserError

SAFETENSORS = "model.safetensors"
PYTORCH_BIN = "pytorch_model.bin"


def _shards(index: Path) -> list[Path]:
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
    except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError) as err:
        raise UserError(f"{index}: not a weights index (no weight_map): {err}") from err
    names = sorted(set(weight_map.values()))
    for name in names:
        if Path(name).name != name:
            raise UserError(f"{index}: shard {name!r} is not a file of this directory")
    return [index.parent / name for name in names]


def _read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        return load_file(str(path), device="cpu")
    except (SafetensorError, OSError, ValueError) as err:
        raise UserError(
            f"{path}: not a readable safetensors file ({err}); give the complete file (save the "
            "model again with save_pretrained)"
        ) from None


def _read_bin(path: Path) -> dict[str, torch.Tensor]:
    """A ``.bin`` through the plugin's one reader of user checkpoints (``torch.load(weights_only=True)``
    with the allow-list, memory-mapped): a file pickling anything else is refused, nothing of it runs."""
    from macaron_fairseq.checkpoint_reader import load_checkpoint

    state = load_checkpoint(path, "HuggingFace weights")
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise UserError(f"{path}: not a state dict of tensors (HuggingFace weights are tensors only)")
    return state


def weight_files(hf_dir: Path) -> list[Path]:
    """The weight files of ``hf_dir``: safetensors first, as transformers prefers them."""
    for single in (SAFETENSORS, PYTORCH_BIN):
        if (hf_dir / single).is_file():
            return [hf_dir / single]
        if (hf_dir / f"{single}.index.json").is_file():
            return _shards(hf_dir / f"{single}.index.json")
    raise UserError(
        f"{hf_dir}: no {SAFETENSORS} or {PYTORCH_BIN} (nor a sharded index): not a directory "
        "written by save_pretrained"
    )


def read_weights(hf_dir: Path) -> dict[str, torch.Tensor]:
    """Every tensor of the model in ``hf_dir``, legacy names normalised."""
    state: dict[str, torch.Tensor] = {}
    for path in weight_files(hf_dir):
        if not path.is_file():
            raise UserError(f"{path}: listed in the weights index but missing")
        part = _read_safetensors(path) if path.suffix == ".safetensors" else _read_bin(path)
        state.update(part)
    return {_modern_name(k): v for k, v in state.items()}


def _modern_name(key: str) -> str:
    if key.endswith(".gamma"):
        return key[: -len("gamma")] + "weight"
    if key.endswith(".beta"):
        return key[: -len("beta")] + "bias"
    return key
