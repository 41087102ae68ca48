"""Measurements of macaron-fairseq: each module is a command run from the checkout root,
``python -m benchmarks.NAME``, that prints its table and writes ``docs/results/NAME.json``
(:mod:`benchmarks.results_file`); :mod:`benchmarks.doc_tables` renders the docs' tables from those files."""
