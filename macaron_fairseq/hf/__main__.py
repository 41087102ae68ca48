"""``python -m macaron_fairseq.hf import NAME_OR_DIR --out model.pt`` | ``export model.pt --dest HF_DIR``
(``--out``: a file the command writes; ``--dest``: a directory it fills — the project's one spelling)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from macaron_workflow.cli import ArgumentParser, add_deprecated_alias, run_cli

PROG = "python -m macaron_fairseq.hf"


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog=PROG, description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    imp = commands.add_parser(
        "import",
        help="a HuggingFace BERT directory → a vanilla_bert_* checkpoint; a "
        "translation model exported by this command → its fairseq checkpoint",
    )
    imp.add_argument(
        "hf_dir",
        metavar="NAME_OR_DIR",
        help="a Hugging Face Hub id (bert-base-uncased, ORG/NAME: downloaded into the huggingface_hub cache; "
        "HF_HUB_OFFLINE=1 uses the cache only) or a directory written by save_pretrained (config.json, "
        "weights, vocab.txt / tokenizer files)",
    )
    imp.add_argument(
        "--out",
        type=Path,
        required=True,
        help="the fairseq checkpoint to write (its dictionary and tokenizer go to OUT with the suffix .data)",
    )
    exp = commands.add_parser(
        "export", help="a plugin BERT or translation checkpoint → a HuggingFace directory"
    )
    exp.add_argument(
        "checkpoint",
        type=Path,
        help="vanilla_bert_* or macaron_bert_* fairseq checkpoint, or a "
        "translation checkpoint (macaron, fixup_transformer, transformer; upgraded authors' ones)",
    )
    exp.add_argument(
        "--dest", type=Path, required=True, help="the directory to write (must not exist or be empty)"
    )
    add_deprecated_alias(exp, "--out", "--dest")
    exp.add_argument("--data", type=Path, help="the data directory with dict.txt (default: the checkpoint's)")
    from macaron_fairseq.hf.translation_cli import add_translation_options

    add_translation_options(exp)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.command == "import":
        from macaron_fairseq.hf.hub import resolve
        from macaron_fairseq.hf.translation_cli import import_translation_if_one

        args.hf_dir = resolve(args.hf_dir)
        if (out := import_translation_if_one(args)) is not None:
            print(f"wrote {out} (dictionaries: {out.with_suffix('.data')})")
            return
        from macaron_fairseq.hf.importer import data_dir_for, import_hf

        out = import_hf(args.hf_dir, args.out)
        print(f"wrote {out} (dictionary and tokenizer: {data_dir_for(out)})")
    else:
        from macaron_fairseq.hf.translation_cli import export_translation_if_one

        out = export_translation_if_one(args)
        if out is None:
            from macaron_fairseq.hf.exporter import export_hf

            out = export_hf(args.checkpoint, args.dest, args.data)
        print(f"wrote {out}")


def cli() -> None:
    """The ``macaron-hf`` console script: what ``python -m macaron_fairseq.hf`` runs."""
    run_cli(main, PROG)


if __name__ == "__main__":
    cli()
