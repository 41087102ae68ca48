"""Run ``fairseq-train`` with a compact progress display and keep its full log for plotting.

    python -m macaron_tools.train_progress --log train.log -- fairseq-train DATA ... \\
        --log-format json --log-interval 10

Every line the command prints (stdout and stderr) goes to ``--log`` unchanged, so the JSON records of
``--log-format json`` are available to :mod:`macaron_tools.plot_curves`. On the terminal it
shows instead: a progress bar over updates (``--max-update`` read from the command; tqdm on a terminal,
one line per log interval otherwise) with the current loss and learning rate, one summary line per
epoch (train/valid loss), and warnings/errors. When the command fails, the last lines of the log are
printed. The exit status is the command's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from macaron_workflow import processes, progress
from macaron_workflow.cli import ArgumentParser, run_cli

_RECORD = re.compile(r"\|\s*INFO\s*\|\s*(?P<tag>train_inner|train|valid)\s*\|\s*(?P<body>\{.*\})\s*$")
_ALERT = re.compile(r"\|\s*(WARNING|ERROR|CRITICAL)\s*\||Traceback|Error:|error:")
_NOTEWORTHY = re.compile(  # fairseq: "No existing checkpoint found" / "Loaded checkpoint"; the rest:
    # macaron_tools.train_preemptible (signal received, requeue, where training resumed, a checkpoint gone)
    r"num\. (shared )?model params|done training|no existing checkpoint|loaded checkpoint|resumed from"
    r"|received: checkpoint saved|requeue|starting fresh",
    re.IGNORECASE,
)


def option_value(command: Sequence[str], flag: str) -> str | None:
    """Value of ``--flag VALUE`` or ``--flag=VALUE`` in an argument list (last one wins)."""
    value = None
    for i, arg in enumerate(command):
        if arg == flag and i + 1 < len(command):
            value = command[i + 1]
        elif arg.startswith(flag + "="):
            value = arg.split("=", 1)[1]
    return value


def parse_record(line: str) -> tuple[str, dict[str, Any]] | None:
    """(tag, stats) of a fairseq JSON log record, or None for any other line."""
    match = _RECORD.search(line)
    if match is None:
        return None
    try:
        return match["tag"], json.loads(match["body"])
    except json.JSONDecodeError:
        return None


class ProgressDisplay(progress.ProgressDisplay):
    """Renders training progress from fairseq JSON records onto a stream (the bar and lines of
    :class:`macaron_workflow.progress.ProgressDisplay`)."""

    def __init__(self, stream: TextIO, max_update: int | None, use_bar: bool) -> None:
        super().__init__(stream, total=max_update, unit="upd", desc="train", use_bar=use_bar)
        self.max_update = max_update
        self.last_update = 0
        self.train_loss: dict[int, str] = {}

    def record(self, tag: str, stats: dict[str, Any]) -> None:
        if tag == "train_inner":
            updates = int(float(stats.get("num_updates", self.last_update)))
            postfix = (
                f"epoch {stats.get('epoch', '?')} | loss {stats.get('loss', '?')} | lr {stats.get('lr', '?')}"
            )
            if self.bar is not None:
                self.advance(updates - self.last_update, postfix)
            else:
                total = f"/{self.max_update}" if self.max_update else ""
                self.message(f"[train] update {updates}{total} | {postfix} | {self.elapsed()}")
            self.last_update = updates
        elif tag == "train":
            epoch = int(float(stats.get("epoch", 0)))
            self.train_loss[epoch] = str(stats.get("train_loss", "?"))
        elif tag == "valid":
            epoch = int(float(stats.get("epoch", 0)))
            updates = stats.get("valid_num_updates", "?")
            self.message(
                f"[epoch {epoch}] valid loss {stats.get('valid_loss', '?')} "
                f"(ppl {stats.get('valid_ppl', '?')}) after {updates} updates | {self.elapsed()}"
            )

    def epoch_summary(self, epoch: int) -> None:
        if epoch in self.train_loss:
            self.message(f"[epoch {epoch}] train loss {self.train_loss[epoch]} | {self.elapsed()}")


def run(
    command: Sequence[str],
    log_path: Path,
    stream: TextIO | None = None,
    use_bar: bool | None = None,
    tail_lines: int = 40,
) -> int:
    """Run ``command``, tee its output to ``log_path``, display progress on ``stream`` (the current
    ``sys.stderr`` by default)."""
    stream = stream if stream is not None else sys.stderr
    if use_bar is None:
        use_bar = stream.isatty()
    max_update_text = option_value(command, "--max-update")
    max_update = int(max_update_text) if max_update_text and int(max_update_text) > 0 else None
    display = ProgressDisplay(stream, max_update, use_bar)
    tail: deque[str] = deque(maxlen=tail_lines)
    env = dict(os.environ, PYTHONUNBUFFERED="1")

    def show(line: str) -> None:
        tail.append(line)
        parsed = parse_record(line)
        if parsed is not None:
            display.record(*parsed)
            if parsed[0] == "train":
                display.epoch_summary(int(float(parsed[1].get("epoch", 0))))
        elif _ALERT.search(line) or _NOTEWORTHY.search(line):
            display.message(line)

    try:  # Ctrl-C: the command gets SIGINT and ends by itself; its status is this one's
        code = processes.run(
            command, env=env, log=log_path, append=True, on_line=show, on_interrupt="return"
        ).status
    except OSError as err:
        if err.filename != command[0]:  # not the command: the log cannot be written
            raise
        print(f"train_progress: cannot run {command[0]!r}: {err}", file=stream)
        return 127
    finally:
        display.close()
    if code != 0:
        print(
            f"train_progress: command failed with exit status {code}; last lines of {log_path}:", file=stream
        )
        for line in tail:
            print("  " + line, file=stream)
    return code


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = ArgumentParser(
        prog="python -m macaron_tools.train_progress",
        description="Run a fairseq-train command with a progress display; its full output goes to --log.",
        usage="%(prog)s --log FILE [--no-bar] -- fairseq-train ARGS...",
    )
    parser.add_argument("--log", required=True, type=Path, help="append the command's full output here")
    parser.add_argument("--no-bar", action="store_true", help="print lines instead of a tqdm bar")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after '--'")
    args = parser.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        parser.error("no command given (put it after '--')")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    return run(args.command, args.log, use_bar=False if args.no_bar else None)


if __name__ == "__main__":
    run_cli(main, "python -m macaron_tools.train_progress")
