"""Registered criterions: ``macaron_bert_loss`` (BERT pre-training, MLM + NSP; :mod:`.bert_pretraining`)."""

from macaron_fairseq.criterions import bert_pretraining  # noqa: F401  (registers the criterion)
