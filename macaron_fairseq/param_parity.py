"""Parameter counts of the Macaron architectures and their Transformer counterparts.

    python -m macaron_fairseq.param_parity [--vocab 32768] [--arch ARCH]...
    python -m macaron_fairseq.param_parity --bert [--vocab 30522]

It prints Markdown tables (the ones docs/reports/param_parity.md and docs/pretraining.md show).

Models are built exactly as ``fairseq-train`` builds them (fairseq's parser, translation task, a
joined dictionary of ``--vocab`` entries), on torch's meta device (shapes only: counted, never computed).
A Macaron layer has two FFNs of half the width, so per layer it differs from its counterpart only by one
extra FFN output bias and one extra LayerNorm (3·d).

``--bert``: the BERT pre-training models (``macaron_bert_pretraining`` task, a vocabulary of exactly
``--vocab`` symbols, BERT's 30,522 by default), next to BERT's published parameter count computed from
its architecture (:func:`published_bert_parameters`), then the Macaron authors' BERT
(``transformer_bert_base_macaron``, :mod:`macaron_fairseq.models.authors_bert`) next to ``macaron_bert_base``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from macaron_fairseq.build_without_data import build_translation_model, joined_dictionary_dir
from macaron_fairseq.models.architectures import BERT_COUNTERPARTS, COUNTERPARTS
from macaron_workflow.cli import ArgumentParser, quiet_loggers

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
    """The parameters of ``--arch arch`` + ``extra``, built on torch's meta device (the same modules and
    shapes, without storage or initialisation: a big model in a fraction of a second)."""
    with torch.device("meta"):
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


BERT_VOCAB = 30522  # BERT's WordPiece vocabulary (uncased and cased English models)

#: BERT arch -> (layers, hidden size, FFN inner size) of the published model it is
BERT_PUBLISHED = {"vanilla_bert_base": (12, 768, 3072), "vanilla_bert_large": (24, 1024, 4096)}


def published_bert_parameters(
    vocab: int, layers: int, dim: int, ffn: int, max_positions: int = 512, segments: int = 2
) -> int:
    """BERT's parameter count with its pre-training heads (Devlin et al.; Google's ``BertModel`` +
    ``cls/predictions`` + ``cls/seq_relationship``), the MLM output matrix tied to the embeddings."""
    embeddings = (vocab + max_positions + segments) * dim + 2 * dim  # + LayerNorm
    layer = 4 * (dim * dim + dim) + 2 * dim + (dim * ffn + ffn) + (ffn * dim + dim) + 2 * dim
    pooler = dim * dim + dim
    mlm_head = (dim * dim + dim) + 2 * dim + vocab  # transform, LayerNorm, output bias
    nsp_head = 2 * dim + 2
    return embeddings + layers * layer + pooler + mlm_head + nsp_head


@dataclass(frozen=True)
class BertParityRow:
    arch: str
    counterpart: str
    macaron_params: int
    bert_params: int
    published_params: int | None  # the published BERT model's count, where the counterpart is one

    @property
    def relative_difference(self) -> float:
        return (self.macaron_params - self.bert_params) / self.bert_params


def count_bert_parameters(data_dir: Path, arch: str) -> int:
    from macaron_fairseq.models.bert_build import build_bert_model

    with torch.device("meta"):  # as count_parameters
        model, _ = build_bert_model(data_dir, arch)
    return sum(p.numel() for p in model.parameters())  # the tied MLM output matrix counted once


def bert_parity_rows(vocab: int = BERT_VOCAB, archs: list[str] | None = None) -> list[BertParityRow]:
    from macaron_fairseq.models.bert_build import bert_dictionary_dir

    rows = []
    with bert_dictionary_dir(vocab) as data_dir:
        for arch in archs or [a for a in BERT_COUNTERPARTS if a.endswith(("_base", "_large"))]:
            counterpart = BERT_COUNTERPARTS[arch]
            published = BERT_PUBLISHED.get(counterpart)
            rows.append(
                BertParityRow(
                    arch=arch,
                    counterpart=counterpart,
                    macaron_params=count_bert_parameters(data_dir, arch),
                    bert_params=count_bert_parameters(data_dir, counterpart),
                    published_params=published_bert_parameters(vocab, *published) if published else None,
                )
            )
    return rows


def bert_markdown_table(rows: list[BertParityRow], vocab: int) -> str:
    lines = [
        f"| arch | counterpart | Macaron params | BERT params (vocab {vocab}) | BERT as published "
        "| difference |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        published = f"{r.published_params:,}" if r.published_params is not None else "—"
        lines.append(
            f"| `{r.arch}` | `{r.counterpart}` | {r.macaron_params:,} | {r.bert_params:,} | {published} | "
            f"{100 * r.relative_difference:+.3f}% |"
        )
    return "\n".join(lines)


#: the Macaron authors' BERT arch (model ``authors_bert``) -> the plugin's Macaron BERT of the same sizes
AUTHORS_BERT = {"transformer_bert_base_macaron": "macaron_bert_base"}


def authors_bert_markdown_table(vocab: int = BERT_VOCAB) -> str:
    """The authors' Macaron BERT next to the plugin's, both counted as ``fairseq-train`` builds them over a
    vocabulary of ``vocab`` symbols (the difference: :func:`macaron_fairseq.models.authors_bert
    .parameter_difference`)."""
    from macaron_fairseq.models.bert_build import bert_dictionary_dir

    lines = [
        f"| authors' arch | params (vocab {vocab}) | the plugin's arch | params | difference |",
        "|---|---:|---|---:|---:|",
    ]
    with bert_dictionary_dir(vocab) as data_dir:
        for arch, plugin in AUTHORS_BERT.items():
            theirs, ours = count_bert_parameters(data_dir, arch), count_bert_parameters(data_dir, plugin)
            lines.append(f"| `{arch}` | {theirs:,} | `{plugin}` | {ours:,} | {theirs - ours:+,} |")
    return "\n".join(lines)


def main() -> None:
    parser = ArgumentParser(prog="python -m macaron_fairseq.param_parity", description=__doc__)
    parser.add_argument(
        "--vocab", type=int, help="dictionary size (default 32768; with --bert BERT's 30522, exactly)"
    )
    parser.add_argument(
        "--arch",
        action="append",
        choices=list(COUNTERPARTS) + list(BERT_COUNTERPARTS),
        metavar="ARCH",
        help="one row (repeat for several): %(choices)s (default: all)",
    )
    parser.add_argument("--bert", action="store_true", help="the BERT pre-training models instead")
    args = parser.parse_args()
    quiet_loggers("fairseq", "macaron_fairseq")
    family = BERT_COUNTERPARTS if args.bert else COUNTERPARTS
    wrong = [a for a in args.arch or [] if a not in family]
    if wrong:
        parser.error(f"--arch {wrong[0]}: {'not a BERT arch' if args.bert else 'a BERT arch needs --bert'}")
    if args.bert:
        vocab = args.vocab or BERT_VOCAB
        print(bert_markdown_table(bert_parity_rows(vocab, args.arch), vocab))
        if not args.arch:
            print()
            print(authors_bert_markdown_table(vocab))
    else:
        vocab = args.vocab or 32768
        print(markdown_table(parity_rows(vocab, args.arch), vocab))


if __name__ == "__main__":
    main()
