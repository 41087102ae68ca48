"""Parameter counts of the Macaron architectures and their Transformer counterparts.

    python -m macaron_fairseq.param_parity [--vocab 32768] [--markdown]

Models are built exactly as ``fairseq-train`` builds them (fairseq's parser, translation task, a
joined dictionary of ``--vocab`` entries). A Macaron layer has two FFNs of half the width, so per layer
it differs from its counterpart only by one extra FFN output bias and one extra LayerNorm (3·d).
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

from fairseq import options, tasks

import macaron_fairseq  # noqa: F401  (registers the macaron archs)
from macaron_fairseq.models.macaron_architectures import COUNTERPARTS

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
    parser = options.get_training_parser()
    argv = [str(data_dir), "--task", "translation", "-s", "src", "-t", "tgt", "--arch", arch, *extra]
    args = options.parse_args_and_arch(parser, input_args=argv)
    model = tasks.setup_task(args).build_model(args)
    return sum(p.numel() for p in model.parameters())


def parity_rows(vocab: int, archs: list[str] | None = None) -> list[ParityRow]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        # fairseq adds 4 special symbols to the dictionary file's entries
        entries = "".join(f"tok{i} 1\n" for i in range(vocab - 4))
        for lang in ("src", "tgt"):
            (data_dir / f"dict.{lang}.txt").write_text(entries)
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
