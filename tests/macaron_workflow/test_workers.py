"""The worker pool and the ordered, bounded map (macaron_workflow.workers)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from macaron_workflow.workers import chunked, ordered_map


def _square(chunk: list[int]) -> list[int]:
    return [x * x for x in chunk]


def _fail_on_seven(chunk: list[int]) -> list[int]:
    if 7 in chunk:
        raise ValueError("seven")
    return chunk


def test_ordered_map_preserves_order_across_workers() -> None:
    chunks = chunked(range(1000), 7)
    results = [x for chunk in ordered_map(_square, chunks, workers=2, window=3) for x in chunk]
    assert results == [x * x for x in range(1000)]


def test_ordered_map_reraises_worker_errors() -> None:
    with pytest.raises(ValueError, match="seven"):
        list(ordered_map(_fail_on_seven, chunked(range(20), 3), workers=2))


class _PullCounter:
    """Chunks 0..n-1 that remember how many were pulled from them."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.pulled = 0

    def __iter__(self) -> Iterator[list[int]]:
        for i in range(self.n):
            self.pulled += 1
            yield [i]


@pytest.mark.parametrize("workers, window", [(2, 3), (2, None), (1, None)])
def test_ordered_map_does_not_drain_the_input_ahead_of_a_slow_consumer(
    workers: int, window: int | None
) -> None:
    chunks = _PullCounter(40)
    bound = 1 if workers == 1 else window or 2 * workers  # workers=1 maps lazily in the calling process
    leads = []
    for consumed, result in enumerate(ordered_map(_square, chunks, workers=workers, window=window)):
        leads.append(chunks.pulled - consumed)  # chunks in flight, the one just received included
        assert result == [consumed * consumed]
        time.sleep(0.01)  # a slow consumer: an eager feeder (Pool.imap) would pull everything meanwhile
    assert max(leads) == bound, leads  # never more than the window, and the window is used
    assert chunks.pulled == 40
