"""Parameter counts of the Macaron architectures and their Transformer counterparts.

    python -m macaron_fairseq.param_parity [--vocab 32768] [--markdown]

Models are built exactly as ``fairseq-train`` builds them (fairseq's parser, translation task, a
joined dictionary of ``--vocab`` entries). A Macaron layer has two FFNs of half the width, so per layer
it differs from its counterpart only by one extra FFN output bias and one extra LayerNorm (3·d).
"""

from __future__ import annotations

import argparse
import logging
import warnings
from dataclasses import dataclass
from pathlib import Path

from macaron_fairseq.build_without_data import build_translation_model, joined_dictionary_dir
from macaron_fairseq.models.architectures import COUNTERPARTS

EMBEDDINGS = {"shared": ["--share-all-embeddings"], "unshared": []}


@dataclass(frozen=True)
class ParityRow:
    arch: str
    counterpart: str
    embeddings: str
    macaron_params: int
    transformer_params: int

    @property
    def relative_difference(self) -> float:
        return (self.macaron_params - self.transformer_params) / self.transformer_params


def count_parameters(data_dir: Path, arch: str, extra: list[str]) -> int:
    model, _ = build_translation_model(data_dir, arch, extra)
    return sum(p.numel() for p in model.parameters())


def parity_rows(vocab: int, archs: list[str] | None = None) -> list[ParityRow]:
    rows = []
    with joined_dictionary_dir(vocab) as data_dir:
        for arch in archs or list(COUNTERPARTS):
            for emb, flags in EMBEDDINGS.items():
                rows.append(
                    ParityRow(
                        arch=arch,
                        counterpart=COUNTERPARTS[arch],
                        embeddings=emb,
                        macaron_params=count_parameters(data_dir, arch, flags),
                        transformer_params=count_parameters(data_dir, COUNTERPARTS[arch], flags),
                    )
                )
    return rows


def markdown_table(rows: list[ParityRow], vocab: int) -> str:
    lines = [
        f"| arch | counterpart | embeddings (vocab {vocab}) | Macaron params | Transformer params "
        "| difference |",
        "|---|---|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| `{r.arch}` | `{r.counterpart}` | {r.embeddings} | {r.macaron_params:,} | "
            f"{r.transformer_params:,} | {100 * r.relative_difference:+.3f}% |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--vocab", type=int, default=32768, help="joined dictionary size (default 32768)")
    parser.add_argument("--arch", action="append", choices=list(COUNTERPARTS), help="default: all")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    logging.getLogger("fairseq").setLevel(logging.WARNING)
    print(markdown_table(parity_rows(args.vocab, args.arch), args.vocab))


if __name__ == "__main__":
    main()
