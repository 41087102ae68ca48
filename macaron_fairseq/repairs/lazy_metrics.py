"""``import fairseq`` without importing scikit-learn and SciPy's statistics.

``import fairseq`` imports every task and criterion module; two of them import metric libraries at module
level for functions they call only when they compute metrics: ``fairseq/tasks/audio_classification.py``
(``from sklearn import metrics as sklearn_metrics``) and ``fairseq/criterions/sentence_prediction.py``
(``from sklearn.metrics import f1_score, matthews_corrcoef`` and ``from scipy.stats import pearsonr,
spearmanr``). Those imports are about 2 s of the ~6.5 s ``import fairseq`` takes on a 2-core CPU, paid by
every command that imports the plugin.

:func:`deferred_metrics` imports fairseq with ``sklearn``, ``sklearn.metrics`` and ``scipy.stats`` stood
in by :class:`DeferredModule`: a name imported from one (``f1_score``) is a function that imports the real
module and calls its namesake on the first call; a module imported from one (``sklearn_metrics``) defers
the same way per attribute. The stand-ins leave ``sys.modules`` when fairseq is imported, so every later
``import sklearn`` is the real one. When fairseq or the metric modules are already imported there is
nothing to do: ``fairseq-train`` and ``fairseq-generate`` import fairseq before they load the plugin.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

#: the metric modules fairseq imports at module level -> the submodules a ``from PARENT import NAME``
#: of fairseq's names (``from sklearn import metrics``)
DEFERRED = {"sklearn": ("metrics",), "sklearn.metrics": (), "scipy.stats": ()}


class DeferredModule(types.ModuleType):
    """Stands in for the module ``name`` while fairseq is imported: an attribute is a submodule stand-in
    (for the names in :data:`DEFERRED`) or a function that imports ``name`` and calls its namesake."""

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        if attr in DEFERRED.get(self.__name__, ()):
            return DeferredModule(f"{self.__name__}.{attr}")
        return deferred_function(self.__name__, attr)


def deferred_function(module: str, name: str) -> Callable[..., Any]:
    """``module.name``, imported when first called."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"{module}.{name}, imported on the first call (macaron_fairseq.repairs.lazy_metrics)."
    return call


@contextmanager
def deferred_metrics() -> Iterator[None]:
    """Within: the metric modules of :data:`DEFERRED` not yet imported are stand-ins (removed on exit)."""
    if "fairseq" in sys.modules:
        yield
        return
    placed = [name for name in DEFERRED if name not in sys.modules]
    for name in placed:
        sys.modules[name] = DeferredModule(name)
    try:
        yield
    finally:
        for name in placed:
            if isinstance(sys.modules.get(name), DeferredModule):
                del sys.modules[name]


__all__ = ["DEFERRED", "DeferredModule", "deferred_function", "deferred_metrics"]
