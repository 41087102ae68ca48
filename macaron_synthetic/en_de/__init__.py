"""A deterministic, offline English→German-like parallel corpus with real grammatical structure (the
quickstart's corpus; ``python -m macaron_synthetic.en_de``). Both sides are rendered from one sampled
abstract clause, so the German is a deterministic function of the English (never a copy or a reversal),
following the real grammar of German for the constructions it uses: gender, case and agreement, strong,
weak and mixed adjective endings, tenses with haben/sein/werden and modals, V2/V1/verb-final word order,
separable prefixes, kein/nicht (docs/quickstart.md, "The synthetic language pair", lists them). The same seed
and sizes give byte-identical files; the test split does not depend on the training-set size; sentences
are unique across all splits.

From the words up: :mod:`macaron_synthetic.lexicon` (the words), :mod:`.german_inflection` (German
article, ending and auxiliary tables), :mod:`.syntax` (the abstract clause), :mod:`.english` and
:mod:`.german` (the two realisations), :mod:`.sampler` (random clauses and sentences), :mod:`.surface`
(token lists to text), :mod:`.corpus` (unique pairs per split, the corpus files).
"""
