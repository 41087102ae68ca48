"""The end-to-end pipelines, each a Python entry point behind a thin shell wrapper:

* :mod:`macaron_pipelines.quickstart` (``bash pipelines/quickstart.sh``): a small Macaron model on a synthetic
  corpus, on CPU, in minutes;
* :mod:`macaron_pipelines.translation` (``bash pipelines/iwslt14.sh`` / ``wmt14.sh``): the paper's recipes.

Both are sequences of resumable stages (:class:`macaron_workflow.stages.StageRunner`, markers in
``WORKDIR/.stages/``); the fairseq stages they share are in :mod:`macaron_pipelines.fairseq_steps`, the
running of external commands in :mod:`macaron_pipelines.commands`.
"""
