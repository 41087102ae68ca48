"""macaron_workflow.collectives: the one door to tensor collectives.

NCCL takes CUDA tensors only; gloo, which the CPU tests use, takes CPU tensors too and hid that the step
statistics and the μ pass all-reduced CPU tensors. Here a process group whose backend is registered for the
``cuda`` device type only (as NCCL is) reproduces NCCL's refusal of a CPU tensor on a machine without a GPU,
and each path — the pre-trainer's step statistics and validation, DT-Fixup's μ pass, the preemption flags —
is shown to ask :func:`backend_device` where to put its tensor (CUDA for that backend). A scan of the source
checks that nothing else calls a tensor collective.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from macaron_workflow import collectives

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (
    "macaron_fairseq",
    "macaron_workflow",
    "macaron_tools",
    "preprocess",
    "pipelines",
    "slurm",
    "macaron_synthetic",
    "benchmarks",
    "scripts",
)
#: torch.distributed's collectives on tensors (and their in-place / coalesced variants)
TENSOR_COLLECTIVES = frozenset(
    {
        "all_reduce",
        "all_reduce_coalesced",
        "all_gather",
        "all_gather_into_tensor",
        "all_gather_coalesced",
        "_all_gather_base",
        "broadcast",
        "reduce",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "_reduce_scatter_base",
        "gather",
        "scatter",
        "all_to_all",
        "all_to_all_single",
        "send",
        "recv",
        "isend",
        "irecv",
        "batch_isend_irecv",
    }
)
HELPER = ROOT / "macaron_workflow" / "collectives.py"


def tensor_collective_calls(path: Path) -> list[str]:
    """``file:line name`` of every call of a torch.distributed tensor collective in ``path``: ``dist.X(...)``,
    ``torch.distributed.X(...)``, or ``X(...)`` imported from torch.distributed (any alias)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module_aliases = {"torch.distributed"}
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            module_aliases |= {a.asname or a.name for a in node.names if a.name == "torch.distributed"}
        elif isinstance(node, ast.ImportFrom) and node.module == "torch" and node.names:
            module_aliases |= {a.asname or a.name for a in node.names if a.name == "distributed"}
        elif isinstance(node, ast.ImportFrom) and node.module == "torch.distributed":
            imported |= {a.asname or a.name for a in node.names if a.name in TENSOR_COLLECTIVES}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in TENSOR_COLLECTIVES:
            if ast.unparse(func.value) in module_aliases:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {ast.unparse(func)}")
        elif isinstance(func, ast.Name) and func.id in imported:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {func.id}")
    return found


def test_nothing_but_the_helper_calls_a_tensor_collective() -> None:
    calls = [
        call
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != HELPER
        for call in tensor_collective_calls(path)
    ]
    assert calls == [], "tensor collectives outside macaron_workflow/collectives.py:\n" + "\n".join(calls)
    assert tensor_collective_calls(HELPER)  # the scan does see the helper's own call


