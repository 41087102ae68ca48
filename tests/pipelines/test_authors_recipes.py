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
    args = translation.parse_args([recipe, "--workdir", str(tmp_path), *extra])
    r = translation.RECIPES[recipe]
    data, save = r.data_bin(args.workdir), tmp_path / "checkpoints"
    ours = translation.train_command(r, args, data, save)[1:]  # without "fairseq-train"
    theirs = [str(data), *ar.fairseq_012(ar.AUTHORS[recipe].train), "--save-dir", str(save)]
    return theirs, ours


@pytest.mark.parametrize("recipe", list(ar.AUTHORS))
def test_the_pipelines_fairseq_config_is_the_authors_but_the_listed_deviations(recipe: str, tmp_path: Path
                                                                                ) -> None:  # fmt: skip
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
