"""``bash pipelines/pretrain.sh``: the options and their defaults, the resume settings of the training
stage, the reading of the trainer's log (fast); and in small-scale mode, end to end, offline (slow): a
generated corpus, 30 steps of macaron_bert_tiny on 2 CPU ranks under torchrun, an exported checkpoint that
fairseq loads, loss curves and results; a rerun that skips every stage; the BERT baseline in the same
workdir (the data-bin reused, its own directory). The slow tests share one workdir, the suite's
``small_pretrain`` (conftest.py: its first run is the one checked here), and run in file order."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import REPO, SMALL_PRETRAIN_GROUP, run_pretrain_sh

from macaron_pipelines import pretrain
from macaron_pipelines.fairseq_steps import without_options
from macaron_tools import plot_curves

STAGES = ("pretrain", "export", "plot", "results")
WORKER_GROUP = SMALL_PRETRAIN_GROUP  # the GLUE pipeline test fine-tunes this file's model


# ------------------------------------------------------------------------------------------------- fast
def test_help_lists_the_stages_and_options() -> None:
    proc = subprocess.run(
        ["bash", str(REPO / "pipelines" / "pretrain.sh"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    for word in (
        "--wikipedia",
        "--bookcorpus",
        "--arch",
        "--deepspeed-config",
        "--gpus",
        "--max-update",
        "--small",
        "torchrun",
        "loss_curves.png",
        "model.pt",
    ):
        assert word in proc.stdout, word


def test_small_defaults(tmp_path: Path) -> None:
    args = pretrain.parse_args(["--workdir", str(tmp_path), "--small"])
    assert args.arch == "macaron_bert_tiny" and args.deepspeed_config.name == "tiny_cpu.json"
    assert args.max_update == 30 and args.bpe_vocab_size == 500 and args.valid_ratio == 0.1
    assert args.gpus == (pretrain.cuda_devices() or 2)
    assert args.wikipedia == [] and args.bookcorpus is None  # the pipeline generates the corpus


def test_each_default_is_written_once_and_shown_in_its_options_help(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scale table is the one place of the defaults: each field is an option whose help shows both
    scales' values, and an option left out takes its scale's value (changing a row changes both)."""
    from dataclasses import fields, replace

    helps = {option.dest: option.help for option in pretrain.OPTIONS}
    for field in fields(pretrain.Scale):
        for value in (getattr(pretrain.FULL, field.name), getattr(pretrain.SMALL, field.name)):
            shown = value.name if isinstance(value, Path) else str(value)
            assert value is None or shown in helps[field.name], (field.name, value)
    monkeypatch.setattr(pretrain, "SMALL", replace(pretrain.SMALL, log_interval=7, bpe_vocab_size=321))
    args = pretrain.parse_args(["--workdir", str(tmp_path), "--small"])
    assert (args.log_interval, args.bpe_vocab_size) == (7, 321)


def test_full_scale_defaults_come_from_the_deepspeed_config(tmp_path: Path) -> None:
    args = pretrain.parse_args(
        ["--workdir", str(tmp_path), "--wikipedia", "latest", "--gpus", "8", "--", "--update-freq", "2"]
    )
    config = json.loads((REPO / "configs" / "deepspeed" / "bert_phase1.json").read_text())
    assert args.arch == "macaron_bert_base" and args.deepspeed_config.name == "bert_phase1.json"
    assert args.max_update == config["scheduler"]["params"]["total_num_steps"] == 900_000
    assert args.bpe_vocab_size == 32768 and args.valid_ratio == 0.005 and args.wikipedia == ["latest"]
    assert args.train_flags == ["--update-freq", "2"]
    command = pretrain.pretrain_command(
        args, tmp_path / "data-bin", pretrain.ArchPaths(args.workdir, args.arch)
    )
    assert command[command.index("--nproc_per_node") + 1] == "8" and command[-2:] == ["--update-freq", "2"]