def test_the_scan_finds_every_spelling(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text(
        "import torch\nimport torch.distributed as d\nfrom torch import distributed\n"
        "from torch.distributed import all_gather as ag\n"
        "d.all_reduce(t)\ntorch.distributed.broadcast(t, 0)\ndistributed.reduce(t, 0)\nag([t], t)\n"
        "d.broadcast_object_list([1])\nd.barrier()\n"
    )
    global ROOT
    saved, ROOT = ROOT, tmp_path  # relative names in the messages
    try:
        found = tensor_collective_calls(source)
    finally:
        ROOT = saved
    assert [f.split(" ", 1)[1] for f in found] == [
        "d.all_reduce",
        "torch.distributed.broadcast",
        "distributed.reduce",
        "ag",
    ]


class CudaOnly(dist.ProcessGroup):
    """A process group whose backend is registered for the ``cuda`` device type only, as NCCL is."""

    def getBackendName(self) -> str:
        return "cuda_only"


def _create(store: object, rank: int, size: int, timeout: object) -> CudaOnly:
    return CudaOnly(rank, size)


if "cuda_only" not in dist.Backend.backend_list:
    dist.Backend.register_backend("cuda_only", _create, devices=["cuda"])


@pytest.fixture
def cuda_only_group() -> Iterator[None]:
    dist.init_process_group("cuda_only", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


@pytest.fixture
def gloo_group() -> Iterator[None]:
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_a_cuda_only_backend_refuses_cpu_tensors_as_nccl_does(cuda_only_group: None) -> None:
    """The emulation is faithful: what the code did before the helper fails here as it fails under NCCL."""
    with pytest.raises(RuntimeError, match="No backend type associated with device type cpu"):
        dist.all_reduce(torch.zeros(2, dtype=torch.float64))


def test_the_backends_device(cuda_only_group: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)  # the device torch.cuda.set_device chose
    assert collectives.backend_device_types() == ["cuda"]
    assert collectives.backend_device() == torch.device("cuda", 1)


def test_under_gloo_the_helper_reduces_on_the_cpu(gloo_group: None) -> None:
    assert collectives.backend_device() == torch.device("cpu")
    assert collectives.all_reduce([1, 2.5], "sum") == [1.0, 2.5]
    assert collectives.all_reduce([3, 4], "max") == [3.0, 4.0]
    with pytest.raises(ValueError, match="op 'mean'"):
        collectives.all_reduce([1], "mean")


def test_without_a_process_group_the_values_come_back() -> None:
    assert not dist.is_initialized()
    assert collectives.all_reduce([2, 3], "max") == [2.0, 3.0]


class AskedForTheDevice(Exception):
    pass


def _step_statistics() -> None:
    from macaron_fairseq.pretrain.step_stats import StepLog

    StepLog(loss=1.0, tokens=3.0).all_reduced()


def _validation() -> None:
    from macaron_fairseq.pretrain.evaluation import validate

    class Engine:
        def eval(self) -> None: ...

        def train(self) -> None: ...

    class NoBatches:
        def validation(self) -> list:
            return []

    validate(Engine(), None, NoBatches(), 1, print)  # type: ignore[arg-type]


def _mu_pass() -> None:
    from macaron_fairseq.init.mu import estimate_max_norms

    estimate_max_norms([], {"x": lambda sample: (sample, None)}, torch.nn.Identity())


def _preemption_flags() -> None:
    from macaron_workflow.preemption import Preemption

    preemption = Preemption("HUP")
    try:
        preemption.should_stop()
    finally:
        preemption.restore()


@pytest.mark.parametrize(
    "path",
    [_step_statistics, _validation, _mu_pass, _preemption_flags],
    ids=["step statistics", "validation", "mu pass", "preemption flags"],
)
def test_each_path_asks_the_helper_for_the_backends_device(
    path: object, cuda_only_group: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a CUDA-only backend each path's collective asks :func:`backend_device` (which answers CUDA): the
    spy stops it there, as this machine has no GPU to put the tensor on. A path that all-reduced a tensor of
    its own would fail with NCCL's "No backend type associated with device type cpu" instead."""
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    asked: list[torch.device] = []
    real = collectives.backend_device

    def spy(group: object = None) -> torch.device:
        asked.append(real(group))
        raise AskedForTheDevice

    monkeypatch.setattr(collectives, "backend_device", spy)
    with pytest.raises(AskedForTheDevice):
        path()  # type: ignore[operator]
    assert asked == [torch.device("cuda", 0)]


@pytest.mark.gpu
def test_under_nccl_every_path_reduces_on_the_gpu() -> None:
    """On a GPU, NCCL (world of one): the helper puts the tensors on the current CUDA device, and the step
    statistics, the μ pass and the preemption flags all-reduce through it without an error."""
    from macaron_fairseq.init.mu import estimate_max_norms
    from macaron_fairseq.pretrain.step_stats import StepLog
    from macaron_workflow.preemption import Preemption

    torch.cuda.set_device(0)
    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
    try:
        assert collectives.backend_device() == torch.device("cuda", 0)
        assert collectives.all_reduce([1.5, 2], "sum") == [1.5, 2.0]
        assert StepLog(loss=3.0, tokens=4.0).all_reduced().tokens == 4.0
        sample = {"net_input": {}, "x": torch.ones(2, 3, 4, device="cuda"), "nsentences": 2, "ntokens": 6}
        module = torch.nn.Linear(4, 4).cuda()
        estimate = estimate_max_norms([sample], {"x": lambda s: (s["x"], None)}, module)
        assert estimate.max_norms["x"] == pytest.approx(2.0) and estimate.device == "cuda:0"
        preemption = Preemption("HUP")
        try:
            assert preemption.should_stop() is False
        finally:
            preemption.restore()
    finally:
        dist.destroy_process_group()
