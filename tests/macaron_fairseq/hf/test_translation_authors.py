"""The authors' models through ``macaron-upgrade`` then ``macaron-hf export`` (issue #45): checkpoints in the
exact layout of their fairseq 0.6 fork (tests/macaron_fairseq/upgrade/authors_layout.py: their args, their
parameter names, their meters, torch's legacy serialization), upgraded, exported; the exported model gives the
upgraded model's logits and fairseq's translations (greedy and beam 5), and its card names their arch."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import REPO
from mt_models import compare_with_fairseq

sys.path.insert(0, str(REPO / "tests" / "macaron_fairseq" / "upgrade"))
from authors_layout import authors_args, write_authors_checkpoint

from macaron_fairseq.hf.__main__ import main as hf_main
from macaron_fairseq.upgrade import upgrade_checkpoint

VOCAB = 40
MAX_LEN_B = 10
CASES = {
    "macaron-v2-pre-ln-shared": {"macaron": True, "pre_ln": True},
    "transformer-post-ln-separate-learned": {"macaron": False, "pre_ln": False, "shared": False,
                                             "learned_pos": True},
}  # fmt: skip


@pytest.fixture(scope="module")
def authors_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Their data-bin's dictionaries (40 rows with fairseq's 4 specials; joined, as their IWSLT14 data)."""
    data = tmp_path_factory.mktemp("authors_dicts")
    for lang in ("de", "en"):
        (data / f"dict.{lang}.txt").write_text("".join(f"w{i} {100 - i}\n" for i in range(VOCAB - 4)))
    return data


def upgraded_export(name: str, root: Path, data: Path) -> tuple[Path, Path]:
    args = authors_args(**CASES[name], dim=16, heads=2, ffn=8)
    source = root / f"{name}_checkpoint_pretrained.pt"
    write_authors_checkpoint(source, args, VOCAB, seed=3)
    upgraded = root / f"{name}_upgraded.pt"
    upgrade_checkpoint(source, upgraded, data)
    dest = root / f"{name}_hf"
    hf_main(
        ["export", str(upgraded), "--dest", str(dest), "--data", str(data), "--max-len-b", str(MAX_LEN_B)]
    )
    return upgraded, dest


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_upgraded_authors_checkpoint_exports_and_translates_as_fairseq(name: str, authors_data: Path,
                                                                      tmp_path: Path) -> None:  # fmt: skip
    upgraded, dest = upgraded_export(name, tmp_path, authors_data)
    record = json.loads((dest / "fairseq_export.json").read_text())
    assert record["max_abs_logit_difference"] <= 1e-5  # the export's own check, on a padded batch
    assert record["extra_state"]["macaron_upgrade"]["authors_arch"] == authors_args(**CASES[name]).arch
    assert "Upgraded by `macaron-upgrade`" in (dest / "README.md").read_text()
    for beam in (1, 5):
        same, _ = compare_with_fairseq(upgraded, dest, authors_data, beam, MAX_LEN_B)
        assert same == 16, f"beam {beam}: {16 - same} of 16 translations differ from fairseq's"
