"""DeepSpeed's compiled ops a config needs, and a preflight that builds them once before the ranks start.

DeepSpeed 0.19.8's wheel from PyPI has no prebuilt op (``DS_BUILD_OPS=0``; ``ds_report`` lists them).
``engine._configure_basic_optimizer`` picks, for an ``Adam``/``AdamW`` config without ``"torch_adam": true``,
``deepspeed.ops.adam.FusedAdam``, and for ``Lamb`` ``deepspeed.ops.lamb.FusedLamb``; both call
``OpBuilder.load()``, which imports the prebuilt op or JIT-compiles it with ``torch.utils.cpp_extension.load``
— nvcc matching torch's CUDA, ninja, a C++ compiler and the Python headers on every node. Without them every
rank fails inside ``deepspeed.initialize`` ("CUDA_HOME environment variable is not set"), and a job killed
during the build leaves ``TORCH_EXTENSIONS_DIR/<py..._cu...>/<op>/lock`` behind, on which every later load
waits forever (``torch.utils.file_baton.FileBaton.wait`` polls while the file exists).

So (:func:`complete_optimizer`) an Adam/AdamW config that does not say ``torch_adam`` gets torch's own AdamW
(``"torch_adam": true``; on a GPU ``"fused": true``, torch's fused CUDA kernel, which DeepSpeed passes through
to ``torch.optim.AdamW``), unless DeepSpeed's ``fused_adam`` op is prebuilt in the installed DeepSpeed; a
config that asks for ``"torch_adam": false`` keeps DeepSpeed's FusedAdam. LAMB has no torch equivalent: its
op is built (or loaded) once by the preflight, ``python -m macaron_fairseq.pretrain.ops --deepspeed-config
CFG`` (``slurm/pretrain.sbatch`` runs it once per node before the ranks start), which otherwise says in one
line what the build lacks; every rank checks the same (:func:`check_buildable`) before DeepSpeed starts, and
refuses a stale build lock naming the file to remove. A lock is stale when the preflight that took it (it
writes its host and pid beside it, ``lock.owner``) is gone from this host — the preflight then removes it —
or when it is older than :data:`STALE_LOCK_SECONDS`.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import sysconfig
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from macaron_workflow.errors import UserError

#: DeepSpeed optimizer type (lower case) -> the op its fused implementation loads
OPTIMIZER_OPS = {"adam": "fused_adam", "adamw": "fused_adam", "lamb": "fused_lamb"}
#: a build lock older than this is taken for the remains of a killed build (a fused op builds in 1-3 minutes)
STALE_LOCK_SECONDS = 15 * 60
#: the file beside torch's build lock in which the preflight says who builds
OWNER = "lock.owner"


def prebuilt_ops() -> dict[str, bool]:
    """The ops compiled into the installed DeepSpeed (``DS_BUILD_*=1`` at install time), as ``ds_report``
    reads them."""
    try:
        from deepspeed.git_version_info import installed_ops
    except ImportError:
        return {}
    return {name: bool(built) for name, built in installed_ops.items()}


def uses_torch_adam(params: Mapping[str, Any]) -> bool:
    return bool(params.get("torch_adam", False))


def complete_optimizer(
    config: dict[str, Any], path: Path, cuda: bool, prebuilt: Mapping[str, bool]
) -> tuple[dict[str, Any], list[str]]:
    """``config`` with torch's (fused) AdamW where DeepSpeed would JIT-compile its FusedAdam (module
    docstring), and the note to show about it."""
    section = config.get("optimizer")
    if not isinstance(section, dict):
        return config, []
    kind = str(section.get("type", "")).lower()
    params = dict(section.get("params", {}))
    if kind not in ("adam", "adamw") or "torch_adam" in params or prebuilt.get("fused_adam", False):
        return config, []
    params["torch_adam"] = True
    how = "torch.optim.AdamW" if kind == "adamw" else "torch.optim.Adam"
    if cuda and "fused" not in params and "foreach" not in params:
        params["fused"] = True
        how += " (fused CUDA kernel)"
    config = {**config, "optimizer": {**section, "params": params}}
    note = (
        f"{path.name}: optimizer {section['type']} runs as {how}: DeepSpeed's FusedAdam is not prebuilt "
        'in this DeepSpeed and would be compiled on every node (set "torch_adam": false to use it)'
    )
    return config, [note]


def needed_op(config: dict[str, Any]) -> str | None:
    """The compiled DeepSpeed op the (completed) config's optimizer loads, if any."""
    section = config.get("optimizer")
    if not isinstance(section, dict):
        return None
    kind = str(section.get("type", "")).lower()
    if kind in ("adam", "adamw") and uses_torch_adam(section.get("params", {})):
        return None
    return OPTIMIZER_OPS.get(kind)


#: DeepSpeed's CPU shared-memory all-reduce op, which ``deepspeed.init_distributed`` loads on every CPU run
SHM_COMM_OP = "deepspeed_shm_comm"


