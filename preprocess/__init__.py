"""Raw parallel corpora -> tokenized, BPE'd text -> fairseq data-bin.

Entry points (each has ``--help``):

* ``python -m preprocess.custom``      a user's own parallel corpus
* ``python -m preprocess.iwslt14``     IWSLT14 De-En as in fairseq's ``prepare-iwslt14.sh``
* ``python -m preprocess.wmt14_en_de`` WMT14 En-De as in fairseq's ``prepare-wmt14en2de.sh``

The reusable stages live in small modules of this package (tokenization, cleaning, BPE, binarization,
stage bookkeeping); the corpus-specific modules only extract the raw text and chain those stages.
"""
