"""What the two real-text grids share (:mod:`benchmarks.macaron_real_translation`,
:mod:`benchmarks.macaron_real_bert`): a Macaron arm against its baseline, several seeds, each run resumable.

- the out-dir (:mod:`benchmarks.grid_rows`: ``protocol.json``, ``results.jsonl``), the data built once
  and frozen (:func:`freeze_data`, :func:`data_is_frozen`), one directory per run, the runs still to do
  (:func:`todo`);
- a run: its command with its output appended to the run's log and one line per attempt in
  ``attempts.jsonl`` (:func:`run_attempt`), started cleanly unless it has a checkpoint to resume from
  (:func:`prepare_run_dir`);
- the grid (:class:`Grid`): the runs still to do, ``--jobs`` at a time; after every run the results file
  (:mod:`benchmarks.results_file`), the plot and the docs blocks made from it (:mod:`benchmarks.doc_tables`)
  are rewritten; ``--publish-only`` does only that;
- the report: mean ± std, the status line, the docs block's layout (:func:`report`), the figure written
  atomically (:func:`save_figure`).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.grid_rows import Row, append_row, read_rows
from benchmarks.results_file import REPO, RESULTS_DIR, provenance, write_results
from macaron_workflow.atomic import atomic_output, write_text_atomically

DATA_MARKER = "data.json"


# -------------------------------------------------------------------------------------------- out-dir
def run_step(command: list[str], what: str, log: Path) -> None:
    """One data-preparation command from the checkout root; its output in ``log``; a failure ends the
    grid naming the command."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO)
    write_text_atomically(log, proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(
            f"{what} failed ({proc.returncode}): {shlex.join(command)} (log: {log})\n{proc.stderr[-3000:]}"
        )


def write_pairs(prefix: Path, pairs: list[tuple[str, str]], src: str, tgt: str) -> None:
    """A parallel split as ``PREFIX.SRC`` and ``PREFIX.TGT``, one sentence a line, each file atomically."""
    for side, lang in ((0, src), (1, tgt)):
        write_text_atomically(Path(f"{prefix}.{lang}"), "".join(p[side] + "\n" for p in pairs))


def data_is_frozen(out: Path, data_bin: Path) -> bool:
    """Whether ``data_bin`` was built by this out-dir's first call and is unchanged (every file it listed
    exists with its size): then a rerun trains on it as it is, without running the preprocessing again
    (a changed preprocessing module would otherwise rebuild the data between the runs of one grid).
    Delete ``OUT_DIR/data.json`` to rebuild."""
    marker = out / DATA_MARKER
    if not marker.exists():
        return False
    files = json.loads(marker.read_text())["files"]
    return all((data_bin / name).is_file() and (data_bin / name).stat().st_size == size
               for name, size in files.items())  # fmt: skip


def freeze_data(out: Path, data_bin: Path) -> None:
    """Record the data-bin's files and sizes in ``OUT_DIR/data.json`` (see :func:`data_is_frozen`)."""
    files = {path.name: path.stat().st_size for path in sorted(data_bin.iterdir()) if path.is_file()}
    write_text_atomically(out / DATA_MARKER, json.dumps({"files": files}, indent=1) + "\n")


def check_parity(counts: dict[str, int], macaron: str, baseline: str, max_parity: float) -> float:
    """The relative parameter difference ``macaron`` − ``baseline``; refuses more than ``max_parity``."""
    difference = (counts[macaron] - counts[baseline]) / counts[baseline]
    if abs(difference) > max_parity:
        raise SystemExit(
            f"parameter counts differ by {100 * difference:+.3f} % (more than {100 * max_parity:g} %): "
            f"{counts}"
        )
    return difference


# ----------------------------------------------------------------------------------------------- runs
def prepare_run_dir(run_dir: Path, save_name: str, log_name: str, resumable: Callable[[Path], bool]) -> Path:
    """The run's save dir ``run_dir/save_name``: kept when ``resumable(save_dir)`` (the trainer resumes
    there); otherwise (never started, killed before its first checkpoint) removed with the run's log and
    attempt record, so that the run starts cleanly."""
    run_dir.mkdir(parents=True, exist_ok=True)
    save_dir = run_dir / save_name
    if not resumable(save_dir):
        shutil.rmtree(save_dir, ignore_errors=True)
        for name in (log_name, "attempts.jsonl"):
            (run_dir / name).unlink(missing_ok=True)
    return save_dir


def run_attempt(argv: list[str], env: dict[str, str], run_dir: Path, log_name: str) -> tuple[int, float, int]:
    """Run ``argv`` from the checkout root, its output appended to ``run_dir/log_name``, and record the
    attempt; the exit status, the seconds of all attempts so far and their number."""
    start = time.perf_counter()
    with (run_dir / log_name).open("a", encoding="utf-8") as log:
        rc = subprocess.run(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO).returncode
    seconds = time.perf_counter() - start
    with (run_dir / "attempts.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps({"rc": rc, "seconds": round(seconds, 1)}) + "\n")
    attempts = [json.loads(line) for line in (run_dir / "attempts.jsonl").read_text().splitlines()]
    return rc, round(sum(a["seconds"] for a in attempts), 1), len(attempts)


def shown_command(argv: Sequence[str], replacements: dict[Path, str]) -> str:
    """``argv`` as one line with the given paths replaced by names and the checkout's path removed."""
    command = shlex.join(argv)
    for path, name in replacements.items():
        command = command.replace(str(path), name)
    return command.replace(str(REPO) + "/", "")


def todo(wanted: list[Any], rows: list[Row], finished: Callable[[Row], bool]) -> list[Any]:
    """The wanted runs (keys with ``arm`` and ``seed``) without a finished row, seed by seed (both arms of
    a seed next to each other)."""
    done = {(r["arm"], r["seed"]) for r in rows if finished(r)}
    return sorted((k for k in wanted if (k.arm, k.seed) not in done), key=lambda k: (k.seed, k.arm))


def add_grid_arguments(ap: argparse.ArgumentParser, arms: Sequence[str], out_dir: Path) -> None:
    """The options every grid has: out-dir, arms, seeds, jobs, results file, plot, --publish-only."""
    ap.add_argument("--out-dir", type=Path, default=out_dir)
    ap.add_argument("--arms", nargs="+", choices=list(arms), default=list(arms))
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--jobs", type=int, default=2, help="runs at a time (one thread each)")
    ap.add_argument("--results", type=Path, help="write the rows as a results file (docs/results/...)")
    ap.add_argument("--plot", type=Path, help="draw the validation curves here")
    ap.add_argument(
        "--publish-only", action="store_true", help="only write --results/--plot from the finished rows"
    )


@dataclass
class Grid:
    """The runs of one grid and how its results are published."""

    wanted: list[Any]  # run keys (arm, seed)
    rows_path: Path  # OUT_DIR/results.jsonl
    finished: Callable[[Row], bool]
    results: Callable[[list[Row]], dict[str, Any]]  # the finished rows → the results file's "results"
    plot: Callable[[dict[str, Any], Path], None]
    render: Callable[[dict[str, Any]], str]
    machine: dict[str, Any]
    results_path: Path | None = None
    plot_path: Path | None = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def publish(self) -> None:
        """The results file, the plot and the docs blocks from the finished rows (one writer at a time)."""
        with self._lock:
            wanted = {(key.arm, key.seed) for key in self.wanted}
            rows = [
                r for r in read_rows(self.rows_path) if (r["arm"], r["seed"]) in wanted and self.finished(r)
            ]
            results = self.results(rows)
            if self.plot_path and rows:
                self.plot(results, self.plot_path)
            if self.results_path:
                write_results(self.results_path, results, self.machine)
                render_docs(self.results_path)

    def run(
        self,
        run_one: Callable[[Any], Row],
        describe: Callable[[Any, Row], str],
        jobs: int,
        publish_only: bool,
    ) -> None:
        """Every wanted run not finished yet (``jobs`` at a time), publishing after each; with
        ``publish_only`` only the publishing (the results file still names the grid's command)."""
        if publish_only:
            sys.argv = [arg for arg in sys.argv if arg != "--publish-only"]
            self.publish()
            return
        remaining = todo(self.wanted, read_rows(self.rows_path), self.finished)
        done = len(self.wanted) - len(remaining)
        print(
            f"{len(remaining)} runs to do ({done} of {len(self.wanted)} done) → {self.rows_path}", flush=True
        )

        def job(key: Any) -> None:
            row = run_one(key)
            append_row(self.rows_path, row)
            status = "ok" if self.finished(row) else f"FAILED rc={row['rc']}"
            print(f"{key.name}: {describe(key, row)} [{status}]", flush=True)
            self.publish()

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(job, remaining))
        self.publish()
        if self.results_path:
            print(self.render(json.loads(self.results_path.read_text())))


def render_docs(results_path: Path) -> None:
    """Re-render the docs blocks made from this results file (:mod:`benchmarks.doc_tables`), so that the
    docs in the working tree agree with the file the grid has just rewritten; a results file outside
    ``docs/results`` has none."""
    from benchmarks.doc_tables import blocks_of, rewrite
    from macaron_workflow.errors import UserError

    if Path(results_path).resolve().parent != RESULTS_DIR.resolve():
        return
    try:
        rewrite(blocks_of(Path(results_path).name))
    except UserError as err:  # a block missing from the docs: the grid goes on
        print(f"warning: docs not re-rendered: {err}", file=sys.stderr)


# --------------------------------------------------------------------------------------------- report
def mean_std(values: list[float]) -> str:
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}"


