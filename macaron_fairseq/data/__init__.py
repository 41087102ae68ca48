"""Datasets of the plugin: BERT pre-training examples (next-sentence pairs + masking,
:mod:`.bert_pairs`)."""
