"""Raw corpora -> tokenized, BPE'd text -> fairseq data-bin.

Entry points, one module per corpus at the top of this package (each has ``--help``):

* ``python -m macaron_preprocess.custom``          a user's own parallel corpus
* ``python -m macaron_preprocess.iwslt14``         IWSLT14 De-En as in fairseq's ``prepare-iwslt14.sh``
* ``python -m macaron_preprocess.wmt14_en_de``     WMT14 En-De as in fairseq's ``prepare-wmt14en2de.sh``

Below them: :mod:`macaron_preprocess.text` (the text steps: Moses tokenization, cleaning, holdout,
sentencepiece BPE, binarization, bitext checks) and :mod:`macaron_preprocess.sources` (where text comes from:
archives, upstream formats, real text on the machine). The stage/atomic-write/worker machinery is the shared
:mod:`macaron_workflow` package; generated corpora are :mod:`macaron_synthetic`'s.
"""
