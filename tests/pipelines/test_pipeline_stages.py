"""The pipelines' shared fairseq stages (macaron_pipelines.fairseq_steps) and their options, without training.

Training and generation are driven through stand-in commands (small Python scripts that behave like
``fairseq-train``/``fairseq-generate`` as far as the stages can see: the checkpoint files, resuming from
``checkpoint_last.pt``, fairseq's JSON log lines, ``H-``/``T-`` lines, the exit status), so the stage
logic — skip, resume, move aside, invalidation by new inputs, atomic outputs — is checked in seconds. The
real commands run in tests/test_translation_pipelines.py and tests/test_quickstart_e2e.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from macaron_pipelines import fairseq_steps, translation
from macaron_pipelines.commands import Console, PipelineError
from macaron_pipelines.fairseq_steps import BleuSettings, resume_settings, without_options
from macaron_pipelines.quickstart import options as quickstart_options
from macaron_workflow.stages import StageRunner

LOG_PREFIX = "2026-01-01 00:00:00 | INFO |"

FAKE_TRAIN = f"""
import json, pathlib, sys
args = sys.argv[1:]
def option(name):
    return args[args.index(name) + 1]
save_dir, max_update = pathlib.Path(option("--save-dir")), int(option("--max-update"))
last = save_dir / "checkpoint_last.pt"
done = json.loads(last.read_text())["updates"] if last.exists() else 0
if done:
    print(f"{LOG_PREFIX} fairseq.trainer | loaded checkpoint {{last}} (epoch 1 @ {{done}} updates)")
for update in range(done + 1, max_update + 1):
    stats = {{"epoch": 1, "loss": str(10 - update / 10), "num_updates": str(update), "lr": option("--lr")}}
    print("{LOG_PREFIX} train_inner | " + json.dumps(stats))
valid = {{"epoch": 1, "valid_loss": "5.0", "valid_num_updates": str(max_update)}}
print("{LOG_PREFIX} valid | " + json.dumps(valid))
print("{LOG_PREFIX} train | " + json.dumps({{"epoch": 1, "train_loss": "5.5"}}))
if "--fail" in args:
    sys.exit(3)
save_dir.mkdir(parents=True, exist_ok=True)
state = json.dumps({{"updates": max_update, "resumed_from": done, "lr": option("--lr")}})
last.write_text(state)
(save_dir / "checkpoint_best.pt").write_text(state)
"""

FAKE_GENERATE = """
import pathlib, sys
args = sys.argv[1:]
checkpoint = pathlib.Path(args[args.index("--path") + 1])
print("generating with", checkpoint, file=sys.stderr)
if checkpoint.read_text().startswith("broken"):
    print("RuntimeError: broken checkpoint", file=sys.stderr)
    sys.exit(1)
for i, text in enumerate(["Der Hund schläft .", "Sieht er den Mann ?"]):
    print(f"S-{i}\\tsource {i}\\nT-{i}\\t{text}\\nH-{i}\\t-0.5\\t{text}")
