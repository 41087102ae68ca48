"""The translation side of ``macaron-hf export`` / ``import``: its options, and the dispatch (a translation
checkpoint, or a directory this command exported from one, goes here; everything else to the BERT code)."""

from __future__ import annotations

import argparse
from pathlib import Path

from macaron_workflow.errors import UserError

SEARCH_OPTIONS = (("--beam", int), ("--lenpen", float), ("--max-len-a", float), ("--max-len-b", int))


def add_translation_options(export: argparse.ArgumentParser) -> None:
    group = export.add_argument_group(
        "translation checkpoints",
        "generation_config.json is fairseq-generate's search: its defaults (beam 5, lenpen 1, max-len-b "
        "200), else a results file naming the checkpoint (the recipe's beam and lenpen), else these options",
    )
    for flag, kind in SEARCH_OPTIONS:
        group.add_argument(flag, type=kind, help=f"fairseq-generate's {flag}")
    group.add_argument(
        "--results",
        type=Path,
        action="append",
        help="a results file (results.<arch>.json) naming the checkpoint, for the model card's"
        " "
        "BLEU and the search settings (default: those beside the checkpoint)",
    )
    group.add_argument(
        "--bpe-codes",
        type=Path,
        help="subword-nmt BPE codes of the data (default: DATA/bpecodes or DATA/code if there)",
    )


def export_translation_if_one(args: argparse.Namespace) -> Path | None:
    """Export ``args.checkpoint`` if it is a translation checkpoint; None otherwise."""
    from macaron_fairseq.hf.translation_export import export_translation, is_translation_checkpoint

    try:
        translation = is_translation_checkpoint(args.checkpoint)
    except UserError:  # unreadable, missing...: the BERT export's own checks say so, as they always did
        translation = False
    if not translation:
        for flag, _ in (*SEARCH_OPTIONS, ("--results", Path), ("--bpe-codes", Path)):
            if getattr(args, flag[2:].replace("-", "_")) is not None:
                raise UserError(f"{flag}: only for translation checkpoints ({args.checkpoint} is not one)")
        return None
    search = {
        flag[2:].replace("-", "_"): getattr(args, flag[2:].replace("-", "_")) for flag, _ in SEARCH_OPTIONS
    }
    return export_translation(args.checkpoint, args.dest, args.data, search, args.results, args.bpe_codes)


def import_translation_if_one(args: argparse.Namespace) -> Path | None:
    """Import ``args.hf_dir`` if ``macaron-hf export`` wrote it from a translation checkpoint; else None."""
    from macaron_fairseq.hf.translation_import import import_translation, is_translation_export

    if not is_translation_export(args.hf_dir):
        return None
    return import_translation(args.hf_dir, args.out)
