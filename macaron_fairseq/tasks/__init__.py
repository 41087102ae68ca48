"""Registered tasks: ``macaron_bert_pretraining`` (BERT's MLM + NSP examples; :mod:`.bert_pretraining`).
fairseq's ``--user-dir`` loader also imports every module of this folder."""

import macaron_fairseq.tasks.bert_sentence_prediction  # noqa: F401  (registers the task)
from macaron_fairseq.tasks import bert_pretraining  # noqa: F401  (registers the task)
