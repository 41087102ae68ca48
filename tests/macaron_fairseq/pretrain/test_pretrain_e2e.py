"""``python -m macaron_fairseq.pretrain`` under ``torchrun`` with 2 CPU ranks (gloo) on a corpus built by
``python -m macaron_preprocess.bert_corpus``: the loss goes down, ZeRO-1 and ZeRO-2 run, a resumed run logs
the losses of an uninterrupted one, and resuming another architecture is refused."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import DT_FIXUP, REPO, run_module

pytestmark = pytest.mark.slow
TINY_CONFIG = REPO / "configs" / "deepspeed" / "tiny_cpu.json"


def free_port() -> int:
    """A port nobody listens on now (fixed ports collide between runs: a closed one lingers in TIME_WAIT)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def pretrain(
    corpus: Path,
    save_dir: Path,
    *extra: str,
    check: bool = True,
    arch: str = "macaron_bert_tiny",
    config: Path = TINY_CONFIG,
) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        str(free_port()),
        "-m",
        "macaron_fairseq.pretrain",
        str(corpus),
        "--arch",
        arch,
        "--deepspeed-config",
        str(config),
        "--save-dir",
        str(save_dir),
        "--seed",
        "3",
        "--log-interval",
        "1",
        *extra,
    ]
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"pretrain failed ({proc.returncode}):\n{proc.stderr[-5000:]}")
    return proc


