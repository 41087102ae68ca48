"""The translation pipelines follow the Macaron authors' scripts flag for flag: their training script and
each pipeline's ``fairseq-train`` command, both parsed by fairseq's own parser, differ only in the settings
:data:`macaron_pipelines.authors_recipes.DEVIATIONS` lists with a reason; the docs table is what the code
says; the architectures they name have their model file's settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from macaron_pipelines import authors_recipes as ar
from macaron_pipelines import translation


def effective(recipe: str, tmp_path: Path, *extra: str) -> tuple[list[str], list[str]]:
    """(their argv, the pipeline's argv) for ``fairseq-train``, same data and save dir."""
    gpus = str(ar.AUTHORS[recipe].gpus)  # their scripts' GPU count: their world size
    args = translation.parse_args([recipe, "--workdir", str(tmp_path), "--gpus", gpus, *extra])
    r = translation.RECIPES[recipe]
    data, save = r.data_bin(args.workdir), tmp_path / "checkpoints"
    ours = translation.train_command(r, args, data, save)[1:]  # without "fairseq-train"
    theirs = [
        str(data),
        *ar.fairseq_012(ar.AUTHORS[recipe].train),
        "--save-dir",
        str(save),
        "--distributed-world-size",
        gpus,
    ]
    return theirs, ours


@pytest.mark.parametrize("recipe", list(ar.AUTHORS))
def test_the_pipelines_fairseq_config_is_the_authors_but_the_listed_deviations(
    recipe: str, tmp_path: Path
) -> None:
    theirs, ours = effective(recipe, tmp_path)
    diff = ar.differences(ar.parse_training(theirs), ar.parse_training(ours))
    assert set(diff) <= set(ar.DEVIATIONS), {k: v for k, v in diff.items() if k not in ar.DEVIATIONS}
    assert "max_update" in diff  # the one training difference: a budget where they stopped by hand
    parsed = ar.parse_training(ours)
    assert parsed.arch == ar.AUTHORS[recipe].value("--arch")
    assert parsed.stop_min_lr == 1e-09 and parsed.ddp_backend == "no_c10d"


def test_a_flag_after_dash_dash_or_an_option_still_overrides_the_recipe(tmp_path: Path) -> None:
    _, ours = effective("iwslt14", tmp_path, "--max-tokens", "2048", "--", "--dropout", "0.2")
    parsed = ar.parse_training(ours)
    assert parsed.max_tokens == 2048 and parsed.dropout == 0.2


def test_their_test_scripts_beam_and_length_penalty() -> None:
    for name, recipe in translation.RECIPES.items():
        test = ar.flag_groups(ar.AUTHORS[name].test)
        assert (recipe.beam, recipe.lenpen) == (int(test["--beam"][0]), float(test["--lenpen"][0]))
    assert (translation.RECIPES["iwslt14"].beam, translation.RECIPES["wmt14"].lenpen) == (5, 0.6)
    assert translation.RECIPES["iwslt14"].bleu.metrics[0] == "fairseq"
    assert translation.RECIPES["wmt14"].bleu.metrics[0] == "retokenized"


#: their model file (translation/fairseq/models/transformer.py): d, heads, FFN width, dropout and pre-LN of
#: each arch they name, as its arch function sets them (6 + 6 layers each; their IWSLT14 *script* then
#: passes --dropout 0.3)
THEIR_ARCHS = {
    "transformer_iwslt_de_en_macaron_v2": (512, 4, 512, 0.1, True),
    "transformer_wmt_en_de_macaron_v2": (512, 8, 1024, 0.1, True),
    "transformer_wmt_en_de_big_t2t_macaron": (1024, 16, 2048, 0.3, True),
    "transformer_iwslt_de_en_v2": (512, 4, 1024, 0.1, True),
    "transformer_wmt_en_de_v2": (512, 8, 2048, 0.1, True),
    "transformer_wmt_en_de_big_t2t": (1024, 16, 4096, 0.3, True),
    "transformer_iwslt_de_en_macaron": (512, 4, 512, 0.1, False),
    "transformer_wmt_en_de_macaron": (512, 8, 1024, 0.1, False),
}


@pytest.mark.parametrize("arch", list(THEIR_ARCHS))
def test_their_arch_names_have_their_settings(arch: str, dict_dir: Path) -> None:
    dim, heads, ffn, dropout, pre_ln = THEIR_ARCHS[arch]
    args = ar.parse_training([str(dict_dir), "-s", "src", "-t", "tgt", "--arch", arch])
    for side in ("encoder", "decoder"):
        assert getattr(args, f"{side}_embed_dim") == dim and getattr(args, f"{side}_attention_heads") == heads
        assert getattr(args, f"{side}_layers") == 6 and getattr(args, f"{side}_ffn_embed_dim") == ffn
        assert getattr(args, f"{side}_normalize_before") is pre_ln
    assert args.dropout == dropout
    dropouts = (0.1, 0.1) if pre_ln else (0.0, 0.0)  # attention, ReLU (fairseq 0.12: activation)
    assert (args.attention_dropout, args.activation_dropout) == dropouts
    assert getattr(args, "macaron_ffn_step", None) == (0.5 if "macaron" in arch else None)


def test_their_batches_are_read_from_their_scripts_and_readme() -> None:
    """train-iwslt14.sh on 1 GPU (their README: CUDA_VISIBLE_DEVICES=0), the WMT14 scripts on 4 ("Assume
    training on 4 P40 GPUs"): 4096, 4 × 8192 and 4 × 4096 × 16 tokens per update."""
    batches = [ar.AUTHORS[r].tokens_per_update for r in ("iwslt14", "wmt14", "wmt14-big")]
    assert batches == [4096, 32768, 262144]


@pytest.mark.parametrize(
    ("recipe", "gpus", "update_freq", "matches"),
    [
        ("wmt14", 1, 4, True),
        ("wmt14", 4, 1, True),
        ("wmt14", 16, 1, False),  # 16 × 8192 > 32768: no update frequency can shrink it
        ("wmt14-big", 16, 4, True),  # docs/slurm.md's --nodes 2 --gpus-per-node 8
        ("wmt14-big", 32, 2, True),  # their train-wmt14-big-distributed.sh's 32 GPUs
        ("wmt14-big", 3, 21, False),  # 3 × 4096 does not divide 262144
        ("iwslt14", 2, 1, False),
    ],
)
def test_the_update_freq_is_derived_from_the_gpu_count(recipe, gpus, update_freq, matches, tmp_path) -> None:
    args = translation.parse_args([recipe, "--workdir", str(tmp_path), "--gpus", str(gpus)])
    assert args.update_freq == update_freq
    command = translation.train_command(translation.RECIPES[recipe], args, tmp_path, tmp_path / "ck")
    assert command[command.index("--update-freq") + 1] == str(update_freq)
    line = args.batch.line(ar.AUTHORS[recipe])
    assert args.batch.matches is matches
    assert ("NOT theirs" in line) is not matches and f"update-freq {update_freq} (derived" in line
    assert f"{gpus * args.max_tokens * update_freq:,} tokens per update" in line
    if recipe == "wmt14" and gpus == 16:
        assert "--max-tokens 2048 with --update-freq 1 would match it" in line
    if gpus == 3:
        assert "no whole --max-tokens per GPU would match it" in line


def test_a_given_update_freq_is_kept_and_said_to_differ(tmp_path) -> None:
    args = translation.parse_args(["wmt14", "--workdir", str(tmp_path), "--gpus", "4", "--update-freq", "2"])
    assert args.update_freq == 2 and not args.batch.matches
    assert "(given) = 65,536 tokens per update — NOT theirs" in args.batch.line(ar.AUTHORS["wmt14"])


def test_under_slurm_the_gpus_are_the_allocations_tasks(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SLURM_NTASKS", "8")
    args = translation.parse_args(["wmt14-big", "--workdir", str(tmp_path), "--slurm"])
    assert (args.batch.gpus, args.update_freq, args.batch.tokens_per_update) == (8, 8, 262144)


def test_the_wmt14_recipes_preprocess_their_data_and_the_table_says_which(tmp_path) -> None:
    from macaron_pipelines import authors_table

    for name in ("wmt14", "wmt14-big"):
        assert translation.RECIPES[name].preprocess_flags == ("--data", "authors")
        table = authors_table.recipe_table(name)
        assert "news-commentary **v12**" in table and "`--post-process subword_nmt`" in table
        assert "| (initialisation) | their fork's code | authors' (fairseq 0.6" in table
    assert translation.RECIPES["iwslt14"].preprocess_flags == ()
    assert "`--post-process sentencepiece`" in authors_table.recipe_table("iwslt14")
