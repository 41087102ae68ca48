"""``--task macaron_sentence_prediction``: GLUE-style sentence(-pair) classification and regression for the
BERT models of :mod:`macaron_fairseq.models.bert`, on fairseq's ``sentence_prediction`` task and criterion.

    fairseq-train DATA --user-dir macaron_fairseq --task macaron_sentence_prediction \\
        --criterion sentence_prediction --arch macaron_bert_base --restore-file model.pt \\
        --num-classes C [--regression-target] [--tokens-per-sample 128] ...

``DATA`` is what ``fairseq-preprocess --only-source`` writes for fairseq's ``sentence_prediction``:
``input0/`` (first sentences, binarized with ``--srcdict`` = the pre-training data-bin's ``dict.txt``),
``input1/`` for pair tasks, ``label/`` (classification: ``label/dict.txt`` + binarized labels; regression:
``label/{split}.label`` text, one float per line). fairseq's task loads the dictionaries (``<mask>``
appended, so the input dictionary is the pre-training one), the labels and the criterion are its own.

What differs is BERT's input (Devlin et al. 2019, §3 and Google's ``run_classifier.py``), instead of
RoBERTa's ``<s> A </s></s> B </s>`` that ``--init-token``/``--separator-token`` would give:

* ``<s> A </s> B </s>`` (``<s>`` = CLS, ``</s>`` = SEP, one SEP between), ``<s> A </s>`` for single
  sentences; ``segment_labels`` in ``net_input``: 0 for ``<s> A </s>``, 1 for ``B </s>``.
* every example is truncated to ``--tokens-per-sample`` tokens by BERT's rule (``_truncate_seq_pair``:
  the longer of A and B loses its last token until the pair fits, B on ties; each keeps its ``</s>``), so
  no example is ever too long: fairseq's batching would otherwise drop or refuse the long ones, and a
  dropped test example breaks a GLUE submission.

``--max-positions`` is the model's number of learned positions (a flag of the BERT models, 512 as
pre-trained), so the example length has its own flag, ``--tokens-per-sample`` (as in the pre-training task).
"""

# no ``from __future__ import annotations``: fairseq reads the config's field types at run time
import contextlib
import logging
import os
from dataclasses import dataclass, field

import numpy as np
import torch
from fairseq.data import (
    Dictionary,
    FairseqDataset,
    IdDataset,
    NestedDictionaryDataset,
    NumelDataset,
    NumSamplesDataset,
    OffsetTokensDataset,
    RawLabelDataset,
    RightPadDataset,
    SortDataset,
    StripTokenDataset,
    data_utils,
)
from fairseq.tasks import register_task
from fairseq.tasks.sentence_prediction import SentencePredictionConfig, SentencePredictionTask
from omegaconf import OmegaConf, open_dict

from macaron_fairseq.checkpoint_reader import describe
from macaron_fairseq.models.bert import BertPretrainingBase, check_vocabulary

logger = logging.getLogger(__name__)

#: ``<s> </s> </s>``: the special tokens of a pair (a single sentence has two)
PAIR_SPECIALS = 3
SINGLE_SPECIALS = 2


class BertInputError(ValueError):
    """The data or the flags cannot give BERT's examples."""


@dataclass
class BertSentencePredictionConfig(SentencePredictionConfig):
    tokens_per_sample: int = field(
        default=512,
        metadata={
            "help": "examples are truncated to this many tokens, <s> A </s> B </s> included, by BERT's "
            "rule (BERT's max_seq_length; at most the model's --max-positions)"
        },
    )


