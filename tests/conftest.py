"""Fixtures shared by the whole suite (helpers live in ``helpers.py``, the test Slurm cluster in
``slurm_cluster.py``), and the markers' behaviour:
``gpu`` tests are skipped on a machine without CUDA; ``slow``/``slurm`` tests run unless deselected
(``-m "not slow"``)."""

from __future__ import annotations

import atexit
import builtins
import errno
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from helpers import run_pretrain_sh, tiny_task_data_bin, write_dictionary
from slurm_cluster import SlurmCluster, start_for_tests

warnings.filterwarnings("ignore", category=DeprecationWarning)

# torch.compile's cache: one per test process (and the subprocesses it starts), not the machine's shared
# /tmp/torchinductor_<user>: two workers compiling the same kernel at once (the fused half-step test and the
# GPU check's CPU smoke run) made Inductor fail in one of them
if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="torchinductor-")
    atexit.register(shutil.rmtree, os.environ["TORCHINDUCTOR_CACHE_DIR"], ignore_errors=True)


# pytest-xdist workers share the cores: each computes with its share of them (2 workers with torch's default
# of one thread per core oversubscribed 2 cores 2 to 1, and OpenMP threads that wait for each other spin)
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
if _WORKERS > 1:
    torch.set_num_threads(max(1, torch.get_num_threads() // _WORKERS))


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    group_for_parallel_workers(items)
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        # the marker, not item.keywords: keywords hold the names of the parent folders too (a checkout in a
        # folder named gpu skipped every test)
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


def group_for_parallel_workers(items: list[pytest.Item]) -> None:
    """Under pytest-xdist's ``--dist loadgroup`` (``scripts/test.sh`` runs 2 workers): the tests of one
    file run on one worker, in file order, so module- and session-scoped state a file builds up (a work
    directory its tests rerun a pipeline in) is what the next test of the file sees, as in one process.
    A test module's ``WORKER_GROUP`` names a group of several files instead (they share a session fixture
    that one worker builds once). Without xdist the marks do nothing."""
    for item in items:
        module = getattr(item, "module", None)
        group = getattr(module, "WORKER_GROUP", None) or item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session")
def dict_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir holding only a joined dictionary (enough for the translation task to build models)."""
    d = tmp_path_factory.mktemp("dicts")
    for lang in ("src", "tgt"):
        write_dictionary(d / f"dict.{lang}.txt", 120)
    return d


@pytest.fixture(scope="session")
def tiny_data_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny symbol translation task, binarized with fairseq's own preprocess (joined dictionary), in this
    process."""
    return tiny_task_data_bin(tmp_path_factory.mktemp("tiny_corpus"))


@pytest.fixture(scope="session")
def small_pretrain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    """(``ROOT/pretrain``, its first run): ``SMALL=1 bash pipelines/pretrain.sh`` once per session, the tiny
    pre-trained model of the suite's pipeline tests. ``ROOT`` is a GLUE workdir whose pre-training is done:
    ``SMALL=1 WORKDIR=ROOT bash pipelines/glue.sh`` skips every pre-training stage. Files that use it set
    ``WORKER_GROUP = helpers.SMALL_PRETRAIN_GROUP``."""
    workdir = tmp_path_factory.mktemp("small_pipelines") / "pretrain"
    return workdir, run_pretrain_sh(workdir)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A real single-host Slurm cluster (``slurm_cluster.SlurmCluster``), started once per session by the
    first test that asks for it (those are marked ``slurm``) and stopped at the end; with ``cluster.env()``
    plain ``sbatch``/``squeue``/``scontrol`` talk to it. Skipped where Slurm cannot run, failed under CI."""
    cluster = start_for_tests(tmp_path_factory.mktemp("slurm"))
    yield cluster
    cluster.stop()


@pytest.fixture(autouse=True)
def argv_given_back() -> Iterator[None]:
    """A test that runs a command's CLI in this process gives ``sys.argv`` back: commands name themselves
    from ``sys.argv[0]`` (``macaron_workflow.cli``), so one left behind renames every later test's program
    in this worker."""
    before = list(sys.argv)
    yield
    if sys.argv != before:
        left, sys.argv = sys.argv, before
        pytest.fail(f"the test left sys.argv = {left!r}")


@pytest.fixture
def deny_reading(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    """``deny_reading(path)``: from now on ``open(path)`` fails with EACCES, as after ``chmod 000`` for
    anyone but root (the tests run as root, where chmod does not stop reading)."""
    denied: set[Path] = set()
    real_open = builtins.open

    def guarded_open(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and Path(file).absolute() in denied:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded_open)
    return lambda path: denied.add(Path(path).absolute())
