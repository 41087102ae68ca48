"""The order in which the parallel workers take the test files: the longest first.

``scripts/test.sh`` runs the suite on pytest-xdist workers with ``--dist loadgroup``, each file one group
(``conftest.group_for_parallel_workers``). xdist hands the groups out in the order it is given; by default it
first reorders them by their number of tests, so a file holding one 3-minute end-to-end test went last and
one worker ran it alone at the end. Here the files are ordered by the seconds they took in a recorded run
(``tests/file_seconds.json``, longest first; a file not in it counts as 0 s and keeps its place among those),
and xdist's reordering is switched off: the long files start early and the short ones fill in at the end.

The record is a scheduling hint, not a result: a stale one only makes the order worse. Rewrite it from a
whole run with ``MACARON_RECORD_FILE_SECONDS=tests/file_seconds.json bash scripts/test.sh``."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

RECORD = Path(__file__).with_name("file_seconds.json")
#: where a run writes the seconds its files took (unset: nothing is written)
RECORD_TO = "MACARON_RECORD_FILE_SECONDS"


def test_file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def recorded_seconds(path: Path = RECORD) -> dict[str, float]:
    try:
        return {str(name): float(seconds) for name, seconds in json.loads(path.read_text()).items()}
    except FileNotFoundError:
        return {}


def longest_files_first(items: list[pytest.Item], seconds: dict[str, float]) -> list[pytest.Item]:
    """``items`` with the files in decreasing recorded seconds (a stable sort: the tests of a file keep
    their order and stay together, files of equal seconds keep theirs)."""
    files: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        files[test_file(item.nodeid)].append(item)
    order = sorted(files, key=lambda name: -seconds.get(name, 0.0))
    return [item for name in order for item in files[name]]


class FileSeconds:
    """A plugin summing each file's test durations (setup, call and teardown) as the reports arrive — in
    the controller under xdist, which receives every worker's reports — and writing them at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[test_file(report.nodeid)] += report.duration

    def pytest_sessionfinish(self) -> None:
        merged = recorded_seconds(self.path) | {k: round(v, 1) for k, v in self.seconds.items()}
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(dict(sorted(merged.items())), indent=0) + "\n")
        tmp.replace(self.path)


def configure(config: pytest.Config) -> None:
    """Switch off xdist's reordering by test count, and record the files' seconds when asked (in the
    controller only: an xdist worker has ``workerinput``)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    target = os.environ.get(RECORD_TO)
    if target and not hasattr(config, "workerinput"):
        config.pluginmanager.register(FileSeconds(Path(target)), "macaron-file-seconds")
