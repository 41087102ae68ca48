"""The next-sentence pairs of fairseq's ``BlockPairDataset`` (``break_mode="doc"``), as compact arrays.

fairseq's builder (``fairseq/data/legacy/block_pair_dataset.py``) walks every sentence in Python, keeps a
list per document (``block_indices``) and a tuple of tuples per pair (``sent_pairs``), and re-sums the
sizes of the growing chunk at every sentence (``sum(sizes[current_chunk])``, quadratic in the chunk). On
English Wikipedia + BookCorpus (≈ 150 M sentences) that is tens of GB of Python objects and half an hour,
in every rank at every start.

:func:`build_pair_index` gives the same pairs: the same ``(first, offset, last, length)`` blocks and labels
for the same sizes, block size, ``short_seq_prob`` and global NumPy seed, because it makes the same calls on
the global generator in the same order:

* per document: ``random()`` < ``short_seq_prob`` → ``randint(2, block_size - 3)`` (the target length,
  fixed for the whole document);
* per pair: ``randint(1, n - 1)`` (the split, only when the chunk holds n > 2 sentences); ``rand()`` (next
  or random, drawn even when the chunk's single sentence forces "random"); for a random B ``randint(D - 1)``
  (another document of the D) and ``randint(0, its sentences)`` (the start sentence);
* per truncated token: one ``rand()`` (front or end) — drawn here as one ``random(k)`` call, the same
  doubles of the same stream.

What is not random is computed instead of replayed: document ranges from ``sizes == doc_break_size``, chunk
ends and B's extent by ``searchsorted`` on the cumulative sizes, which side loses each truncated token
(always the longer one, so the sequence of sides has a closed form), and the cut positions. The only loop
left runs once per document and once per pair, and keeps nothing per sentence: the pairs go into an
``array`` of machine integers, moved block by block into one packed structured array (:data:`PAIR_FIELDS`,
33 bytes a pair with 32-bit sentence ids). Memory: the cumulative sizes (8 bytes a sentence) and the pairs.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

PAIR_FIELDS = ("a_first", "a_offset", "a_last", "a_length", "b_first", "b_offset", "b_last", "b_length")
"""Per pair and side, as fairseq's ``(start_ds_idx, offset, end_ds_idx, length)`` block: the side is
``cat(sentences first..last)[offset : offset + length]``; plus ``is_next`` (fairseq's convention: 1 = B
follows A in its document)."""

_FRONT = (0.5).__gt__  # a truncated token is taken from the front when its draw is < 0.5
_FLUSH_PAIRS = 1 << 16  # pairs per block moved from the integer buffer into the packed array (4.7 MB)


def pair_dtype(num_sentences: int) -> np.dtype:
    """Packed (unaligned) record of one pair; sentence ids in 32 bits while they fit."""
    ids = np.int32 if num_sentences < 2**31 else np.int64
    fields = [(name, ids if name.endswith(("first", "last")) else np.int32) for name in PAIR_FIELDS]
    return np.dtype([*fields, ("is_next", np.int8)])


@dataclass(frozen=True, eq=False)
class PairIndex:
    """The pairs of one data split: a structured array of :func:`pair_dtype` (in memory or mmap'd)."""

    pairs: np.ndarray

    def __len__(self) -> int:
        return len(self.pairs)

    @property
    def sizes(self) -> np.ndarray:
        """Example lengths with CLS and two SEP, as ``BlockPairDataset.sizes`` (int64, for fairseq's
        batching)."""
        sizes = self.pairs["a_length"].astype(np.int64)
        sizes += self.pairs["b_length"]
        sizes += 3
        return sizes

    @property
    def is_next(self) -> np.ndarray:
        return self.pairs["is_next"]

    def block(self, index: int, side: str) -> tuple[int, int, int, int]:
        """``(first, offset, last, length)`` of side ``"a"`` or ``"b"`` of pair ``index``."""
        row = self.pairs[index]
        return tuple(int(row[f"{side}_{name}"]) for name in ("first", "offset", "last", "length"))  # type: ignore[return-value]


def document_ranges(sizes: np.ndarray, doc_break_size: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, ends)`` (end exclusive) of the non-empty documents, as ``BlockPairDataset`` groups them:
    an item of size ``doc_break_size`` ends a document, consecutive breaks make no empty document, and
    sentences after the last break belong to no document (fairseq drops them)."""
    sizes = np.asarray(sizes)
    if doc_break_size != 0 and np.any(sizes == 0):
        raise ValueError(
            "when doc_break_size is non-zero, documents must be separated by items of that size, and no "
            "item may be empty"
        )
    breaks = np.flatnonzero(sizes == doc_break_size)
    starts = np.concatenate([[0], breaks[:-1] + 1]).astype(np.int64)
    keep = breaks > starts
    return starts[keep], breaks[keep].astype(np.int64)


class _PairBuffer:
    """Appends pairs as machine integers and moves every full block of them into one packed array (no
    Python object per pair survives the block).

    The array is allocated once for ``capacity`` pairs — an upper bound: every pair consumes at least one
    sentence of its document — and shrunk in place at the end (``realloc``, which gives back the pages
    never written): no concatenation, so the build never holds the pairs twice.
    """

    width = len(PAIR_FIELDS) + 1

    def __init__(self, dtype: np.dtype, capacity: int) -> None:
        self.rows = array("q")
        self.pairs = np.empty(capacity, dtype=dtype)
        self.count = 0

    def flush_if_full(self) -> None:
        """Called between documents."""
        if len(self.rows) >= _FLUSH_PAIRS * self.width:
            self._flush()

    def _flush(self) -> None:
        table = np.frombuffer(self.rows, dtype=np.int64).reshape(-1, self.width)
        block = self.pairs[self.count : self.count + len(table)]
        for column, name in enumerate((*PAIR_FIELDS, "is_next")):
            block[name] = table[:, column]
        self.count += len(table)
        del table, block
        self.rows = array("q")

    def result(self) -> np.ndarray:
        self._flush()
        pairs, self.pairs = self.pairs, np.empty(0, dtype=self.pairs.dtype)
        pairs.resize(self.count, refcheck=False)
        return pairs


def _truncation(cut: int, len_a: int, len_b: int, draws: list[float]) -> tuple[int, int, int, int]:
    """``(front_a, end_a, front_b, end_b)`` of ``_truncate_sentences``: each of the ``cut`` tokens is
    taken from the longer side (B on a tie) — the front when its ``rand()`` < 0.5, else the end.

    Who loses a token depends only on the lengths: the longer side alone until it is no longer longer,
    then B, A, B, A, ... alternately (after A: the sides are equal, so B; after B: A is longer). With
    ``d = len_a - len_b``: A first ``min(d, cut)`` times if ``d > 0``, else B first ``min(1 - d, cut)``
    times; the rest alternates starting with the other side.
    """
    difference = len_a - len_b
    first_is_a = difference > 0
    head = min(difference if first_is_a else 1 - difference, cut)
    if head == cut:  # the usual case: only the longer side loses tokens
        front = sum(map(_FRONT, draws))
        first_front, first_end, other_front, other_end = front, cut - front, 0, 0
    else:
        first_front = sum(map(_FRONT, draws[:head])) + sum(map(_FRONT, draws[head + 1 :: 2]))
        first_end = head + len(draws[head + 1 :: 2]) - first_front
        other_front = sum(map(_FRONT, draws[head::2]))
        other_end = len(draws[head::2]) - other_front
    if first_is_a:
        return first_front, first_end, other_front, other_end
    return other_front, other_end, first_front, first_end


def build_pair_index(
    sizes: np.ndarray, block_size: int, short_seq_prob: float, doc_break_size: int = 0
) -> PairIndex:
    """The pairs of ``BlockPairDataset(dataset, dictionary, sizes, block_size, break_mode="doc",
    short_seq_prob, doc_break_size)``, drawing from the global NumPy generator as it does (seed it, e.g.
    with ``fairseq.data.data_utils.numpy_seed``, for the pairs of that seed)."""
    if block_size < 5:
        raise ValueError(f"block size {block_size}: a pair needs at least 5 tokens (CLS, A, SEP, B, SEP)")
    sizes = np.asarray(sizes)
    doc_starts, doc_ends = document_ranges(sizes, doc_break_size)
    cum = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=cum[1:])
    out = _PairBuffer(pair_dtype(len(sizes)), capacity=int(np.sum(doc_ends - doc_starts)))
    max_tokens = block_size - 3  # CLS, SEP, SEP
    documents = len(doc_starts)
    random, rand, randint, random_sample = (
        np.random.random,
        np.random.rand,
        np.random.randint,
        np.random.random_sample,
    )
    for doc_id in range(documents):
        out.flush_if_full()
        add = out.rows.extend
        start, end = int(doc_starts[doc_id]), int(doc_ends[doc_id])
        target = max_tokens
        if random() < short_seq_prob:
            target = randint(2, max_tokens)
        chunk = start
        while chunk < end:
            a_first, base = chunk, int(cum[chunk])
            # the chunk grows until it reaches the target length or the document's last sentence
            last = chunk + int(cum[chunk + 1 : end + 1].searchsorted(base + target))
            if last >= end:
                last = end - 1
            count = last - chunk + 1
            a_last = a_first + (randint(1, count - 1) if count > 2 else 1) - 1
            len_a = int(cum[a_last + 1]) - base
            is_next = 1 if rand() > 0.5 and count != 1 else 0
            if is_next:
                b_first, b_last = a_last + 1, last
                chunk = last + 1
            else:
                drawn = randint(documents - 1)
                other = drawn if drawn < doc_id else drawn + 1
                other_start, other_end = int(doc_starts[other]), int(doc_ends[other])
                b_first = other_start + randint(0, other_end - other_start)
                b_base = int(cum[b_first])
                # from b_first until B reaches target - len_a (one sentence at least) or its document ends
                b_last = b_first + int(cum[b_first + 1 : other_end + 1].searchsorted(b_base + target - len_a))
                if b_last >= other_end:
                    b_last = other_end - 1
                chunk = a_last + 1  # the chunk's unused part starts the next chunk
            len_b = int(cum[b_last + 1]) - int(cum[b_first])
            a_offset = b_offset = 0
            cut = len_a + len_b - max_tokens
            if cut > 0:
                front_a, end_a, front_b, end_b = _truncation(cut, len_a, len_b, random_sample(cut).tolist())
                if front_a or end_a:
                    a_first, a_offset, a_last = _cut(cum, a_first, a_last, front_a, end_a)
                if front_b or end_b:
                    b_first, b_offset, b_last = _cut(cum, b_first, b_last, front_b, end_b)
                len_a -= front_a + end_a
                len_b -= front_b + end_b
            add((a_first, a_offset, a_last, len_a, b_first, b_offset, b_last, len_b, is_next))
    return PairIndex(out.result())


def _cut(cum: np.ndarray, first: int, last: int, front: int, end: int) -> tuple[int, int, int]:
    """``(first, offset, last)`` of ``_cut_sentence``: ``front`` tokens off the start (whole sentences,
    then an offset into the new first one) and ``end`` tokens off the end (whole sentences only: the
    length says where the side stops)."""
    offset = 0
    if front:
        position = int(cum[first]) + front
        if position < int(cum[first + 1]):  # inside the first sentence (the usual case)
            offset = front
        else:
            first = first - 1 + int(cum[first : last + 2].searchsorted(position, side="right"))
            offset = position - int(cum[first])
    if end:
        position = int(cum[last + 1]) - end
        if position <= int(cum[last]):  # whole sentences off the end
            last = first - 1 + int(cum[first : last + 2].searchsorted(position, side="left"))
    return first, offset, last
