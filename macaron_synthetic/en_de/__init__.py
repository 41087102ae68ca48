"""A deterministic, offline English→German-like parallel corpus with real grammatical structure
(the corpus of the quickstart; command line: ``python -m macaron_synthetic.en_de``).

Both sides are rendered from one sampled abstract clause, so the German is a deterministic function of
the English (never a copy or a reversal). The German side follows the real grammar of German for the
constructions it uses:

* nouns carry grammatical gender and irregular plurals; German nouns are capitalised; weak masculine
  nouns take ``-(e)n`` outside the nominative; dative plurals add ``-n``;
* determiners (``der``/``ein``/``kein``/``dieser``/possessives) inflect for gender, number and case
  (nominative subjects, accusative/dative objects, case-governing prepositions with contractions
  ``im``/``ins``/``zum``/``zur``/``vom``/``am``/``beim``); adjectives take strong/weak/mixed endings;
* verbs conjugate for person and number in present, Präteritum (English simple past), Perfekt with
  ``haben``/``sein`` (English present perfect), future with ``werden`` and modals; the English
  progressive maps onto the German present; ``must not`` becomes ``darf nicht``;
* word order: V2 in main clauses (a fronted time adverb or subordinate clause inverts subject and
  verb), V1 in yes/no questions, verb-final in subordinate clauses (``weil``, ``dass``, ``obwohl``,
  ``während``, ``wenn``/``als``) and relative clauses; separable prefixes go to the end of main
  clauses; participles and infinitives close the clause;
* negation with ``kein`` for indefinite objects and ``nicht`` otherwise; German commas before
  subordinate and relative clauses.

All vocabulary and rules are written in this package and the lexicon (license-clean). The sampler is seeded by
``random.Random``: the same seed and sizes always give byte-identical files, and the test split does not
depend on the requested training-set size. Sentences are unique across all splits.

Modules, from the words up:

* :mod:`macaron_synthetic.lexicon`: the words (nouns, adjectives, verbs, adverbs, function words, names);
* :mod:`.german_inflection`: German article, ending and auxiliary tables;
* :mod:`.syntax`: the abstract clause both sides are rendered from;
* :mod:`.english`, :mod:`.german`: the two realisations;
* :mod:`.sampler`: random clauses and sentences;
* :mod:`.surface`: token lists to sentence text;
* :mod:`.corpus`: unique pairs per split, and the corpus files.
"""
