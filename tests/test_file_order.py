"""The parallel workers' file order (tests/file_order.py): longest recorded files first, each file's tests
together and in their order; the recorder sums a run's durations per file and merges them into the record."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import file_order
from helpers import REPO


def items(*nodeids: str) -> list[SimpleNamespace]:
    return [SimpleNamespace(nodeid=nodeid) for nodeid in nodeids]


def test_files_go_longest_first_keeping_their_tests_together_and_in_order() -> None:
    collected = items("a.py::t1", "a.py::t2", "b.py::t1", "c.py::t1", "c.py::t2", "d.py::t1")
    seconds = {"c.py": 200.0, "a.py": 5.0, "d.py": 5.0}
    ordered = file_order.longest_files_first(collected, seconds)
    assert [i.nodeid for i in ordered] == [
        "c.py::t1",
        "c.py::t2",
        "a.py::t1",
        "a.py::t2",
        "d.py::t1",
        "b.py::t1",
    ]


def test_without_a_record_the_collection_order_stays(tmp_path: Path) -> None:
    assert file_order.recorded_seconds(tmp_path / "missing.json") == {}
    collected = items("b.py::t", "a.py::t")
    assert file_order.longest_files_first(collected, {}) == collected


def test_a_run_records_each_files_seconds_merged_into_the_record(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(REPO / 'tests')!r})\nimport file_order\n\n"
        "def pytest_configure(config):\n    file_order.configure(config)\n"
    )
    (tests / "test_slow.py").write_text("import time\n\ndef test_a():\n    time.sleep(0.3)\n")
    (tests / "test_fast.py").write_text("def test_b():\n    pass\n")
    record = tmp_path / "seconds.json"
    record.write_text(json.dumps({"tests/test_gone.py": 9.0, "tests/test_slow.py": 99.0}))
    env = {"MACARON_RECORD_FILE_SECONDS": str(record), "PATH": "/usr/bin:/bin"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
    proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    written = json.loads(record.read_text())
    assert set(written) == {"tests/test_gone.py", "tests/test_slow.py", "tests/test_fast.py"}
    assert written["tests/test_gone.py"] == 9.0  # kept: not run this time
    assert 0.3 <= written["tests/test_slow.py"] < 5 and written["tests/test_fast.py"] < 0.3
    assert not list(tmp_path.glob("seconds.json.tmp"))
