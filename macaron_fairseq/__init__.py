"""macaron-fairseq: a fairseq ``--user-dir`` plugin.

Importing this package registers everything (models, architectures) and applies two fixes to the
installed fairseq (both idempotent, both tested):

* :mod:`macaron_fairseq.checkpoint_safety` — fairseq checkpoints load under torch >= 2.6 through an
  allow-list, not ``weights_only=False``;
* :mod:`macaron_fairseq.batching_fix` — batching keeps the last batch (fairseq #5036), so
  ``fairseq-generate`` translates the whole test set.

Use::

    fairseq-train DATA --user-dir macaron_fairseq --arch macaron_base ...
"""

from macaron_fairseq import batching_fix, checkpoint_safety

checkpoint_safety.install()
batching_fix.install()

from macaron_fairseq import models  # noqa: E402,F401  (registers the models)

__version__ = "0.1.0"
