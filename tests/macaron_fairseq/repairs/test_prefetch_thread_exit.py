"""A process whose fairseq prefetch thread is collating a batch when it exits ends with exit status 0, not
SIGABRT (``macaron_fairseq.repairs.prefetch_thread_exit``); iteration itself is unchanged."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
from fairseq.data.iterators import BufferedIterator

from macaron_fairseq.repairs import prefetch_thread_exit

ROOT = Path(__file__).resolve().parents[3]

# The shape of fairseq-train stopping at --max-update in mid-epoch: the training loop took one batch, and
# the prefetch thread is busy collating the next ones (torch operators, the GIL released) when Python exits.
_STOP_MID_EPOCH = """
import sys
import torch
if sys.argv[1] == "plugin":
    import macaron_fairseq
from fairseq.data.iterators import BufferedIterator


class SlowCollation:
    def __len__(self):
        return 10**6

    def __iter__(self):
        x = torch.randn(256, 256)
        while True:
            for _ in range(20):
                x = torch.tanh(x @ x)
            yield x


batches = BufferedIterator(2, SlowCollation())
next(batches)
print("took one batch", flush=True)
if sys.argv[1] == "plugin":
    from macaron_fairseq.repairs import prefetch_thread_exit
    print("still collating:", len(prefetch_thread_exit.stop_prefetching(timeout=60)), flush=True)
"""


def _stop_mid_epoch(mode: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    return subprocess.run(
        [sys.executable, "-c", _STOP_MID_EPOCH, mode],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow  # runs the real command in a fresh interpreter: 4-10 s (out of --quick)
def test_without_the_repair_fairseq_aborts_at_exit_after_the_work_is_done() -> None:
    """The upstream failure this repair exists for (if fairseq or torch fix it, this test says so)."""
    proc = _stop_mid_epoch("fairseq only")
    assert "took one batch" in proc.stdout
    assert proc.returncode == -signal.SIGABRT, (proc.returncode, proc.stderr[-2000:])
    assert "terminate called without an active exception" in proc.stderr


@pytest.mark.slow  # runs the real command in a fresh interpreter: 4-10 s (out of --quick)
def test_with_the_plugin_the_prefetch_thread_stops_and_the_process_exits_0() -> None:
    proc = _stop_mid_epoch("plugin")
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout.splitlines()[-2:] == ["took one batch", "still collating: 0"]
    assert "terminate called" not in proc.stderr


def test_a_full_pass_yields_every_batch_in_order() -> None:
    prefetch_thread_exit.install()  # idempotent: the plugin installed it already
    batches = [torch.full((3,), float(i)) for i in range(25)]
    assert [b[0].item() for b in BufferedIterator(4, batches)] == list(range(25))


def test_until_exit_draws_no_item_once_exiting() -> None:
    exiting = threading.Event()
    drawn: list[int] = []

    def source():
        for i in range(5):
            drawn.append(i)
            yield i

    items = prefetch_thread_exit.until_exit(source(), exiting)
    assert [next(items), next(items)] == [0, 1]
    exiting.set()
    assert list(items) == [] and drawn == [0, 1]
    assert list(prefetch_thread_exit.until_exit(range(3), threading.Event())) == [0, 1, 2]
