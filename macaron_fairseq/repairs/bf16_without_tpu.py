"""``--bf16`` without a TPU: fairseq's ``--bf16`` implies ``--tpu``.

fairseq's option post-processing (``options.parse_args_and_arch``) sets ``tpu = True`` whenever ``--bf16``
is given — bf16 was a TPU feature when it was written — so without ``torch_xla`` installed
``fairseq-train --bf16 --cpu`` stops in ``Trainer.__init__`` with ``'NoneType' object has no attribute
'xla_device'``. No TPU run is possible then anyway. :func:`install` wraps
``fairseq.distributed.utils.call_main``, which every fairseq command calls with its parsed config (the
plugin itself is imported while the arguments are parsed, i.e. before): without ``torch_xla`` it switches
``tpu`` off again, so ``--bf16`` means bf16 on the run's own device (the CPU with ``--cpu``), and logs it.
With ``torch_xla`` installed nothing changes.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
from collections.abc import Callable
from typing import Any

from fairseq.distributed import utils as distributed_utils

logger = logging.getLogger(__name__)


def xla_available() -> bool:
    return importlib.util.find_spec("torch_xla") is not None


def bf16_on_own_device(cfg: Any) -> bool:
    """Switch off the ``tpu`` that ``--bf16`` implied when no TPU can be used; True if it did."""
    common = getattr(cfg, "common", None)
    if common is None or not (getattr(common, "bf16", False) and getattr(common, "tpu", False)):
        return False
    if xla_available():
        return False
    for name in cfg:  # common, distributed_training, optimizer (resolved copies), the model's Namespace
        section = getattr(cfg, name, None)
        if getattr(section, "tpu", False) is True:
            section.tpu = False
    logger.info(
        "--bf16 without torch_xla: training in bfloat16 on the %s, not on a TPU (fairseq's --bf16 implies "
        "--tpu)",
        "CPU" if getattr(common, "cpu", False) else "run's device",
    )
    return True


def on_own_device(call_main: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(call_main)
    def call_main_bf16_without_tpu(cfg: Any, main: Callable[..., Any], **kwargs: Any) -> Any:
        bf16_on_own_device(cfg)
        return call_main(cfg, main, **kwargs)

    call_main_bf16_without_tpu.__macaron_bf16_without_tpu__ = True  # type: ignore[attr-defined]
    return call_main_bf16_without_tpu


def install() -> None:
    """Patch ``fairseq.distributed.utils.call_main`` (idempotent)."""
    if not getattr(distributed_utils.call_main, "__macaron_bf16_without_tpu__", False):
        distributed_utils.call_main = on_own_device(distributed_utils.call_main)
