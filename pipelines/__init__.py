"""The end-to-end pipelines, each a Python entry point behind a thin shell wrapper:

* :mod:`pipelines.quickstart` (``bash pipelines/quickstart.sh``): a small Macaron model on a synthetic
  corpus, on CPU, in minutes;
* :mod:`pipelines.translation` (``bash pipelines/iwslt14.sh`` / ``wmt14.sh``): the paper's recipes.

Both are sequences of resumable stages (:class:`macaron_workflow.stages.StageRunner`, markers in
``WORKDIR/.stages/``); the fairseq stages they share are in :mod:`pipelines.fairseq_steps`, the running of
external commands in :mod:`pipelines.commands`.
"""
