"""Machinery every command of the project shares (no ML here, and nothing heavy to import):

* :mod:`macaron_workflow.stages` — resumable stages with completion markers (the one resume mechanism of the
  preprocessors and the pipelines);
* :mod:`macaron_workflow.grid` — grids of runs: keys → run → row, the done-set, parallel slots, the retry
  rule (the GLUE pipeline, the benchmarks' grids);
* :mod:`macaron_workflow.atomic` — atomic outputs (temporary name, rename on success);
* :mod:`macaron_workflow.workers` — a Ctrl-C-safe process pool and an order-preserving, memory-bounded map;
* :mod:`macaron_workflow.files` — line-oriented file access; :mod:`macaron_workflow.cli` /
:mod:`macaron_workflow.errors` — the
  CLIs' shared options and their one user-facing error type.
"""
