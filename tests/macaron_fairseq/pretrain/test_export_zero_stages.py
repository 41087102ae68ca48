"""``macaron-export`` at every ZeRO stage the shipped configs use: stage 0 here (``lamb_64k.json``; no
optimizer partitions, where DeepSpeed's ``zero_to_fp32`` failed with "'NoneType' object is not iterable" after
a successful run); stage 1 (the AdamW configs) is the export of test_pretrain_e2e.py's reference run, with the
same checks. The exported model holds the engine's weights exactly (fp32 training: the module's weights are
the master weights), the MLM head still tied to the embeddings; and ``--init-from`` reads the same weights."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import torch
from test_pretrain_e2e import TINY_CONFIG, pretrain

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("stage", [0])  # 1: test_pretrain_e2e.py
def test_export_of_each_zero_stage(stage: int, corpus: Path, tmp_path: Path) -> None:
    from fairseq import checkpoint_utils

    from macaron_fairseq.pretrain.init_from import read_init_weights

    config = json.loads(TINY_CONFIG.read_text())
    config["zero_optimization"] = {"stage": stage}
    path = tmp_path / f"zero{stage}.json"
    path.write_text(json.dumps(config))
    save = tmp_path / "run"
    pretrain(corpus, save, "--max-update", "2", "--no-validation", config=path)
    manifest = json.loads((save / "step2" / "complete.json").read_text())
    assert manifest["zero_stage"] == stage
    assert any((save / "step2").glob("zero_pp_rank_*_optim_states.pt")) == (stage > 0)

    out = tmp_path / "model.pt"
    env = dict(os.environ, PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1")
    proc = subprocess.run(
        ["macaron-export", str(save), "--out", str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"wrote {out}" in proc.stdout
    models, _, _ = checkpoint_utils.load_model_ensemble_and_task([str(out)])
    exported = models[0]
    engine = torch.load(save / "step2" / "mp_rank_00_model_states.pt", weights_only=False)["module"]
    for name, value in engine.items():
        torch.testing.assert_close(exported.state_dict()[name], value.float(), rtol=0, atol=0, msg=name)
    assert exported.lm_head.weight.data_ptr() == exported.encoder.embed_tokens.weight.data_ptr()

    init = read_init_weights(save)
    for name, value in init.state.items():
        torch.testing.assert_close(value, exported.state_dict()[name], rtol=0, atol=0, msg=name)
