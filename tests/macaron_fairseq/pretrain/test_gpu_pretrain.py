"""On CUDA GPUs (marked ``gpu``: skipped without one): the pre-trainer under NCCL with one rank per GPU (two
when there are two), bf16 with DT-Fixup (its μ pass on each rank's GPU, the maxima all-reduced there), then
``macaron-export`` of the run, loaded by fairseq; and the DeepSpeed op preflight of ``lamb_64k.json`` either
loads FusedLamb or says in one line what the build lacks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import DT_FIXUP, REPO
from test_pretrain_e2e import TINY_CONFIG, free_port, records

pytestmark = pytest.mark.gpu
CONFIGS = REPO / "configs" / "deepspeed"


def gpu_ranks() -> int:
    return min(2, torch.cuda.device_count())


def test_pretraining_on_the_gpus_with_dt_fixup_then_export(corpus: Path, tmp_path: Path) -> None:
    from fairseq import checkpoint_utils

    config = json.loads(TINY_CONFIG.read_text())
    config["bf16"] = {"enabled": True}
    config.pop("gradient_accumulation_steps", None)
    path = tmp_path / "bf16.json"
    path.write_text(json.dumps(config))
    save = tmp_path / "run"
    ranks = gpu_ranks()
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        str(ranks),
        "--master_port",
        str(free_port()),
        "-m",
        "macaron_fairseq.pretrain",
        str(corpus),
        "--arch",
        "macaron_bert_tiny",
        "--deepspeed-config",
        str(path),
        "--save-dir",
        str(save),
        "--seed",
        "3",
        "--log-interval",
        "1",
        "--max-update",
        "6",
        *DT_FIXUP,
    ]
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONWARNINGS="ignore")
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-5000:]
    devices = re.findall(r"DT-Fixup μ pass \(encoder\): .*, on (cuda:\d)\)", proc.stderr)
    assert sorted(devices) == [f"cuda:{r}" for r in range(ranks)]  # each rank on its own GPU
    log = records(save)
    assert [r["step"] for r in log] == list(range(1, 7))
    assert all(torch.isfinite(torch.tensor(r["mlm_loss"])) for r in log)
    (valid,) = records(save, "valid")
    assert valid["pairs"] > 0

    out = tmp_path / "model.pt"
    exported = subprocess.run(
        ["macaron-export", str(save), "--out", str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert exported.returncode == 0, exported.stderr[-3000:]
    models, _, _ = checkpoint_utils.load_model_ensemble_and_task([str(out)])
    assert all(torch.isfinite(p).all() for p in models[0].parameters())


def test_the_lamb_preflight_loads_the_op_or_names_what_is_missing(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "macaron_fairseq.pretrain.ops",
        "--deepspeed-config",
        str(CONFIGS / "lamb_64k.json"),
    ]
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONWARNINGS="ignore")
    proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800)
    if proc.returncode == 0:
        assert "lamb_64k.json: DeepSpeed's fused_lamb op loaded in" in proc.stdout
    else:
        assert proc.returncode == 2, proc.stderr[-3000:]
        (line,) = [line for line in proc.stderr.splitlines() if "error:" in line]
        assert "needs DeepSpeed's fused_lamb op" in line and "missing" in line