def test_phase_2_starts_from_phase_1s_weights_in_its_own_directory(tmp_path: Path) -> None:
    args = pretrain.parse_args(["--workdir", str(tmp_path), "--wikipedia", "latest", "--gpus", "8"])
    assert (
        args.phases == [1, 2] and args.phase2_max_update == 100_000 and args.phase2_tokens_per_sample == 512
    )
    phase2 = pretrain.phase2_args(args)
    paths = pretrain.ArchPaths(args.workdir, args.arch, 2)
    command = pretrain.pretrain_command(phase2, tmp_path / "data-bin", paths)
    assert command[command.index("--deepspeed-config") + 1].endswith("bert_phase2.json")
    assert command[command.index("--tokens-per-sample") + 1] == "512"
    assert command[command.index("--max-update") + 1] == "100000"
    assert command[command.index("--init-from") + 1] == str(
        args.workdir / "macaron_bert_base" / "checkpoints"
    )
    assert paths.save_dir == args.workdir / "macaron_bert_base" / "phase2" / "checkpoints"
    assert pretrain.stage_name("pretrain", phase2) == "pretrain-macaron_bert_base-phase2"
    assert pretrain.parse_args(["--workdir", str(tmp_path), "--small"]).phases == [1]
    assert pretrain.parse_args(["--workdir", str(tmp_path), "--small", "--phases", "2,1"]).phases == [1, 2]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "give --wikipedia"),
        (["--small", "--arch", "transformer"], "expected a BERT architecture"),
        (["--small", "--deepspeed-config", "no/such.json"], "no such file"),
        (["--small", "--phases", "3"], "--phases: expected '1 2', '1' or '2'"),
    ],
)
def test_bad_options_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        pretrain.parse_args(["--workdir", str(tmp_path), *argv])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_stop_and_log_settings_resume_other_settings_restart(tmp_path: Path) -> None:
    def resume_settings(*argv: str) -> list[str]:
        args = pretrain.parse_args(["--workdir", str(tmp_path), "--small", *argv])
        command = pretrain.pretrain_command(
            args, tmp_path / "data-bin", pretrain.ArchPaths(tmp_path, args.arch)
        )
        return without_options(command, pretrain.RESUMABLE_OPTIONS)

    base = resume_settings()
    assert (
        resume_settings("--max-update", "80", "--log-interval", "1", "--save-interval-updates", "7") == base
    )
    assert resume_settings("--seed", "2") != base
    assert resume_settings("--gpus", "3") != base
    assert resume_settings("--", "--tokens-per-sample", "64") != base


def test_the_training_settings_leave_the_interpreter_out(tmp_path: Path) -> None:
    args = pretrain.parse_args(["--workdir", str(tmp_path), "--small"])
    command = pretrain.pretrain_command(args, tmp_path / "data-bin", pretrain.ArchPaths(tmp_path, args.arch))
    other = ["/another/venv/bin/python", *command[1:]]
    assert command[0] != other[0]
    for without_resumable in (False, True):
        settings = pretrain.training_settings(command, without_resumable)
        assert settings == pretrain.training_settings(other, without_resumable)
        assert settings["command"][:2] == ["-m", "torch.distributed.run"]
    assert "--max-update" not in pretrain.training_settings(command, without_resumable=True)["command"]


def test_step_log_keeps_the_last_record_of_each_step_and_split(tmp_path: Path) -> None:
    log = tmp_path / "train_log.jsonl"
    train = [
        {
            "step": s,
            "mlm_loss": 9.0 - s,
            "nsp_loss": 1.0,
            "mlm_accuracy": 1.0,
            "nsp_accuracy": 50.0,
            "lr": 1e-3,
            "tokens": 100.0,
            "tokens_per_second": 50.0,
        }
        for s in (1, 2, 3)
    ]
    rerun = {**train[2], "mlm_loss": 5.5}  # a resumed run logs step 3 again
    valid = {"step": 3, "split": "valid", "mlm_loss": 6.0, "ppl": 64.0, "nsp_accuracy": 55.0, "pairs": 10.0}
    lines = [json.dumps(r) for r in (*train, valid, rerun)] + ['{"step": 4, "mlm']  # cut by a kill
    log.write_text("\n".join(lines) + "\n")
    read = pretrain.read_step_log(log)
    assert [r["step"] for r in read.train] == [1, 2, 3] and read.train[-1]["mlm_loss"] == 5.5
    assert read.valid == [valid]
    results = pretrain.results_record(read, {"arch": "x"}, {"pretrain": 1.0})
    assert (
        results["steps"] == 3 and results["final"]["mlm_loss"] == 5.5 and results["first"]["mlm_loss"] == 8.0
    )
    assert results["train_loop_seconds"] == 6.0 and results["tokens"] == 300.0
    assert results["valid"] == {"step": 3, "mlm_loss": 6.0, "ppl": 64.0, "nsp_accuracy": 55.0, "pairs": 10.0}
    plot_curves.plot_step_log(read, tmp_path / "curves.png", "test")
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------------------------------------- slow
@pytest.fixture(scope="module")
def workdir(small_pretrain: tuple[Path, subprocess.CompletedProcess]) -> Path:
    return small_pretrain[0]


