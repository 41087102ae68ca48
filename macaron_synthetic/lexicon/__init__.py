"""The one English lexicon of the generators, by word class — :mod:`.nouns`, :mod:`.adjectives`,
:mod:`.verbs`, :mod:`.adverbs`, :mod:`.function_words`, :mod:`.names` — and the one English inflection
(:mod:`.english`: plurals, third person, gerund, regular past, "a"/"an") that both the quickstart's
English→German grammar (:mod:`macaron_synthetic.en_de`) and the Wikipedia generator
(:mod:`macaron_synthetic.wiki`) use.

Each class module holds the quickstart's bilingual entries (``NOUNS``, ``ADJECTIVES``, ``VERBS``, ...: the
German forms and the semantic tags its grammar needs) beside the English word lists the Wikipedia generator
draws from (``ENCYCLOPEDIC_NOUNS``, ``OCCUPATIONS``, ``PARTICIPLES``, ...). The lists are kept as they were,
not merged: each generator's draws depend on the order of its list (and the Wikipedia one on its
duplicates), and those draws fix the recorded outputs — the quickstart's corpus and BLEU, and the dumps of
the pre-training benchmarks.
"""
