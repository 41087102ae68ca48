"""``--task macaron_bert_pretraining``: BERT's masked-LM + next-sentence-prediction examples from the
data-bin of ``python -m macaron_preprocess.bert_corpus`` (:mod:`macaron_fairseq.data.bert_pairs` builds them).

    fairseq-train DATA_BIN --user-dir macaron_fairseq --task macaron_bert_pretraining \\
        --criterion macaron_bert_loss --arch macaron_bert_base --tokens-per-sample 128 ...

``DATA_BIN/dict.txt`` is fairseq's plain ``Dictionary``; the task appends ``<mask>`` (as fairseq's
``masked_lm`` task does) and uses ``<s>`` as CLS and ``</s>`` as SEP. Loading a split checks that the data
has document boundaries and at least two documents, and that its ids are symbols of ``dict.txt``. The
sentence pairs of a split are cached (``--pair-cache``): built once, loaded by every rank and later run.

The pairs change with the epoch, as BERT's ``dupe_factor`` makes its instances with other pairs: epoch
``e`` reads pairing ``(e - 1) mod --nsp-pairings`` (pairing 0 is the seed's; see
:func:`macaron_fairseq.data.bert_pairs.pairing_seed`), each built once and cached. ``load_dataset(split,
epoch)`` swaps the split's dataset when the epoch's pairing is another one (and keeps it otherwise); the
task reports its training data as "sharded" when there is more than one pairing, so ``fairseq-train`` asks
for the dataset of every epoch (and of the epoch a checkpoint resumes) — ``python -m
macaron_fairseq.pretrain`` does so itself.
"""

# no ``from __future__ import annotations``: fairseq reads the config's field types at run time
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from fairseq import utils
from fairseq.data import Dictionary, data_utils
from fairseq.dataclass import FairseqDataclass
from fairseq.tasks import FairseqTask, register_task
from omegaconf import II, MISSING

from macaron_fairseq.data.bert_pairs import (
    MASK_SYMBOL,
    BertPretrainingDataset,
    check_sentence_data,
    check_token_ids,
)
from macaron_workflow.errors import UserError

logger = logging.getLogger(__name__)


@dataclass
class BertPretrainingConfig(FairseqDataclass):
    data: str = field(
        default=MISSING,
        metadata={"help": "data-bin of python -m macaron_preprocess.bert_corpus (dict.txt, splits)"},
    )
    tokens_per_sample: int = field(
        default=128,
        metadata={"help": "length of an example, <s> A </s> B </s> included (BERT: 128, then 512)"},
    )
    short_seq_prob: float = field(
        default=0.1, metadata={"help": "probability of a shorter random target length (BERT: 0.1)"}
    )
    mask_prob: float = field(default=0.15, metadata={"help": "share of the tokens to predict"})
    leave_unmasked_prob: float = field(
        default=0.1, metadata={"help": "share of the predicted tokens left unchanged"}
    )
    random_token_prob: float = field(
        default=0.1, metadata={"help": "share of the predicted tokens replaced by a random symbol"}
    )
    pair_cache: str = field(
        default="",
        metadata={
            "help": "where the sentence-pair index of a split is cached (built once, then loaded by every "
            "rank and every later run): empty = in the run's --save-dir (an entry an older version wrote "
            "next to the split's .bin/.idx is still read; nothing is written into the data-bin), a "
            "directory, or 'off'"
        },
    )
    save_dir: str = II("checkpoint.save_dir")
    nsp_pairings: int = field(
        default=10,
        metadata={
            "help": "number of different sentence pairings cycled through, one per epoch: epoch e reads "
            "pairing (e - 1) mod K, each built once and cached (BERT generates its instances dupe_factor=10 "
            "times with other pairs); 1 = the same pairs every epoch"
        },
    )
    seed: int = II("common.seed")


