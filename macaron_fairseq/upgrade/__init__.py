"""``python -m macaron_fairseq.upgrade AUTHORS_CKPT --out model.pt`` (``macaron-upgrade``): a checkpoint of
the Macaron authors' fairseq 0.6 fork (their released IWSLT14 ``small``, WMT14 ``base``/``big`` models, or one
their scripts trained) → a checkpoint of this plugin that ``fairseq-generate``, ``fairseq-interactive``, the
hub interface and ``fairseq-train --finetune-from-model`` load with ``--user-dir macaron_fairseq``.

* :mod:`.reader` — the untrusted file, read through the checkpoint allow-list (their meters as inert data);
* :mod:`.layout` — what the checkpoint is (:class:`AuthorsModel`, from its ``args``), or why it is refused;
* :mod:`.weights` — their parameter names → the plugin's (q/k/v split, LayerNorm names, FFN₁, versions);
* :mod:`.convert` — the plugin model built from those settings, loaded, checked, written atomically;
* :mod:`.bert` — the same for their BERT fork's pre-training checkpoints (model ``authors_bert``).

The result is numerically the authors' model: ``tests/macaron_fairseq/upgrade`` compares its decoder logits
and beam outputs with an independent implementation of their forward pass.
"""

from __future__ import annotations

from pathlib import Path

from macaron_fairseq.upgrade.bert import AuthorsBert, is_authors_bert, upgrade_bert
from macaron_fairseq.upgrade.layout import AuthorsModel, NotAnAuthorsCheckpoint, read_model
from macaron_fairseq.upgrade.reader import read_authors_checkpoint


def upgrade_checkpoint(source: Path, out: Path, data: Path | None = None) -> AuthorsModel | AuthorsBert:
    """Upgrade ``source`` to ``out`` (``data``: the data-bin to check the dictionaries against and record);
    returns what the checkpoint was. Raises :class:`~macaron_workflow.errors.UserError` for a file that is
    not an authors' checkpoint, unsafe or inconsistent; nothing is written then. A checkpoint of their BERT
    fork goes to :mod:`.bert` (``out`` and the plugin's ``dict.txt`` beside it)."""
    from macaron_fairseq.upgrade.convert import build, check_data, save

    state = read_authors_checkpoint(source)
    if is_authors_bert(state):
        return upgrade_bert(state, source, out, data)
    model = read_model(state, source)
    if data is not None:
        check_data(model, data)
    upgraded = build(model, state["model"], source, data)
    save(upgraded, model, source, out)
    return model


__all__ = [
    "AuthorsBert",
    "AuthorsModel",
    "NotAnAuthorsCheckpoint",
    "read_authors_checkpoint",
    "read_model",
    "upgrade_checkpoint",
]
