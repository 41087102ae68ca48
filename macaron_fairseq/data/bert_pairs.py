"""BERT pre-training examples from a sentence/document data-bin: next-sentence pairs, masking, batches.

The data-bin of ``python -m macaron_preprocess.bert_corpus`` holds one item per sentence (its pieces followed
by ``</s>``) and, after every document, an item holding only ``</s>``. An example is built as in BERT's
``create_pretraining_data.py``:

1. **Pairs** — the pairs of fairseq's ``BlockPairDataset`` (``break_mode="doc"``): each document is walked,
   sentences gathered up to the target length (``--tokens-per-sample`` − 3, or with probability
   ``short_seq_prob`` a random shorter one), the chunk split at a random sentence into A and B, and with
   probability ½ B replaced by sentences of another document; the longer side is truncated at either end
   until the pair fits. The randomness is the global NumPy generator, seeded here with the seed of the
   *pairing* (:func:`pairing_seed`): pairing 0 uses the task seed itself, pairing ``p > 0`` a seed derived
   from (task seed, ``p``). The task cycles through ``--nsp-pairings K`` pairings, one per epoch (epoch
   ``e`` uses pairing ``(e - 1) mod K``), as BERT's ``create_pretraining_data.py`` generates its instances
   ``dupe_factor`` (10) times with other pairs; ``K = 1`` keeps the same pairs for the whole run.
   The sentences enter it *without* their ``</s>`` (:class:`SentencesWithoutEos`): BERT concatenates a
   segment's sentences without separators; with them, every sentence end inside A or B would be a
   ``</s>`` = SEP token. The document ends (items of size 1) become items of size 0, which are document
   breaks with ``doc_break_size=0`` — unambiguous, whereas a one-piece sentence would also have size 1
   once its ``</s>`` is removed.
2. **Masking** — fairseq's ``MaskTokensDataset`` on the concatenation A+B (so CLS and SEP are never
   masked): ⌊15 % · len + U(0,1)⌋ positions chosen, of those 80 % → ``<mask>``, 10 % → a random real
   symbol, 10 % unchanged; its generator is seeded by (seed, epoch, index), so a resumed run sees the same
   masks, and each epoch sees new ones (dynamic masking).
3. **Layout** — ``<s> A </s> B </s>`` (CLS = ``<s>``, SEP = ``</s>``); segment labels 0 for CLS, A and its
   SEP, 1 for B and its SEP; MLM targets are the original symbols at the chosen positions and padding
   elsewhere; the NSP target is 0 when B follows A in its document ("IsNext"), 1 when B comes from
   another document (BERT's convention; ``BlockPairDataset`` itself uses the opposite).

**What is fairseq's, what is rewritten.** fairseq's: the indexed dataset, ``MaskTokensDataset``,
``LRUCacheDataset``, ``numpy_seed``, ``collate_tokens``, batching. Rewritten: the construction of the
pairs. ``BlockPairDataset``'s builder is a Python loop keeping a list per document and tuples per pair, and
re-summing the growing chunk at every sentence; measured on synthetic sizes of a Wikipedia + BookCorpus-like
corpus (docs/reports/pair_index_build.md), it takes 94 s of CPU and 1.9 GB
per 10 M sentences (block 128): for the full corpus (≈ 150 M sentences) ≈ 24 minutes and ≈ 23 GB — in
every rank, at every start and every resume. :mod:`.pair_index` gives the same pairs (same ``sent_pairs``
blocks, the same draws from the generator; tested against ``BlockPairDataset`` on hundreds of layouts)
as one packed array of 33 bytes a pair, 4-6× faster (6 minutes for 150 M sentences at block 128, 2 at
512) and with memory O(arrays) (≈ 3 GB at the peak, 1.7 GB of pairs); :mod:`.pair_cache` writes it beside
the run's output once (``--pair-cache``; never into the data-bin), and every later start and every other
rank loads it mmap'd, checked, in about 2 seconds. :class:`~.sentence_pairs.SentencePairDataset` returns
the same ``(a, b, is_next)`` tensors as ``BlockPairDataset.__getitem__``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from fairseq.data import BaseWrapperDataset, Dictionary, FairseqDataset, LRUCacheDataset, data_utils
from fairseq.data.mask_tokens_dataset import MaskTokensDataset

from macaron_fairseq.data.pair_cache import PairIndexKey, load_cached, load_or_build
from macaron_fairseq.data.pair_index import PairIndex, build_pair_index
from macaron_fairseq.data.sentence_pairs import SentencePairDataset
from macaron_workflow.errors import UserError

MASK_SYMBOL = "<mask>"


class BertDataError(UserError, ValueError):
    """The data-bin cannot give BERT pre-training examples (the message names the file and the fix); a
    ``UserError``, so the command lines print it without a traceback."""


@dataclass(frozen=True)
class PairSymbols:
    """The special symbols of the examples (the interface ``BlockPairDataset`` asks its dictionary for), on
    fairseq's plain ``Dictionary`` (the data-bin's): CLS = ``<s>``, SEP = ``</s>``, ``<mask>`` appended by
    the task."""

    dictionary: Dictionary

    def cls(self) -> int:
        return self.dictionary.bos()

    def sep(self) -> int:
        return self.dictionary.eos()

    def eos(self) -> int:
        return self.dictionary.eos()

    def pad(self) -> int:
        return self.dictionary.pad()

    def mask(self) -> int:
        return self.dictionary.index(MASK_SYMBOL)


class SentencesWithoutEos(BaseWrapperDataset):
    """The sentence items without their final ``</s>`` (document ends become empty items); ``sizes``
    follow. They are computed when asked for, not kept: only the pair index is built from them, and a
    copy would hold 8 bytes per sentence in every rank for the whole run."""

    def __init__(self, dataset: Any, eos: int, name: str) -> None:
        super().__init__(dataset)
        self.eos = eos
        self.name = name

    @property
    def sizes(self) -> np.ndarray:
        """A new array (int64) at every access."""
        return np.asarray(self.dataset.sizes, dtype=np.int64) - 1

    def __getitem__(self, index: int) -> torch.Tensor:
        item = self.dataset[index]
        if len(item) == 0 or item[-1] != self.eos:
            raise BertDataError(
                f"{self.name}: item {index} does not end with </s>; BERT pre-training reads data-bins "
                "written by python -m macaron_preprocess.bert_corpus (one sentence per item, </s> appended)"
            )
        return item[:-1]

    def size(self, index: int) -> int:
        return int(self.dataset.sizes[index]) - 1

    def num_tokens(self, index: int) -> int:
        return self.size(index)


def check_sentence_data(sizes: np.ndarray, name: str) -> None:
    """Document boundaries (items of size 1, i.e. only ``</s>``) must exist, and there must be at least two
    documents (a random next sentence comes from another document)."""
    sizes = np.asarray(sizes)
    if len(sizes) == 0:
        raise BertDataError(f"{name} holds no sentence")
    if np.any(sizes == 0):
        raise BertDataError(f"{name}: empty items; every item should hold a sentence and its </s>")
    boundaries = np.flatnonzero(sizes == 1)
    if len(boundaries) == 0:
        raise BertDataError(
            f"{name} has no document boundary (no item holding only </s>): next-sentence pairs need the "
            "documents; build the data-bin with python -m macaron_preprocess.bert_corpus, which writes an "
            "item holding only </s> after every document"
        )
    documents = np.count_nonzero(np.diff(np.concatenate([[-1], boundaries])) > 1)
    if documents < 2:
        raise BertDataError(
            f"{name} holds {documents} document(s); next-sentence prediction needs at least two (the random "
            "second segment comes from another document)"
        )


def max_token_id(dataset: Any, chunk_tokens: int = 1 << 26) -> int:
    """The largest symbol id in an indexed dataset; for fairseq's mmap format a chunked scan of the data
    file (≈ a second per GB from the page cache), otherwise item by item."""
    buffer = getattr(dataset, "_bin_buffer", None)
    index = getattr(dataset, "_index", None)
    if buffer is not None and index is not None:
        tokens = np.frombuffer(buffer, dtype=index.dtype)
        chunks = range(0, len(tokens), chunk_tokens)
        return max((int(tokens[i : i + chunk_tokens].max()) for i in chunks), default=-1)
    return max((int(dataset[i].max()) for i in range(len(dataset)) if len(dataset[i])), default=-1)


def check_token_ids(dataset: Any, dictionary_size: int, name: str, dict_path: str | Path) -> None:
    """Every id must be a symbol of ``dict.txt`` (without the ``<mask>`` the task appends)."""
    largest = max_token_id(dataset)
    if largest >= dictionary_size:
        raise BertDataError(
            f"{name} holds symbol id {largest}, but {dict_path} has only {dictionary_size} symbols "
            "(4 specials included): the dictionary does not belong to this data; use the dict.txt written "
            "with the data-bin"
        )


def random_replacement_weights(dictionary: Dictionary, mask_idx: int) -> np.ndarray:
    """Uniform over the dictionary's real symbols: not the specials, not ``<mask>``, not the zero-count
    ``madeupword`` entries fairseq pads dictionaries with (to a multiple of 8)."""
    weights = (np.asarray(dictionary.count, dtype=np.float64) > 0).astype(np.float64)
    weights[: dictionary.nspecial] = 0
    weights[mask_idx] = 0
    if weights.sum() == 0:
        raise BertDataError("the dictionary has no symbol to draw random replacements from")
    return weights / weights.sum()


def pairing_seed(seed: int, pairing: int) -> int:
    """The NumPy seed of pairing ``pairing`` (0, 1, ..., K - 1) of a run with seed ``seed``: pairing 0 is
    the run's seed itself (the pairs of ``--nsp-pairings 1``, and of the runs before pairings existed);
    pairing ``p > 0`` a 32-bit seed derived from ``(seed, p)`` by NumPy's ``SeedSequence`` (the same on every
    platform and in every rank, and unrelated to the seeds ``seed + 1, seed + 2, ...`` of other runs)."""
    if pairing < 0:
        raise ValueError(f"pairing {pairing}: pairings are numbered from 0")
    if pairing == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), int(pairing)]).generate_state(1, dtype=np.uint32)[0])


def sentence_pair_index(
    sizes: np.ndarray,
    block_size: int,
    short_seq_prob: float,
    seed: int,
    cache: Path | None,
    read_only: Path | None = None,
) -> PairIndex:
    """The pairs of ``BlockPairDataset(break_mode="doc", doc_break_size=0)`` under ``numpy_seed(seed)``,
    from the cache at ``cache`` (a split prefix such as ``SAVE_DIR/train``; ``None``: no cache), else from
    an entry at ``read_only`` (never written: ``DATA_BIN/train``, where older versions cached), or built."""
    key = PairIndexKey.of(sizes, block_size, short_seq_prob, seed)

    def build() -> PairIndex:
        with data_utils.numpy_seed(seed):
            return build_pair_index(sizes, block_size, short_seq_prob, doc_break_size=0)

    if cache is not None and read_only is not None and (old := load_cached(Path(read_only), key)) is not None:
        return old
    return load_or_build(build, None if cache is None else Path(cache), key)


class _PairTokens(BaseWrapperDataset):
    """A and B of each pair, concatenated (what is masked)."""

    def __getitem__(self, index: int) -> torch.Tensor:
        a, b, _ = self.dataset[index]
        return torch.cat([a, b])


class BertPretrainingDataset(FairseqDataset):
    """``<s> A </s> B </s>`` examples with masked-LM and NSP targets (see the module docstring).

    Items: ``{"id", "source", "segment_labels", "target", "nsp_target"}``; batches (``collater``)::

        {"id": B, "nsentences": B, "ntokens": non-padding tokens,
         "net_input": {"src_tokens": B × T, "segment_labels": B × T},
         "target": B × T (original symbol where masked, padding elsewhere), "nsp_target": B}
    """

    def __init__(
        self,
        sentences: Any,
        dictionary: Dictionary,
        block_size: int,
        seed: int,
        name: str = "data",
        short_seq_prob: float = 0.1,
        mask_prob: float = 0.15,
        leave_unmasked_prob: float = 0.1,
        random_token_prob: float = 0.1,
        pair_cache: Path | None = None,
        pairing: int = 0,
        pair_cache_read_only: Path | None = None,
    ) -> None:
        """``seed`` seeds the masks and the order (per epoch); the pairs are those of
        :func:`pairing_seed` ``(seed, pairing)``."""
        super().__init__()
        if block_size < 5:
            raise ValueError(f"--tokens-per-sample {block_size}: a pair needs at least 5 tokens")
        symbols = PairSymbols(dictionary)
        self.pad, self.cls, self.sep, self.mask = symbols.pad(), symbols.cls(), symbols.sep(), symbols.mask()
        if self.mask == dictionary.unk():
            raise ValueError(f"the dictionary has no {MASK_SYMBOL} symbol (the task appends it)")
        self.seed = seed
        self.epoch = 1
        text = SentencesWithoutEos(sentences, dictionary.eos(), name)
        self.pairing = pairing
        self.pair_seed = pairing_seed(seed, pairing)
        self.index = sentence_pair_index(
            text.sizes, block_size, short_seq_prob, self.pair_seed, pair_cache, pair_cache_read_only
        )
        self.pairs = SentencePairDataset(text, self.index)
        self.sizes = self.index.sizes
        self.len_a = self.index.pairs["a_length"]
        self.nsp_targets = np.asarray(1 - self.index.is_next)  # fairseq's pairs: 1 = next; BERT: 0 = IsNext
        tokens = LRUCacheDataset(_PairTokens(self.pairs))
        options = dict(
            vocab=dictionary,
            pad_idx=self.pad,
            mask_idx=self.mask,
            seed=seed,
            mask_prob=mask_prob,
            leave_unmasked_prob=leave_unmasked_prob,
            random_token_prob=random_token_prob,
        )
        self.masked = MaskTokensDataset(tokens, return_masked_tokens=False, **options)
        self.targets = MaskTokensDataset(tokens, return_masked_tokens=True, **options)
        if random_token_prob > 0:
            self.masked.weights = random_replacement_weights(dictionary, self.mask)

    def __len__(self) -> int:
        return len(self.sizes)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        self.masked.set_epoch(epoch)
        self.targets.set_epoch(epoch)

    @property
    def can_reuse_epoch_itr_across_epochs(self) -> bool:
        return False  # the order (ordered_indices) changes with the epoch

    def __getitem__(self, index: int) -> dict[str, Any]:
        len_a = int(self.len_a[index])
        masked, target = self.masked[index], self.targets[index]
        one, zero = masked.new_ones(1), masked.new_zeros(1)
        cls, sep, pad = one * self.cls, one * self.sep, one * self.pad
        len_b = len(masked) - len_a
        return {
            "id": index,
            "source": torch.cat([cls, masked[:len_a], sep, masked[len_a:], sep]),
            "segment_labels": torch.cat([zero.expand(len_a + 2), one.expand(len_b + 1)]),
            "target": torch.cat([pad, target[:len_a], pad, target[len_a:], pad]),
            "nsp_target": int(self.nsp_targets[index]),
        }

    def collater(self, samples: list[dict[str, Any]]) -> dict[str, Any]:
        if not samples:
            return {}

        def merge(key: str, pad: int) -> torch.Tensor:
            return data_utils.collate_tokens([s[key] for s in samples], pad, left_pad=False)

        src_tokens = merge("source", self.pad)
        return {
            "id": torch.LongTensor([s["id"] for s in samples]),
            "nsentences": len(samples),
            "ntokens": int(src_tokens.ne(self.pad).sum()),
            "net_input": {"src_tokens": src_tokens, "segment_labels": merge("segment_labels", 0)},
            "target": merge("target", self.pad),
            "nsp_target": torch.LongTensor([s["nsp_target"] for s in samples]),
        }

    def num_tokens(self, index: int) -> int:
        return int(self.sizes[index])

    def num_tokens_vec(self, indices: np.ndarray) -> np.ndarray:
        return self.sizes[indices]

    def size(self, index: int) -> int:
        return int(self.sizes[index])

    def ordered_indices(self) -> np.ndarray:
        """A permutation per (seed, epoch): batches mix documents, and a resumed epoch has the same order."""
        with data_utils.numpy_seed(self.seed, self.epoch):
            return np.random.permutation(len(self))

    @property
    def supports_prefetch(self) -> bool:
        return False
