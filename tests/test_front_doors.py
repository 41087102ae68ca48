"""The front doors, as a user meets them after the README's install (editable, through
``scripts/install.sh``) or after installing the wheel, working from a directory of their own that is not
the checkout: fairseq's own entry points with ``--user-dir macaron_fairseq``, no path typed.

fairseq 0.12 takes ``--user-dir X`` as a path and otherwise looks next to its own package
(``<fairseq>/../X``): the wheel puts the package there; the editable install gets a link there
(``scripts/user_dir_link.py``, run by the installer). Each install is a throwaway virtualenv with fairseq in
its own site-packages (``installs.py``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import REPO, TINY
from installs import Install, build_wheel, editable_install, wheel_install

pytestmark = pytest.mark.slow  # fresh virtualenvs and real fairseq runs: about a minute per install

TRAIN = [
    *TINY,
    "--arch",
    "macaron_base",
    "--share-all-embeddings",
    "--init-scheme",
    "t-fixup",
    "--optimizer",
    "adam",
    "--lr",
    "1e-3",
    "--criterion",
    "label_smoothed_cross_entropy",
    "--max-tokens",
    "2000",
    "--num-workers",
    "0",
    "--seed",
    "1",
    "--max-update",
    "3",
    "--no-progress-bar",
    "--no-epoch-checkpoints",
]


@pytest.fixture(scope="module")
def editable(tmp_path_factory: pytest.TempPathFactory) -> Install:
    return editable_install(tmp_path_factory.mktemp("install-editable") / "venv")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Install:
    root = tmp_path_factory.mktemp("install-wheel")
    return wheel_install(root / "venv", build_wheel(root / "build"))


@pytest.fixture(scope="module", params=["editable", "wheel"])
def install(request: pytest.FixtureRequest) -> Install:
    """Each install, built once for the module (``editable``, ``wheel``)."""
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="module")
def away(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user's own experiment directory (no checkout, no macaron_fairseq in it)."""
    return tmp_path_factory.mktemp("my-experiment")


def train_once(install: Install, away: Path, data_bin: Path) -> Path:
    """``fairseq-train --user-dir macaron_fairseq`` from the user's directory, once per install."""
    save_dir = away / f"checkpoints-{install.kind}"
    if not (save_dir / "checkpoint_last.pt").is_file():
        install.run(
            [
                "fairseq-train",
                str(data_bin),
                "--user-dir",
                "macaron_fairseq",
                "--save-dir",
                str(save_dir),
                *TRAIN,
            ],
            cwd=away,
        )
    return save_dir / "checkpoint_last.pt"


def test_the_install_puts_the_plugin_where_fairseq_looks(install: Install) -> None:
    """``<fairseq>/../macaron_fairseq`` is the package: the wheel's folder, or the editable install's link
    to the checkout (recorded in the install's RECORD, so that ``pip uninstall`` removes the link)."""
    found = install.site / "macaron_fairseq"
    assert (found / "__init__.py").is_file()
    if install.kind == "editable":
        assert found.is_symlink() and found.resolve() == REPO / "macaron_fairseq"
        (record,) = install.site.glob("macaron_fairseq-*.dist-info/RECORD")
        assert "macaron_fairseq,," in record.read_text().splitlines()
    else:
        assert not found.is_symlink()


def test_fairseq_train_finds_the_plugin_by_name_from_the_users_directory(
    install: Install, away: Path, tiny_data_bin: Path
) -> None:
    assert train_once(install, away, tiny_data_bin).is_file()


#: the entry points past fairseq-train all reach the plugin through the same fairseq lookup
#: (``utils.import_user_module``) that the editable install's training run already passes: they run on the
#: wheel's install (each interpreter start-up under the editable install costs CI time)


