"""macaron-fairseq: a fairseq ``--user-dir`` plugin.

Importing this package registers everything (models, architectures) and makes fairseq checkpoints
loadable under torch >= 2.6 (see :mod:`macaron_fairseq.checkpoint_safety`)::

    fairseq-train DATA --user-dir macaron_fairseq --arch macaron_base ...
"""

from macaron_fairseq import checkpoint_safety

checkpoint_safety.install()

from macaron_fairseq import models  # noqa: E402,F401  (registers the models)

__version__ = "0.1.0"
