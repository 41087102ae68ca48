"""macaron-fairseq: a fairseq ``--user-dir`` plugin.

Importing this package registers everything — the models and architectures (:mod:`.models`), the
``macaron_bert_pretraining`` task (:mod:`.tasks`), the ``macaron_bert_loss`` criterion (:mod:`.criterions`),
the ``adam_lr_groups`` optimizer (:mod:`.optim`) — and applies nine repairs to the installed fairseq
(:mod:`.repairs`, each idempotent, each tested):

* :mod:`macaron_fairseq.repairs.lazy_deepspeed` — importing fairseq does not import DeepSpeed (fairseq's
  ``cpu_adam`` module imports it eagerly); nothing heavy (DeepSpeed, transformers, spaCy, matplotlib) is
  imported with the plugin (``tests/test_import_contract.py``);
* :mod:`macaron_fairseq.repairs.lazy_metrics` — nor scikit-learn and SciPy's statistics, which two of
  fairseq's modules import for metrics they compute only when used (imported then);

* :mod:`macaron_fairseq.repairs.checkpoint_safety` — fairseq checkpoints load under torch >= 2.6 through
  an allow-list, not ``weights_only=False``;
* :mod:`macaron_fairseq.repairs.batching` — batching keeps the last batch (fairseq #5036), so
  ``fairseq-generate`` translates the whole test set.
* :mod:`macaron_fairseq.repairs.bf16_without_tpu` — ``--bf16`` without torch_xla trains in bfloat16 on the
  run's device (fairseq's ``--bf16`` implies ``--tpu`` and stops without one);
* :mod:`macaron_fairseq.repairs.nan_detector_hooks` — a run whose gradients turn NaN/Inf ends with fairseq's
  report of the first non-finite module, not with ``StopIteration`` from torch's legacy backward hooks;
* :mod:`macaron_fairseq.repairs.prefetch_thread_exit` — a run that stops mid-epoch exits with its own exit
  code, not with SIGABRT from fairseq's batch-prefetch thread dying inside torch at interpreter exit;
* :mod:`macaron_fairseq.repairs.cached_dataset_reads` — ``fairseq-train`` runs on data-bins in fairseq's
  original indexed format (the Macaron authors' released data), whose cached reader failed on the dummy batch;
* :mod:`macaron_fairseq.repairs.arch_help` — ``fairseq-train --arch ARCH --help`` lists the architecture's
  options with their defaults (fairseq adds them only after the parse in which ``--help`` acts).

Use::

    fairseq-train DATA --user-dir macaron_fairseq --arch macaron_base ...
"""

from macaron_workflow.torch_floor import check_torch

check_torch()  # first: a torch older than requirements.txt's floor is one line, not an AttributeError later

from macaron_fairseq.repairs import lazy_deepspeed, lazy_metrics  # noqa: E402

with lazy_metrics.deferred_metrics():
    lazy_deepspeed.import_fairseq()  # first: before any module below imports fairseq

from macaron_fairseq.repairs import (  # noqa: E402
    batching,
    bf16_without_tpu,
    cached_dataset_reads,
    checkpoint_safety,
    nan_detector_hooks,
    prefetch_thread_exit,
)

checkpoint_safety.install()
batching.install()
bf16_without_tpu.install()
nan_detector_hooks.install()
prefetch_thread_exit.install()
cached_dataset_reads.install()

from macaron_fairseq import criterions, models, optim, tasks  # noqa: E402,F401  (registers everything)


def _answer_to_fairseqs_user_dir_lookup() -> None:
    """``--user-dir macaron_fairseq`` after the package is already imported (``import macaron_fairseq`` then
    ``from_pretrained(..., user_dir="macaron_fairseq")``, or a launcher that imports it first): fairseq's
    ``import_user_module`` accepts an imported module only when the path it resolved, the unnormalised
    ``<fairseq package>/../macaron_fairseq``, is in the package's ``__path__``, and otherwise stops with
    "not globally unique". When that path is this very folder (a wheel, or the link of
    ``scripts/user_dir_link.py``) it is added as a second spelling of the same folder: submodules are still
    found in the first entry, under the one name ``macaron_fairseq``."""
    import os

    import fairseq

    alias = os.path.join(os.path.dirname(fairseq.__file__), "..", __name__)
    if alias not in __path__ and os.path.isdir(alias) and os.path.samefile(alias, __path__[0]):
        __path__.append(alias)
    # imported through that link, the checkout's own path (--user-dir /path/to/checkout/macaron_fairseq) is
    # the second spelling
    real = os.path.realpath(__path__[0])
    if real not in __path__:
        __path__.append(real)


_answer_to_fairseqs_user_dir_lookup()

from macaron_fairseq.repairs import arch_help  # noqa: E402  (after the models: it reads their options)

arch_help.install()

__version__ = "0.1.0"
