"""``fairseq-hydra-train`` builds the model ``fairseq-train`` builds from the same settings
(:mod:`macaron_fairseq.models.hydra_config`): fairseq's ``TransformerConfig.from_namespace`` keeps only its
own fields of a Hydra node, so the plugin's options (``--init-scheme``...) used to come back as defaults —
the layers kept their LayerNorms while the init hook logged "applied". The shipped YAML recipes are
generated from the recipes' command lines and checked against them here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.tasks.translation import TranslationTask
from helpers import REPO, TINY, build_model, run_cli
from omegaconf import OmegaConf, open_dict

from macaron_fairseq.models.hydra_config import PluginConfigError, require_plugin_fields
from macaron_pipelines import hydra_recipes
from macaron_pipelines.authors_recipes import parse_training

FLAGS = [
    *TINY,
    "--arch",
    "macaron_small",
    "--share-all-embeddings",
    "--init-scheme",
    "t-fixup",
    "--macaron-ffn-step",
    "0.25",
    "--source-lang",
    "src",
    "--target-lang",
    "tgt",
]


def hydra_node(data_dir: Path, flags: list[str]):
    """The model node fairseq-hydra-train hands the model: the settings as a YAML config gives them."""
    config = hydra_recipes.config_from_flags(flags)
    config["task"]["data"] = str(data_dir)
    cfg = OmegaConf.merge(convert_namespace_to_omegaconf(parse_training([str(data_dir), *flags])), config)
    cfg.model = OmegaConf.create(config["model"])  # only what the YAML says, as under Hydra
    return cfg, TranslationTask.setup_task(cfg.task)


def test_a_hydra_model_node_builds_the_model_the_command_line_builds(dict_dir: Path) -> None:
    extra = [word for word in FLAGS if word not in ("--arch", "macaron_small")]
    by_flags, _ = build_model(dict_dir, "macaron_small", extra)
    cfg, task = hydra_node(dict_dir, FLAGS)
    by_yaml = task.build_model(cfg.model)
    assert list(by_yaml.state_dict()) == list(by_flags.state_dict())
    assert not [k for k in by_yaml.state_dict() if "layer_norm" in k.split(".")[-2]]  # T-Fixup: norm-free
    assert by_yaml.init_args.macaron_ffn_step == 0.25
    assert {type(m).__name__ for m in by_yaml.modules()} == {type(m).__name__ for m in by_flags.modules()}
    assert cfg.model.init_scheme == "t-fixup" and cfg.model.encoder_layers == 2  # stored in the checkpoint


def test_a_model_key_no_option_reads_is_an_error_not_a_silent_default(dict_dir: Path) -> None:
    cfg, task = hydra_node(dict_dir, FLAGS)
    with open_dict(cfg.model):
        cfg.model.init_schem = "dt-fixup"
    with pytest.raises(PluginConfigError, match=r"^model\.init_schem: no option of --arch macaron_small"):
        task.build_model(cfg.model)


def test_a_layer_config_that_lost_the_plugins_fields_is_refused() -> None:
    from fairseq.models.transformer import TransformerConfig

    lost = TransformerConfig.from_namespace(OmegaConf.create({"init_scheme": "t-fixup"}))
    with pytest.raises(PluginConfigError, match="lost the plugin's option"):
        require_plugin_fields(lost, ["init_scheme"])


@pytest.mark.slow  # runs the real command in subprocesses: 5-15 s here (out of --quick)
def test_the_shipped_yaml_configs_are_the_recipes() -> None:
    """configs/hydra/*.yaml are regenerated from pipelines/authors_recipes.py and the quickstart's command;
    any difference (a hand edit, a changed recipe) fails."""
    proc = subprocess.run(
        [sys.executable, "-m", "macaron_pipelines.hydra_recipes", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert {p.stem for p in (REPO / "configs" / "hydra").glob("*.yaml")} == set(hydra_recipes.recipes())


def test_each_authors_config_holds_every_flag_of_their_script() -> None:
    config = hydra_recipes.config_from_flags(hydra_recipes.recipes()["wmt14-big"])
    assert config["model"]["_name"] == "transformer_wmt_en_de_big_t2t_macaron"
    assert config["optimization"]["update_freq"] == [16] and config["optimization"]["lr"] == [0.003]
    assert config["optimization"]["stop_min_lr"] == 1e-09  # their --min-lr under 0.12's name
    assert config["common"]["user_dir"] == "macaron_fairseq" and config["task"]["data"] == "???"


# ------------------------------------------------------------------------------------- the real entry points
TRAIN = [
    "--optimizer",
    "adam",
    "--lr",
    "1e-3",
    "--criterion",
    "label_smoothed_cross_entropy",
    "--label-smoothing",
    "0.1",
    "--max-tokens",
    "2000",
    "--num-workers",
    "0",
    "--seed",
    "3",
    "--max-update",
    "1",
    "--no-progress-bar",
    "--log-format",
    "json",
    "--log-interval",
    "1",
    "--no-epoch-checkpoints",
    "--cpu",
]


def first_loss(output: str) -> float:
    for line in output.splitlines():
        if '"num_updates": "1"' in line and '"loss"' in line:
            return float(json.loads(line[line.index("{") :])["loss"])
    raise AssertionError(f"no first-update loss in:\n{output[-3000:]}")


@pytest.mark.slow
def test_fairseq_hydra_train_and_fairseq_train_train_the_same_model(
    tiny_data_bin: Path, tmp_path: Path
) -> None:
    """The same settings as a YAML config and as flags (DT-Fixup: μ measured on the data, which needs the
    dataset options under Hydra too): the same state-dict keys, parameter count, init record and
    first-update loss at the same seed — and, after that update, the same weights bit for bit (only the
    μ pass's wall time differs)."""
    flags = [*TINY, "--arch", "macaron_small", "--share-all-embeddings", "--init-scheme", "dt-fixup", *TRAIN]
    user_dir = str(REPO / "macaron_fairseq")
    by_flags = run_cli(
        [
            "fairseq-train",
            str(tiny_data_bin),
            "--user-dir",
            user_dir,
            "--save-dir",
            str(tmp_path / "flags2"),
            *flags,
        ],
        cwd=tmp_path,
    )
    config = hydra_recipes.config_from_flags(flags)
    config["common"]["user_dir"] = user_dir
    (tmp_path / "run.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(config)))
    by_yaml = run_cli(
        [
            "fairseq-hydra-train",
            "--config-dir",
            str(tmp_path),
            "--config-name",
            "run",
            f"task.data={tiny_data_bin}",
            f"checkpoint.save_dir={tmp_path / 'yaml'}",
            f"hydra.run.dir={tmp_path / 'hydra'}",
        ],
        cwd=tmp_path,
    )
    a = torch.load(tmp_path / "flags2" / "checkpoint_last.pt", weights_only=False)["model"]
    b = torch.load(tmp_path / "yaml" / "checkpoint_last.pt", weights_only=False)["model"]
    assert list(a) == list(b)
    assert sum(v.numel() for v in a.values()) == sum(v.numel() for v in b.values())
    assert "init_record.mu_encoder" in a and a["init_record.scheme"].item() == 1  # dt-fixup applied
    assert [k for k in a if not torch.equal(a[k], b[k])] == ["init_record.seconds"]
    assert first_loss(by_flags.stdout + by_flags.stderr) == first_loss(by_yaml.stdout + by_yaml.stderr)
