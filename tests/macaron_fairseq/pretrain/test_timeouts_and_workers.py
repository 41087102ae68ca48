"""Sized for rank 0's work (#40 item 5): the process group's timeout is the trainer's (60 minutes by default,
``--process-group-timeout``), not DeepSpeed's 10 minutes, which rank 0 building the sentence-pair cache
while the others wait at a barrier outlasts at full scale; the sbatch scripts give srun the job's cores per
task (``SRUN_CPUS_PER_TASK``: since Slurm 22.05 srun does not inherit ``--cpus-per-task``); fairseq's
``--num-workers`` processes load the data (the losses do not depend on how many: test_pretrain_e2e.py)."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import pytest
from helpers import REPO

from macaron_workflow.errors import UserError


class Started(Exception):
    pass


@pytest.fixture
def data_bin(tmp_path: Path) -> Path:
    """Enough of a data-bin for the trainer's checks (nothing is read before the process group starts)."""
    path = tmp_path / "data-bin"
    path.mkdir()
    (path / "dict.txt").write_text("a 1\n")
    for name in ("train.bin", "train.idx"):
        (path / name).write_bytes(b"")
    return path


@pytest.mark.parametrize(("flags", "minutes"), [((), 60), (("--process-group-timeout", "90"), 90)])
def test_the_process_group_gets_the_trainers_timeout(
    flags: tuple[str, ...], minutes: int, data_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import deepspeed

    from macaron_fairseq.pretrain.__main__ import build_pretrainer

    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)  # export_placement sets them: restored after the test
    seen: dict = {}

    def init_distributed(**kwargs: object) -> None:
        seen.update(kwargs)
        raise Started

    monkeypatch.setattr(deepspeed, "init_distributed", init_distributed)
    argv = [
        str(data_bin),
        "--arch",
        "macaron_bert_tiny",
        "--save-dir",
        str(tmp_path / "run"),
        "--deepspeed-config",
        str(REPO / "configs" / "deepspeed" / "tiny_cpu.json"),
        *flags,
    ]
    with pytest.raises(Started):
        build_pretrainer(argv)
    assert seen["timeout"] == datetime.timedelta(minutes=minutes)
    with pytest.raises(UserError, match=r"--process-group-timeout 0\.0: give a number of minutes > 0"):
        build_pretrainer([*argv, "--process-group-timeout", "0"])


def test_every_sbatch_script_gives_srun_the_cores_per_task() -> None:
    for script in sorted((REPO / "slurm").glob("*.sbatch")):
        lines = script.read_text().splitlines()
        sruns = [
            i for i, line in enumerate(lines) if re.search(r"(^|\s)srun\s", line) and not line.startswith("#")
        ]
        if not sruns:
            continue
        export = 'export SRUN_CPUS_PER_TASK="${SRUN_CPUS_PER_TASK:-${SLURM_CPUS_PER_TASK'
        exports = [i for i, line in enumerate(lines) if line.startswith(export)]
        assert exports and exports[0] < sruns[0], f"{script.name}: srun runs without SRUN_CPUS_PER_TASK"


def test_the_pretrain_script_runs_the_preflight_then_passes_the_timeout_and_the_workers() -> None:
    text = (REPO / "slurm" / "pretrain.sbatch").read_text()
    preflight = text.index('-m macaron_fairseq.pretrain.ops \\\n  --deepspeed-config "$DS_CONFIG"')
    training = text.index('-m macaron_fairseq.pretrain "$DATA"')
    assert preflight < training
    tail = text[training:]
    assert '--process-group-timeout "${PG_TIMEOUT_MINUTES:-60}"' in tail
    assert '--num-workers "${NUM_WORKERS:-0}"' in tail


def test_the_batches_are_loaded_by_fairseqs_num_workers() -> None:
    """``--num-workers`` reaches fairseq's batch iterator for training and validation (it was not passed:
    every rank collated its batches in the main process)."""
    from macaron_fairseq.pretrain.batches import Batches
    from macaron_fairseq.pretrain.distributed import Placement

    class Task:
        def __init__(self) -> None:
            self.datasets = {"valid": object()}
            self.calls: list[dict] = []

        def load_dataset(self, split: str, epoch: int) -> None: ...

        def dataset(self, split: str) -> object:
            return object()

        def max_positions(self) -> int:
            return 128

        def get_batch_iterator(self, **kwargs: object) -> object:
            self.calls.append(kwargs)
            return type("Itr", (), {"next_epoch_itr": lambda self, shuffle: iter(())})()

    task = Task()
    batches = Batches(task, seed=1, micro_batch=4, where=Placement(0, 1, 0, "h", 1, "x"), num_workers=3)
    list(batches.validation())
    assert [call["num_workers"] for call in task.calls] == [3, 3]  # the training epoch, the validation
