"""Machinery every command of the project shares (no ML here, and nothing heavy to import):

* :mod:`workflow.stages` — resumable stages with completion markers (the one resume mechanism of the
  preprocessors and the pipelines);
* :mod:`workflow.atomic` — atomic outputs (temporary name, rename on success);
* :mod:`workflow.workers` — a Ctrl-C-safe process pool and an order-preserving, memory-bounded map;
* :mod:`workflow.files` — line-oriented file access; :mod:`workflow.cli` / :mod:`workflow.errors` — the
  CLIs' shared options and their one user-facing error type.
"""
