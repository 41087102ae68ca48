"""Registered models and architectures (imported by ``macaron_fairseq`` and by fairseq's --user-dir), and
the ``adam_lr_groups`` optimizer the pre-trained-encoder setup uses."""

from macaron_fairseq.init import lr_groups  # noqa: F401  (registers --optimizer adam_lr_groups)
from macaron_fairseq.models import fixup_transformer, macaron_architectures, macaron_transformer  # noqa: F401
