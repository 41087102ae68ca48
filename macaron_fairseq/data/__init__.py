"""Datasets of the plugin: BERT pre-training examples (next-sentence pairs + masking,
:mod:`.bert_pairs`)."""

from macaron_fairseq.data.bert_pairs import (
    BertDataError,
    BertPretrainingDataset,
    PairSymbols,
    SentencesWithoutEos,
    check_sentence_data,
    check_token_ids,
)

__all__ = [
    "BertDataError",
    "BertPretrainingDataset",
    "PairSymbols",
    "SentencesWithoutEos",
    "check_sentence_data",
    "check_token_ids",
]
