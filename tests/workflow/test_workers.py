"""The worker pool and the ordered, bounded map (workflow.workers)."""

from __future__ import annotations

import pytest

from workflow.workers import chunked, ordered_map


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