def skip_shm_comm() -> None:
    """Keep ``deepspeed.init_distributed`` from building and starting DeepSpeed's CPU shared-memory
    all-reduce.

    ``deepspeed.comm.torch.TorchBackend`` loads the ``deepspeed_shm_comm`` op on every CPU run: a node's first
    run JIT-compiles it (30 s here; a C++ compiler and the Python headers needed), and where ``LOCAL_SIZE``
    equals the world size (the ``deepspeed`` launcher sets it) every rank creates a 66-MB
    ``/dev/shm/deepspeed_allreduce_buffer_<uid>_<addr>_<port>_<rank>`` that nothing unlinks, so each such
    run leaves its ranks' buffers in RAM. Only DeepSpeed's ``inference_all_reduce`` (inference, AutoTP) uses
    the op; training reduces through ``torch.distributed``. The op is marked incompatible in
    ``deepspeed.ops.__compatible_ops__``, the dict ``build_shm_op`` consults (DeepSpeed keeps it for edits),
    where the accelerator has the op (CPU): reading that dict elsewhere probes every op.
    """
    import deepspeed.ops
    from deepspeed.accelerator import get_accelerator

    if get_accelerator().create_op_builder("ShareMemCommBuilder") is not None:
        deepspeed.ops.__compatible_ops__[SHM_COMM_OP] = False


def build_directory(op: str, env: Mapping[str, str] | None = None) -> Path:
    """Where ``torch.utils.cpp_extension.load`` builds ``op`` (its ``_get_build_directory``, without creating
    it): ``TORCH_EXTENSIONS_DIR/<op>``, else ``~/.cache/torch_extensions/py311_cu128/<op>``."""
    import torch

    env = os.environ if env is None else env
    root = env.get("TORCH_EXTENSIONS_DIR")
    if root is None:
        from torch.utils.cpp_extension import get_default_build_root

        hip, cuda = getattr(torch.version, "hip", None), torch.version.cuda
        device = f"rocm{hip.replace('.', '')}" if hip else f"cu{cuda.replace('.', '')}" if cuda else "cpu"
        python = f"py{sys.version_info.major}{sys.version_info.minor}{getattr(sys, 'abiflags', '')}"
        root = os.path.join(get_default_build_root(), f"{python}_{device}")
    return Path(root) / op


