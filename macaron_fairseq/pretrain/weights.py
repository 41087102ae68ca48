"""The weights of a committed pre-training checkpoint, whatever its ZeRO stage: what ``--init-from`` starts
from and what ``macaron-export`` writes.

At ZeRO stage 1 and 2 the fp32 master weights live in the optimizer's partitions (``*_optim_states.pt``, one
per rank) and DeepSpeed's ``zero_to_fp32.get_fp32_state_dict_from_zero_checkpoint`` gathers them. At stage 0
there are no partitions: that function fails (``TypeError: 'NoneType' object is not iterable`` in DeepSpeed
0.19.8), and the weights are the module's own, in ``mp_rank_00_model_states.pt`` — fp32 under
``torch_autocast`` (``configs/deepspeed/lamb_64k.json``) or fp32 training, the bf16/fp16 model's weights (as
float) when the config enables ``bf16``/``fp16`` at stage 0. The stage is the one the checkpoint's
``complete.json`` records (:mod:`.checkpoints`); without one, the files tell (ZeRO 1-2 write
``zero_pp_rank_*_optim_states.pt``). Every file is read through the allow-list.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch


def zero_stage(tag_dir: Path, manifest: dict[str, Any] | None) -> int:
    """The ZeRO stage checkpoint ``tag_dir`` was saved at: its manifest's, else 1 when it holds optimizer
    partitions, 0 when it does not."""
    if manifest and "zero_stage" in manifest:
        return int(manifest["zero_stage"])
    return 1 if any(tag_dir.glob("zero_pp_rank_*_optim_states.pt")) else 0


def checkpoint_weights(
    save_dir: Path, tag: str, manifest: dict[str, Any] | None, flag: str | None = None
) -> dict[str, torch.Tensor]:
    """The fp32 weights of checkpoint ``tag`` of ``save_dir`` (``manifest``: its ``complete.json``; ``flag``
    names the option in messages about unreadable files)."""
    from macaron_fairseq.checkpoint_reader import load_checkpoint, restricted_loads
    from macaron_fairseq.repairs.checkpoint_safety import deepspeed_globals

    if zero_stage(save_dir / tag, manifest) == 0:
        client = load_checkpoint(save_dir / tag / "mp_rank_00_model_states.pt", flag=flag)
        return {name: value.float() for name, value in client["module"].items()}
    from deepspeed.utils.zero_to_fp32 import get_fp32_state_dict_from_zero_checkpoint

    with restricted_loads(deepspeed_globals()):  # DeepSpeed asks torch.load for weights_only=False
        return dict(get_fp32_state_dict_from_zero_checkpoint(str(save_dir), tag=tag))
