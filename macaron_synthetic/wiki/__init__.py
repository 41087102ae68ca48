"""The Wikipedia generator: English-Wikipedia-style MediaWiki XML dumps (:mod:`.dump`) and BookCorpus-style
books (:mod:`.books`) for the tests and benchmarks of the pre-training corpus (``python -m
macaron_synthetic.wiki``)."""