def records(save_dir: Path, split: str = "train") -> list[dict]:
    """The log's records of one split (training records have no "split" key)."""
    lines = (save_dir / "train_log.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r.get("split", "train") == split]


#: the length of the shared uninterrupted run (long enough for the preemption test to signal mid-run)
REFERENCE_STEPS = 150


@pytest.fixture(scope="module")
def reference(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One uninterrupted run (seed 3, validation at the end) whose losses the resumed, preempted and
    launcher tests must reproduce and whose checkpoint the export test exports; the tests only read it.
    The learning-rate schedule is the config's, not ``--max-update``'s, so its first k steps are a k-step
    run's."""
    save = tmp_path_factory.mktemp("reference") / "run"
    # in the main process: the other runs load with fairseq's default of one --num-workers process
    pretrain(corpus, save, "--max-update", str(REFERENCE_STEPS), "--num-workers", "0")
    return save


def test_two_ranks_train_and_the_loss_goes_down(reference: Path) -> None:
    log = records(reference)
    assert [r["step"] for r in log] == list(range(1, REFERENCE_STEPS + 1))
    first = sum(r["mlm_loss"] for r in log[:5]) / 5
    last = sum(r["mlm_loss"] for r in log[-5:]) / 5
    assert last < first - 0.5, (first, last)
    assert sorted(p.name for p in reference.glob("step*")) == [f"step{REFERENCE_STEPS}"]
    assert (reference / "loss_curves.png").read_bytes()[:4] == b"\x89PNG"
    (valid,) = records(reference, "valid")  # validation at the end
    assert valid["step"] == REFERENCE_STEPS and valid["pairs"] > 0
    assert valid["ppl"] == pytest.approx(2 ** valid["mlm_loss"])


def test_resumed_run_logs_the_losses_of_an_uninterrupted_one(
    corpus: Path, reference: Path, tmp_path: Path
) -> None:
    pretrain(corpus, tmp_path / "split", "--max-update", "3")
    resumed = pretrain(corpus, tmp_path / "split", "--max-update", "6")
    assert "resumed from" in resumed.stderr and "at step 3" in resumed.stderr
    whole, split = records(reference)[:6], records(tmp_path / "split")
    assert [r["step"] for r in split] == [1, 2, 3, 4, 5, 6]
    for a, b in zip(whole, split, strict=True):
        for key in ("mlm_loss", "nsp_loss", "lr", "tokens"):
            assert a[key] == pytest.approx(b[key], rel=1e-6, abs=1e-9), (a["step"], key)
    other = pretrain(corpus, tmp_path / "split", "--max-update", "8", arch="vanilla_bert_tiny", check=False)
    assert other.returncode != 0 and "holds a macaron_bert_tiny run" in other.stderr


def test_zero_stage_2(corpus: Path, tmp_path: Path) -> None:
    config = json.loads(TINY_CONFIG.read_text())
    config["zero_optimization"] = {"stage": 2}
    path = tmp_path / "zero2.json"
    path.write_text(json.dumps(config))
    pretrain(corpus, tmp_path / "run", "--max-update", "3", config=path)
    assert len(records(tmp_path / "run")) == 3


def test_bf16_zero0_accumulation_dt_fixup_and_activation_checkpointing(corpus: Path, tmp_path: Path) -> None:
    config = json.loads(TINY_CONFIG.read_text())
    config["bf16"] = {"enabled": True}
    config["zero_optimization"] = {"stage": 0}
    config["gradient_accumulation_steps"] = 2
    path = tmp_path / "bf16.json"
    path.write_text(json.dumps(config))
    run = tmp_path / "run"
    flags = ("--max-update", "20", *DT_FIXUP, "--checkpoint-activations")
    flags += ("--log-interval", "10")
    proc = pretrain(corpus, run, *flags, config=path)
    assert "DT-Fixup μ pass (encoder)" in proc.stderr  # before the engine: its bf16 copy is the rescaled one
    log = records(run)
    assert [r["step"] for r in log] == list(range(1, 21))
    assert sum(r["mlm_loss"] for r in log[-3:]) / 3 < sum(r["mlm_loss"] for r in log[:3]) / 3 - 0.2
    assert all("loss_scale" not in r and r["samples_per_second"] > 0 and r["model_flops"] > 0 for r in log)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("[pretrain] step")]
    assert [line.split(" | ")[0] for line in lines] == ["[pretrain] step 10/20", "[pretrain] step 20/20"]
    assert all("nsp" in line and "tokens/s" in line and "samples/s" in line for line in lines)


ENGINE_AFTER_INITIALIZE = """
import json, sys
from deepspeed.utils import safe_get_full_fp32_param
from macaron_fairseq.pretrain.__main__ import build_pretrainer

module = build_pretrainer(sys.argv[1:]).engine.module  # right after deepspeed.initialize, no step taken
pairs = [(name, p, safe_get_full_fp32_param(p)) for name, p in module.named_parameters() if p.requires_grad]
fc1 = module.new_layers()[0].fc1.weight
record = module.init_record
print("RESULT " + json.dumps({
    "applied": record.is_applied, "factor": record.get("factor_encoder"),
    "record": str(record.applied.dtype),
    "params": sorted({str(p.dtype) for _, p, _ in pairs}),
    "masters": sorted({str(m.dtype) for *_, m in pairs}),
    "max_difference": max(float((m - p.float()).abs().max()) for _, p, m in pairs),
    "fc1_rms": float(safe_get_full_fp32_param(fc1).pow(2).mean().sqrt()),
    "fc1_xavier_rms": (2 / sum(fc1.shape)) ** 0.5,
}))
"""


def test_the_engines_fp32_master_weights_are_the_rescaled_ones(corpus: Path, tmp_path: Path) -> None:
    """bf16 + ZeRO-1 (the tiny config): DT-Fixup runs before ``deepspeed.initialize``, so right after it the
    engine's fp32 master weights (the ones the optimizer steps) are the rescaled weights, and the bf16 model
    holds them rounded; the init record stays float64 in the bf16 model."""
    config = json.loads(TINY_CONFIG.read_text())
    config["bf16"] = {"enabled": True}
    path = tmp_path / "bf16.json"
    path.write_text(json.dumps(config))
    argv = [
        str(corpus),
        "--task",
        "macaron_bert_pretraining",
        "--criterion",
        "macaron_bert_loss",
        "--arch",
        "macaron_bert_tiny",
        "--deepspeed-config",
        str(path),
        "--save-dir",
        str(tmp_path / "run"),
        "--seed",
        "3",
        *DT_FIXUP,
        "--dt-fixup-mu",
        "40",  # μ given: a small factor, no pass
    ]
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    env.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1")
    env["MASTER_PORT"] = str(free_port())
    command = [sys.executable, "-c", ENGINE_AFTER_INITIALIZE, *argv]
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-5000:]
    result = json.loads(proc.stdout.split("RESULT ", 1)[1])
    assert result["applied"] and result["record"] == "torch.float64"
    assert result["params"] == ["torch.bfloat16"] and result["masters"] == ["torch.float32"]
    assert result["max_difference"] == 0.0  # each master is its bf16 parameter, exactly
    # Xavier-normal × the DT-Fixup factor (≪ 1), not the unscaled Xavier weights
    assert result["factor"] < 0.05
    assert result["fc1_rms"] == pytest.approx(result["fc1_xavier_rms"] * result["factor"], rel=0.1)


