"""The GLUE grid (BERT's space, run identity, the fairseq-train command) and the run scheduler (parallel
slots, one retry, finished runs skipped) — with a stand-in for the run itself."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from macaron_pipelines.glue import scheduler
from macaron_pipelines.glue.grid import (
    DEFAULT_PRESET,
    PRESETS,
    Config,
    ModelConfigError,
    NewLayers,
    RunSpec,
    checkpoint_model_flags,
    grid,
    train_command,
)
from macaron_workflow.grid import Slot, slots
from macaron_workflow.processes import Completed


def spec(tmp_path: Path, task: str = "RTE", seed: int = 100, **changes: object) -> RunSpec:
    fields = dict(
        task=task,
        config=Config(32, 3e-5, 3, 0.01),
        seed=seed,
        data_dir=tmp_path / "data" / task,
        checkpoint=tmp_path / "model.pt",
        arch="macaron_bert_base",
        num_classes=2,
        regression=False,
        train_examples=2490,
        run_dir=tmp_path / "runs" / task / f"seed{seed}",
    )
    fields.update(changes)
    return RunSpec(**fields)  # type: ignore[arg-type]


def option(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def test_the_default_grid_is_berts_appendix_a3() -> None:
    configs = grid()
    assert len(configs) == 2 * 3 * 3
    assert {c.batch_size for c in configs} == {16, 32} and {c.lr for c in configs} == {5e-5, 3e-5, 2e-5}
    assert {c.epochs for c in configs} == {2, 3, 4} and {c.weight_decay for c in configs} == {0.01}
    assert Config(32, 3e-5, 3, 0.01).name() == "bs32-lr3e-05-ep3-wd0.01"
    assert PRESETS[DEFAULT_PRESET].name == "bert" and "A.3" in PRESETS["bert"].source


def test_presets_carry_their_sources_and_settings() -> None:
    macaron, roberta = PRESETS["macaron"], PRESETS["roberta"]
    assert macaron.batch_sizes_for("MNLI") == (16, 24) and macaron.batch_sizes_for("RTE") == (16, 32)
    assert macaron.epochs == (3, 4, 5) and macaron.weight_decays == (0.0, 0.01) and len(macaron.seeds) == 6
    assert roberta.lrs == (1e-5, 2e-5, 3e-5) and roberta.epochs == (10,) and roberta.weight_decays == (0.1,)
    assert roberta.warmup_ratio == 0.06 and roberta.adam_betas == (0.9, 0.98)
    assert all(preset.source for preset in PRESETS.values())
    run = RunSpec(
        task="RTE",
        config=Config(16, 1e-5, 10, 0.1),
        seed=100,
        data_dir=Path("d"),
        checkpoint=Path("m.pt"),
        arch="vanilla_bert_base",
        num_classes=2,
        regression=False,
        train_examples=1000,
        run_dir=Path("r"),
        warmup_ratio=roberta.warmup_ratio,
        adam_betas=roberta.adam_betas,
    )
    command = train_command(run, Path("ckpt"), Path("macaron_fairseq"))
    assert run.updates() == (630, 38) and option(command, "--adam-betas") == "(0.9, 0.98)"


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
    assert option(command, "--optimizer") == "adam_lr_groups" and option(command, "--weight-decay") == "0.01"
    assert "--no-decay-bias-and-norm" in command and option(command, "--adam-betas") == "(0.9, 0.999)"
    assert option(command, "--task") == "macaron_sentence_prediction" and "--regression-target" not in command
    assert option(command, "--end-learning-rate") == "0" and option(command, "--dropout") == "0.1"
    assert option(command, "--tokens-per-sample") == "128"


def test_train_command_with_new_layers_and_regression(tmp_path: Path) -> None:
    run = spec(
        tmp_path,
        task="STS-B",
        num_classes=1,
        regression=True,
        new_layers=NewLayers(4, "dt-fixup", 0.01),
        extra_flags=("--fp16",),
    )
    command = train_command(run, tmp_path / "ckpt", Path("macaron_fairseq"))
    assert option(command, "--pretrained-encoder") == str(tmp_path / "model.pt")
    assert option(command, "--new-encoder-layers") == "4" and option(command, "--init-scheme") == "dt-fixup"
    assert option(command, "--optimizer") == "adam_lr_groups"
    assert option(command, "--pretrained-lr-multiplier") == "0.01" and "--restore-file" not in command
    assert "--regression-target" in command and command[-1] == "--fp16"


def test_a_spec_survives_its_json_record(tmp_path: Path) -> None:
    run = spec(
        tmp_path,
        new_layers=NewLayers(2),
        extra_flags=("--a", "b"),
        model_flags=("--x", "1"),
        adam_betas=(0.9, 0.98),
    )
    assert RunSpec.from_record(json.loads(json.dumps(run.record()))) == run


def test_the_fine_tuned_model_is_the_checkpoints_model(tmp_path: Path) -> None:
    """The pre-training flags (here Macaron's γ, the GELU form, BERT's ε, an imported model's sizes) are
    passed on to fairseq-train; flags contradicting them are refused."""
    saved = argparse.Namespace(
        arch="macaron_bert_base",
        encoder_layers=4,
        encoder_embed_dim=96,
        encoder_ffn_embed_dim=192,
        encoder_attention_heads=4,
        activation_fn="gelu_accurate",
        activation_dropout=0.0,
        encoder_normalize_before=False,
        max_positions=512,
        num_segments=2,
        layernorm_eps=1e-12,
        macaron_ffn_step=0.4,
        max_relative_positions=0,
        dropout=0.3,
    )
    flags = checkpoint_model_flags(saved)
    assert option(list(flags), "--macaron-ffn-step") == "0.4"
    assert option(list(flags), "--activation-fn") == "gelu_accurate"
    assert (
        option(list(flags), "--layernorm-eps") == "1e-12" and option(list(flags), "--encoder-layers") == "4"
    )
    assert "--encoder-normalize-before" not in flags and "--dropout" not in flags  # fine-tuning's own
    assert "--max-relative-positions" not in flags
    command = train_command(spec(tmp_path, model_flags=flags), tmp_path / "ckpt", Path("macaron_fairseq"))
    assert option(command, "--macaron-ffn-step") == "0.4"
    # with new layers on top, --pretrained-encoder takes the sizes from the checkpoint; the rest is passed
    mixed_run = spec(tmp_path, model_flags=flags, new_layers=NewLayers(2))
    mixed = train_command(mixed_run, tmp_path / "c", Path("m"))
    assert option(mixed, "--layernorm-eps") == "1e-12" and option(mixed, "--activation-fn") == "gelu_accurate"
    assert "--encoder-layers" not in mixed and "--encoder-embed-dim" not in mixed
    assert checkpoint_model_flags(saved, ["--macaron-ffn-step", "0.40", "--dropout", "0.2"]) == flags
    for contradiction in (
        ["--activation-fn", "relu"],
        ["--macaron-ffn-step=1"],
        ["--encoder-normalize-before"],
    ):
        with pytest.raises(ModelConfigError, match=contradiction[0].split("=")[0]):
            checkpoint_model_flags(saved, contradiction)
    assert "--encoder-normalize-before" in checkpoint_model_flags(
        {**vars(saved), "encoder_normalize_before": True}
    )


def test_failed_runs_are_retried_once_and_finished_ones_skipped(tmp_path: Path, monkeypatch) -> None:
    flaky, broken, done = spec(tmp_path, seed=1), spec(tmp_path, seed=2), spec(tmp_path, seed=3)
    done.run_dir.mkdir(parents=True)
    (done.run_dir / "run.json").write_text(json.dumps({"status": "ok", "task": "RTE", "seed": 3}))
    attempts: dict[int, int] = {}

    def fake_execute(run: RunSpec, slot: Slot) -> dict:
        attempts[run.seed] = attempts.get(run.seed, 0) + 1
        ok = run.seed == 1 and attempts[run.seed] == 2
        return {"status": "ok", "seed": run.seed} if ok else {"status": "failed", "exit_status": 1}

    monkeypatch.setattr(scheduler, "execute", fake_execute)
    reports = []

    def report(run: RunSpec, record: dict, attempt: int) -> None:
        reports.append((run.seed, attempt))

    records = scheduler.run_grid([flaky, broken, done], slots(0, 2, 2), report)
    assert attempts == {1: 2, 2: 2}  # the finished run is not run again; each failure is retried once
    assert records[flaky.name]["status"] == "ok" and records[broken.name]["status"] == "failed"
    assert records[done.name]["seed"] == 3
    assert sorted(reports) == [(1, 1), (1, 2), (2, 1), (2, 2)]


@pytest.mark.parametrize("status", [0, 3])
def test_execute_records_a_failure_with_the_log_tail(tmp_path: Path, monkeypatch, status: int) -> None:
    run = spec(tmp_path)

    def fake_run(command, **kwargs):  # the child prints but writes no run.json
        with kwargs["log"].open("a" if kwargs.get("append") else "w") as log:
            log.write("Traceback ...\nValueError: boom\n")
        return Completed([str(part) for part in command], status, log=kwargs["log"])

    monkeypatch.setattr(scheduler.processes, "run", fake_run)
    record = scheduler.execute(run, Slot())
    assert record["status"] == "failed" and record["exit_status"] == status
    assert record["tail"][-1] == "ValueError: boom"
    assert json.loads((run.run_dir / "run.json").read_text()) == record
    assert json.loads((run.run_dir / "spec.json").read_text())["task"] == "RTE"
