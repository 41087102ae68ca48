"""Optimizers the plugin registers with fairseq (``--optimizer adam_lr_groups``)."""

from macaron_fairseq.optim import adam_lr_groups  # noqa: F401  (registers the optimizer)
