"""The tiny pre-training job of the Slurm tests: ``slurm/pretrain.sbatch`` on 2 CPU tasks (used by
``test_pretrain_sbatch.py`` and, through the session fixtures of ``conftest.py``, as the pre-trained model of
the GLUE jobs)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from helpers import REPO
from slurm_cluster import SlurmCluster

STEPS = 150
SCRIPT = REPO / "slurm" / "pretrain.sbatch"


def submit(
    cluster: SlurmCluster,
    corpus: Path,
    save_dir: Path,
    *,
    save_interval: int = 20,
    sbatch_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> int:
    """Submit the job (output: ``SAVE_DIR.out`` beside the save directory); its id."""
    env = {
        "DATA": str(corpus),
        "ARCH": "macaron_bert_tiny",
        "DS_CONFIG": "configs/deepspeed/tiny_cpu.json",
        "SAVE_DIR": str(save_dir),
        "REPO": str(REPO),
        "PYTHON": sys.executable,
        "PYTHONWARNINGS": "ignore",
        **(env or {}),
    }
    proc = cluster.run(
        "sbatch",
        "--parsable",
        "--ntasks-per-node=2",
        "--gpus-per-node=0",
        "--cpus-per-task=1",
        "--time=20",
        f"--output={save_dir.parent / (save_dir.name + '.out')}",
        *sbatch_args,
        str(SCRIPT),
        "--max-update",
        str(STEPS),
        "--seed",
        "3",
        "--log-interval",
        "25",
        "--save-interval-updates",
        str(save_interval),
        "--no-validation",
        env=cluster.env(env),
        cwd=REPO,
    )
    return int(proc.stdout.split(";")[0])
