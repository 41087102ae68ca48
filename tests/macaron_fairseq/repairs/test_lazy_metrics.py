"""``import macaron_fairseq`` imports fairseq without scikit-learn and SciPy's statistics
(``macaron_fairseq.repairs.lazy_metrics``), and fairseq's metric functions still compute what the real ones
compute; a later ``import sklearn`` is the real module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from macaron_fairseq.repairs import lazy_metrics

ROOT = Path(__file__).resolve().parents[3]

_AFTER_THE_PLUGIN = """
import sys
import macaron_fairseq
print(sorted(m for m in ("sklearn", "sklearn.metrics", "scipy", "scipy.stats") if m in sys.modules))
from fairseq.criterions import sentence_prediction as criterion
from fairseq.tasks import audio_classification as task
y, p, x = [0, 1, 1, 0, 1], [0, 1, 0, 0, 1], [1.0, 2.0, 3.0, 5.0, 4.0]
deferred = (criterion.f1_score(y, p), criterion._matthews_corrcoef(y, p), criterion.pearsonr(x, y)[0],
            criterion.spearmanr(x, y)[0], list(task.sklearn_metrics.roc_curve(y, x)[1]))
import scipy.stats, sklearn.metrics
print(type(sys.modules["sklearn.metrics"]).__name__, type(sys.modules["scipy.stats"]).__name__)
metrics, stats = sklearn.metrics, scipy.stats
real = (metrics.f1_score(y, p), metrics.matthews_corrcoef(y, p), stats.pearsonr(x, y)[0],
        stats.spearmanr(x, y)[0], list(metrics.roc_curve(y, x)[1]))
print(deferred == real)
"""


@pytest.mark.slow  # runs the real command in a fresh interpreter: 4-10 s (out of --quick)
def test_the_plugin_imports_no_metric_library_and_the_deferred_functions_are_the_real_ones() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _AFTER_THE_PLUGIN], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = [line for line in proc.stdout.splitlines() if not line.startswith("[20")]  # DeepSpeed's warning
    assert printed == ["[]", "module module", "True"], proc.stdout


def test_nothing_is_stood_in_once_fairseq_is_imported() -> None:
    """``fairseq-train`` imports fairseq before the plugin: the repair leaves ``sys.modules`` alone."""
    import fairseq  # noqa: F401

    before = {name: sys.modules.get(name) for name in lazy_metrics.DEFERRED}
    with lazy_metrics.deferred_metrics():
        assert {name: sys.modules.get(name) for name in lazy_metrics.DEFERRED} == before
