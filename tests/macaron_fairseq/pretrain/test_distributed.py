"""macaron_fairseq.pretrain.distributed under Slurm: host lists with several bracket groups, ``scontrol show
hostnames`` when it is there, a RANK/WORLD_SIZE inherited through ``sbatch --export=ALL`` does not override an
srun task's own variables, and per-task GPU binding (one visible device) gives device 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from macaron_fairseq.pretrain.distributed import expand_hostlist, first_host, placement


@pytest.mark.parametrize(
    ("nodelist", "hosts"),
    [
        ("rack[1-2]-node[01-02]", ["rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"]),
        ("gpu[003-005,010],login1", ["gpu003", "gpu004", "gpu005", "gpu010", "login1"]),
        ("a,b[8-10]", ["a", "b8", "b9", "b10"]),
        ("x[12]", ["x12"]),
        ("n[1,4]-ib,m", ["n1-ib", "n4-ib", "m"]),
    ],
)
def test_host_lists_expand_as_slurm_expands_them(nodelist: str, hosts: list[str]) -> None:
    assert expand_hostlist(nodelist) == hosts


@pytest.mark.parametrize("nodelist", ["gpu[1-", "gpu]1[", "gpu[b-c]", "gpu[5-2]", ""])
def test_a_malformed_host_list_is_an_error(nodelist: str) -> None:
    with pytest.raises(ValueError, match="cannot read the Slurm host list"):
        expand_hostlist(nodelist)


def test_first_host_asks_scontrol_when_there_is_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert first_host("rack[1-2]-node[01-04]") == "rack1-node01"  # no scontrol: the parser
    scontrol = tmp_path / "scontrol"
    scontrol.write_text('#!/bin/sh\n[ "$1 $2" = "show hostnames" ] && echo first-by-scontrol && echo other\n')
    scontrol.chmod(0o755)
    assert first_host("rack[1-2]-node[01-04]") == "first-by-scontrol"
    scontrol.write_text("#!/bin/sh\nexit 1\n")  # no slurm.conf here, say
    assert first_host("rack[1-2]-node[01-04]") == "rack1-node01"


SRUN_TASK = {
    "SLURM_PROCID": "5",
    "SLURM_NTASKS": "16",
    "SLURM_LOCALID": "3",
    "SLURM_STEP_ID": "0",
    "SLURM_JOB_NODELIST": "gpu[007-008]",
    "MASTER_ADDR": "gpu007",
}


def test_slurms_variables_win_over_an_inherited_rank_in_an_srun_task() -> None:
    inherited = {**SRUN_TASK, "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}
    where = placement(inherited)
    assert (where.rank, where.world_size, where.local_rank, where.launcher) == (5, 16, 3, "srun")
    # a launcher started inside the task (torchrun: one task per node) is believed
    torchrun = placement({**inherited, "RANK": "9", "WORLD_SIZE": "32", "TORCHELASTIC_RUN_ID": "7"})
    assert (torchrun.rank, torchrun.world_size, torchrun.launcher) == (9, 32, "torchrun/deepspeed")
    # outside a job step (a login node, a plain python start) RANK/WORLD_SIZE are the user's
    plain = placement({"RANK": "1", "WORLD_SIZE": "2", "SLURM_PROCID": "0", "SLURM_NTASKS": "1"})
    assert (plain.rank, plain.world_size) == (1, 2)


def test_per_task_gpu_binding_gives_the_one_visible_device() -> None:
    assert placement({**SRUN_TASK, "CUDA_VISIBLE_DEVICES": "3"}).local_rank == 0
    assert placement({**SRUN_TASK, "CUDA_VISIBLE_DEVICES": ",".join(map(str, range(8)))}).local_rank == 3
    assert placement(SRUN_TASK).local_rank == 3
