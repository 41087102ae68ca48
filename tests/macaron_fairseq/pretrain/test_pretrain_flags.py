"""What the trainer's command line means: fairseq flags that the DeepSpeed config decides are refused naming
the config key, the run's length is the schedule's unless --max-update says otherwise (past it: refused),
and a missing data-bin is one line and exit status 2."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, env_without, run_module

from macaron_fairseq.pretrain.flags import CONFIG_OWNED, TRAINER_OWNED, refuse_ignored, run_length
from macaron_workflow.errors import UserError

TINY_CONFIG = REPO / "configs" / "deepspeed" / "tiny_cpu.json"
TINY = str(TINY_CONFIG)


@pytest.mark.parametrize(
    ("flag", "key"),
    [
        ("--lr", "optimizer.params.lr"),
        ("--weight-decay", "optimizer.params.weight_decay"),
        ("--clip-norm", "gradient_clipping"),
        ("--warmup-updates", "scheduler.params.warmup_num_steps"),
        ("--fp16", '"fp16": {"enabled": true}'),
        ("--bf16", '"bf16": {"enabled": true}'),
        ("--optimizer", "optimizer.type"),
        ("--max-tokens", "train_micro_batch_size_per_gpu"),
    ],
)
def test_a_flag_the_config_decides_is_refused_naming_the_key(flag: str, key: str) -> None:
    with pytest.raises(
        UserError, match=rf"^{flag}: the DeepSpeed config decides this; set .*in ds\.json$"
    ) as err:
        refuse_ignored(["data", flag, "1"], "ds.json")
    assert key in str(err.value)
    with pytest.raises(UserError, match=rf"^{flag}: "):
        refuse_ignored(["data", f"{flag}=1"], "ds.json")


def test_every_refused_flag_exists_in_fairseq_and_trainer_flags_pass() -> None:
    from fairseq import options

    parser = options.get_training_parser()
    known = set(parser._option_string_actions)  # the flags fairseq's training parser accepts (or its groups)
    assert {"--lr", "--clip-norm", "--fp16", "--bf16", "--max-epoch", "--restore-file"} <= known
    refuse_ignored(
        [
            "data",
            "--max-update",
            "5",
            "--batch-size",
            "8",
            "--seed",
            "3",
            "--tensorboard-logdir",
            "x",
            "--wandb-project",
            "p",
            "--save-interval-updates",
            "2",
        ],
        "ds.json",
    )
    with pytest.raises(
        UserError, match=r"--restore-file is not used by the DeepSpeed trainer: .*--init-from"
    ):
        refuse_ignored(["--restore-file", "x.pt"], "ds.json")
    assert not set(CONFIG_OWNED) & set(TRAINER_OWNED)


def test_the_run_length_is_the_schedules_unless_given() -> None:
    config = {"scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 100}}}
    assert run_length(config, "ds.json", None) == 100
    assert run_length(config, "ds.json", 40) == 40
    with pytest.raises(
        UserError, match=r"--max-update 150 runs past scheduler.params.total_num_steps=100 in ds"
    ):
        run_length(config, "ds.json", 150)
    assert run_length({"scheduler": {"type": "WarmupLR", "params": {}}}, "ds.json", 7) == 7
    with pytest.raises(
        UserError, match=r"give --max-update: the scheduler of ds.json has no total_num_steps"
    ):
        run_length({}, "ds.json", None)


PROG = "python -m macaron_fairseq.pretrain"  # the error rule: PROG: error: message


def command_errors(*argv: str) -> list[str]:
    proc = run_module("macaron_fairseq.pretrain", *argv, check=False, timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    return [line for line in proc.stderr.splitlines() if line.strip() and "[WARNING]" not in line]


@pytest.mark.slow  # runs the real command in a fresh interpreter: 4-10 s (out of --quick)
def test_the_command_refuses_an_ignored_flag_in_one_line(tmp_path: Path) -> None:
    lines = command_errors(
        str(tmp_path), "--arch", "macaron_bert_tiny", "--deepspeed-config", TINY, "--lr", "0.5"
    )
    assert lines == [
        f"{PROG}: error: --lr: the DeepSpeed config decides this; set optimizer.params.lr (and "
        f"scheduler.params.warmup_max_lr) in {TINY_CONFIG}"
    ]


@pytest.mark.slow  # runs the real command in subprocesses: 5-15 s here (out of --quick)
def test_a_missing_data_bin_is_one_line_and_exit_2(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-data-bin"
    lines = command_errors(
        str(missing),
        "--arch",
        "macaron_bert_tiny",
        "--deepspeed-config",
        TINY,
        "--save-dir",
        str(tmp_path / "run"),
    )
    assert lines == [
        f"{PROG}: error: {missing}: no such data-bin "
        "(build one with python -m macaron_preprocess.bert_corpus)"
    ]
    (tmp_path / "empty").mkdir()
    lines = command_errors(
        str(tmp_path / "empty"), "--arch", "macaron_bert_tiny", "--deepspeed-config", str(TINY_CONFIG)
    )
    assert lines == [
        f"{PROG}: error: {tmp_path / 'empty'}: not a data-bin of python -m macaron_preprocess.bert_corpus "
        "(no dict.txt)"
    ]
    assert not (tmp_path / "run").exists()


@pytest.mark.slow  # runs the real command in subprocesses: 5-15 s here (out of --quick)
def test_a_max_update_past_the_schedule_is_refused(tmp_path: Path) -> None:
    for name in ("dict.txt", "train.bin", "train.idx"):  # what the data-bin check looks for
        (tmp_path / name).write_text("")
    lines = command_errors(
        str(tmp_path), "--arch", "macaron_bert_tiny", "--deepspeed-config", TINY, "--max-update", "500"
    )
    assert len(lines) == 1 and "--max-update 500 runs past scheduler.params.total_num_steps=200" in lines[0]


@pytest.mark.slow
def test_without_max_update_the_run_is_as_long_as_its_schedule(corpus: Path, tmp_path: Path) -> None:
    config = json.loads(TINY_CONFIG.read_text())
    config["scheduler"]["params"].update(warmup_num_steps=1, total_num_steps=3)
    path = tmp_path / "three_steps.json"
    path.write_text(json.dumps(config))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [
        sys.executable,
        "-m",
        "macaron_fairseq.pretrain",
        str(corpus),
        "--arch",
        "macaron_bert_tiny",
        "--deepspeed-config",
        str(path),
        "--save-dir",
        str(tmp_path / "run"),
        "--no-validation",
    ]
    env = dict(
        os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", MASTER_PORT=str(port)
    )
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    steps = [
        json.loads(line)["step"] for line in (tmp_path / "run" / "train_log.jsonl").read_text().splitlines()
    ]
    assert steps == [1, 2, 3]


@pytest.mark.slow  # runs the real command in subprocesses: 5-15 s here (out of --quick)
def test_without_deepspeed_the_command_says_which_extra_to_install(tmp_path: Path) -> None:
    """``--help`` needs no DeepSpeed; a run without it is one line naming the ``pretrain`` extra, exit 2."""
    env = env_without(tmp_path, "deepspeed")  # ``import deepspeed`` fails in the child
    command = [sys.executable, "-m", "macaron_fairseq.pretrain"]
    shown = subprocess.run([*command, "--help"], capture_output=True, text=True, env=env, timeout=300)
    assert shown.returncode == 0 and shown.stdout.startswith(f"usage: {PROG} "), shown.stderr[-2000:]
    data = tmp_path / "data-bin"
    data.mkdir()
    for name in ("dict.txt", "train.bin", "train.idx"):
        (data / name).write_text("")
    proc = subprocess.run(
        [*command, str(data), "--arch", "macaron_bert_tiny", "--deepspeed-config", TINY],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    lines = [line for line in proc.stderr.splitlines() if line.strip() and "[WARNING]" not in line]
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith(f"{PROG}: error: pre-training needs DeepSpeed"), lines
    assert "--extras pretrain" in lines[0]
