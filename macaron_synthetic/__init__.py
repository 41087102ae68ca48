"""Generators of synthetic data, apart from the readers of real corpora (:mod:`preprocess`): offline inputs
for the demos, the tests and the benchmarks, each a pure function of its seed — :mod:`.en_de` (the
quickstart's English→German corpus), :mod:`.wiki` (Wikipedia-style dumps and books), :mod:`.toy_bitext`
(toy parallel corpora), :mod:`.glue` (a small GLUE in the real layout), over one :mod:`.lexicon`.

Layer (docs/architecture.md): it imports only :mod:`macaron_workflow` and :mod:`preprocess` (the GLUE
layout); nothing imports it but the pipelines' offline demo inputs, the benchmarks and the tests.
"""
