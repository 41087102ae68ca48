"""No compiler by default (macaron_fairseq.pretrain.ops): the shipped AdamW configs run torch's own (fused on
a GPU) AdamW unless DeepSpeed's FusedAdam is prebuilt; LAMB's op is checked before DeepSpeed starts — what a
build lacks named in one line, a killed build's lock refused naming the file — and the preflight command
says what a config needs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import REPO
from test_pretrain_e2e import free_port

from macaron_fairseq.pretrain.ops import (
    STALE_LOCK_SECONDS,
    build_directory,
    check_buildable,
    complete_optimizer,
    missing_for_build,
    needed_op,
    skip_shm_comm,
)
from macaron_workflow.errors import UserError

CONFIGS = REPO / "configs" / "deepspeed"
ADAMW_CONFIGS = ("bert_phase1.json", "bert_phase2.json", "macaron_authors.json")


def shipped(name: str) -> dict:
    return json.loads((CONFIGS / name).read_text())


def test_deepspeed_starts_without_its_shared_memory_all_reduce(monkeypatch: pytest.MonkeyPatch) -> None:
    """The op DeepSpeed's CPU backend would build (a compiler needed) and whose /dev/shm buffers it never
    removes is off: ``build_shm_op``, which ``TorchBackend`` calls on ``init_distributed``, gives None."""
    import deepspeed.ops
    from deepspeed.comm.torch import build_shm_op

    monkeypatch.setitem(deepspeed.ops.__compatible_ops__, "deepspeed_shm_comm", True)
    skip_shm_comm()
    assert build_shm_op() is None


@pytest.mark.parametrize("name", ADAMW_CONFIGS)
def test_the_shipped_adamw_configs_need_no_compiler(name: str) -> None:
    on_gpu, notes = complete_optimizer(shipped(name), CONFIGS / name, cuda=True, prebuilt={})
    params = on_gpu["optimizer"]["params"]
    assert params["torch_adam"] is True and params["fused"] is True
    assert needed_op(on_gpu) is None
    assert len(notes) == 1 and "torch.optim.AdamW (fused CUDA kernel)" in notes[0]
    on_cpu, _ = complete_optimizer(shipped(name), CONFIGS / name, cuda=False, prebuilt={})
    assert (
        on_cpu["optimizer"]["params"]["torch_adam"] is True and "fused" not in on_cpu["optimizer"]["params"]
    )
    assert "torch_adam" not in shipped(name)["optimizer"]["params"]  # the file itself is not changed


def test_a_prebuilt_fused_adam_or_an_explicit_choice_is_kept() -> None:
    config = shipped("bert_phase1.json")
    kept, notes = complete_optimizer(
        config, CONFIGS / "bert_phase1.json", cuda=True, prebuilt={"fused_adam": True}
    )
    assert kept == config and notes == [] and needed_op(kept) == "fused_adam"
    config["optimizer"]["params"]["torch_adam"] = False
    kept, notes = complete_optimizer(config, Path("mine.json"), cuda=True, prebuilt={})
    assert kept == config and notes == [] and needed_op(kept) == "fused_adam"
    assert needed_op(shipped("lamb_64k.json")) == "fused_lamb"
    assert needed_op(shipped("tiny_cpu.json")) is None


def test_what_a_build_lacks_is_named(tmp_path: Path) -> None:
    toolkit = tmp_path / "cuda"
    (toolkit / "bin").mkdir(parents=True)
    missing = missing_for_build(
        cuda=False, env={"CUDA_HOME": str(toolkit), "CXX": "no-such-c++"}, which=lambda name: None
    )
    assert missing[0] == "a CUDA GPU"
    assert f"nvcc (CUDA_HOME={toolkit} has no bin/nvcc)" in missing
    assert "ninja (pip install ninja)" in missing and "a C++ compiler (no-such-c++)" in missing
    if not Path("/usr/local/cuda").is_dir():
        assert any("CUDA_HOME unset" in m for m in missing_for_build(cuda=True, env={}, which=lambda n: None))


@pytest.fixture
def extensions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    directory = build_directory("fused_lamb")
    assert directory == tmp_path / "ext" / "fused_lamb"
    directory.mkdir(parents=True)
    return directory


def test_a_killed_builds_lock_is_refused_naming_it(extensions: Path) -> None:
    lock = extensions / "lock"
    lock.touch()
    old = time.time() - STALE_LOCK_SECONDS - 60
    os.utime(lock, (old, old))
    with pytest.raises(UserError, match=f"build lock 16 minutes old.*rm {lock} and rerun"):
        check_buildable(shipped("lamb_64k.json"), CONFIGS / "lamb_64k.json", cuda=True, prebuilt={})
    os.utime(lock)  # a build running now: not stale, the check goes on to what the build needs
    with pytest.raises(UserError, match=r"needs DeepSpeed's fused_lamb op.*missing a CUDA GPU"):
        check_buildable(shipped("lamb_64k.json"), CONFIGS / "lamb_64k.json", cuda=False, prebuilt={})


def test_an_op_built_before_or_prebuilt_needs_no_compiler(extensions: Path) -> None:
    lamb = shipped("lamb_64k.json")
    assert (
        check_buildable(lamb, CONFIGS / "lamb_64k.json", cuda=True, prebuilt={"fused_lamb": True})
        == "fused_lamb"
    )
    (extensions / "fused_lamb.so").write_bytes(b"")
    assert check_buildable(lamb, CONFIGS / "lamb_64k.json", cuda=False, prebuilt={}) == "fused_lamb"


@pytest.mark.slow  # two interpreters importing DeepSpeed
def test_the_preflight_command(tmp_path: Path) -> None:
    env = {"TORCH_EXTENSIONS_DIR": str(tmp_path)}
    ok = run_preflight("bert_phase1.json", env)
    assert ok.returncode == 0 and "bert_phase1.json: needs no compiled DeepSpeed op" in ok.stdout
    refused = run_preflight("lamb_64k.json", env)
    assert refused.returncode == 2
    (line,) = refused.stderr.strip().splitlines()
    assert "optimizer Lamb needs DeepSpeed's fused_lamb op" in line and "missing a CUDA GPU" in line


def run_preflight(name: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        "-m",
        "macaron_fairseq.pretrain.ops",
        "--deepspeed-config",
        str(CONFIGS / name),
    ]
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONWARNINGS="ignore", **env)
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=REPO, env=env)


ENGINE_OPTIMIZER = """
import sys
from macaron_fairseq.pretrain.__main__ import build_pretrainer