def truncated_pair_lengths(
    len_a: np.ndarray, len_b: np.ndarray, budget: int
) -> tuple[np.ndarray, np.ndarray]:
    """Lengths of A and B (without their ``</s>``) after BERT's ``_truncate_seq_pair(a, b, budget)``:
    while ``len(a) + len(b) > budget``, drop the last token of the longer one (of B when equal).

    In closed form: if the gap between them covers the excess, the longer one loses the excess; otherwise
    both are evened out, then B and A lose a token in turn, ending at ``ceil(budget/2)`` and
    ``floor(budget/2)``.
    """
    len_a = np.asarray(len_a, dtype=np.int64)
    len_b = np.asarray(len_b, dtype=np.int64)
    excess = np.maximum(len_a + len_b - budget, 0)
    only_longer = excess <= np.abs(len_a - len_b)
    a_longer = len_a > len_b
    a = np.where(only_longer, np.where(a_longer, len_a - excess, len_a), (budget + 1) // 2)
    b = np.where(only_longer, np.where(a_longer, len_b, len_b - excess), budget // 2)
    return a, b


class BertExampleDataset(FairseqDataset):
    """``<s> A </s>`` or ``<s> A </s> B </s>`` from the binarized sentences (each ends with ``</s>``),
    truncated to ``max_tokens`` by BERT's rule. The lengths are computed up front from the sizes, so the
    batching sees the truncated sizes."""

    def __init__(
        self,
        first: FairseqDataset,
        second: FairseqDataset | None,
        cls: int,
        sep: int,
        max_tokens: int,
        name: str,
    ) -> None:
        super().__init__()
        self.first, self.second, self.cls, self.sep, self.name = first, second, cls, sep, name
        len_a = np.asarray(first.sizes, dtype=np.int64) - 1  # without the final </s>
        if (len_a < 0).any():
            raise BertInputError(f"{name}: an empty item in input0 (each sentence must end with </s>)")
        if second is None:
            self.keep_a = np.minimum(len_a, max_tokens - SINGLE_SPECIALS)
            self.keep_b = None
            self.sizes = self.keep_a + SINGLE_SPECIALS
            truncated = int((self.keep_a < len_a).sum())
        else:
            if len(second) != len(first):
                raise BertInputError(
                    f"{name}: input0 holds {len(first)} sentences but input1 {len(second)}: "
                    "the two sides of the pairs must be binarized from files of equal lines"
                )
            len_b = np.asarray(second.sizes, dtype=np.int64) - 1
            if (len_b < 0).any():
                raise BertInputError(f"{name}: an empty item in input1 (each sentence must end with </s>)")
            self.keep_a, self.keep_b = truncated_pair_lengths(len_a, len_b, max_tokens - PAIR_SPECIALS)
            self.sizes = self.keep_a + self.keep_b + PAIR_SPECIALS
            truncated = int(((self.keep_a < len_a) | (self.keep_b < len_b)).sum())
        if truncated:
            logger.info(
                "%s: %d of %d examples truncated to %d tokens", name, truncated, len(first), max_tokens
            )

    def sentence(self, dataset: FairseqDataset, index: int, keep: int, side: str) -> torch.Tensor:
        tokens = dataset[index]
        if tokens[-1].item() != self.sep:
            raise BertInputError(
                f"{self.name}: sentence {index} of {side} does not end with </s>: binarize with "
                "fairseq-preprocess, which appends it"
            )
        return tokens[:keep]

    def __getitem__(self, index: int) -> torch.Tensor:
        cls, sep = self.first[index].new_tensor([self.cls]), self.first[index].new_tensor([self.sep])
        parts = [cls, self.sentence(self.first, index, int(self.keep_a[index]), "input0"), sep]
        if self.second is not None:
            parts += [self.sentence(self.second, index, int(self.keep_b[index]), "input1"), sep]
        return torch.cat(parts)

    def segment_labels(self, index: int) -> torch.Tensor:
        """0 for ``<s> A </s>``, 1 for ``B </s>`` (BERT's token type ids)."""
        first = int(self.keep_a[index]) + SINGLE_SPECIALS
        second = 0 if self.keep_b is None else int(self.keep_b[index]) + 1
        return torch.cat([torch.zeros(first, dtype=torch.long), torch.ones(second, dtype=torch.long)])

    def __len__(self) -> int:
        return len(self.sizes)

    def num_tokens(self, index: int) -> int:
        return int(self.sizes[index])

    def size(self, index: int) -> int:
        return int(self.sizes[index])

    @property
    def supports_prefetch(self) -> bool:
        return False


class SegmentLabelsDataset(FairseqDataset):
    """The segment labels of a :class:`BertExampleDataset`, item by item."""

    def __init__(self, examples: BertExampleDataset) -> None:
        super().__init__()
        self.examples = examples
        self.sizes = examples.sizes

    def __getitem__(self, index: int) -> torch.Tensor:
        return self.examples.segment_labels(index)

    def __len__(self) -> int:
        return len(self.examples)


@register_task("macaron_sentence_prediction", dataclass=BertSentencePredictionConfig)
class BertSentencePredictionTask(SentencePredictionTask):
    """fairseq's sentence prediction with BERT's examples and segment labels."""

    cfg: BertSentencePredictionConfig

    def __init__(
        self, cfg: BertSentencePredictionConfig, data_dictionary: Dictionary, label_dictionary: Dictionary
    ) -> None:
        super().__init__(cfg, data_dictionary, label_dictionary)
        self.dictionary_file = os.path.join(cfg.data, "input0", "dict.txt")

    @classmethod
    def setup_task(cls, cfg: BertSentencePredictionConfig, **kwargs) -> "BertSentencePredictionTask":
        refuse_roberta_options(cfg)
        path = os.path.join(cfg.data, "input0", "dict.txt")
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"{path} not found: give the directory of fairseq-preprocess --only-source outputs "
                "(input0/, [input1/,] label/)"
            )
        task = super().setup_task(cfg, **kwargs)
        if not cfg.regression_target:
            check_label_count(task.label_dictionary, cfg.num_classes, os.path.join(cfg.data, "label"))
        return task

    def load_dataset(self, split: str, combine: bool = False, **kwargs) -> FairseqDataset:
        """fairseq's ``sentence_prediction`` datasets (same files, labels, shuffle) with BERT's examples."""
        first = self.indexed("input0", split, self.source_dictionary, combine)
        if first is None:
            raise FileNotFoundError(f"{os.path.join(self.cfg.data, 'input0', split)}.bin/.idx not found")
        second = self.indexed("input1", split, self.source_dictionary, combine)
        name = os.path.join(self.cfg.data, "input0", split)
        examples = BertExampleDataset(
            first,
            second,
            cls=self.source_dictionary.bos(),
            sep=self.source_dictionary.eos(),
            max_tokens=self.cfg.tokens_per_sample,
            name=name,
        )
        dataset = {
            "id": IdDataset(),
            "net_input": {
                "src_tokens": RightPadDataset(examples, pad_idx=self.source_dictionary.pad()),
                "segment_labels": RightPadDataset(SegmentLabelsDataset(examples), pad_idx=0),
                "src_lengths": NumelDataset(examples, reduce=False),
            },
            "nsentences": NumSamplesDataset(),
            "ntokens": NumelDataset(examples, reduce=True),
        }
        target = self.targets(split, combine, len(examples))
        if target is not None:
            dataset["target"] = target
        nested = NestedDictionaryDataset(dataset, sizes=[examples.sizes])
        if not self.cfg.no_shuffle:
            with data_utils.numpy_seed(self.cfg.seed):
                shuffle = np.random.permutation(len(examples))
            nested = SortDataset(nested, sort_order=[shuffle])
        logger.info("loaded %s: %d examples (%s)", split, len(nested), "pairs" if second else "sentences")
        self.datasets[split] = nested
        return nested

    def indexed(self, key: str, split: str, dictionary: Dictionary, combine: bool) -> FairseqDataset | None:
        return data_utils.load_indexed_dataset(
            os.path.join(self.cfg.data, key, split), dictionary, combine=combine
        )

    def targets(self, split: str, combine: bool, expected: int) -> FairseqDataset | None:
        """The labels as fairseq's ``sentence_prediction`` reads them (class index = label symbol's
        position after the special symbols; regression: ``label/{split}.label`` floats); None when the
        split has none (a test split)."""
        if not self.cfg.regression_target:
            labels = self.indexed("label", split, self.label_dictionary, combine)
            if labels is None:
                return None
            target = OffsetTokensDataset(
                StripTokenDataset(labels, id_to_strip=self.label_dictionary.eos()),
                offset=-self.label_dictionary.nspecial,
            )
        else:
            path = os.path.join(self.cfg.data, "label", f"{split}.label")
            if not os.path.exists(path):
                return None
            with open(path, encoding="utf-8") as f:
                rows = [line.split() for line in f]
            for i, values in enumerate(rows):
                if len(values) != self.cfg.num_classes:
                    raise BertInputError(
                        f"{path}:{i + 1}: {len(values)} values, expected --num-classes {self.cfg.num_classes}"
                    )
            target = RawLabelDataset([[float(x) for x in values] for values in rows])
        if len(target) != expected:
            raise BertInputError(f"{split}: {len(target)} labels for {expected} examples in {self.cfg.data}")
        return target

    def build_model(self, cfg, from_checkpoint: bool = False):  # cfg: fairseq's model config
        """The BERT model without its MLM/NSP heads, with the classification head
        ``--classification-head-name`` (``--num-classes`` outputs). Unlike fairseq's task this does not set
        the model's ``max_positions`` (its learned positions, which must match the checkpoint)."""
        from fairseq import models

        pretrained = getattr(cfg, "pretrained_encoder", None)
        if pretrained and os.path.exists(pretrained):
            check_vocabulary(
                checkpoint_vocabulary(pretrained),
                len(self.source_dictionary),
                f"--pretrained-encoder {pretrained}",
                self.dictionary_file,
            )
        with open_dict(cfg) if OmegaConf.is_config(cfg) else contextlib.nullcontext():
            cfg.pretraining_heads = False
        model = models.build_model(cfg, self, from_checkpoint)
        if not isinstance(model, BertPretrainingBase):
            raise BertInputError(
                "--task macaron_sentence_prediction feeds BERT's inputs: use a vanilla_bert_* or "
                f"macaron_bert_* architecture (got {type(model).__name__})"
            )
        positions = model.max_positions()
        if self.cfg.tokens_per_sample > positions:
            raise BertInputError(
                f"--tokens-per-sample {self.cfg.tokens_per_sample} is longer than the model's {positions} "
                "positions: lower --tokens-per-sample"
            )
        model.register_classification_head(
            self.cfg.classification_head_name, num_classes=self.cfg.num_classes
        )
        return model

    def max_positions(self) -> int:
        return self.cfg.tokens_per_sample


def refuse_roberta_options(cfg: BertSentencePredictionConfig) -> None:
    """fairseq's options that would change BERT's layout or drop tokens another way."""
    given = {
        "--init-token": cfg.init_token is not None,
        "--separator-token": cfg.separator_token is not None,
        "--shorten-method": str(cfg.shorten_method) != "none",
        "--add-prev-output-tokens": cfg.add_prev_output_tokens,
        "--d2v2-multi": cfg.d2v2_multi,
    }
    refused = [flag for flag, on in given.items() if on]
    if refused:
        raise BertInputError(
            f"--task macaron_sentence_prediction builds BERT's <s> A </s> B </s> itself and truncates by "
            f"--tokens-per-sample: remove {', '.join(refused)}"
        )
    if cfg.tokens_per_sample < PAIR_SPECIALS:
        raise BertInputError(f"--tokens-per-sample {cfg.tokens_per_sample}: needs room for <s> </s> </s>")


def check_label_count(labels: Dictionary, num_classes: int, where: str) -> None:
    """``--num-classes`` must cover every label of ``label/dict.txt`` (fairseq-preprocess pads the
    dictionary with ``madeupword`` symbols, and the task appends ``<mask>``: those are not labels)."""
    names = [s for s in labels.symbols[labels.nspecial :] if not s.startswith("madeupword") and s != "<mask>"]
    if num_classes < len(names):
        raise BertInputError(
            f"--num-classes {num_classes}, but {where}/dict.txt holds {len(names)} labels: {names[:10]}"
        )


def checkpoint_vocabulary(path: str) -> int | None:
    """Rows of a fairseq checkpoint's token embedding (the plugin's checkpoint reader: allow-listed,
    memory-mapped, so the weights are not read; a refused or unreadable file is a one-line error)."""
    return describe(path, "--pretrained-encoder").embedding_rows