def test_fairseq_generate_validate_and_interactive_find_it_too(
    wheel: Install, away: Path, tiny_data_bin: Path
) -> None:
    install, trained = wheel, train_once(wheel, away, tiny_data_bin)
    common = ["--user-dir", "macaron_fairseq", "--path", str(trained)]
    generate = install.run(
        [
            "fairseq-generate",
            str(tiny_data_bin),
            *common,
            "--max-tokens",
            "2000",
            "--beam",
            "2",
            "--max-len-b",
            "12",
        ],
        cwd=away,
    )
    assert "Generate test with beam=2" in generate.stdout + generate.stderr, generate.stderr[-2000:]
    validate = install.run(
        [
            "fairseq-validate",
            str(tiny_data_bin),
            *common,
            "--task",
            "translation",
            "--max-tokens",
            "2000",
            "--valid-subset",
            "valid",
        ],
        cwd=away,
    )
    assert "valid on 'valid' subset" in validate.stdout + validate.stderr
    interactive = install.run(
        [
            "fairseq-interactive",
            str(tiny_data_bin),
            *common,
            "--beam",
            "2",
            "--source-lang",
            "src",
            "--target-lang",
            "tgt",
        ],
        cwd=away,
        input="w1 w2 w3\n",
    )
    assert any(line.startswith("H-0\t") for line in interactive.stdout.splitlines()), interactive.stdout


def test_imported_first_then_named_as_user_dir_is_one_module(install: Install, away: Path) -> None:
    """``import macaron_fairseq`` then ``--user-dir macaron_fairseq`` (the hub's ``user_dir=``, a launcher
    that imports the plugin first): fairseq accepts the already imported module instead of stopping with
    "not globally unique", and nothing is registered twice."""
    code = (
        "import argparse, macaron_fairseq\n"
        "from fairseq import utils\n"
        "utils.import_user_module(argparse.Namespace(user_dir='macaron_fairseq'))\n"
        "import sys; print(sorted(m for m in sys.modules if m.endswith('macaron_layer')))\n"
    )
    proc = install.run([str(install.python), "-c", code], cwd=away)
    assert proc.stdout.strip().splitlines()[-1] == "['macaron_fairseq.modules.macaron_layer']"
    assert not os.path.exists(away / "macaron_fairseq")


def test_fairseq_hydra_train_runs_a_shipped_config_from_the_users_directory(
    install: Install, away: Path, tiny_data_bin: Path
) -> None:
    """The quickstart-size recipe as YAML, from the installed configs' folder, the plugin named in it
    (``common.user_dir: macaron_fairseq``); shrunk on the command line to two updates of a one-layer model."""
    where = install.run(
        [str(install.python), "-m", "macaron_pipelines.hydra_recipes", "--config-dir"], cwd=away
    )
    config_dir = Path(where.stdout.strip())
    assert (config_dir / "quickstart.yaml").is_file()
    assert (install.site if install.kind == "wheel" else REPO) in config_dir.parents
    save_dir = away / f"hydra-{install.kind}"
    install.run(
        [
            "fairseq-hydra-train",
            "--config-dir",
            str(config_dir),
            "--config-name",
            "quickstart",
            f"task.data={tiny_data_bin}",
            "task.source_lang=src",
            "task.target_lang=tgt",
            "model.encoder_layers=1",
            "model.decoder_layers=1",
            "optimization.max_update=2",
            f"checkpoint.save_dir={save_dir}",
            f"hydra.run.dir={away / 'hydra-outputs'}",
        ],
        cwd=away,
    )
    assert (save_dir / "checkpoint_last.pt").is_file()


def test_the_help_of_a_plugin_arch_lists_the_plugins_options(wheel: Install, away: Path) -> None:
    proc = wheel.run(
        ["fairseq-train", "--user-dir", "macaron_fairseq", "--arch", "macaron_base", "--help"], cwd=away
    )
    assert "Model-specific configuration (--arch macaron_base):" in proc.stdout
    assert "\n  --init-scheme {default,dt-fixup,t-fixup,auto}\n" in proc.stdout


def test_every_command_names_itself_as_typed(install: Install, away: Path) -> None:
    """Every console script's and documented module's ``--help`` through the install (test_cli_convention.py
    runs them from the checkout), from the user's own directory: each exits 0 and its usage names the command
    as typed."""
    from test_cli_convention import ENTRIES, typed

    out = away / f"helps-{install.kind}.json"
    install.run([str(install.python), str(REPO / "tests" / "cli_helps.py"), str(out), *ENTRIES], cwd=away)
    wrong = [
        f"{result['entry']}: {result['status']} {result['stdout'][:120]!r} {result['stderr'][-300:]}"
        for result in json.loads(out.read_text(encoding="utf-8"))
        if result["status"] != 0 or not result["stdout"].startswith(f"usage: {typed(result['entry'])} ")
    ]
    assert not wrong
