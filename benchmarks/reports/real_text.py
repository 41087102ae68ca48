"""The docs blocks' layout the two real-text grids share (:mod:`benchmarks.reports.macaron_real_translation`,
:mod:`benchmarks.reports.macaron_real_bert`): mean ± std over seeds, the status line, the sections and the
provenance."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.results_file import provenance

Row = dict[str, Any]


def mean_std(values: list[float], digits: int = 2) -> str:
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


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
