"""macaron_workflow.progress.ProgressDisplay: lines with a prefix without a bar, lines above the bar with one,
nothing when inactive."""

from __future__ import annotations

import io

from macaron_workflow.progress import ProgressDisplay


def test_lines_without_a_bar_and_nothing_when_inactive() -> None:
    out = io.StringIO()  # not a terminal: no bar by default
    display = ProgressDisplay(out, total=10, unit="step", desc="x", prefix="[p] ")
    assert display.bar is None
    display.advance(3, "ignored without a bar")
    display.message("hello")
    display.close()
    assert out.getvalue() == "[p] hello\n" and display.elapsed().endswith("s")
    quiet = io.StringIO()
    silent = ProgressDisplay(quiet, total=10, unit="step", desc="x", use_bar=True, active=False)
    silent.message("hidden")
    silent.advance(1)
    silent.close()
    assert silent.bar is None and quiet.getvalue() == ""


def test_a_bar_counts_steps_and_keeps_messages_above_it() -> None:
    out = io.StringIO()
    display = ProgressDisplay(out, total=10, initial=2, unit="upd", desc="train", use_bar=True)
    display.advance(3, "loss 1.0")
    display.advance(-1)  # never backwards
    display.message("epoch 1 done")
    assert display.bar.n == 5
    display.close()
    text = out.getvalue()
    assert "epoch 1 done\n" in text and "loss 1.0" in text and "train" in text
