"""GLUE fine-tuning (``bash pipelines/glue.sh``).

The pure-Python parts every stage shares:

* :mod:`macaron_pipelines.glue.metrics`: GLUE's metrics, task scores and GLUE score, as the leaderboard
  computes them;
* :mod:`macaron_pipelines.glue.selection`: choosing a configuration per task over seeds, the GLUE average on
  dev, the markdown table of results;
* :mod:`macaron_pipelines.glue.submission`: the files and zip the GLUE server takes.

The GLUE distribution itself (tasks, file formats, download) is :mod:`macaron_preprocess.sources.glue`.
"""
