"""The DeepSpeed engine the trainer builds from each shipped mixed-precision config accumulates and
all-reduces gradients in fp32 (DeepSpeed's default is the model's bf16/fp16), read from the engine itself."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

pytestmark = pytest.mark.slow
CONFIGS = REPO / "configs" / "deepspeed"

ENGINES = """
import json, sys
from macaron_fairseq.pretrain.__main__ import build_pretrainer

data, save, *configs = sys.argv[1:]
for config in configs:
    engine = build_pretrainer([data, "--arch", "macaron_bert_tiny", "--deepspeed-config", config,
                               "--save-dir", save]).engine
    model_dtype, accumulation = engine.get_data_types()
    print("RESULT " + json.dumps({
        "config": config, "optimizer": type(engine.optimizer).__name__,
        "params": sorted({str(p.dtype) for p in engine.module.parameters()}),
        "accumulation": str(accumulation), "communication": str(engine.communication_data_type),
        "grad_scaler": engine.torch_autocast_z0_gradscaler is not None,
    }), flush=True)
"""


def test_every_shipped_mixed_precision_config_accumulates_in_fp32(corpus: Path, tmp_path: Path) -> None:
    # LAMB is a CUDA kernel: the CPU run swaps in torch's AdamW, everything else as shipped
    lamb = json.loads((CONFIGS / "lamb_64k.json").read_text())
    lamb["optimizer"] = {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}}
    lamb["torch_autocast"]["dtype"] = "bfloat16"  # CPU autocast: fp16 runs too, bf16 is the CPU default
    (tmp_path / "lamb_64k_cpu.json").write_text(json.dumps(lamb))
    user = json.loads((CONFIGS / "tiny_cpu.json").read_text())
    user["bf16"] = {"enabled": True}  # a user's config without a data_types section
    user["zero_optimization"] = {"stage": 2}
    (tmp_path / "user_bf16_zero2.json").write_text(json.dumps(user))
    configs = [
        CONFIGS / "bert_phase1.json",
        CONFIGS / "bert_phase2.json",
        tmp_path / "lamb_64k_cpu.json",
        tmp_path / "user_bf16_zero2.json",
    ]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = dict(
        os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", MASTER_PORT=str(port)
    )
    command = [sys.executable, "-c", ENGINES, str(corpus), str(tmp_path / "run"), *map(str, configs)]
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-5000:]
    lines = [line.split(" ", 1)[1] for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    results = {Path(r["config"]).name: r for r in map(json.loads, lines)}
    assert len(results) == len(configs)
    for result in results.values():
        assert result["accumulation"] == "torch.float32", result
        assert result["communication"] == "torch.float32", result
    for name in ("bert_phase1.json", "bert_phase2.json"):
        # bf16 weights, DeepSpeed's BF16 optimizer with its fp32 accumulation buffers
        assert (
            results[name]["params"] == ["torch.bfloat16"] and results[name]["optimizer"] == "BF16_Optimizer"
        )
    assert results["user_bf16_zero2.json"]["optimizer"] == "DeepSpeedZeroOptimizer"
    # LAMB: fp32 weights and gradients (per-tensor trust ratios), autocast compute
    assert results["lamb_64k_cpu.json"]["params"] == ["torch.float32"]
    assert results["lamb_64k_cpu.json"]["optimizer"] == "AdamW"
    assert 'no "data_types.grad_accum_dtype": gradients are accumulated in fp32' in proc.stderr
