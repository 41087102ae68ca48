"""HuggingFace interop for the plugin's BERT models (``python -m macaron_fairseq.hf``).

* ``import HF_DIR --out model.pt`` (:mod:`.importer`): a ``BertForPreTraining``/``BertModel`` directory as
  ``save_pretrained`` writes it → a ``vanilla_bert_*`` fairseq checkpoint (+ ``model.data/``: dictionary and
  the model's own WordPiece tokenizer);
* ``export model.pt --out HF_DIR`` (:mod:`.exporter`): a ``vanilla_bert_*`` checkpoint → a native
  ``BertForPreTraining`` directory; a ``macaron_bert_*`` one → a directory with its own config and modeling
  file registered through ``auto_map`` (``trust_remote_code=True``); the tokenizer travels with it.

transformers is imported only in this package (and only by the commands that need it): it is the ``hf``
extra (``pip install -e .[hf]``), not a requirement of the plugin. Importing this package imports nothing.
"""
