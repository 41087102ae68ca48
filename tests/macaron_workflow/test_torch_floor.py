"""The torch floor (#40 item 7): written once, as requirements.txt's ``torch>=X`` line; ``import
macaron_fairseq`` refuses an older torch in one line (as scripts/install.sh does, tests/scripts/
test_install.py), and a pre-release build of the floor (NVIDIA's containers) counts as that release."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

from macaron_workflow import torch_floor
from macaron_workflow.torch_floor import check_torch, release


def test_the_floor_is_requirements_txts_torch_line() -> None:
    lines = [
        line for line in (REPO / "requirements.txt").read_text().splitlines() if line.startswith("torch")
    ]
    assert lines == [f"torch>={torch_floor.torch_floor()}"]
    assert torch_floor.torch_floor() == "2.6"


def test_release_numbers() -> None:
    assert release("2.6.0a0+ecf3bae40a") == release("2.6") == (2, 6)
    assert release("2.13.0+cpu") == (2, 13) > release("2.6")
    assert release("2.5.1+cu121") < release("2.6")


def test_an_older_torch_is_one_line() -> None:
    check_torch("2.6.0a0+ecf3bae40a")
    check_torch("2.13.0+cpu")
    with pytest.raises(ImportError) as refused:
        check_torch("2.5.1+cu121")
    assert str(refused.value) == (
        "macaron-fairseq needs torch >= 2.6 (requirements.txt) and this environment has torch 2.5.1+cu121: "
        "install a torch >= 2.6 (e.g. your cluster's CUDA build), then rerun"
    )


def test_without_the_checkout_the_installed_metadata_gives_the_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch_floor, "REQUIREMENTS", REPO / "no-such-requirements.txt")
    monkeypatch.setattr(torch_floor.metadata, "requires", lambda name: ["numpy>=1", "torch>=2.6", "tqdm"])
    assert torch_floor.torch_floor() == "2.6"


def test_importing_the_plugin_with_an_older_torch_fails_in_one_line(tmp_path: Path) -> None:
    """A torch whose metadata says 2.5.1 first on the path: ``import macaron_fairseq`` stops before anything
    uses torch, with the one line as the error."""
    info = tmp_path / "torch-2.5.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1\n")
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{REPO}", PYTHONWARNINGS="ignore")
    proc = subprocess.run(
        [sys.executable, "-c", "import macaron_fairseq"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "ImportError: macaron-fairseq needs torch >= 2.6 (requirements.txt) and this environment has torch "
        "2.5.1: install a torch >= 2.6 (e.g. your cluster's CUDA build), then rerun"
    )
