"""``import macaron_fairseq`` imports fairseq without DeepSpeed (``macaron_fairseq.repairs.lazy_deepspeed``),
and DeepSpeed and fairseq's ``cpu_adam`` still work afterwards."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from macaron_fairseq.repairs import lazy_deepspeed

ROOT = Path(__file__).resolve().parents[3]

_AFTER_THE_PLUGIN = """
import sys
import macaron_fairseq
import fairseq.optim.cpu_adam as cpu_adam
print("loaded" if "deepspeed" in sys.modules else "not loaded", cpu_adam.has_deepspeed)
import deepspeed  # the block is gone: DeepSpeed imports as usual when the trainer wants it
print(deepspeed.__name__, sys.modules["deepspeed"] is deepspeed)
"""


@pytest.mark.slow  # runs the real command in a fresh interpreter: 4-10 s (out of --quick)
@pytest.mark.skipif(importlib.util.find_spec("deepspeed") is None, reason="DeepSpeed is not installed")
def test_fairseq_is_imported_without_deepspeed_and_deepspeed_still_imports() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _AFTER_THE_PLUGIN], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = [line for line in proc.stdout.splitlines() if not line.startswith("[")]  # DeepSpeed's warning
    assert printed == ["not loaded True", "deepspeed True"], proc.stdout


def test_nothing_to_do_once_fairseq_is_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    """``fairseq-train`` imports fairseq before the plugin: the repair leaves ``sys.modules`` alone."""
    from fairseq.optim import cpu_adam

    monkeypatch.setattr(cpu_adam, "has_deepspeed", "untouched")
    lazy_deepspeed.import_fairseq()
    assert cpu_adam.has_deepspeed == "untouched"
    assert sys.modules.get("deepspeed", "absent") is not None  # never left blocked
    assert lazy_deepspeed.deepspeed_installed() is (importlib.util.find_spec("deepspeed") is not None)
