"""The pair index of a split, built once and kept on disk: later runs, and the other ranks, load it.

The pairs depend only on the sentence sizes, the block size, ``short_seq_prob``, the seed and the break
mode: that is the cache key (:class:`PairIndexKey`; the sizes enter as a SHA-256 of their values). A cache
entry is two files, ``PREFIX.pairs-block{B}-seed{S}-{DIGEST}.npy`` (the packed pairs, loaded mmap'd: the
ranks of a node share its pages) and a ``.json`` record beside it (the full key, the number of pairs, the
file's size and CRC-32) written after it; both through :func:`macaron_workflow.atomic.atomic_output`,
so a reader sees a complete file or none. Loading checks all of it — a record of another key, a missing,
truncated or altered array file — and rebuilds (with a warning) on any mismatch: a cache is never trusted
silently. Entries of other keys (other seeds, block sizes, an older version of the data) are left in place.

Under ``torch.distributed`` rank 0 loads or builds (and writes) first while the others wait at a barrier,
then they load its file; a rank that cannot see it (a node-local directory) builds for itself, and if rank
0's build fails, every rank fails the same way instead of waiting at the barrier. Without a
process group every process just loads or builds. A directory that cannot be written is not an error: the
index is then built in memory, as without a cache.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from macaron_fairseq.data.pair_index import PairIndex
from macaron_workflow.atomic import atomic_output

logger = logging.getLogger(__name__)

CACHE_FORMAT = 1
"""Bumped whenever the array layout or the pairs' meaning changes: older entries then no longer match."""

_CHUNK = 1 << 24  # elements (sizes) or bytes (CRC) per step: bounded temporary memory


def sizes_digest(sizes: np.ndarray) -> str:
    """SHA-256 of the sizes as little-endian int64 (the same digest whatever their stored dtype)."""
    digest = hashlib.sha256()
    for start in range(0, len(sizes), _CHUNK):
        digest.update(np.ascontiguousarray(sizes[start : start + _CHUNK], dtype="<i8").data)
    return digest.hexdigest()


@dataclass(frozen=True)
class PairIndexKey:
    """Everything the pairs depend on."""

    sentences: int
    sizes_sha256: str
    block_size: int
    short_seq_prob: float
    seed: int
    break_mode: str = "doc"
    doc_break_size: int = 0
    format: int = CACHE_FORMAT

    @classmethod
    def of(cls, sizes: np.ndarray, block_size: int, short_seq_prob: float, seed: int) -> PairIndexKey:
        return cls(len(sizes), sizes_digest(sizes), int(block_size), float(short_seq_prob), int(seed))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def file_stem(self) -> str:
        digest = hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True).encode()).hexdigest()[:16]
        return f"pairs-block{self.block_size}-seed{self.seed}-{digest}"


def cache_paths(prefix: Path, key: PairIndexKey) -> tuple[Path, Path]:
    """``(array file, record file)`` of ``key`` for the split at ``prefix`` (e.g. ``DATA_BIN/train``)."""
    stem = f"{Path(prefix).name}.{key.file_stem()}"
    return prefix.parent / f"{stem}.npy", prefix.parent / f"{stem}.json"


def file_crc32(path: Path) -> int:
    crc = 0
    with open(path, "rb") as handle:
        while block := handle.read(_CHUNK):
            crc = zlib.crc32(block, crc)
    return crc


def load_cached(prefix: Path, key: PairIndexKey) -> PairIndex | None:
    """The cached index of ``key``, mmap'd; ``None`` when there is none or it fails a check (logged)."""
    array_path, record_path = cache_paths(prefix, key)
    if not record_path.exists():
        return None
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
        problem = _record_problem(record, key, array_path)
        if problem is None:
            pairs = _load_array(array_path, record["pairs"])
            if str(pairs.dtype) != record["dtype"] or pairs.shape != (record["pairs"],):
                problem = f"holds {pairs.shape} {pairs.dtype}, its record says {record['pairs']} pairs"
    except (OSError, ValueError, KeyError, TypeError) as error:
        problem = f"cannot be read ({error})"
    if problem is not None:
        logger.warning("pair index cache %s %s: rebuilding it", array_path, problem)
        return None
    return PairIndex(pairs)


def _record_problem(record: dict[str, Any], key: PairIndexKey, array_path: Path) -> str | None:
    if record.get("key") != key.as_dict():
        return f"was built for another key ({record.get('key')}, expected {key.as_dict()})"
    if not array_path.exists():
        return "is missing"
    if array_path.stat().st_size != record["bytes"]:
        return f"has {array_path.stat().st_size} bytes, its record says {record['bytes']}"
    if file_crc32(array_path) != record["crc32"]:
        return "does not have the CRC-32 of its record (altered or damaged)"
    return None


def save(index: PairIndex, prefix: Path, key: PairIndexKey) -> PairIndex:
    """Write the entry of ``key``; returns the index loaded back mmap'd (the in-memory copy can go)."""
    array_path, record_path = cache_paths(prefix, key)
    with atomic_output(array_path) as tmp, open(tmp, "wb") as handle:
        np.save(handle, np.ascontiguousarray(index.pairs), allow_pickle=False)
    record = {
        "key": key.as_dict(),
        "pairs": len(index),
        "dtype": str(index.pairs.dtype),
        "bytes": array_path.stat().st_size,
        "crc32": file_crc32(array_path),
    }
    with atomic_output(record_path) as tmp:
        tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return PairIndex(_load_array(array_path, len(index)))


def _load_array(path: Path, pairs: int) -> np.ndarray:
    """mmap'd (an empty array cannot be mapped)."""
    return np.load(path, mmap_mode="r" if pairs else None, allow_pickle=False)


def load_or_build_here(build: Callable[[], PairIndex], prefix: Path | None, key: PairIndexKey) -> PairIndex:
    """This process: the cached index, else ``build()`` (then cached, if ``prefix`` can be written)."""
    if prefix is not None:
        cached = load_cached(prefix, key)
        if cached is not None:
            logger.info("pair index: %d pairs from %s", len(cached), cache_paths(prefix, key)[0])
            return cached
    start = time.perf_counter()
    index = build()
    logger.info("pair index: %d pairs built in %.1fs", len(index), time.perf_counter() - start)
    if prefix is None:
        return index
    try:
        index = save(index, prefix, key)
    except OSError as error:
        logger.warning("pair index not cached (%s): every run will build it again", error)
        return index
    logger.info("pair index cached in %s", cache_paths(prefix, key)[0])
    return index


def _process_group() -> tuple[int, int]:
    """(rank, world size) of ``torch.distributed``'s default group; (0, 1) without one."""
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch is a dependency
        return 0, 1
    if not (dist.is_available() and dist.is_initialized()):
        return 0, 1
    return dist.get_rank(), dist.get_world_size()


def load_or_build(build: Callable[[], PairIndex], prefix: Path | None, key: PairIndexKey) -> PairIndex:
    """:func:`load_or_build_here`, rank 0 first under ``torch.distributed`` (see the module docstring).

    Every rank of the default group must call it (it holds a barrier), as every rank loads its datasets.
    """
    rank, world = _process_group()
    if world == 1 or prefix is None:
        return load_or_build_here(build, prefix, key)
    import torch.distributed as dist

    if rank == 0:
        try:
            return load_or_build_here(build, prefix, key)
        finally:  # also when the build fails: the others then build, fail the same way and stop too
            dist.barrier()
    dist.barrier()
    return load_or_build_here(build, prefix, key)