def status_line(r: dict[str, Any], arms: Sequence[str], finished: Callable[[Row], bool], image: str) -> str:
    """How many of the planned runs have finished, and the plot (``image``: markdown) once there is one."""
    planned = len(r["seeds"]) * len(r.get("arms", arms))
    done = sum(finished(row) for row in r["rows"])
    line = f"Finished runs: {done} of {planned}" + (
        " (the grid is still running)." if done < planned else "."
    )
    if done:
        line += f"\n\n{image}"
    return line


def report(
    payload: dict[str, Any], status: str, sections: Sequence[tuple[str | None, str]], tail: str = ""
) -> str:
    """A docs block: the status line, each (title, table) section, ``tail`` (the protocol), provenance."""
    text = status
    for title, table in sections:
        text += (f"\n\n**{title}**\n\n" if title else "\n\n") + table
    if tail:
        text += "\n\n" + tail
    return text + "\n\nMeasured by " + provenance(payload) + "."


def save_figure(fig: Any, path: Path) -> None:
    """Write a matplotlib figure atomically (a killed grid leaves the previous image) and close it."""
    import matplotlib.pyplot as plt

    with atomic_output(Path(path)) as tmp:
        fig.savefig(tmp, dpi=110, format=Path(path).suffix.lstrip(".") or "png")
    plt.close(fig)


def pyplot() -> Any:
    """matplotlib's pyplot with the Agg backend, quiet."""
    import logging

    import matplotlib

    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
