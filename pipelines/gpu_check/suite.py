"""The GPU check's ``tests`` row: the project's tests that need a GPU (``pytest -m gpu``) and their counts;
skipped, saying why, where pytest or the checkout's tests are absent (an installed wheel has none)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import time

from macaron_pipelines.commands import REPO
from macaron_pipelines.gpu_check.device import Device, subprocess_env
from macaron_pipelines.gpu_check.report import Row

CASE = "pytest -m gpu"


def pytest_counts(output: str) -> dict[str, int]:
    """The counts of pytest's summary line ("3 passed, 1 skipped, 200 deselected in 4.1s")."""
    tail = output.strip().splitlines()[-1] if output.strip() else ""
    return {
        word: int(n)
        for n, word in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected|xfailed|xpassed)", tail)
    }


def part_tests(device: Device, threads: int) -> Row:
    if not (REPO / "tests" / "conftest.py").is_file():
        return Row("tests", CASE, "skip", f"no tests here ({REPO} is not a checkout of the project: "
                   "installed from a wheel); run the check from a checkout to include them")  # fmt: skip
    if importlib.util.find_spec("pytest") is None:
        return Row("tests", CASE, "skip", "pytest is not installed here (pip install pytest)")
    start = time.monotonic()
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", "tests"]
    if importlib.util.find_spec("xdist") is not None:
        command[-1:-1] = ["-n", "0"]  # one process: the GPU tests share the device
    proc = subprocess.run(
        command, cwd=REPO, env=subprocess_env(device, threads), capture_output=True, text=True
    )
    counts = pytest_counts(proc.stdout)
    detail = ", ".join(f"{n} {w}" for w, n in counts.items()) or proc.stdout.strip()[-200:]
    # 5: no test selected (no gpu-marked test in the tree)
    ok = (
        proc.returncode in (0, 5)
        and not counts.get("failed")
        and not counts.get("error")
        and not counts.get("errors")
    )
    if proc.returncode == 5:
        detail = f"no test is marked gpu ({detail})"
    return Row("tests", CASE, "ok" if ok else "FAIL", detail, seconds=time.monotonic() - start,
               data={"returncode": proc.returncode, "counts": counts})  # fmt: skip
