"""Generators of synthetic data, apart from the readers of real corpora (:mod:`preprocess`): offline inputs
for the demos, the tests and the benchmarks. Everything is a pure function of its seed.

* :mod:`.en_de` — the quickstart's English→German-like corpus with real grammar
  (``python -m macaron_synthetic.en_de``);
* :mod:`.wiki` — English-Wikipedia-style XML dumps and BookCorpus-style books
  (``python -m macaron_synthetic.wiki``);
* :mod:`.toy_bitext` — small toy parallel corpora (tests, benchmarks);
* :mod:`.glue` — a small, learnable GLUE distribution in the real layout (``SMALL=1`` GLUE pipeline);
* :mod:`.lexicon` — the English words and inflection the generators share.

Layer (docs/architecture.md): it imports only :mod:`macaron_workflow` and :mod:`preprocess` (the GLUE
layout); nothing imports it but the pipelines' offline demo paths, the benchmarks and the tests.
"""
