"""Measurements of macaron-fairseq: each module is a command run from the checkout root,
``python -m benchmarks.NAME``, that measures and writes its results file, ``docs/results/NAME.json``
(:mod:`benchmarks.results_file`); :mod:`benchmarks.doc_tables`, the one renderer, puts the docs' tables
made from those files (:mod:`benchmarks.reports`) into the README and docs."""
