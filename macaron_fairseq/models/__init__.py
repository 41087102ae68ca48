"""The registered models (:mod:`.plugin_model`) and architectures (:mod:`.architectures`), imported by
``macaron_fairseq`` and by fairseq's ``--user-dir`` loader; their encoder/decoder, layer plan, DT-Fixup
support and pre-trained-encoder setup."""

from macaron_fairseq.models import architectures  # noqa: F401  (registers the models and archs)
from macaron_fairseq.models.plugin_model import FixupTransformerModel, MacaronModel, PluginTransformerModel

__all__ = ["FixupTransformerModel", "MacaronModel", "PluginTransformerModel"]
