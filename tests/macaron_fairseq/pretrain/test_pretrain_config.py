"""Launcher placement, the DeepSpeed config checks and BERT's weight-decay groups (no training)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from torch import nn

from macaron_fairseq.pretrain.distributed import first_host, placement
from macaron_fairseq.pretrain.ds_config import (
    check_supported,
    checkpoints_activations,
    complete_precision,
    parameter_groups,
    precision,
    read_config,
    reconcile_batch,
)
from macaron_workflow.errors import UserError


@pytest.mark.parametrize(
    ("nodelist", "host"),
    [
        ("gpu[003-005,010],login1", "gpu003"),
        ("node7", "node7"),
        ("a,b", "a"),
        ("n[1,4]", "n1"),
        ("x[12]", "x12"),
    ],
)
def test_first_host_of_a_slurm_host_list(nodelist: str, host: str) -> None:
    assert first_host(nodelist) == host


def test_placement_from_torchrun_srun_and_a_plain_start() -> None:
    torchrun = placement(
        {"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "MASTER_ADDR": "h0", "MASTER_PORT": "1234"}
    )
    assert (torchrun.rank, torchrun.world_size, torchrun.local_rank) == (3, 8, 1)
    assert (torchrun.master_addr, torchrun.master_port) == ("h0", 1234)
    srun = placement(
        {
            "SLURM_PROCID": "5",
            "SLURM_NTASKS": "16",
            "SLURM_LOCALID": "1",
            "SLURM_JOB_NODELIST": "gpu[007-008]",
        }
    )
    assert (srun.rank, srun.world_size, srun.local_rank, srun.master_addr, srun.launcher) == (
        5,
        16,
        1,
        "gpu007",
        "srun",
    )
    assert placement({}).world_size == 1


def test_batch_fields_are_derived_or_checked(tmp_path: Path) -> None:
    path = tmp_path / "ds.json"
    assert (
        reconcile_batch({"train_batch_size": 256}, path, 4, None, None)["train_micro_batch_size_per_gpu"]
        == 64
    )
    config = reconcile_batch(
        {"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 2}, path, 2, None, None
    )
    assert config["train_batch_size"] == 32
    assert reconcile_batch({}, path, 2, 16, 4)["train_batch_size"] == 128
    with pytest.raises(
        UserError, match=r"train_batch_size=100 in .*ds\.json != micro batch 8 × accumulation 6 × 2"
    ):
        reconcile_batch({"train_batch_size": 100, "train_micro_batch_size_per_gpu": 8}, path, 2, None, None)
    with pytest.raises(UserError, match=r"--batch-size 16 contradicts train_micro_batch_size_per_gpu=8"):
        reconcile_batch({"train_micro_batch_size_per_gpu": 8}, path, 1, 16, None)
    with pytest.raises(UserError, match=r"not a multiple"):
        reconcile_batch({"train_batch_size": 30, "gradient_accumulation_steps": 4}, path, 2, None, None)


def test_read_config_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(UserError, match=r"bad\.json: not valid JSON"):
        read_config(bad)
    with pytest.raises(UserError, match=r"missing\.json: no such file"):
        read_config(tmp_path / "missing.json")


def test_repository_configs_are_consistent_for_their_world_sizes() -> None:
    configs = Path(__file__).resolve().parents[3] / "configs" / "deepspeed"
    for path in sorted(configs.glob("*.json")):
        config = json.loads(path.read_text())
        micro = config.get("train_micro_batch_size_per_gpu")
        total = config.get("train_batch_size")
        if micro and total:
            world = total // (micro * config.get("gradient_accumulation_steps", 1))
            reconcile_batch(config, path, world, None, None)  # raises if they do not multiply out


def test_no_weight_decay_on_biases_and_layer_norms() -> None:
    model = nn.Sequential()
    model.add_module("fc", nn.Linear(4, 4))
    model.add_module("layer_norm", nn.LayerNorm(4))
    decay, plain = parameter_groups(model, 0.01)
    assert [p.shape for p in decay["params"]] == [(4, 4)] and decay["weight_decay"] == 0.01
    assert len(plain["params"]) == 3 and plain["weight_decay"] == 0.0


def test_what_cannot_run_here_is_refused_before_anything_is_built(tmp_path: Path) -> None:
    path = tmp_path / "ds.json"
    fp16 = {"fp16": {"enabled": True}}
    with pytest.raises(UserError, match=r"ds\.json: fp16 needs a GPU"):
        check_supported(fp16, path, cuda=False)
    check_supported(fp16, path, cuda=True)
    lamb = {"optimizer": {"type": "Lamb", "params": {}}}
    with pytest.raises(UserError, match=r"optimizer Lamb is a CUDA kernel"):
        check_supported(lamb, path, cuda=False)
    check_supported(lamb, path, cuda=True)
    with pytest.raises(UserError, match=r"fp16 and bf16 are both enabled"):
        check_supported({"fp16": {"enabled": True}, "bf16": {"enabled": True}}, path, cuda=True)
    with pytest.raises(
        UserError, match=r"activation_checkpointing.partition_activations configures deepspeed"
    ):
        check_supported({"activation_checkpointing": {"partition_activations": True}}, path, cuda=True)
    phase2 = {"activation_checkpointing": {"partition_activations": False}}
    check_supported(phase2, path, cuda=False)  # bert_phase2.json's section: fairseq's checkpointing
    assert checkpoints_activations(phase2) and not checkpoints_activations({})
    assert not checkpoints_activations({"activation_checkpointing": {"enabled": False}})
    check_supported({"bf16": {"enabled": True}}, path, cuda=False)
    assert [precision(c) for c in (fp16, {"bf16": {"enabled": True}}, {})] == ["fp16", "bf16", "fp32"]


@pytest.mark.slow  # runs the real command in subprocesses: 5-15 s here (out of --quick)
def test_the_command_refuses_fp16_on_cpu_naming_the_config(tmp_path: Path) -> None:
    from helpers import REPO, run_module

    config = json.loads((REPO / "configs" / "deepspeed" / "tiny_cpu.json").read_text())
    config["fp16"] = {"enabled": True, "loss_scale": 0}
    path = tmp_path / "fp16.json"
    path.write_text(json.dumps(config))
    (tmp_path / "data").mkdir()
    args = [
        str(tmp_path / "data"),
        "--arch",
        "vanilla_bert_tiny",
        "--deepspeed-config",
        str(path),
        "--save-dir",
        str(tmp_path / "run"),
    ]
    proc = run_module("macaron_fairseq.pretrain", *args, check=False)
    assert proc.returncode == 2 and "fp16.json: fp16 needs a GPU" in proc.stderr
    assert not (tmp_path / "run").exists()


def test_mixed_precision_accumulates_and_reduces_in_fp32(tmp_path: Path) -> None:
    """DeepSpeed's default accumulation and reduction dtype is the model's (bf16/fp16): with ZeRO 1/2 a
    config without ``data_types`` gets fp32, said in a note; what a config says is kept; at ZeRO-0 DeepSpeed
    cannot accumulate a bf16 model's gradients in fp32, so asking for it is refused."""
    path = tmp_path / "ds.json"
    bf16 = {"bf16": {"enabled": True}, "zero_optimization": {"stage": 1}}
    config, notes = complete_precision(bf16, path)
    assert (
        config["data_types"] == {"grad_accum_dtype": "fp32"} and config["communication_data_type"] == "fp32"
    )
    assert len(notes) == 2 and "gradients are accumulated in fp32" in notes[0]
    assert "data_types" not in bf16  # the caller's dict is not changed
    fp16 = {"fp16": {"enabled": True}, "zero_optimization": {"stage": 2}, "communication_data_type": "fp16"}
    config, notes = complete_precision(fp16, path)
    assert config["data_types"]["grad_accum_dtype"] == "fp32" and config["communication_data_type"] == "fp16"
    assert complete_precision({"zero_optimization": {"stage": 1}}, path) == (
        {"zero_optimization": {"stage": 1}},
        [],
    )
    zero0 = {"bf16": {"enabled": True}, "gradient_accumulation_steps": 4}
    config, notes = complete_precision(zero0, path)
    assert "data_types" not in config and "accumulates gradients in bf16" in notes[0]
    with pytest.raises(
        UserError, match=r"ds\.json: DeepSpeed cannot accumulate a bf16 model's gradients in fp32"
    ):
        complete_precision({**zero0, "data_types": {"grad_accum_dtype": "fp32"}}, path)


def test_every_shipped_mixed_precision_config_says_fp32_accumulation() -> None:
    """bf16/fp16 configs name fp32 for accumulation and reduction; torch_autocast ones keep fp32 weights (and
    so fp32 gradients) at ZeRO-0, where LAMB's per-tensor trust ratio sees unflattened parameters."""
    configs = Path(__file__).resolve().parents[3] / "configs" / "deepspeed"
    mixed = 0
    for path in sorted(configs.glob("*.json")):
        config = json.loads(path.read_text())
        if precision(config) == "fp32":
            continue
        mixed += 1
        if "torch_autocast" in config:
            assert config["zero_optimization"]["stage"] == 0, path.name
            continue
        assert config["data_types"]["grad_accum_dtype"] == "fp32", path.name
        assert config["communication_data_type"] == "fp32", path.name
        assert complete_precision(config, path) == (config, []), path.name
    assert mixed == 4
