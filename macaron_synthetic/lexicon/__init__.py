"""The one English lexicon of the generators, by word class (:mod:`.nouns`, :mod:`.adjectives`,
:mod:`.verbs`, :mod:`.adverbs`, :mod:`.function_words`, :mod:`.names`), and the one English inflection
(:mod:`.english`) that the quickstart's grammar (:mod:`macaron_synthetic.en_de`) and the Wikipedia generator
(:mod:`macaron_synthetic.wiki`) share. A class module holds the quickstart's bilingual entries (``NOUNS``,
``VERBS``, ...: German forms, semantic tags) beside the English lists the Wikipedia generator draws from
(``ENCYCLOPEDIC_NOUNS``, ``PARTICIPLES``, ...). The lists are not merged: each generator's draws depend on
the order of its lists (the Wikipedia one's also on their duplicates), and the draws fix recorded outputs
(the quickstart's corpus and BLEU, the dumps of the pre-training benchmarks). Lists are written as running
text and split by :mod:`.tables`.
"""
