"""``import fairseq`` without importing DeepSpeed.

``import fairseq`` imports every optimizer module of ``fairseq.optim``, and ``fairseq/optim/cpu_adam.py``
starts with ``try: import deepspeed; has_deepspeed = True / except ImportError: has_deepspeed = False``.
With DeepSpeed installed (the ``pretrain`` extra) every import of fairseq therefore loads DeepSpeed
(~0.5 s of import time, hundreds of modules, and its "Setting accelerator to CPU" warning on stderr), although
only ``--optimizer cpu_adam`` uses it, and only inside its functions (which import ``deepspeed.ops`` again
themselves).

:func:`import_fairseq` imports fairseq with ``deepspeed`` blocked for that one import
(``sys.modules["deepspeed"] = None``: ``import deepspeed`` raises ``ImportError``), then sets
``cpu_adam.has_deepspeed`` to whether DeepSpeed is installed (``importlib.util.find_spec``, which imports
nothing), so ``--optimizer cpu_adam`` behaves as before. The plugin calls it before anything else imports
fairseq. When fairseq or DeepSpeed is already imported there is nothing to do: ``fairseq-train``,
``fairseq-generate`` and the hub import fairseq (and with it DeepSpeed, when installed) before they load the
``--user-dir`` plugin; the plugin adds nothing to that. What the repair saves is the import of the plugin
by anything else (``python -m macaron_fairseq.hf``, ``macaron_preprocess.glue --checkpoint``, the pipelines,
tests), and by ``macaron_tools.train_preemptible`` (the GLUE and translation runs' trainer), which imports the
``--user-dir`` plugin before fairseq.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys


def deepspeed_installed() -> bool:
    """Whether DeepSpeed can be imported (without importing it)."""
    return importlib.util.find_spec("deepspeed") is not None


def import_fairseq() -> None:
    """Import fairseq without letting ``fairseq.optim.cpu_adam`` import DeepSpeed (idempotent)."""
    if "fairseq" in sys.modules or "deepspeed" in sys.modules:
        return
    sys.modules["deepspeed"] = None  # type: ignore[assignment]  # "import deepspeed" raises ImportError
    try:
        importlib.import_module("fairseq")
    finally:
        if "deepspeed" in sys.modules and sys.modules["deepspeed"] is None:
            del sys.modules["deepspeed"]
    cpu_adam = sys.modules.get("fairseq.optim.cpu_adam")
    if cpu_adam is not None:
        cpu_adam.has_deepspeed = deepspeed_installed()  # type: ignore[attr-defined]


__all__ = ["deepspeed_installed", "import_fairseq"]