engine = build_pretrainer(sys.argv[1:]).engine
print("RESULT", type(engine.basic_optimizer).__module__, type(engine.basic_optimizer).__name__)
"""


@pytest.mark.slow
def test_the_trainer_builds_torchs_adamw_from_bert_phase1(corpus: Path, tmp_path: Path) -> None:
    """The shipped config through the trainer: DeepSpeed is handed torch_adam and builds torch.optim.AdamW
    (before, DeepSpeed's FusedAdam, which JIT-compiles at its first use)."""
    config = str(CONFIGS / "bert_phase1.json")
    argv = [
        str(corpus),
        "--arch",
        "macaron_bert_tiny",
        "--deepspeed-config",
        config,
        "--save-dir",
        str(tmp_path / "run"),
        "--max-update",
        "2",
    ]
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    env.update(
        RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port())
    )
    proc = subprocess.run(
        [sys.executable, "-c", ENGINE_OPTIMIZER, *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "RESULT torch.optim.adamw AdamW" in proc.stdout
    assert "bert_phase1.json: optimizer AdamW runs as torch.optim.AdamW" in proc.stderr


def test_the_lock_of_a_killed_preflight_is_stale_at_once_and_removed(extensions: Path) -> None:
    """A preempted job's preflight killed during its build: its lock (with the host and pid the preflight
    wrote beside it) is recognised at once, and the next preflight removes it."""
    from macaron_fairseq.pretrain.ops import OWNER, preflight, stale_lock

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock = extensions / "lock"
    lock.touch()
    assert stale_lock("fused_lamb") is None  # a fresh lock of unknown owner: a build running elsewhere
    (extensions / OWNER).write_text(json.dumps({"host": socket.gethostname(), "pid": dead.pid}))
    assert stale_lock("fused_lamb") == lock
    (extensions / OWNER).write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid()}))
    assert stale_lock("fused_lamb") is None  # its builder still runs
    (extensions / OWNER).write_text(json.dumps({"host": socket.gethostname(), "pid": dead.pid}))
    lines: list[str] = []
    with pytest.raises(UserError, match="missing a CUDA GPU"):  # this machine cannot build it then
        preflight(CONFIGS / "lamb_64k.json", lines.append)
    assert lines == [f"removing {lock}: the preflight (pid {dead.pid}) that built fused_lamb was killed"]
    assert not lock.exists() and not (extensions / OWNER).exists()
