"""train_progress: the log keeps every line unchanged, the display shows progress, epochs, alerts and the
exit status of the command. The command here is a small Python script that prints real fairseq log lines
(copied from a ``pipelines/wmt14.sh SMALL=1`` run), so no training is needed."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from macaron_tools.train_progress import main, option_value, parse_args, parse_record, run

TRAIN_INNER = (
    '2026-11-21 08:02:43 | INFO | train_inner | {"epoch": 1, "update": 0.526, "loss": "7.207", '
    '"nll_loss": "7.065", "ppl": "133.88", "num_updates": "10", "lr": "0.00250005", "gnorm": "1.589"}'
)
VALID = (
    '2026-11-21 08:02:43 | INFO | valid | {"epoch": 1, "valid_loss": "6.373", "valid_nll_loss": "6.136", '
    '"valid_ppl": "70.32", "valid_num_updates": "10"}'
)
TRAIN = (
    '2026-11-21 08:02:43 | INFO | train | {"epoch": 1, "train_loss": "6.77", "train_ppl": "94.64", '
    '"train_num_updates": "19"}'
)
WARNING = "2026-11-21 08:02:41 | WARNING | fairseq.tasks.fairseq_task | 3 samples have invalid sizes"
PARAMS = "2026-11-21 08:02:41 | INFO | fairseq_cli.train | num. shared model params: 180,480"
CHATTER = "2026-11-21 08:02:41 | INFO | fairseq.data.data_utils | loaded 1,800 examples"
RESUMED = (
    "2026-11-21 08:02:41 | INFO | fairseq.trainer | Loaded checkpoint ckpt/checkpoint_last.pt "
    "(epoch 8 @ 60 updates)"
)


def fake_train(tmp_path: Path, lines: list[str], exit_code: int = 0) -> list[str]:
    """A command that prints ``lines`` (half to stderr) and exits with ``exit_code``."""
    script = tmp_path / "fake_train.py"
    script.write_text(
        "import sys\n"
        f"for i, line in enumerate({lines!r}):\n"
        "    print(line, file=sys.stderr if i % 2 else sys.stdout, flush=True)\n"
        f"sys.exit({exit_code})\n"
    )
    return [sys.executable, str(script), "--max-update", "20", "--log-format", "json"]


def test_option_value_reads_both_forms_and_the_last_one_wins() -> None:
    assert option_value(["--max-update", "5", "--lr", "1"], "--max-update") == "5"
    assert option_value(["--max-update=7"], "--max-update") == "7"
    assert option_value(["--max-update", "5", "--max-update=9"], "--max-update") == "9"
    assert option_value(["--max-update"], "--max-update") is None
    assert option_value(["--max-updates", "3"], "--max-update") is None


def test_parse_record_on_fairseq_lines() -> None:
    tag, stats = parse_record(TRAIN_INNER)
    assert tag == "train_inner" and stats["num_updates"] == "10" and stats["loss"] == "7.207"
    assert parse_record(VALID)[0] == "valid"
    assert parse_record(TRAIN)[1]["train_loss"] == "6.77"
    assert parse_record(WARNING) is None and parse_record(CHATTER) is None
    assert parse_record("2026-11-21 | INFO | train | {not json}") is None


def test_log_keeps_every_line_and_display_shows_progress(tmp_path: Path) -> None:
    lines = [CHATTER, PARAMS, RESUMED, WARNING, TRAIN_INNER, VALID, TRAIN]
    log, shown = tmp_path / "logs" / "train.log", io.StringIO()
    assert run(fake_train(tmp_path, lines), log, stream=shown, use_bar=False) == 0
    assert sorted(log.read_text().splitlines()) == sorted(lines)  # stdout/stderr interleave freely
    display = shown.getvalue()
    assert "[train] update 10/20 | epoch 1 | loss 7.207 | lr 0.00250005" in display
    assert "[epoch 1] valid loss 6.373 (ppl 70.32) after 10 updates" in display
    assert "[epoch 1] train loss 6.77" in display
    assert WARNING in display and PARAMS in display and RESUMED in display
    assert CHATTER not in display  # ordinary log chatter only goes to the log


def test_log_is_appended_to_so_a_resumed_run_keeps_the_first_part(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("first run\n")
    run(fake_train(tmp_path, [TRAIN_INNER]), log, stream=io.StringIO(), use_bar=False)
    assert log.read_text().splitlines() == ["first run", TRAIN_INNER]


def test_a_failing_command_returns_its_status_and_shows_the_tail_of_the_log(tmp_path: Path) -> None:
    lines = [f"line {i}" for i in range(60)] + ["RuntimeError: CUDA out of memory"]
    shown = io.StringIO()
    code = run(fake_train(tmp_path, lines, exit_code=3), tmp_path / "t.log", stream=shown, use_bar=False)
    assert code == 3
    display = shown.getvalue()
    assert "command failed with exit status 3" in display
    assert "  RuntimeError: CUDA out of memory" in display
    assert "  line 59" in display and "  line 0\n" not in display  # only the last 40 lines


def test_a_missing_executable_is_reported_with_status_127(tmp_path: Path) -> None:
    shown = io.StringIO()
    assert run(["no-such-fairseq-train"], tmp_path / "t.log", stream=shown, use_bar=False) == 127
    assert "cannot run 'no-such-fairseq-train'" in shown.getvalue()


def test_progress_bar_counts_updates_up_to_max_update(tmp_path: Path) -> None:
    second = TRAIN_INNER.replace('"num_updates": "10"', '"num_updates": "20"')
    shown = io.StringIO()
    run(fake_train(tmp_path, [TRAIN_INNER, VALID, second]), tmp_path / "t.log", stream=shown, use_bar=True)
    display = shown.getvalue()
    assert "20/20" in display and "valid loss 6.373" in display


def test_command_line_parsing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = parse_args(["--log", "x.log", "--", "fairseq-train", "data", "--max-update", "3"])
    assert args.command == ["fairseq-train", "data", "--max-update", "3"] and args.log == Path("x.log")
    with pytest.raises(SystemExit) as exc:
        parse_args(["--log", "x.log", "--"])
    assert exc.value.code == 2 and "no command given" in capsys.readouterr().err
    assert main(["--log", str(tmp_path / "m.log"), "--no-bar", "--", *fake_train(tmp_path, [VALID])]) == 0
    assert "[epoch 1] valid loss 6.373" in capsys.readouterr().err
