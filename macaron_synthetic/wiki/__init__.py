"""The Wikipedia generator: English-Wikipedia-style MediaWiki XML export dumps (:mod:`.dump`) and
BookCorpus-style books (:mod:`.books`), for the tests of the pre-training corpus and its benchmarks; command
line ``python -m macaron_synthetic.wiki``. By job: :mod:`.markers` (the test oracles), :mod:`.export_format`
(the XML around pages), :mod:`.vocabulary` (slot draws over :mod:`macaron_synthetic.lexicon`),
:mod:`.templates` and :mod:`.pools` (sentences and markup blocks of a seed), :mod:`.pages` (each kind of
page), :mod:`.multistream` (plain, bz2 and multistream files and the index).
"""