@pytest.mark.slow
def test_small_pipeline_end_to_end_and_a_rerun_skips_every_stage(
    workdir: Path, small_pretrain: tuple[Path, subprocess.CompletedProcess]
) -> None:
    from fairseq import checkpoint_utils

    import macaron_fairseq  # noqa: F401  (registers the task and models)

    first = small_pretrain[1]
    assert "generating a synthetic corpus offline" in first.stdout
    assert "torch.distributed.run --standalone --nproc_per_node 2" in first.stdout
    assert "step 30/30 | mlm" in first.stdout, first.stdout[-3000:]
    arch_dir = workdir / "macaron_bert_tiny"
    results = json.loads((arch_dir / "results.json").read_text())
    assert results["arch"] == "macaron_bert_tiny" and results["ranks"] == 2 and results["steps"] == 30
    assert results["final_mean_of_last_10_steps"]["mlm_loss"] < results["first"]["mlm_loss"] - 0.3
    assert results["train_loop_seconds"] > 0 and results["stage_seconds"]["pretrain"] > 0
    assert (arch_dir / "loss_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    whole_output = (arch_dir / "checkpoints" / "pretrain.log").read_text()
    assert "[pretrain] step 30/30 | " in whole_output

    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([str(arch_dir / "model.pt")])
    assert cfg.model._name == "macaron_bert_tiny" and type(task).__name__ == "BertPretrainingTask"
    assert "encoder.layers.0.ffn1_fc1.weight" in models[0].state_dict()  # the Macaron half-step FFN
    state = checkpoint_utils.load_checkpoint_to_cpu(str(arch_dir / "model.pt"))
    assert state["optimizer_history"][-1]["num_updates"] == 30

    second = run_pretrain_sh(workdir)
    for stage in ("synthetic-corpus", *(f"{name}-macaron_bert_tiny" for name in STAGES)):
        assert f"[{stage}] up to date, skipped" in second.stdout, second.stdout[-3000:]
    assert "running" not in second.stdout + second.stderr, second.stdout[-3000:] + second.stderr[-3000:]
    assert "torch.distributed.run" not in second.stdout
    assert json.loads((arch_dir / "results.json").read_text()) == results

    # the same run through another spelling of the interpreter (pretrain.sh runs python3): still done
    interpreter = workdir.parent / "bin" / "python"
    interpreter.parent.mkdir(exist_ok=True)
    interpreter.symlink_to(os.path.realpath(sys.executable))
    module = [str(interpreter), "-m", "macaron_pipelines.pretrain", "--small", "--workdir", str(workdir)]
    third = subprocess.run(
        module, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONWARNINGS": "ignore"}
    )
    assert third.returncode == 0, third.stderr[-3000:]
    assert "[pretrain-macaron_bert_tiny] up to date, skipped" in third.stdout, third.stdout[-3000:]
    assert "moving the previous" not in third.stdout + third.stderr


@pytest.mark.slow
def test_the_bert_baseline_trains_in_its_own_directory_on_the_same_data(workdir: Path) -> None:
    macaron_results = (workdir / "macaron_bert_tiny" / "results.json").read_text()
    proc = run_pretrain_sh(workdir, ARCH="vanilla_bert_tiny")
    assert "[binarize] up to date, skipped" in proc.stderr  # the data-bin is shared
    assert "[pretrain-vanilla_bert_tiny] running" in proc.stdout
    results = json.loads((workdir / "vanilla_bert_tiny" / "results.json").read_text())
    assert results["arch"] == "vanilla_bert_tiny" and results["steps"] == 30
    state = torch.load(workdir / "vanilla_bert_tiny" / "model.pt", weights_only=False)
    assert state["cfg"]["model"].arch == "vanilla_bert_tiny"  # fairseq keeps the model's Namespace
    assert not [key for key in state["model"] if "ffn1_" in key]
    assert (workdir / "macaron_bert_tiny" / "results.json").read_text() == macaron_results
    assert not list(workdir.glob("*/checkpoints.before-*"))


@pytest.mark.slow
def test_phase_2_runs_from_phase_1_at_longer_sequences(workdir: Path) -> None:
    """PHASES="1 2": phase 1 (done by the first test) is skipped, phase 2 trains 10 steps at 256 tokens from
    its weights (--init-from: fresh schedule and data position) into its own directory."""
    proc = run_pretrain_sh(workdir, PHASES="1 2")
    assert "[pretrain-macaron_bert_tiny] up to date, skipped" in proc.stdout
    assert "[pretrain-macaron_bert_tiny-phase2] running" in proc.stdout
    phase2 = workdir / "macaron_bert_tiny" / "phase2"
    output = (phase2 / "checkpoints" / "pretrain.log").read_text()
    assert f"initialised from {workdir / 'macaron_bert_tiny' / 'checkpoints' / 'step30'}" in output
    results = json.loads((phase2 / "results.json").read_text())
    assert results["phase"] == 2 and results["tokens_per_sample"] == 256 and results["steps"] == 10
    phase1 = json.loads((workdir / "macaron_bert_tiny" / "results.json").read_text())
    assert results["first"]["mlm_loss"] < phase1["first"]["mlm_loss"] - 0.3  # trained weights, not fresh ones
    state = torch.load(phase2 / "model.pt", weights_only=False)
    assert state["cfg"]["task"]["tokens_per_sample"] == 256