def lock_owner(lock: Path) -> dict[str, Any] | None:
    """What the preflight wrote beside a build lock it may take (``lock.owner``: host, pid), if anything."""
    try:
        owner = json.loads(lock.with_name(OWNER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return owner if isinstance(owner, dict) else None


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stale_lock(op: str, now: float | None = None, env: Mapping[str, str] | None = None) -> Path | None:
    """The build lock of ``op`` if it is a killed build's, else None: the preflight that took it
    (``lock.owner``) ran on this host and its process is gone, or the lock is older than
    :data:`STALE_LOCK_SECONDS`."""
    lock = build_directory(op, env) / "lock"
    try:
        age = (time.time() if now is None else now) - lock.stat().st_mtime
    except OSError:
        return None
    owner = lock_owner(lock)
    if owner and owner.get("host") == socket.gethostname() and not process_alive(int(owner.get("pid", 0))):
        return lock
    return lock if age > STALE_LOCK_SECONDS else None


def built_in_cache(op: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether an earlier JIT build left ``op``'s library in the extensions cache (it loads without a
    compiler)."""
    return (build_directory(op, env) / f"{op}.so").is_file()


def cuda_toolkit(env: Mapping[str, str], which: Callable[[str], str | None]) -> Path | None:
    """The CUDA toolkit torch's extension builder uses (``torch.utils.cpp_extension._find_cuda_home``):
    ``CUDA_HOME`` or ``CUDA_PATH``, else the folder above ``nvcc`` on the PATH, else ``/usr/local/cuda``."""
    home = env.get("CUDA_HOME") or env.get("CUDA_PATH")
    if home:
        return Path(home)
    nvcc = which("nvcc")
    if nvcc:
        return Path(nvcc).resolve().parent.parent
    return Path("/usr/local/cuda") if Path("/usr/local/cuda").is_dir() else None


def nvcc_mismatch(nvcc: Path) -> str | None:
    """None when ``nvcc``'s CUDA major version is torch's (DeepSpeed refuses another major:
    ``CUDAMismatchException``), else what is wrong."""
    import subprocess

    import torch

    if torch.version.cuda is None:
        return None
    try:
        output = subprocess.run([str(nvcc), "-V"], capture_output=True, text=True, timeout=60).stdout
        release = output.split("release", 1)[1].split(",", 1)[0].strip()
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return f"a working nvcc ({nvcc} -V failed)"
    if release.split(".")[0] != torch.version.cuda.split(".")[0]:
        return f"nvcc of CUDA {torch.version.cuda} ({nvcc} is CUDA {release})"
    return None


def missing_for_build(
    cuda: bool, env: Mapping[str, str] | None = None, which: Callable[[str], str | None] = shutil.which
) -> list[str]:
    """What a JIT build of a CUDA op lacks here: a GPU, the CUDA toolkit (``CUDA_HOME``/``nvcc``), ninja, a
    C++ compiler, the Python headers (empty when it can build)."""
    env = os.environ if env is None else env
    missing = [] if cuda else ["a CUDA GPU"]
    cuda_home = cuda_toolkit(env, which)
    if cuda_home is None:
        missing.append("the CUDA toolkit (CUDA_HOME unset, no nvcc on the PATH, no /usr/local/cuda)")
    elif not os.access(cuda_home / "bin" / "nvcc", os.X_OK):
        missing.append(f"nvcc (CUDA_HOME={cuda_home} has no bin/nvcc)")
    elif (mismatch := nvcc_mismatch(cuda_home / "bin" / "nvcc")) is not None:
        missing.append(mismatch)
    if which("ninja") is None:
        missing.append("ninja (pip install ninja)")
    compiler = env.get("CXX", "c++")
    if which(compiler) is None:
        missing.append(f"a C++ compiler ({compiler})")
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        missing.append("the Python headers (Python.h)")
    return missing


def check_buildable(
    config: dict[str, Any], path: Path, cuda: bool, prebuilt: Mapping[str, bool] | None = None
) -> str | None:
    """Before DeepSpeed starts, on every rank: the op the config needs (None if none) can be loaded or built
    here, and no killed build's lock would make the load wait forever; else a one-line :class:`UserError`."""
    op = needed_op(config)
    prebuilt = prebuilt_ops() if prebuilt is None else prebuilt
    if op is None or prebuilt.get(op, False):
        return op
    lock = stale_lock(op)
    if lock is not None:
        minutes = (time.time() - lock.stat().st_mtime) / 60
        raise UserError(
            f"{path}: DeepSpeed's {op} op has a build lock {minutes:.0f} minutes old, left by a killed "
            f"build, on which every rank would wait forever: rm {lock} and rerun"
        )
    if built_in_cache(op):
        return op
    missing = missing_for_build(cuda)
    if missing:
        kind = config["optimizer"]["type"]
        raise UserError(
            f"{path}: optimizer {kind} needs DeepSpeed's {op} op, which is not prebuilt and cannot be "
            f"compiled here: missing {', '.join(missing)}"
        )
    return op


def preflight(config_path: Path, log: Callable[[str], None] = print) -> None:
    """Load (building it if need be) the op the config needs, once, before the ranks start. A lock left by an
    earlier preflight on this host that was killed during its build (a preempted job) is removed."""
    import torch

    from macaron_fairseq.pretrain.ds_config import read_config

    cuda = torch.cuda.is_available()
    prebuilt = prebuilt_ops()
    config, _ = complete_optimizer(read_config(config_path), config_path, cuda, prebuilt)
    op = needed_op(config)
    if op is not None and not prebuilt.get(op, False):
        lock = build_directory(op) / "lock"
        owner = lock_owner(lock)
        if lock.exists() and owner and owner.get("host") == socket.gethostname():
            if not process_alive(int(owner.get("pid", 0))):
                log(f"removing {lock}: the preflight (pid {owner.get('pid')}) that built {op} was killed")
                lock.unlink(missing_ok=True)
                lock.with_name(OWNER).unlink(missing_ok=True)
    op = check_buildable(config, config_path, cuda, prebuilt)
    if op is None:
        log(
            f"{config_path.name}: needs no compiled DeepSpeed op (optimizer "
            f"{config.get('optimizer', {}).get('type', 'none')} runs as torch's)"
        )
        return
    from deepspeed.ops import op_builder

    builder = {"fused_adam": op_builder.FusedAdamBuilder, "fused_lamb": op_builder.FusedLambBuilder}[op]()
    where = "prebuilt" if prebuilt.get(op) else f"cache {build_directory(op)}"
    owner_file = build_directory(op) / OWNER
    if not prebuilt.get(op):
        owner_file.parent.mkdir(parents=True, exist_ok=True)
        owner_file.write_text(
            json.dumps({"host": socket.gethostname(), "pid": os.getpid()}), encoding="utf-8"
        )
    start = time.perf_counter()
    try:
        builder.load(verbose=False)
    finally:
        owner_file.unlink(missing_ok=True)
    log(f"{config_path.name}: DeepSpeed's {op} op loaded in {time.perf_counter() - start:.1f} s ({where})")


PROG = "python -m macaron_fairseq.pretrain.ops"


def main(argv: list[str] | None = None) -> None:
    from macaron_workflow.cli import ArgumentParser

    parser = ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument(
        "--deepspeed-config", type=Path, required=True, help="the run's DeepSpeed JSON config"
    )
    args = parser.parse_args(argv)
    preflight(args.deepspeed_config)


if __name__ == "__main__":
    from macaron_workflow.cli import run_cli

    run_cli(main, PROG)
