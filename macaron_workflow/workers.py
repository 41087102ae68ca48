"""Order-preserving, memory-bounded parallel map over chunks of lines.

``multiprocessing.Pool.imap`` would do the job except that its feeder thread drains the input iterator
as fast as it can, so the whole corpus ends up queued in memory. :func:`ordered_map` keeps at most
``window`` chunks in flight and yields results in input order, so peak memory depends on the chunk size
and the number of workers, never on the corpus size.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.pool
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def chunked(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Consecutive lists of ``size`` items (the last one shorter)."""
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def _ignore_sigint_then(initializer: Callable[..., None] | None, *initargs: Any) -> None:
    # Ctrl-C goes to the whole process group; only the parent handles it (and terminates the pool).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer(*initargs)


def _context() -> multiprocessing.context.BaseContext:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def worker_pool(
    workers: int, initializer: Callable[..., None] | None = None, initargs: tuple[Any, ...] = ()
) -> multiprocessing.pool.Pool:
    """A pool of ``workers`` processes (forked where possible) that leave Ctrl-C to the parent."""
    return _context().Pool(workers, initializer=_ignore_sigint_then, initargs=(initializer, *initargs))


def ordered_map(
    function: Callable[[T], R],
    chunks: Iterable[T],
    workers: int,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
    window: int | None = None,
) -> Iterator[R]:
    """``map(function, chunks)`` on ``workers`` processes, in order, with a bounded number in flight.

    ``workers <= 1`` runs in the calling process (after calling ``initializer`` there). Exceptions raised
    by ``function`` are re-raised in the caller; on any exit the pool is terminated.
    """
    if workers <= 1:
        if initializer is not None:
            initializer(*initargs)
        yield from map(function, chunks)
        return
    window = window or 2 * workers
    pool = worker_pool(workers, initializer, initargs)
    try:
        pending: deque[Any] = deque()
        for chunk in chunks:
            pending.append(pool.apply_async(function, (chunk,)))
            if len(pending) >= window:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()
        pool.close()
    finally:
        pool.terminate()
        pool.join()
