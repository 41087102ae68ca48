"""Registered models and architectures (imported by ``macaron_fairseq`` and by fairseq's --user-dir)."""

from macaron_fairseq.models import macaron_architectures, macaron_transformer  # noqa: F401
