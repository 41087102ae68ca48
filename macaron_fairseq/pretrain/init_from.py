"""``--init-from SAVE_DIR_OR_EXPORT``: start a run from another run's weights (BERT's phase 2 from phase 1).

Weights only: the optimizer, the learning-rate schedule and the data position start afresh, as BERT's phase 2
does (sequence length 512, its own warm-up). The source is either a pre-training ``--save-dir`` (its newest
complete checkpoint, :mod:`.checkpoints`; its weights at any ZeRO stage, :mod:`.weights`) or a fairseq
checkpoint (``python -m macaron_fairseq.pretrain.export``'s ``model.pt``). Both are untrusted input: every
file is read through :mod:`macaron_fairseq.checkpoint_reader`'s allow-list, nothing of it is executed.

The weights are loaded into the model before ``deepspeed.initialize`` (so the engine's fp32 master weights
and its bf16/fp16 copy are made from them); a parameter missing or of another shape is an error naming it.
A run that has a checkpoint of its own resumes from it instead (a preempted phase 2 continues phase 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from macaron_fairseq.pretrain import checkpoints
from macaron_workflow.errors import UserError

FLAG = "--init-from"


@dataclass
class InitWeights:
    """The weights to start from and where they came from (for the log)."""

    source: str
    arch: str | None
    state: dict[str, torch.Tensor]


def read_init_weights(path: Path) -> InitWeights:
    """The weights of a save directory's newest complete checkpoint or of a fairseq checkpoint file."""
    if path.is_dir():
        return _from_save_dir(path)
    from macaron_fairseq.checkpoint_reader import read_checkpoint

    state, info = read_checkpoint(path, flag=FLAG)
    model = state.get("model")
    if not isinstance(model, dict):
        raise UserError(f"{FLAG} {path}: not a fairseq checkpoint (no 'model' weights)")
    return InitWeights(str(path), info.arch, dict(model))


def _from_save_dir(save_dir: Path) -> InitWeights:
    from macaron_fairseq.pretrain.weights import checkpoint_weights

    choice = checkpoints.choose(save_dir)
    if choice.tag is None:
        raise UserError(f"{FLAG} {save_dir}: no complete checkpoint of python -m macaron_fairseq.pretrain")
    manifest = choice.manifest or {}
    state = checkpoint_weights(save_dir, choice.tag, manifest, flag=FLAG)
    return InitWeights(str(save_dir / choice.tag), manifest.get("arch"), state)


def check_init_arch(weights: InitWeights, arch: str) -> None:
    """The weights are of the architecture this run trains (checked before anything is built)."""
    if weights.arch is not None and weights.arch != arch:
        raise UserError(
            f"{FLAG} {weights.source} holds a {weights.arch} model; this command trains {arch} "
            f"(give --arch {weights.arch}, or weights of {arch})"
        )


def load_into(model: torch.nn.Module, weights: InitWeights, arch: str) -> None:
    """Copy ``weights`` into ``model`` (parameters tied to a loaded one may be absent: DeepSpeed's
    ``zero_to_fp32`` drops them, the tie fills them)."""
    from macaron_fairseq.bert_checkpoint import tied_names

    check_init_arch(weights, arch)
    own = model.state_dict()
    for name, value in weights.state.items():
        if name in own and own[name].shape != value.shape:
            raise UserError(
                f"{FLAG} {weights.source}: {name} has shape {tuple(value.shape)}, this model's "
                f"{tuple(own[name].shape)}"
            )
    missing, unexpected = model.load_state_dict(weights.state, strict=False)
    untied = sorted(set(missing) - tied_names(model))
    if untied or unexpected:
        raise UserError(
            f"{FLAG} {weights.source} does not match {arch}: missing {untied[:5]}, "
            f"unexpected {unexpected[:5]}"
        )