@register_task("macaron_bert_pretraining", dataclass=BertPretrainingConfig)
class BertPretrainingTask(FairseqTask):
    """Masked LM + next-sentence prediction on sentence pairs built inside documents."""

    cfg: BertPretrainingConfig

    def __init__(self, cfg: BertPretrainingConfig, dictionary: Dictionary) -> None:
        super().__init__(cfg)
        if cfg.nsp_pairings < 1:
            raise UserError(f"--nsp-pairings {cfg.nsp_pairings}: give 1 (the same pairs every epoch) or more")
        self.dictionary = dictionary
        self.checked_ids: set[str] = set()  # the splits whose token ids were checked (once per split)
        self.data_symbols = len(dictionary)  # before <mask>: the ids the data may hold
        self.mask_idx = dictionary.add_symbol(MASK_SYMBOL)

    @classmethod
    def setup_task(cls, cfg: BertPretrainingConfig, **kwargs) -> "BertPretrainingTask":
        path = os.path.join(cls.data_path(cfg), "dict.txt")
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"{path} not found: give the data-bin written by python -m macaron_preprocess.bert_corpus"
            )
        dictionary = Dictionary.load(path)
        logger.info("dictionary: %d types (+ %s)", len(dictionary), MASK_SYMBOL)
        return cls(cfg, dictionary)

    @staticmethod
    def data_path(cfg: BertPretrainingConfig) -> str:
        paths = utils.split_paths(cfg.data)
        if len(paths) != 1:
            raise ValueError(f"--task macaron_bert_pretraining reads one data-bin, got {cfg.data!r}")
        return paths[0]

    def pairing_of(self, epoch: int) -> int:
        """The sentence pairing epoch ``epoch`` (from 1) reads: ``(epoch - 1) mod --nsp-pairings``."""
        return (max(int(epoch), 1) - 1) % self.cfg.nsp_pairings

    def has_sharded_data(self, split: str) -> bool:
        """True with several pairings: fairseq's trainer then calls :meth:`load_dataset` at every epoch
        (and with the epoch of a restored checkpoint), so that each epoch reads its own pairing."""
        return self.cfg.nsp_pairings > 1 or super().has_sharded_data(split)

    def load_dataset(self, split: str, epoch: int = 1, combine: bool = False, **kwargs) -> None:
        """The examples of ``split`` from the pairing of ``epoch``; nothing is done when the split's dataset
        already holds that pairing."""
        pairing = self.pairing_of(epoch)
        loaded = self.datasets.get(split)
        if isinstance(loaded, BertPretrainingDataset) and loaded.pairing == pairing:
            return
        prefix = os.path.join(self.data_path(self.cfg), split)
        sentences = data_utils.load_indexed_dataset(prefix, self.dictionary)
        if sentences is None:
            raise FileNotFoundError(f"{prefix}.bin/.idx not found (split {split!r} of the data-bin)")
        name = f"{prefix}.bin"
        check_sentence_data(sentences.sizes, name)
        start = time.perf_counter()
        dict_path = os.path.join(self.data_path(self.cfg), "dict.txt")
        if split not in self.checked_ids:
            check_token_ids(sentences, self.data_symbols, name, dict_path)
            self.checked_ids.add(split)
        checked = time.perf_counter()
        dataset = BertPretrainingDataset(
            sentences,
            self.dictionary,
            block_size=self.cfg.tokens_per_sample,
            seed=self.cfg.seed,
            name=name,
            short_seq_prob=self.cfg.short_seq_prob,
            mask_prob=self.cfg.mask_prob,
            leave_unmasked_prob=self.cfg.leave_unmasked_prob,
            random_token_prob=self.cfg.random_token_prob,
            pair_cache=self.pair_cache_prefix(split),
            pair_cache_read_only=self.legacy_pair_cache_prefix(split),
            pairing=pairing,
        )
        logger.info(
            "%s: %d sentence pairs of pairing %d/%d (epoch %d; %.0f%% IsNext) from %d items; id check %.1fs, "
            "pairs %.1fs",
            name,
            len(dataset),
            pairing,
            self.cfg.nsp_pairings,
            epoch,
            100 * (1 - dataset.nsp_targets.mean()) if len(dataset) else 0.0,
            len(sentences),
            checked - start,
            time.perf_counter() - checked,
        )
        self.datasets[split] = dataset

    def pair_cache_prefix(self, split: str) -> Path | None:
        """The prefix of the split's pair-index cache files (``None``: no cache), from ``--pair-cache``:
        the run's output directory by default, never the data-bin (an input)."""
        where = self.cfg.pair_cache
        if where == "off":
            return None
        directory = Path(where) if where else Path(self.cfg.save_dir)
        return directory / split

    def legacy_pair_cache_prefix(self, split: str) -> Path | None:
        """Where versions before 0.x cached the pairs of ``split``: next to it in the data-bin (read only)."""
        return None if self.cfg.pair_cache == "off" else Path(self.data_path(self.cfg)) / split

    @property
    def source_dictionary(self) -> Dictionary:
        return self.dictionary

    @property
    def target_dictionary(self) -> Dictionary:
        return self.dictionary

    def max_positions(self) -> int:
        return self.cfg.tokens_per_sample
