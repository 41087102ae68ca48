"""The docs table of ``docs/reports/authors_recipes.md``: for each recipe, every flag of the Macaron
authors' training and test scripts, their value, the value in the pipeline's effective ``fairseq-train``
configuration (the pipeline's command parsed by fairseq's own parser), and what sets it; then the
architecture settings their arch names imply, and the deviations with their reasons. Rendered by
``python -m benchmarks.doc_tables`` (block ``authors-recipes``); ``tests/test_docs_numbers.py`` checks the
page holds what this renders."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from macaron_pipelines import authors_recipes as ar
from macaron_pipelines import translation

#: settings their arch functions imply (not flags of their scripts): label -> fairseq 0.12 setting
ARCH_SETTINGS = {
    "pre-LN encoder": "encoder_normalize_before",
    "pre-LN decoder": "decoder_normalize_before",
    "attention dropout": "attention_dropout",
    "ReLU dropout: fairseq 0.12's activation dropout": "activation_dropout",
    "FFN width, each of the two": "encoder_ffn_embed_dim",
}


def shown(value: Any) -> str:
    """A parsed value as the table shows it."""
    if value is True:
        return "✓"
    if value is False or value is None:
        return "—"
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return str(value)


def effective_config(recipe: str) -> tuple[argparse.Namespace, list[str], argparse.Namespace]:
    """(the pipeline's parsed options, its fairseq-train argv, that argv parsed by fairseq) with defaults."""
    with tempfile.TemporaryDirectory() as tmp:
        gpus = str(ar.AUTHORS[recipe].gpus)  # on their GPU count (the batch is derived from it)
        args = translation.parse_args([recipe, "--workdir", tmp, "--gpus", gpus])
        r = translation.RECIPES[recipe]
        argv = translation.train_command(r, args, r.data_bin(Path(tmp)), Path(tmp) / "checkpoints")[1:]
        return args, argv, ar.parse_training(argv)


def where_set(flag: str) -> str:
    if flag == "--update-freq":
        return (
            "pipeline option `--update-freq`, default: derived from the GPU count so that the tokens per "
            "update equal theirs (shown: on their GPU count)"
        )
    if flag in ar.OPTION_FLAGS:
        return f"pipeline option `{ar.OPTION_FLAGS[flag]}`, default: theirs"
    if flag in ar.LOGGING_FLAGS:
        return "not used: the pipeline logs JSON lines (`--log-format json`)"
    if flag in ar.RENAMED:
        return f"recipe, under fairseq 0.12's name `{ar.RENAMED[flag]}`"
    return "recipe (their flag, verbatim)"


def recipe_table(name: str) -> str:
    from macaron_fairseq.models.authors_init import initialisation_of

    scripts, recipe = ar.AUTHORS[name], translation.RECIPES[name]
    args, _argv, parsed = effective_config(name)
    lines = [
        f"**`{name}`** (`bash pipelines/{name.replace('-', '_')}.sh`) — their `{scripts.train_script}` and "
        f"`{scripts.test_script}`",
        "",
        "| their flag | theirs | the pipeline (effective) | set by |",
        "|---|---|---|---|",
    ]
    for flag, values in ar.flag_groups(scripts.train).items():
        theirs = " ".join(values) if values else "✓"
        key = ar.RENAMED.get(flag, flag)
        ours = shown(getattr(parsed, key[2:].replace("-", "_")))
        if flag in ar.LOGGING_FLAGS:
            ours = "—"
        lines.append(f"| `{flag}` | `{theirs}` | `{ours}` | {where_set(flag)} |")
    lines.append(
        f"| (none: they stop by hand) | — | `--max-update {args.max_update}` | pipeline option "
        "`--max-update` |"
    )
    lines.append(
        f"| (GPUs → tokens per update) | {scripts.gpus} GPU(s) → {scripts.tokens_per_update:,} | "
        f"{args.batch.tokens_per_update:,} on {scripts.gpus} GPU(s); on any other count "
        "`--update-freq` is derived to match (printed; one line says so when no whole value can) | "
        "their `translation/README.md`; pipeline |"
    )
    for label, attr in ARCH_SETTINGS.items():
        lines.append(
            f"| ({label}) | implied by `--arch` | `{shown(getattr(parsed, attr))}` | arch function "
            "(`macaron_fairseq/models/authors.py`) |"
        )
    lines.append(
        f"| (initialisation) | their fork's code | {initialisation_of(args.arch)} | "
        "`macaron_fairseq/models/authors_init.py` |"
    )
    lines.append(f"| (data) | their `prepare-*.sh` | {ar.DATA[name]} | `{recipe.preprocess_module}` |")
    test = ar.flag_groups(scripts.test)
    ours_test = {
        "--batch-size": (str(args.gen_batch_size), "pipeline option `--gen-batch-size`"),
        "--beam": (str(recipe.beam), "recipe (their test script's)"),
        "--lenpen": (str(recipe.lenpen), "recipe (their test script's)"),
    }
    for flag, values in test.items():
        theirs = " ".join(values) if values else "✓"
        value, origin = ar.TEST_EQUIVALENTS[name].get(flag) or ours_test[flag]
        lines.append(f"| test `{flag}` | `{theirs}` | `{value}` | {origin} |")
    then = ", ".join(f"`{m}`" for m in recipe.bleu.metrics[1:])
    lines.append(
        f"| test BLEU | {scripts.bleu} | printed first: `{recipe.bleu.metrics[0]}` (then {then}) | "
        "`macaron_tools.score_bleu` |"
    )
    return "\n".join(lines)


def render() -> str:
    """The whole block: one table per recipe, then the deviations."""
    parts = [recipe_table(name) for name in ar.AUTHORS]
    deviations = "\n".join(f"- `{key}`: {why}" for key, why in ar.DEVIATIONS.items())
    parts.append(
        "Every other setting of fairseq's parsed configuration equals theirs (both command lines parsed by "
        "fairseq's own parser, on their GPU count; `tests/pipelines/test_authors_recipes.py` fails on any "
        "other difference). That covers flags and arch settings; what their fork does in code rather than "
        "in flags is in the rows above: the initialisation, the data and the test BLEU. The differences, "
        "with their reasons:\n\n" + deviations
    )
    return "\n\n".join(parts)
