"""A full-size translation recipe on a machine without CUDA says so in one line and stops before anything
runs, unless ``--cpu`` asks for the CPU (or ``--small`` for the smoke run); it used to train on the CPU
without a word. This machine has no CUDA device."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from helpers import run_module

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")


@pytest.mark.slow  # runs the real command in a fresh interpreter: 4-10 s (out of --quick)
def test_a_full_size_recipe_without_cuda_stops_in_one_line(tmp_path: Path) -> None:
    proc = run_module(
        "macaron_pipelines.translation",
        "iwslt14",
        "--workdir",
        str(tmp_path / "w"),
        "--skip-install",
        check=False,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "no CUDA device here" in proc.stderr and "add --cpu to train on the CPU anyway" in proc.stderr
    assert not (tmp_path / "w").exists()  # nothing ran


def test_cpu_passes_the_check_and_reaches_fairseq_train() -> None:
    from macaron_pipelines.translation import RECIPES, parse_args, require_cuda, train_command

    args = parse_args(["iwslt14", "--workdir", "w", "--cpu"])
    require_cuda(args)  # no error
    assert "--cpu" in train_command(RECIPES["iwslt14"], args, Path("d"), Path("s"))
