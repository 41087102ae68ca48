"""The GPU check's ``tests`` rows: the project's tests that need a GPU (``pytest -m gpu``), one row per entry
of :data:`GPU_TESTS`; skipped, saying why, where pytest or the checkout's tests are absent (an installed
wheel has none).

A run that collects no test, or none of an entry, FAILs: the rows exist to say that these paths ran on a
GPU, and "nothing ran" must not read as "ok". A ``gpu`` test that :data:`GPU_TESTS` does not name gets a row
of its own (``tests/pipelines/test_gpu_check.py`` keeps the table and the marked tests in step)."""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from macaron_pipelines.commands import REPO
from macaron_pipelines.gpu_check.device import Device, subprocess_env
from macaron_pipelines.gpu_check.report import Row

CASE = "pytest -m gpu"
#: the tests marked gpu, by node id prefix (a file, or a test of it), and what each shows
GPU_TESTS: dict[str, str] = {
    "tests/macaron_workflow/test_collectives.py::test_under_nccl_every_path_reduces_on_the_gpu":
        "collectives on the GPU under NCCL (step statistics, μ pass, preemption flags)",
    "tests/macaron_fairseq/modules/test_fused_half_step_gpu.py":
        "fused half-step FFN = plain one in bf16 and fp16 (outputs, gradients)",
    "tests/macaron_fairseq/test_fairseq_train_gpu.py":
        "fairseq-train --fp16 / --bf16 with the plugin, DT-Fixup's μ pass on the GPU in half precision",
    "tests/macaron_fairseq/pretrain/test_gpu_pretrain.py::test_pretraining_on_the_gpus_with_dt_fixup_then_export":
        "pre-training on 1-2 GPUs (NCCL, bf16, DT-Fixup on each rank's GPU), then macaron-export",
    "tests/macaron_fairseq/pretrain/test_gpu_pretrain.py::test_the_lamb_preflight_loads_the_op_or_names_what_is_missing":
        "LAMB's DeepSpeed op: loaded by the preflight, or what its build lacks in one line",
}  # fmt: skip  # one entry per line: long literal strings


def pytest_counts(output: str) -> dict[str, int]:
    """The counts of pytest's summary line ("3 passed, 1 skipped, 200 deselected in 4.1s")."""
    tail = output.strip().splitlines()[-1] if output.strip() else ""
    return {
        word: int(n)
        for n, word in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected|xfailed|xpassed)", tail)
    }


def junit_outcomes(path: Path) -> dict[str, tuple[str, str]]:
    """node id -> (passed | failed | skipped, message) from pytest's ``--junitxml`` file."""
    outcomes: dict[str, tuple[str, str]] = {}
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return outcomes
    for case in root.iter("testcase"):
        module = case.get("classname", "")
        node = f"{module.replace('.', '/')}.py::{case.get('name', '')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, message = "failed", child.get("message", "") or (child.text or "")[-300:]
            elif child.tag == "skipped":
                outcome, message = "skipped", child.get("message", "")
        outcomes[node] = (outcome, message.strip())
    return outcomes


def entry_of(node: str) -> str | None:
    """The :data:`GPU_TESTS` entry a test's node id belongs to."""
    for prefix in GPU_TESTS:
        if node == prefix or node.startswith(prefix + "::") or node.startswith(prefix + "["):
            return prefix
    return None


def rows_from(outcomes: dict[str, tuple[str, str]], seconds: float) -> list[Row]:
    """One row per :data:`GPU_TESTS` entry (FAIL when none of its tests ran), one per unlisted test."""
    groups: dict[str, list[tuple[str, str, str]]] = {prefix: [] for prefix in GPU_TESTS}
    for node, (outcome, message) in outcomes.items():
        groups.setdefault(entry_of(node) or node, []).append((node, outcome, message))
    rows = []
    for key, cases in groups.items():
        what = GPU_TESTS.get(key, key)
        if not cases:
            rows.append(Row("tests", what, "FAIL", f"not collected: no test of {key} ran"))
            continue
        failed = [(n, m) for n, o, m in cases if o == "failed"]
        skipped = [m for _, o, m in cases if o == "skipped"]
        if failed:
            node, message = failed[0]
            status, detail = "FAIL", f"{len(failed)}/{len(cases)} failed; {node.split('::')[-1]}: {message}"
        elif len(skipped) == len(cases):
            status, detail = "skip", f"skipped: {skipped[0]}"
        else:
            status, detail = "ok", f"{len(cases) - len(skipped)} passed"
            if skipped:
                detail += f", {len(skipped)} skipped ({skipped[0]})"
        data = {"tests": [n for n, _, _ in cases]}
        rows.append(
            Row("tests", what, status, detail[:400], seconds=seconds / max(1, len(groups)), data=data)
        )
    return rows


def part_tests(device: Device, threads: int) -> list[Row]:
    if not (REPO / "tests" / "conftest.py").is_file():
        why = f"no tests here ({REPO} is not a checkout of the project: installed from a wheel)"
        return [Row("tests", CASE, "skip", f"{why}; run the check from a checkout to include them")]
    if importlib.util.find_spec("pytest") is None:
        return [Row("tests", CASE, "skip", "pytest is not installed here (pip install pytest)")]
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gpu_check_tests.") as tmp:
        junit = Path(tmp) / "junit.xml"
        q = shlex.quote
        command = shlex.split(
            f"{q(sys.executable)} -m pytest -m gpu -q -p no:cacheprovider -rs "
            f"--junitxml={q(str(junit))} tests"
        )
        if importlib.util.find_spec("xdist") is not None:
            command[-1:-1] = ["-n", "0"]  # one process: the GPU tests share the device
        proc = subprocess.run(
            command, cwd=REPO, env=subprocess_env(device, threads), capture_output=True, text=True
        )
        outcomes = junit_outcomes(junit)
    seconds = time.monotonic() - start
    counts = pytest_counts(proc.stdout)
    if proc.returncode == 5 or not outcomes:  # 5: pytest collected nothing
        detail = f"no test collected (pytest exit {proc.returncode}): {proc.stdout.strip()[-300:]}"
        data = {"returncode": proc.returncode, "counts": counts}
        return [Row("tests", CASE, "FAIL", detail, seconds=seconds, data=data)]
    rows = rows_from(outcomes, seconds)
    if proc.returncode not in (0, 1) and not any(r.status == "FAIL" for r in rows):
        rows.append(
            Row("tests", CASE, "FAIL", f"pytest exit {proc.returncode}: {proc.stdout.strip()[-300:]}")
        )
    return rows