"""


@pytest.fixture
def console() -> Console:
    return Console("test")


@pytest.fixture
def data_bin(tmp_path: Path) -> Path:
    data_bin = tmp_path / "data-bin"
    data_bin.mkdir()
    for name in ("dict.de.txt", "dict.en.txt", "train.de-en.de.bin", "train.de-en.de.idx"):
        (data_bin / name).write_text(name)
    return data_bin


def fake_train_command(tmp_path: Path, save_dir: Path, max_update: int, lr: str = "0.1") -> list[str]:
    script = tmp_path / "fake_fairseq_train.py"
    script.write_text(FAKE_TRAIN)
    return [
        sys.executable,
        str(script),
        "--save-dir",
        str(save_dir),
        "--max-update",
        str(max_update),
        "--lr",
        lr,
        "--log-format",
        "json",
    ]


def train(
    runner: StageRunner,
    console: Console,
    tmp_path: Path,
    data_bin: Path,
    max_update: int,
    lr: str = "0.1",
    log_per_training: bool = True,
) -> dict:
    """Run the train stage with the stand-in trainer; the state it left in checkpoint_last.pt."""
    save_dir = tmp_path / "checkpoints"
    fairseq_steps.train(
        runner,
        console,
        stage="train",
        command=fake_train_command(tmp_path, save_dir, max_update, lr),
        data_bin=data_bin,
        save_dir=save_dir,
        log=tmp_path / "train.log",
        outputs=("checkpoint_best.pt", "checkpoint_last.pt"),
        log_per_training=log_per_training,
    )
    return json.loads((save_dir / "checkpoint_last.pt").read_text())


def test_resume_settings_drop_only_when_to_stop_and_which_checkpoints_to_keep() -> None:
    command = [
        "fairseq-train",
        "data",
        "--lr",
        "0.1",
        "--max-update",
        "60",
        "--max-epoch=3",
        "--save-interval-updates",
        "10",
        "--keep-interval-updates=20",
        "--seed",
        "1",
    ]
    assert resume_settings(command) == ["fairseq-train", "data", "--lr", "0.1", "--seed", "1"]
    assert without_options(["--max-updates", "5"], ["--max-update"]) == ["--max-updates", "5"]


def test_translation_small_mode_resumes_for_a_larger_max_update_but_not_for_other_settings(
    tmp_path: Path,
) -> None:
    def command(*argv: str) -> list[str]:
        args = translation.parse_args(["iwslt14", "--workdir", str(tmp_path), "--small", *argv])
        recipe = translation.RECIPES["iwslt14"]
        save_dir = translation.ArchPaths(args.workdir, args.arch, args.num_avg).save_dir
        return translation.train_command(recipe, args, tmp_path / "data-bin", save_dir)

    sixty, eighty = command("--max-update", "60"), command("--max-update", "80")
    assert sixty != eighty  # the finished training is not "up to date" for 80 updates...
    # small mode saves every max-update // (NUM_AVG + 1) updates; NUM_AVG is 0 (checkpoint_best.pt)
    assert "--save-interval-updates" in sixty and sixty[sixty.index("--save-interval-updates") + 1] == "60"
    assert resume_settings(sixty) == resume_settings(eighty)  # ...but it is resumed, not restarted
    assert resume_settings(command("--init-scheme", "dt-fixup")) != resume_settings(sixty)
    assert resume_settings(command("--", "--dropout", "0.2")) != resume_settings(sixty)


def test_each_arch_has_its_own_checkpoints_and_results(tmp_path: Path) -> None:
    macaron = translation.ArchPaths(tmp_path, "macaron_small", 5)
    baseline = translation.ArchPaths(tmp_path, "transformer_iwslt_de_en", 5)
    assert macaron.save_dir != baseline.save_dir and macaron.results != baseline.results
    assert macaron.averaged.name == "checkpoint_avg_last5.pt"
    assert macaron.generated.name == "generate-test.macaron_small.txt"


def test_train_is_skipped_when_finished_and_resumed_for_more_updates(
    tmp_path: Path, data_bin: Path, console: Console, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = StageRunner(tmp_path / ".stages", log=console.say)
    assert train(runner, console, tmp_path, data_bin, 30) == {"updates": 30, "resumed_from": 0, "lr": "0.1"}
    capsys.readouterr()
    train(runner, console, tmp_path, data_bin, 30)
    assert "[train] up to date, skipped" in capsys.readouterr().out
    assert train(runner, console, tmp_path, data_bin, 50)["resumed_from"] == 30
    assert "[train] resuming in" in capsys.readouterr().out
    assert not list(tmp_path.glob("checkpoints.before-*"))
    log = (tmp_path / "train.log").read_text()
    assert '"num_updates": "1"' in log and "(epoch 1 @ 30 updates)" in log  # appended, not restarted


def test_train_with_other_settings_moves_checkpoints_and_log_aside(
    tmp_path: Path, data_bin: Path, console: Console
) -> None:
    runner = StageRunner(tmp_path / ".stages", log=console.say)
    train(runner, console, tmp_path, data_bin, 20)
    assert train(runner, console, tmp_path, data_bin, 20, lr="0.2") == {
        "updates": 20,
        "resumed_from": 0,
        "lr": "0.2",
    }
    [old_checkpoints] = tmp_path.glob("checkpoints.before-*")
    assert json.loads((old_checkpoints / "checkpoint_last.pt").read_text())["lr"] == "0.1"
    [old_log] = tmp_path.glob("train.log.before-*")
    assert '"lr": "0.1"' in old_log.read_text()
    assert '"lr": "0.1"' not in (tmp_path / "train.log").read_text()


def test_changed_data_restarts_training_and_a_shared_log_is_appended_to(
    tmp_path: Path, data_bin: Path, console: Console
) -> None:
    runner = StageRunner(tmp_path / ".stages", log=console.say)
    train(runner, console, tmp_path, data_bin, 20, log_per_training=False)
    (data_bin / "dict.en.txt").write_text("a new dictionary")
    assert train(runner, console, tmp_path, data_bin, 20, log_per_training=False)["resumed_from"] == 0
    assert len(list(tmp_path.glob("checkpoints.before-*"))) == 1
    assert not list(tmp_path.glob("train.log.before-*"))
    assert (tmp_path / "train.log").read_text().count('"num_updates": "20"') == 2


def test_force_restarts_a_finished_training(tmp_path: Path, data_bin: Path, console: Console) -> None:
    train(StageRunner(tmp_path / ".stages", log=console.say), console, tmp_path, data_bin, 20)
    forced = StageRunner(tmp_path / ".stages", force=True, log=console.say)
    assert train(forced, console, tmp_path, data_bin, 20)["resumed_from"] == 0
    assert len(list(tmp_path.glob("checkpoints.before-*"))) == 1


def test_a_failed_training_is_an_error_and_is_not_marked_complete(
    tmp_path: Path, data_bin: Path, console: Console
) -> None:
    runner = StageRunner(tmp_path / ".stages", log=console.say)
    command = [*fake_train_command(tmp_path, tmp_path / "checkpoints", 10), "--fail"]
    with pytest.raises(PipelineError, match="fairseq-train failed with exit status 3"):
        fairseq_steps.train(
            runner,
            console,
            stage="train",
            command=command,
            data_bin=data_bin,
            save_dir=tmp_path / "checkpoints",
            log=tmp_path / "train.log",
        )
    assert not runner.marker_path("train").exists()


@pytest.fixture
def fake_fairseq_generate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``fairseq-generate`` first on PATH that 'translates' perfectly, or fails on a broken checkpoint."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "fairseq-generate"
    script.write_text(f"#!{sys.executable}\n{FAKE_GENERATE}")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def generate(runner: StageRunner, console: Console, data_bin: Path, checkpoint: Path, output: Path) -> None:
    fairseq_steps.generate(
        runner,
        console,
        stage="generate",
        data_bin=data_bin,
        checkpoint=checkpoint,
        src="en",
        tgt="de",
        beam=5,
        lenpen=1.0,
        output=output,
        cpu=True,
    )


@pytest.mark.usefixtures("fake_fairseq_generate")
def test_generate_renames_its_output_when_done_and_reruns_for_a_new_checkpoint(
    tmp_path: Path, data_bin: Path, console: Console, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = StageRunner(tmp_path / ".stages", log=console.say)
    checkpoint, output = tmp_path / "checkpoint_best.pt", tmp_path / "generate-test.txt"
    checkpoint.write_text("weights 1")
    generate(runner, console, data_bin, checkpoint, output)
    hypotheses = [line for line in output.read_text().splitlines() if line.startswith("H-")]
    assert len(hypotheses) == 2 and runner.reports["generate"]["hypotheses"] == 2
    assert "generating with" in (tmp_path / "generate-test.log").read_text()
    generate(runner, console, data_bin, checkpoint, output)
    assert "[generate] up to date, skipped" in capsys.readouterr().out
    checkpoint.write_text("weights 2, after more training")
    generate(runner, console, data_bin, checkpoint, output)
    assert "[generate] running" in capsys.readouterr().out


@pytest.mark.usefixtures("fake_fairseq_generate")
def test_a_failed_generation_keeps_no_output_and_shows_the_log(
    tmp_path: Path, data_bin: Path, console: Console, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = StageRunner(tmp_path / ".stages", log=console.say)
    checkpoint, output = tmp_path / "checkpoint_best.pt", tmp_path / "generate-test.txt"
    checkpoint.write_text("broken")
    with pytest.raises(PipelineError, match=r"fairseq-generate failed with exit status 1 \(log: .*generate"):
        generate(runner, console, data_bin, checkpoint, output)
    assert "RuntimeError: broken checkpoint" in capsys.readouterr().err
    assert not output.exists() and not list(tmp_path.glob(".generate-test.txt.tmp-*"))


def test_score_writes_json_and_hypotheses_and_prints_bleu_on_every_run(
    tmp_path: Path, console: Console, capsys: pytest.CaptureFixture[str]
) -> None:
    generated, ref, tok_ref = tmp_path / "generate-test.txt", tmp_path / "test.de", tmp_path / "tok.de"
    generated.write_text("H-1\t-0.1\tSieht er den Mann ?\nH-0\t-0.1\tDer Hund schläft .\n")
    ref.write_text("Der Hund schläft.\nSieht er den Mann?\n")
    tok_ref.write_text("Der Hund schläft .\nSieht er den Mann ?\n")
    runner = StageRunner(tmp_path / ".stages", log=console.say)
    results_dir = tmp_path / "results"

    def score() -> dict:
        return fairseq_steps.score(
            runner,
            stage="score",
            generated=generated,
            ref=ref,
            tok_ref=tok_ref,
            lang="de",
            bleu=BleuSettings(),
            name="unit",
            json_out=results_dir / "bleu.json",
            hyp_out=results_dir / "test.hyp.de",
        )

    results = score()
    assert results["scores"]["sacrebleu"]["score"] == 100.0 and results["name"] == "unit"
    assert results["hypotheses_file"] == str(results_dir / "test.hyp.de")  # the final name, not a temp
    assert (results_dir / "test.hyp.de").read_text().splitlines() == ref.read_text().splitlines()
    first = capsys.readouterr().out
    assert "sacreBLEU (detokenized, 13a, case-sensitive) = 100.00" in first
    assert score() == results
    second = capsys.readouterr().out
    assert "[score] up to date, skipped" in second and "sacreBLEU (detokenized, 13a" in second
    assert sorted(path.name for path in results_dir.iterdir()) == ["bleu.json", "test.hyp.de"]


def test_plot_writes_a_png_from_the_training_log(tmp_path: Path, console: Console) -> None:
    log = tmp_path / "train.log"
    inner = [{"epoch": 1, "loss": str(9 - u), "num_updates": str(u)} for u in (1, 2, 3)]
    log.write_text("".join(f"{LOG_PREFIX} train_inner | {json.dumps(stats)}\n" for stats in inner))
    runner = StageRunner(tmp_path / ".stages", log=console.say)
    fairseq_steps.plot(runner, stage="plot", log=log, out=tmp_path / "results" / "curves.png", title="t")
    assert (tmp_path / "results" / "curves.png").read_bytes()[:4] == b"\x89PNG"
    log.write_text("no records\n")
    with pytest.raises(PipelineError, match="no train/valid loss records"):
        fairseq_steps.plot(runner, stage="plot", log=log, out=tmp_path / "results" / "curves.png", title="t")


@pytest.mark.slow  # runs the real averaging command twice (~8 s)
def test_average_reads_the_last_interval_checkpoints_and_reruns_when_one_is_added(
    tmp_path: Path, console: Console, capsys: pytest.CaptureFixture[str]
) -> None:
    save_dir = tmp_path / "checkpoints"
    save_dir.mkdir()

    def save(update: int) -> None:
        torch.save({"model": {"w": torch.full((2,), float(update))}}, save_dir / f"checkpoint_1_{update}.pt")

    for update in (10, 20, 30):
        save(update)
    runner = StageRunner(tmp_path / ".stages", log=console.say)
    output = save_dir / "checkpoint_avg_last2.pt"
    fairseq_steps.average(runner, console, stage="average", save_dir=save_dir, count=2, output=output)
    assert torch.load(output, weights_only=True)["model"]["w"].tolist() == [25.0, 25.0]
    save(40)
    fairseq_steps.average(runner, console, stage="average", save_dir=save_dir, count=2, output=output)
    assert torch.load(output, weights_only=True)["model"]["w"].tolist() == [35.0, 35.0]
    assert runner.reports["average"]["averaged"] == ["checkpoint_1_30.pt", "checkpoint_1_40.pt"]
    with pytest.raises(PipelineError, match=r"last 5 checkpoint_<epoch>_<update>\.pt files but found 4"):
        fairseq_steps.average(runner, console, stage="average", save_dir=save_dir, count=5, output=output)


def test_quickstart_options_defaults_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = quickstart_options.parse_args(["--workdir", str(tmp_path / "qs")])
    assert (args.max_update, args.embed_dim, args.lr, args.beam) == (750, 128, "3e-3", 5)
    assert not args.own_corpus
    assert args.workdir == tmp_path / "qs" and args.threads >= 1

    def error(*argv: str) -> str:
        with pytest.raises(SystemExit) as exc:
            quickstart_options.parse_args(list(argv))
        assert exc.value.code == 2
        return capsys.readouterr().err

    assert "quickstart: error: set --max-update or --max-epoch (both are 0)" in error("--max-update", "0")
    assert "must be a non-negative integer, got '-3'" in error("--layers=-3")
    assert "unrecognized arguments: --layer" in error("--layer", "3")  # no abbreviations
    assert "must be given together" in error("--train-prefix", str(tmp_path / "train"))
    assert "the synthetic corpus is en→de" in error("--src", "fr")
    prefixes = [
        "--train-prefix",
        str(tmp_path / "c"),
        "--valid-prefix",
        str(tmp_path / "c"),
        "--test-prefix",
        str(tmp_path / "c"),
    ]
    assert f"missing corpus file {tmp_path / 'c'}.en" in error(*prefixes)
    (tmp_path / "c.en").write_text("a\n")
    (tmp_path / "c.de").write_text("b\n")
    assert quickstart_options.parse_args(prefixes).own_corpus


def test_quickstart_command_line_help_and_shell_wrapper_errors(tmp_path: Path) -> None:
    wrapper = Path(translation.__file__).with_name("quickstart.sh")
    shown = subprocess.run(["bash", str(wrapper), "--help"], capture_output=True, text=True, cwd=tmp_path)
    assert shown.returncode == 0 and "--max-update N" in shown.stdout
    assert "checking/installing" not in shown.stdout  # --help does not install
    failed = subprocess.run(
        ["bash", str(wrapper), "--skip-install", "--beam", "x"], capture_output=True, text=True, cwd=tmp_path
    )
    assert failed.returncode == 2
    assert "quickstart: error: argument --beam: must be a non-negative integer, got 'x'" in failed.stderr
