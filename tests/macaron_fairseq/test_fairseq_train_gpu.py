"""On a CUDA GPU (marked ``gpu``): ``fairseq-train --fp16`` / ``--bf16`` with the plugin for a few updates,
Macaron layers with DT-Fixup (its μ pass on the GPU under the run's half precision), finite losses, the init
record applied — the paths a CPU run (``--cpu``) never takes: fairseq's FP16Optimizer with dynamic loss
scaling, the plugin's --bf16 repair on CUDA, CUDA kernels in half precision."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from helpers import DT_FIXUP, REPO, TINY, run_cli

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("precision", ["--fp16", "--bf16"])
def test_fairseq_train_in_half_precision_with_dt_fixup(
    precision: str, tiny_data_bin: Path, tmp_path: Path
) -> None:
    argv = [
        "fairseq-train",
        str(tiny_data_bin),
        "--user-dir",
        str(REPO / "macaron_fairseq"),
        "--task",
        "translation",
        "-s",
        "src",
        "-t",
        "tgt",
        "--arch",
        "macaron_small",
        *TINY,
        precision,
        *DT_FIXUP,
        "--optimizer",
        "adam",
        "--lr",
        "1e-3",
        "--lr-scheduler",
        "inverse_sqrt",
        "--warmup-updates",
        "2",
        "--max-update",
        "6",
        "--batch-size",
        "16",
        "--criterion",
        "cross_entropy",
        "--save-dir",
        str(tmp_path / "ckpt"),
        "--num-workers",
        "0",
        "--log-format",
        "simple",
        "--log-interval",
        "1",
        "--no-epoch-checkpoints",
        "--disable-validation",
        "--seed",
        "1",
    ]
    proc = run_cli(argv, cwd=tmp_path)
    log = proc.stdout + proc.stderr
    assert "DT-Fixup μ pass (encoder)" in log and ", on cuda:0)" in log  # the μ pass ran on the GPU
    assert "num_updates 6" in log
    losses = [float(x) for x in re.findall(r"\| loss ([0-9.]+)", log)]
    assert losses and all(torch.isfinite(torch.tensor(losses)))
    state = torch.load(tmp_path / "ckpt" / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert float(state["model"]["init_record.applied"]) == 1.0
    assert all(torch.isfinite(v.float()).all() for v in state["model"].values() if v.is_floating_point())
