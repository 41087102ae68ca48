"""Registered tasks: ``macaron_bert_pretraining`` (BERT's MLM + NSP examples; :mod:`.bert_pretraining`).
fairseq's ``--user-dir`` loader also imports every module of this folder."""

from macaron_fairseq.tasks import bert_pretraining  # noqa: F401  (registers the task)
