"""The checkpoint allow-list (``macaron_fairseq.repairs.checkpoint_safety``) under torch's default
``weights_only=True`` load."""

from __future__ import annotations

import io
import os
import pickle

import pytest
import torch
from omegaconf import OmegaConf

from macaron_fairseq.repairs import checkpoint_safety


def test_a_resumed_state_broadcast_between_ranks_loads() -> None:
    """What fairseq sends from rank 0 when a distributed training resumes (``broadcast_object``): the
    loaded checkpoint, whose cfg is a DictConfig, its tensors replaced by placeholders, by torch.save."""
    from fairseq.distributed import utils as distributed_utils

    checkpoint_safety.install()
    cfg = OmegaConf.create(
        {"common": {"seed": 1, "cpu": True, "tags": [1, 2]}, "model": None, "task": {"_name": "x"}}
    )
    state = {"cfg": cfg, "model": {"w": torch.ones(2)}, "extra_state": {"train_iterator": {"epoch": 2}}}
    tensors: list[torch.Tensor] = []
    sent = distributed_utils._split_tensors_from_obj(state, tensors)
    buffer = io.BytesIO()
    torch.save(sent, buffer)
    assert os.environ.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD") is None  # the default, restricted load
    received = distributed_utils._put_tensors_in_obj(torch.load(io.BytesIO(buffer.getvalue())), tensors)
    assert received["cfg"] == cfg and received["cfg"].common.tags == [1, 2]
    assert torch.equal(received["model"]["w"], torch.ones(2))


class Payload:
    def __reduce__(self):  # what a malicious checkpoint does
        return (os.system, ("true",))


def test_other_globals_are_still_refused() -> None:
    checkpoint_safety.install()
    buffer = io.BytesIO()
    torch.save({"cfg": OmegaConf.create({"a": 1}), "x": Payload()}, buffer)
    with pytest.raises(pickle.UnpicklingError, match="system"):
        torch.load(io.BytesIO(buffer.getvalue()), map_location="cpu")
