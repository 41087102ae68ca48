"""Read a checkpoint of the Macaron authors' fairseq 0.6 fork without running code from it.

Their checkpoints (``utils.save_state`` of fairseq 0.6, torch's legacy or zip format) hold ``args`` (an
``argparse.Namespace``), the ``model`` state dict, ``optimizer_history``, ``last_optimizer_state`` and
``extra_state``. The last one pickles the trainer's meters (``extra_state['train_meters']``, an
``OrderedDict`` of ``fairseq.meters.AverageMeter`` / ``TimeMeter`` / ``StopwatchMeter`` objects), classes
that no current fairseq has. The file is untrusted: it is read through the checkpoint allow-list
(:func:`macaron_workflow.checkpoint_safety.load_checkpoint`, ``torch.load(weights_only=True)``), and only
for the three meter classes the restricted unpickler builds an :class:`InertMeter` instead — a class with no
methods, whose instances only receive the meter's attributes as data. Any other global is refused as for
every checkpoint: one line that names it, nothing executed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from macaron_workflow.checkpoint_safety import load_checkpoint

#: the classes fairseq 0.6's trainer pickles into ``extra_state['train_meters']``
FAIRSEQ_06_METERS = (
    "fairseq.meters.AverageMeter",
    "fairseq.meters.TimeMeter",
    "fairseq.meters.StopwatchMeter",
)


class InertMeter:
    """What a fairseq 0.6 meter becomes when read: its attributes as data, no behaviour."""

    def __repr__(self) -> str:
        return f"InertMeter({vars(self)})"


def read_authors_checkpoint(path: Path, flag: str | None = None) -> dict[str, Any]:
    """The whole state of ``path`` (tensors memory-mapped where the format allows), through the allow-list
    plus :data:`FAIRSEQ_06_METERS` read as :class:`InertMeter`. Raises
    :class:`~macaron_workflow.checkpoint_safety.CheckpointError` or ``UnsafeCheckpointError``."""
    import torch

    with torch.serialization.safe_globals([(InertMeter, name) for name in FAIRSEQ_06_METERS]):
        return load_checkpoint(path, flag)
