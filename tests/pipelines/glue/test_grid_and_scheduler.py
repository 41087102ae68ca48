"""The GLUE grid (BERT's space, run identity, the fairseq-train command) and the run scheduler (parallel
slots, one retry, finished runs skipped) — with a stand-in for the run itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.glue import scheduler
from pipelines.glue.grid import Config, NewLayers, RunSpec, grid, train_command


def spec(tmp_path: Path, task: str = "RTE", seed: int = 100, **changes: object) -> RunSpec:
    fields = dict(task=task, config=Config(32, 3e-5, 3, 0.01), seed=seed, data_dir=tmp_path / "data" / task,
                  checkpoint=tmp_path / "model.pt", arch="macaron_bert_base", num_classes=2, regression=False,
                  train_examples=2490, run_dir=tmp_path / "runs" / task / f"seed{seed}")  # fmt: skip
    fields.update(changes)
    return RunSpec(**fields)  # type: ignore[arg-type]


def option(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def test_the_default_grid_is_berts_space() -> None:
    configs = grid()
    assert len(configs) == 2 * 2 * 3
    assert {c.batch_size for c in configs} == {16, 32} and {c.lr for c in configs} == {5e-5, 3e-5}
    assert {c.epochs for c in configs} == {3, 4, 5} and {c.weight_decay for c in configs} == {0.01}
    assert Config(32, 3e-5, 3, 0.01).name() == "bs32-lr3e-05-ep3-wd0.01"


def test_train_command_restores_the_model_with_berts_schedule(tmp_path: Path) -> None:
    run = spec(tmp_path)
    command = train_command(run, tmp_path / "ckpt", Path("macaron_fairseq"))
    total = 3 * -(-2490 // 32)  # epochs × batches per epoch (the last one partial)
    assert run.updates() == (total, round(0.1 * total)) == (234, 23)
    assert option(command, "--total-num-update") == option(command, "--max-update") == "234"
    assert option(command, "--warmup-updates") == "23" and option(command, "--lr") == "3e-05"
    # resumable: the pre-trained model only while the run has no checkpoint_last.pt, with its optimizer state
    assert option(command, "--finetune-from-model") == str(tmp_path / "model.pt")
    assert "--restore-file" not in command
    assert "--no-save-optimizer-state" not in command and option(command, "--save-interval-updates") == "2000"
    assert option(command, "--optimizer") == "adam" and option(command, "--weight-decay") == "0.01"
    assert option(command, "--task") == "macaron_sentence_prediction" and "--regression-target" not in command
    assert option(command, "--end-learning-rate") == "0" and option(command, "--dropout") == "0.1"
    assert option(command, "--tokens-per-sample") == "128"


def test_train_command_with_new_layers_and_regression(tmp_path: Path) -> None:
    run = spec(tmp_path, task="STS-B", num_classes=1, regression=True,
               new_layers=NewLayers(4, "dt-fixup", 0.01), extra_flags=("--fp16",))  # fmt: skip
    command = train_command(run, tmp_path / "ckpt", Path("macaron_fairseq"))
    assert option(command, "--pretrained-encoder") == str(tmp_path / "model.pt")
    assert option(command, "--new-encoder-layers") == "4" and option(command, "--init-scheme") == "dt-fixup"
    assert option(command, "--optimizer") == "adam_lr_groups"
    assert option(command, "--pretrained-lr-multiplier") == "0.01" and "--restore-file" not in command
    assert "--regression-target" in command and command[-1] == "--fp16"


def test_a_spec_survives_its_json_record(tmp_path: Path) -> None:
    run = spec(tmp_path, new_layers=NewLayers(2), extra_flags=("--a", "b"))
    assert RunSpec.from_record(json.loads(json.dumps(run.record()))) == run


def test_slots_are_gpus_or_cpu_processes_sharing_the_cores() -> None:
    assert [s.gpu for s in scheduler.slots(3, 2, 8)] == [0, 1, 2]
    cpu = scheduler.slots(0, 2, 8)
    assert [s.threads for s in cpu] == [4, 4] and all(s.gpu is None for s in cpu)
    assert cpu[0].env()["CUDA_VISIBLE_DEVICES"] == "" and cpu[0].env()["OMP_NUM_THREADS"] == "4"
    assert scheduler.slots(2, 2, 8)[1].env()["CUDA_VISIBLE_DEVICES"] == "1"


def test_failed_runs_are_retried_once_and_finished_ones_skipped(tmp_path: Path, monkeypatch) -> None:
    flaky, broken, done = spec(tmp_path, seed=1), spec(tmp_path, seed=2), spec(tmp_path, seed=3)
    done.run_dir.mkdir(parents=True)
    (done.run_dir / "run.json").write_text(json.dumps({"status": "ok", "task": "RTE", "seed": 3}))
    attempts: dict[int, int] = {}

    def fake_execute(run: RunSpec, slot: scheduler.Slot) -> dict:
        attempts[run.seed] = attempts.get(run.seed, 0) + 1
        ok = run.seed == 1 and attempts[run.seed] == 2
        return {"status": "ok", "seed": run.seed} if ok else {"status": "failed", "exit_status": 1}

    monkeypatch.setattr(scheduler, "execute", fake_execute)
    reports = []
    def report(run: RunSpec, record: dict, attempt: int) -> None:
        reports.append((run.seed, attempt))

    records = scheduler.run_grid([flaky, broken, done], scheduler.slots(0, 2, 2), report)
    assert attempts == {1: 2, 2: 2}  # the finished run is not run again; each failure is retried once
    assert records[flaky.name]["status"] == "ok" and records[broken.name]["status"] == "failed"
    assert records[done.name]["seed"] == 3
    assert sorted(reports) == [(1, 1), (1, 2), (2, 1), (2, 2)]


@pytest.mark.parametrize("status", [0, 3])
def test_execute_records_a_failure_with_the_log_tail(tmp_path: Path, monkeypatch, status: int) -> None:
    run = spec(tmp_path)

    class Done:
        returncode = status

    def fake_run(command, **kwargs):  # the child prints but writes no run.json
        kwargs["stdout"].write("Traceback ...\nValueError: boom\n")
        return Done()

    monkeypatch.setattr(scheduler.subprocess, "run", fake_run)
    record = scheduler.execute(run, scheduler.Slot())
    assert record["status"] == "failed" and record["exit_status"] == status
    assert record["tail"][-1] == "ValueError: boom"
    assert json.loads((run.run_dir / "run.json").read_text()) == record
    assert json.loads((run.run_dir / "spec.json").read_text())["task"] == "RTE"
