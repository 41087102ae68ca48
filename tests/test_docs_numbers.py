"""Numbers in the README and docs are the output of commands: the measured tables are rendered from the
results files the benchmarks write (``docs/results/``), and the distributed μ line is reproduced here."""

from __future__ import annotations

import json
import re
import socket
import subprocess
from pathlib import Path

import pytest
from helpers import DT_FIXUP, REPO, TINY, run_cli

from benchmarks import doc_tables

MU_LINE = re.compile(r"DT-Fixup μ pass \((\w+)\): (μ\[.*?\(\d+ batches\))")


def test_every_results_block_is_rendered_from_its_results_file() -> None:
    assert doc_tables.mismatches() == [], "run: python -m benchmarks.doc_tables"


def test_a_changed_results_file_is_detected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    block = doc_tables.BLOCKS[0]
    payload = doc_tables.read_results(doc_tables.RESULTS_DIR / block.results)
    payload["machine"]["date"] = "1970-01-01 00:00 UTC"
    (tmp_path / block.results).write_text(json.dumps(payload))
    monkeypatch.setattr(doc_tables, "RESULTS_DIR", tmp_path)
    assert doc_tables.mismatches((block,)) == [
        f"{block.doc}: block '{block.name}' differs from docs/results/{block.results}"
    ]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _train_argv(data: Path, save_dir: Path) -> list[str]:
    return [
        "fairseq-train", str(data), "--user-dir", str(REPO / "macaron_fairseq"),
        "--task", "translation", "-s", "src", "-t", "tgt", "--arch", "macaron_small", *TINY,
        *DT_FIXUP, "--optimizer", "adam", "--lr", "1e-3", "--max-update", "1",
        "--batch-size", "16", "--criterion", "cross_entropy", "--save-dir", str(save_dir), "--no-save",
        "--cpu", "--num-workers", "0", "--disable-validation", "--seed", "1", "--log-format", "simple",
    ]  # fmt: skip


def mu_lines(log: str) -> dict[str, str]:
    return dict(MU_LINE.findall(log))


@pytest.mark.slow  # two fairseq-train processes over gloo, plus a single-process reference
def test_distributed_mu_equals_the_single_process_mu_and_the_documented_line(
    tiny_data_bin: Path, tmp_path: Path
) -> None:
    proc = run_cli(_train_argv(tiny_data_bin, tmp_path / "single"), cwd=REPO)
    single = mu_lines(proc.stdout + proc.stderr)
    port = _free_port()
    distributed = [
        "--distributed-backend", "gloo", "--distributed-world-size", "2",
        "--distributed-init-method", f"tcp://127.0.0.1:{port}", "--distributed-no-spawn",
        "--ddp-backend", "legacy_ddp",
    ]  # fmt: skip
    ranks = []
    for r in range(2):
        argv = [*_train_argv(tiny_data_bin, tmp_path / f"rank{r}"), *distributed]
        argv += ["--distributed-rank", str(r)]
        ranks.append(
            subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        )
    logs = [p.communicate(timeout=600)[0] for p in ranks]
    assert [p.returncode for p in ranks] == [0, 0], logs[0][-3000:]
    rank0 = mu_lines(logs[0])
    assert set(rank0) == {"encoder", "decoder"} and rank0 == single  # same μ, counts and batches
    # (fairseq logs INFO on the master rank only; rank 1 used the same all-reduced values)
    doc = (REPO / "docs" / "dt_fixup.md").read_text()
    assert f"`{rank0['encoder']}`" in doc, f"docs/dt_fixup.md should quote: {rank0['encoder']}"
