"""Every architecture the plugin registers, derived from the one table
(:mod:`macaron_fairseq.models.arch_table`).

Macaron architectures match a fairseq Transformer architecture in width, heads and depth, with each of
their two FFNs half as wide, so that the parameter counts match (paper §4); the ``fixup_transformer_*``
architectures are fairseq's Transformer dimensions on the plugin's vanilla model; the Macaron authors'
architectures (:mod:`macaron_fairseq.models.authors`, :mod:`macaron_fairseq.models.authors_bert`) are
registered under their names. The table of their dimensions is rendered from the arch settings into
docs/translation.md ("Architectures"), their parameter counts by ``python -m macaron_fairseq.param_parity``.
"""

from __future__ import annotations

from fairseq.models import register_model_architecture

from macaron_fairseq.models import (  # noqa: F401  (registers the models first)
    arch_table,
    authors_init,
    plugin_model,
)
from macaron_fairseq.models.macaron_version import ArchFn

#: model name -> {arch name: arch function}
ARCHITECTURES: dict[str, dict[str, ArchFn]] = {}
for _row in arch_table.registered():
    ARCHITECTURES.setdefault(_row.model, {})[_row.name] = arch_table.arch_function(_row)  # type: ignore[index]

#: alias -> the arch it names
ALIASES: dict[str, str] = {alias: row.name for row in arch_table.ROWS for alias in row.aliases}

#: arch name -> the fairseq Transformer arch it is parameter-matched with
COUNTERPARTS: dict[str, str] = arch_table.counterparts(bert_family=False)

#: BERT arch name -> the vanilla BERT arch it is parameter-matched with
BERT_COUNTERPARTS: dict[str, str] = arch_table.counterparts(bert_family=True)


def register_all() -> None:
    authors_init.install()  # the authors' archs build with their initialisation
    for model_name, archs in ARCHITECTURES.items():
        for arch_name, fn in archs.items():
            register_model_architecture(model_name, arch_name)(fn)
        for alias, target in ALIASES.items():
            if target in archs:
                register_model_architecture(model_name, alias)(archs[target])


register_all()
