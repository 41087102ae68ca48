"""What the two real-text grids share (:mod:`benchmarks.macaron_real_translation`,
:mod:`benchmarks.macaron_real_bert`): a Macaron arm against its baseline, several seeds, each run resumable.

- the out-dir (:class:`macaron_workflow.grid.RowFile`: ``protocol.json``, ``results.jsonl``), the data
  built once and frozen (:func:`freeze_data`, :func:`data_is_frozen`), one directory per run;
- a run: its command with its output appended to the run's log and one line per attempt in
  ``attempts.jsonl`` (:func:`run_attempt`), started cleanly unless it has a checkpoint to resume from
  (:func:`prepare_run_dir`);
- the grid (:func:`run`, on :func:`macaron_workflow.grid.run_grid`): the runs without a finished row, seed
  by seed, ``--jobs`` at a time; a failed run is redone by a rerun, from its checkpoint; after every run the
  results file (:mod:`benchmarks.results_file`) and the plot are rewritten (:class:`Publication`);
  ``--publish-only`` does only that. The docs blocks made from the results file are rendered by
  ``python -m benchmarks.doc_tables``;
- the protocol's options: named fields of its dataclass as ``--field-name`` (:func:`add_protocol_arguments`,
  :func:`protocol_from_args`), their defaults the dataclass's;
- the figure drawn headless and written atomically (:func:`pyplot`, :func:`save_figure`).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from benchmarks.results_file import REPO, command_line, write_results
from macaron_workflow.atomic import atomic_output, write_text_atomically
from macaron_workflow.grid import Row, RowFile, Slot, run_grid
from macaron_workflow.step_log import pyplot as pyplot  # matplotlib's pyplot on the Agg backend, quiet

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
    return all(
        (data_bin / name).is_file() and (data_bin / name).stat().st_size == size
        for name, size in files.items()
    )


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


def add_protocol_arguments(
    ap: argparse.ArgumentParser,
    protocol: type,
    names: Sequence[str],
    helps: Mapping[str, str] | None = None,
    choices: Mapping[str, Sequence[Any]] | None = None,
) -> None:
    """``--field-name`` for each named field of the ``protocol`` dataclass: the type and the default are the
    field's default's (the dataclass is the one place of both)."""
    defaults = {field.name: field.default for field in fields(protocol)}
    for name in names:
        ap.add_argument(
            "--" + name.replace("_", "-"),
            type=type(defaults[name]),
            default=defaults[name],
            choices=(choices or {}).get(name),
            help="; ".join(filter(None, [(helps or {}).get(name), "default: %(default)s"])),
        )


def protocol_from_args(protocol: type, args: argparse.Namespace, names: Sequence[str]) -> Any:
    """The ``protocol`` dataclass with the named fields from the parsed options, the rest its defaults."""
    return protocol(**{name: getattr(args, name) for name in names})


@dataclass(frozen=True)
class Publication:
    """How a grid's finished rows become its results file and plot (``--results``, ``--plot``)."""

    rows: RowFile
    wanted: list[Any]  # run keys (arm, seed)
    finished: Callable[[Row], bool]
    results: Callable[[list[Row]], dict[str, Any]]  # the finished rows → the results file's "results"
    plot: Callable[[dict[str, Any], Path], None]
    machine: dict[str, Any]
    results_path: Path | None = None
    plot_path: Path | None = None

    def write(self) -> None:
        """The results file (naming the grid's command, without ``--publish-only``) and the plot, from the
        finished rows of the wanted runs."""
        wanted = {(key.arm, key.seed) for key in self.wanted}
        rows = [r for r in self.rows.read() if (r["arm"], r["seed"]) in wanted and self.finished(r)]
        results = self.results(rows)
        if self.plot_path and rows:
            self.plot(results, self.plot_path)
        if self.results_path:
            command = command_line(without=("--publish-only",))
            write_results(self.results_path, results, self.machine, command)


def run(
    publication: Publication,
    run_one: Callable[[Any, Slot], Row],
    describe: Callable[[Any, Row], str],
    jobs: int,
) -> None:
    """Every wanted run without a finished row, seed by seed (both arms of a seed next to each other),
    ``jobs`` at a time; each row appended to the row file as its run ends, then the results file and plot
    rewritten. A failed run is not retried here: a rerun of the grid redoes it, from its checkpoint."""
    rows, finished = publication.rows, publication.finished
    done = rows.done(lambda row: (row["arm"], row["seed"]), finished)
    wanted = publication.wanted
    todo = sorted((k for k in wanted if (k.arm, k.seed) not in done), key=lambda k: (k.seed, k.arm))
    print(
        f"{len(todo)} runs to do ({len(wanted) - len(todo)} of {len(wanted)} done) → {rows.path}", flush=True
    )

    def on_row(key: Any, row: Row, _attempt: int) -> None:
        rows.append(row)
        status = "ok" if finished(row) else f"FAILED rc={row['rc']}"
        print(f"{key.name}: {describe(key, row)} [{status}]", flush=True)
        publication.write()

    run_grid(todo, run_one, [Slot()] * jobs, ok=finished, on_row=on_row)
    publication.write()


def save_figure(fig: Any, path: Path) -> None:
    """Write a matplotlib figure atomically (a killed grid leaves the previous image) and close it."""
    import matplotlib.pyplot as plt

    with atomic_output(Path(path)) as tmp:
        fig.savefig(tmp, dpi=110, format=Path(path).suffix.lstrip(".") or "png")
    plt.close(fig)