def test_export_loads_in_fairseq_and_gives_the_engines_logits(
    corpus: Path, reference: Path, tmp_path: Path
) -> None:
    import torch
    from fairseq import checkpoint_utils

    from macaron_fairseq.pretrain.init_from import read_init_weights

    out = tmp_path / "model.pt"
    run_module("macaron_fairseq.pretrain.export", str(reference), "--out", str(out), timeout=300)
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([str(out)])
    exported = models[0].eval()
    engine_states = reference / f"step{REFERENCE_STEPS}" / "mp_rank_00_model_states.pt"
    engine_weights = torch.load(engine_states, weights_only=False)["module"]
    engine_model = task.build_model(cfg.model).eval()
    engine_model.load_state_dict(engine_weights)
    dictionary = task.source_dictionary
    tokens = torch.randint(
        dictionary.nspecial, len(dictionary), (3, 20), generator=torch.Generator().manual_seed(0)
    )
    tokens[:, 0] = dictionary.bos()
    segments = torch.zeros_like(tokens)
    segments[:, 10:] = 1
    with torch.no_grad():
        got, want = exported(tokens, segment_labels=segments), engine_model(tokens, segment_labels=segments)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b)
    assert exported.lm_head.weight.data_ptr() == exported.encoder.embed_tokens.weight.data_ptr()  # still tied
    # ZeRO stage 1 (the AdamW configs'; stage 0: test_export_zero_stages.py): the exported weights are the
    # engine's exactly (fp32 training), and --init-from reads the same ones
    step = reference / f"step{REFERENCE_STEPS}"
    assert json.loads((step / "complete.json").read_text())["zero_stage"] == 1
    assert any(step.glob("zero_pp_rank_*_optim_states.pt"))
    for name, value in engine_weights.items():
        torch.testing.assert_close(exported.state_dict()[name], value.float(), rtol=0, atol=0, msg=name)
    for name, value in read_init_weights(reference).state.items():
        torch.testing.assert_close(value, exported.state_dict()[name], rtol=0, atol=0, msg=name)

    # fairseq-train --restore-file starts from the exported weights (an lr of 1e-12 keeps them)
    restored = tmp_path / "restored"
    command = [
        "fairseq-train",
        str(corpus),
        "--user-dir",
        str(REPO / "macaron_fairseq"),
        "--task",
        "macaron_bert_pretraining",
        "--criterion",
        "macaron_bert_loss",
        "--arch",
        "macaron_bert_tiny",
        "--restore-file",
        str(out),
        "--reset-optimizer",
        "--reset-dataloader",
        "--reset-meters",
        "--reset-lr-scheduler",
        "--optimizer",
        "adam",
        "--lr",
        "1e-12",
        "--batch-size",
        "4",
        "--max-update",
        "1",
        "--save-dir",
        str(restored),
        "--no-epoch-checkpoints",
        "--disable-validation",
        "--cpu",
    ]
    env = dict(os.environ, PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1")
    proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-5000:]
    assert f"Loaded checkpoint {out}" in proc.stdout + proc.stderr
    trained = torch.load(restored / "checkpoint_last.pt", weights_only=False)["model"]
    for name, value in exported.state_dict().items():
        torch.testing.assert_close(trained[name], value, atol=1e-6, rtol=0, msg=name)

    # K new DT-Fixup layers on the exported encoder (DT-Fixup's mixed setting)
    mixed = ("--max-update", "2", "--pretrained-encoder", str(out), "--new-encoder-layers", "1", *DT_FIXUP)
    refused = pretrain(corpus, tmp_path / "mixed", *mixed, check=False)
    assert refused.returncode != 0 and "pass --pretrained-lr-multiplier 1" in refused.stderr
    proc = pretrain(corpus, tmp_path / "mixed", *mixed, "--pretrained-lr-multiplier", "1")
    assert "2 macaron layers (d=64, ffn=128) + 1 new layers" in proc.stderr
    assert "DT-Fixup applied to encoder: N=1" in proc.stderr
    assert len(records(tmp_path / "mixed")) == 2


