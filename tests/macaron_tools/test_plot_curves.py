"""Tests of macaron_tools.plot_curves (fairseq log parsing, PNG output)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from macaron_tools import plot_curves
from macaron_workflow.cli import run_cli

PREFIX = "2026-01-01 10:00:00 | INFO |"


def json_log(epochs: int = 3) -> list[str]:
    lines = [f"{PREFIX} fairseq_cli.train | task: TranslationTask"]
    for epoch in range(1, epochs + 1):
        for step in range(2):
            upd = (epoch - 1) * 2 + step + 1
            stats = {
                "epoch": epoch,
                "update": epoch - 1 + 0.5,
                "loss": f"{10 - upd:.3f}",
                "num_updates": str(upd),
            }
            lines.append(f"{PREFIX} train_inner | {json.dumps(stats)}")
        valid = {
            "epoch": epoch,
            "valid_loss": f"{9 - epoch:.3f}",
            "valid_nll_loss": "1.0",
            "valid_num_updates": str(epoch * 2),
        }
        train = {"epoch": epoch, "train_loss": f"{9.5 - epoch:.3f}", "train_num_updates": str(epoch * 2)}
        lines.append(f"{PREFIX} valid | {json.dumps(valid)}")
        lines.append(f"{PREFIX} train | {json.dumps(train)}")
        lines.append(f"{PREFIX} train | {json.dumps(train)}")  # duplicated handler output
    return lines


def test_parse_json_log() -> None:
    curves = plot_curves.parse_log(json_log(3))
    assert curves.series("train") == ([1, 2, 3], [8.5, 7.5, 6.5])
    assert curves.series("valid") == ([1, 2, 3], [8.0, 7.0, 6.0])
    assert curves.series("inner")[0] == [1, 2, 3, 4, 5, 6]
    assert curves.valid_epoch[2]["num_updates"] == 4


def test_parse_simple_log() -> None:
    lines = [
        f"{PREFIX} train_inner | epoch 001:     10 / 50 loss=9.1, nll_loss=9.0",  # not a record we use
        f"{PREFIX} valid | epoch 001 | valid on 'valid' subset | loss 7.2 | nll_loss 7 | num_updates 50",
        f"{PREFIX} train | epoch 001 | loss 8.4 | nll_loss 8.3 | num_updates 50 | lr 0.001",
        f"{PREFIX} valid | epoch 002 | valid on 'valid' subset | loss 6.1 | nll_loss 6 | num_updates 100",
        f"{PREFIX} train | epoch 002 | loss 7.0 | nll_loss 6.9 | num_updates 100 | lr 0.001",
    ]
    curves = plot_curves.parse_log(lines)
    assert curves.series("train") == ([1, 2], [8.4, 7.0])
    assert curves.series("valid") == ([1, 2], [7.2, 6.1])


def test_cli_writes_png_and_json(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(json_log(3)) + "\n", encoding="utf-8")
    out, data = tmp_path / "plots" / "curves.png", tmp_path / "curves.json"
    assert plot_curves.main(["--log", str(log), "--out", str(out), "--json", str(data), "--nll"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads(data.read_text())["valid"]["3"]["loss"] == 6.0
    assert not list(out.parent.glob(".*tmp*"))


def drawn_figures(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Record every figure :func:`plot_curves.plot` closes (it closes the one it drew after saving it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures: list[object] = []
    close = plt.close

    def recording_close(fig: object = None) -> None:
        figures.append(fig)
        close(fig)

    monkeypatch.setattr(plt, "close", recording_close)
    return figures


def curves_of(axes: object) -> dict[str, tuple[list[float], list[float]]]:
    return {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in axes.get_lines()}


def test_epoch_only_log_gives_single_panel_png(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.image import imread

    figures = drawn_figures(monkeypatch)
    lines = [line for line in json_log(2) if "train_inner" not in line]
    out = tmp_path / "c.png"
    plot_curves.plot(plot_curves.parse_log(lines), out)
    assert imread(out).shape == (400, 600, 4)  # one 6 x 4 in panel at 100 dpi (two panels: 1100 x 400)
    [fig] = figures
    [ax] = fig.axes
    assert ax.get_title() == "loss per epoch" and ax.get_xlabel() == "epoch"
    assert curves_of(ax) == {"train loss": ([1, 2], [8.5, 7.5]), "valid loss": ([1, 2], [8.0, 7.0])}
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["train loss", "valid loss"]


def test_log_with_updates_gives_two_panels_and_nll(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.image import imread

    figures = drawn_figures(monkeypatch)
    out = tmp_path / "c.png"
    plot_curves.plot(plot_curves.parse_log(json_log(3)), out, nll=True)
    assert imread(out).shape == (400, 1100, 4)
    [fig] = figures
    epoch_ax, update_ax = fig.axes
    assert curves_of(epoch_ax) == {
        "train loss": ([1, 2, 3], [8.5, 7.5, 6.5]),
        "valid loss": ([1, 2, 3], [8.0, 7.0, 6.0]),
        "valid nll_loss": ([1, 2, 3], [1.0, 1.0, 1.0]),  # the train records of json_log have no nll_loss
    }
    assert update_ax.get_xlabel() == "update"
    assert curves_of(update_ax) == {
        "train loss (log interval)": ([1, 2, 3, 4, 5, 6], [9.0, 8.0, 7.0, 6.0, 5.0, 4.0]),
        "valid loss": ([2, 4, 6], [8.0, 7.0, 6.0]),  # at the valid records' num_updates
    }


def test_cli_fails_clearly_without_losses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "empty.log"
    log.write_text("hello\n", encoding="utf-8")
    missing = tmp_path / "missing.log"
    for given, message in (
        (log, "plot_curves: error: no train/valid loss records"),
        (missing, f"plot_curves: error: cannot read {missing}"),
    ):
        argv = ["--log", str(given), "--out", str(tmp_path / "x.png")]
        # the error rule: one line, exit 2 (macaron_workflow.cli.run_cli)
        with pytest.raises(SystemExit) as ended:
            run_cli(lambda argv=argv: plot_curves.main(argv), "plot_curves")
        err = capsys.readouterr().err
        assert ended.value.code == 2 and err.startswith(message) and err.count("\n") == 1, err


def test_the_pretrainers_step_log_is_recognised_and_plotted(tmp_path: Path) -> None:
    log = tmp_path / "train_log.jsonl"
    train = [
        {"step": s, "mlm_loss": 9.0 - s, "nsp_loss": 1.0, "nsp_accuracy": 50.0, "lr": 1e-3 * s}
        for s in (1, 2, 3)
    ]
    valid = {"step": 3, "split": "valid", "mlm_loss": 6.0, "ppl": 64.0, "nsp_accuracy": 55.0, "pairs": 10.0}
    log.write_text("".join(json.dumps(r) + "\n" for r in (*train, valid)))
    assert plot_curves.is_step_log(log) and not plot_curves.is_step_log(tmp_path / "missing.jsonl")
    out = tmp_path / "curves.png"
    assert plot_curves.main(["--log", str(log), "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (tmp_path / "empty.jsonl").write_text('{"step": 1, "split": "valid", "mlm_loss": 1.0}\n')
    with pytest.raises(plot_curves.PlotError, match="holds no training records"):
        plot_curves.main(["--log", str(tmp_path / "empty.jsonl"), "--out", str(out)])


def test_the_step_log_functions_are_the_shared_ones() -> None:
    """The tool, the trainer (``SAVE_DIR/loss_curves.png``) and the pre-training pipeline draw the step log
    with one implementation from the base layer, and catch one error type (``plot_curves.PlotError``)."""
    from macaron_workflow import step_log

    assert plot_curves.PlotError is step_log.PlotError
    assert plot_curves.read_step_log is step_log.read_step_log
    assert plot_curves.plot_step_log is step_log.plot_step_log
    assert plot_curves.smoothed([1.0, 3.0, 5.0], 2) == [1.0, 2.0, 4.0]
