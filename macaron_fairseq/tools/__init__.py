"""Command-line helpers shared by the pipelines (nothing is imported here on purpose).

* :mod:`macaron_fairseq.tools.score_bleu` — score ``fairseq-generate`` output: detokenized sacreBLEU and
  tokenized BLEU, each labelled, plus a results JSON;
* :mod:`macaron_fairseq.tools.plot_curves` — PNG of training/validation loss from a fairseq training log;
* :mod:`macaron_fairseq.tools.train_progress` — runs ``fairseq-train`` with a compact progress display
  while keeping fairseq's JSON log for the plot.

Each is run as ``python -m macaron_fairseq.tools.<name> --help``.
"""