def test_the_deepspeed_launcher_gives_the_losses_of_torchrun(
    corpus: Path, reference: Path, tmp_path: Path
) -> None:
    """The ``deepspeed`` launcher's run gives torchrun's losses and leaves no shared memory behind: the
    launcher sets LOCAL_SIZE, with which DeepSpeed's CPU all-reduce op (macaron_fairseq.pretrain.ops.
    skip_shm_comm) gave each rank a 66-MB /dev/shm buffer that nothing removed."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "deepspeed.launcher.runner",
        "--num_gpus",
        "2",
        "--master_port",
        str(port),
        "--module",
        "macaron_fairseq.pretrain",
        str(corpus),
        "--arch",
        "macaron_bert_tiny",
        "--deepspeed-config",
        str(TINY_CONFIG),
        "--save-dir",
        str(tmp_path / "deepspeed"),
        "--seed",
        "3",
        "--max-update",
        "3",
    ]
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-5000:]
    assert "dist_world_size=2" in proc.stdout + proc.stderr
    for a, b in zip(records(reference)[:3], records(tmp_path / "deepspeed"), strict=True):
        assert a["mlm_loss"] == pytest.approx(b["mlm_loss"], rel=1e-6) and a["step"] == b["step"]
    assert list(Path("/dev/shm").glob(f"deepspeed_allreduce_buffer_*_{port}_*")) == []


def test_a_preempted_run_saves_exits_and_resumes_to_the_same_losses(
    corpus: Path, reference: Path, tmp_path: Path
) -> None:
    """The --preemption-signal path without Slurm: SIGHUP to one rank only; both ranks save at the same step
    (the flag is all-reduced) and exit 3; the rerun resumes and ends with the uninterrupted run's losses."""
    import signal
    import time

    import psutil

    steps = str(REFERENCE_STEPS)
    save = tmp_path / "preempted"
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        str(free_port()),
        "-m",
        "macaron_fairseq.pretrain",
        str(corpus),
        "--arch",
        "macaron_bert_tiny",
        "--deepspeed-config",
        str(TINY_CONFIG),
        "--save-dir",
        str(save),
        "--seed",
        "3",
        "--log-interval",
        "1",
        "--max-update",
        steps,
        "--no-validation",
    ]
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    proc = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    log = save / "train_log.jsonl"
    deadline = time.monotonic() + 300
    while not (log.exists() and len(log.read_text().splitlines()) >= 3):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-3000:]
        time.sleep(0.05)
    # the two ranks (their data-loader workers, --num-workers, share the command line: not counted)
    children = psutil.Process(proc.pid).children(recursive=True)
    workers = [p for p in children if "macaron_fairseq.pretrain" in " ".join(p.cmdline())]
    workers = [p for p in workers if p.name() != "pt_data_worker"]
    assert len(workers) == 2
    workers[-1].send_signal(signal.SIGHUP)  # one rank only
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode != 0 and "SIGHUP received: checkpoint saved at step" in stderr
    stopped = len(records(save))
    assert 3 <= stopped < int(steps) and (save / f"step{stopped}").is_dir()
    assert "rerun the same command to resume" in stderr
    resumed = pretrain(corpus, save, "--max-update", steps, "--no-validation")
    assert f"at step {stopped}" in resumed.stderr
    whole, split = records(reference), records(save)
    assert [r["step"] for r in split] == list(range(1, int(steps) + 1))
    for a, b in zip(whole, split, strict=True):
        assert a["mlm_loss"] == pytest.approx(b["mlm_loss"], rel=1e-6, abs=1e-9), a["step"]


def train_pairs(corpus: Path, seed: int) -> int:
    """The number of training pairs the task builds from ``corpus`` with ``seed`` (the pairs depend on it)."""
    from fairseq import options, tasks

    import macaron_fairseq  # noqa: F401

    parser = options.get_training_parser()
    argv = [
        str(corpus),
        "--task",
        "macaron_bert_pretraining",
        "--arch",
        "macaron_bert_tiny",
        "--seed",
        str(seed),
        "--pair-cache",
        "off",
    ]
    args = options.parse_args_and_arch(parser, argv)
    task = tasks.setup_task(args)
    task.load_dataset("train")
    return len(task.dataset("train"))


def test_data_loading_workers_give_the_losses_of_the_main_process(
    corpus: Path, reference: Path, tmp_path: Path
) -> None:
    """Two ranks, 2 loader processes each vs none (the reference): the same losses, and a run resumed with
    workers too."""
    pretrain(corpus, tmp_path / "workers", "--max-update", "2", "--num-workers", "2", "--no-validation")
    pretrain(corpus, tmp_path / "workers", "--max-update", "4", "--num-workers", "2", "--no-validation")
    main, workers = records(reference)[:4], records(tmp_path / "workers")
    assert [r["step"] for r in workers] == [1, 2, 3, 4]
    for a, b in zip(main, workers, strict=True):
        for key in ("mlm_loss", "nsp_loss", "tokens"):
            assert a[key] == pytest.approx(b[key], rel=1e-6, abs=1e-9), (a["step"], key)
