"""A run that stops mid-epoch exits with its own exit code, not with SIGABRT from fairseq's prefetch thread.

fairseq's ``BufferedIterator`` (``--data-buffer-size``, default 10) collates the next batches on a daemon
thread, ``fairseq.data.iterators.BackgroundConsumer``. When training stops before the epoch ends
(``--max-update``, a time limit, a preemption save) that thread is usually still collating when the
interpreter exits. Python ends daemon threads with ``pthread_exit`` as soon as they take the GIL again, and
a thread coming back from a torch operator (which runs with the GIL released) unwinds through torch's
``noexcept`` C++ frames: ``std::terminate``. The process prints ``terminate called without an active
exception`` and dies of SIGABRT (exit status 134) *after* the run finished and saved — a Slurm job that is
then reported FAILED, a pipeline stage that stops. Seen in our CI on ``fairseq-train --max-update 1``;
reproduced every time by ``tests/macaron_fairseq/repairs/test_prefetch_thread_exit.py``.

:func:`install` wraps ``BackgroundConsumer.run`` (fairseq's own loop is unchanged): the consumer reads its
source through :func:`until_exit`, which stops before the next batch once the process is exiting, and an
``atexit`` handler (run while daemon threads still run normally) sets that flag, empties each live
consumer's queue so a blocked ``put`` returns, and joins the consumer for at most :data:`JOIN_SECONDS`.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from typing import TypeVar

from fairseq.data import iterators

logger = logging.getLogger(__name__)

JOIN_SECONDS = 30.0  # the longest a batch in flight may take to collate before the process exits anyway

T = TypeVar("T")

_exiting = threading.Event()
_live: weakref.WeakSet[iterators.BackgroundConsumer] = weakref.WeakSet()


def until_exit(source: Iterable[T], exiting: threading.Event = _exiting) -> Iterator[T]:
    """The items of ``source``; none is drawn (collated) once ``exiting`` is set."""
    items = iter(source)
    while not exiting.is_set():
        try:
            item = next(items)
        except StopIteration:
            return
        yield item


def _drain(q: queue.Queue) -> None:
    while True:
        try:
            q.get_nowait()
        except queue.Empty:
            return


def stop_prefetching(timeout: float = JOIN_SECONDS) -> list[iterators.BackgroundConsumer]:
    """Stop every live prefetch thread (drop its prefetched batches); returns those still alive after
    ``timeout`` seconds (an empty list when all stopped)."""
    _exiting.set()
    deadline = time.monotonic() + timeout
    stuck = []
    for consumer in list(_live):
        while consumer.is_alive() and time.monotonic() < deadline:
            _drain(consumer._queue)
            consumer.join(0.05)
        if consumer.is_alive():
            stuck.append(consumer)
    if stuck:
        logger.warning(
            "%d fairseq prefetch thread(s) still collating a batch after %.0f s at exit", len(stuck), timeout
        )
    return stuck


def install() -> None:
    """Wrap ``BackgroundConsumer.run`` and register the exit handler (idempotent)."""
    consumer = iterators.BackgroundConsumer
    if getattr(consumer.run, "_macaron_stops_at_exit", False):
        return
    fairseq_run = consumer.run

    def run(self: iterators.BackgroundConsumer) -> None:
        _live.add(self)
        self._source = until_exit(self._source)
        fairseq_run(self)

    run._macaron_stops_at_exit = True  # type: ignore[attr-defined]
    consumer.run = run
    atexit.register(stop_prefetching)
