"""Each pipeline's option table: the wrappers' environment variables (``--from-env``) give the same arguments
as the flags, the wrapper's default work directory, the shared --workers check, and the deprecated
spellings."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

from macaron_pipelines import pretrain, translation
from macaron_pipelines.glue import __main__ as glue

GLUE_ENV = {
    "WORKDIR": "w",
    "TASKS": "RTE SST-2",
    "SEEDS": "2",
    "LRS": "1e-3",
    "SMALL": "1",
    "GPUS": "0",
    "PREEMPT_SIGNAL": "USR2",
    "SKIP_INSTALL": "1",
}
GLUE_FLAGS = [
    "--workdir",
    "w",
    "--tasks",
    "RTE SST-2",
    "--seeds",
    "2",
    "--lrs",
    "1e-3",
    "--small",
    "--gpus",
    "0",
    "--preemption-signal",
    "USR2",
    "--skip-install",
]


def clear_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    for table in (glue.OPTIONS, pretrain.OPTIONS, translation.OPTIONS):
        for option in table:
            if option.env:
                monkeypatch.delenv(option.env, raising=False)


def test_glue_environment_variables_are_its_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_tables(monkeypatch)
    from_flags = vars(glue.parse_args([*GLUE_FLAGS, "--", "--dropout", "0.2"]))
    for name, value in GLUE_ENV.items():
        monkeypatch.setenv(name, value)
    assert vars(glue.parse_args(["--from-env", "--", "--dropout", "0.2"])) == from_flags
    assert glue.parse_args(["--from-env", "--seeds", "3"]).seeds == [3]  # the command line wins
    assert glue.parse_args(["--workdir", "x"]).tasks == list(glue.BERT_TASKS)  # no --from-env: not read


def test_wrapper_defaults_of_the_work_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_tables(monkeypatch)
    monkeypatch.setenv("SMALL", "1")
    assert glue.parse_args(["--from-env"]).workdir == REPO / "work_dirs" / "glue"
    assert translation.parse_args(["wmt14", "--from-env"]).workdir == REPO / "work_dirs" / "wmt14"
    assert pretrain.parse_args(["--from-env"]).workdir == REPO / "work_dirs" / "pretrain"
    monkeypatch.setenv("WORKDIR", "/tmp/mine")
    assert translation.parse_args(["iwslt14", "--from-env"]).workdir == Path("/tmp/mine")


def test_translation_and_pretrain_read_their_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_tables(monkeypatch)
    env = {
        "WORKDIR": "/tmp/t",
        "RAW_DIR": "/tmp/raw",
        "ARCH": "transformer_iwslt_de_en",
        "MAX_UPDATE": "80",
        "NUM_AVG": "2",
        "WORKERS": "1",
        "SMALL": "1",
        "UPDATE_FREQ": "2",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    args = translation.parse_args(["iwslt14", "--from-env"])
    assert (args.raw_dir, args.arch, args.max_update, args.num_avg, args.workers, args.small) == (
        Path("/tmp/raw"),
        "transformer_iwslt_de_en",
        80,
        2,
        1,
        True,
    )
    assert args.update_freq == 2
    monkeypatch.delenv("ARCH")
    monkeypatch.setenv("WIKIPEDIA", "a.xml.bz2 b.xml.bz2")
    monkeypatch.setenv("SEED", "7")
    args = pretrain.parse_args(["--from-env"])
    assert [Path(w).name for w in args.wikipedia] == ["a.xml.bz2", "b.xml.bz2"] and args.seed == 7


@pytest.mark.parametrize("module", [pretrain, translation])
def test_workers_is_the_shared_positive_option(
    module: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--workdir", str(tmp_path), "--small", "--workers", "0"]
    with pytest.raises(SystemExit) as exc:
        module.parse_args(["iwslt14", *argv] if module is translation else argv)  # type: ignore[attr-defined]
    assert exc.value.code == 2 and "argument --workers: must be >= 1, got 0" in capsys.readouterr().err


def test_pretrain_bpe_vocab_size_keeps_its_old_spelling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = pretrain.parse_args(["--workdir", str(tmp_path), "--small", "--vocab-size", "700"])
    assert args.bpe_vocab_size == 700
    assert "--vocab-size is deprecated, use --bpe-vocab-size" in capsys.readouterr().err
    source = inspect.getsource(pretrain.build_corpus)  # the corpus step passes the new spelling
    assert '"--bpe-vocab-size"' in source and '"--vocab-size"' not in source


def test_a_switch_variable_other_than_1_or_0_is_a_one_line_error(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHON": sys.executable,
        "SMALL": "yes",
        "SKIP_INSTALL": "1",
        "WORKDIR": str(tmp_path / "w"),
    }
    proc = subprocess.run(
        ["bash", str(REPO / "pipelines" / "pretrain.sh")],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "python -m macaron_pipelines.pretrain: error: SMALL=yes: expected 1 or 0 (the option --small) "
        "(see --help)"
    )
    assert not (tmp_path / "w").exists()


def test_skip_install_is_one_option_in_every_wrapper(tmp_path: Path) -> None:
    """SKIP_INSTALL=1 or --skip-install: the wrapper does not install, the pipeline accepts both."""
    for table in (glue.OPTIONS, pretrain.OPTIONS, translation.OPTIONS):
        assert any(o.flag == "--skip-install" and o.env == "SKIP_INSTALL" for o in table)
    wrapper = (REPO / "pipelines" / "wrapper.sh").read_text(encoding="utf-8")
    assert '"${SKIP_INSTALL:-0}" = 1' in wrapper and "--skip-install" in wrapper
    for name in ("glue.sh", "pretrain.sh", "translation.sh", "quickstart.sh"):
        text = (REPO / "pipelines" / name).read_text(encoding="utf-8")
        assert "install_unless_skipped" in text and "--from-env" in text and 'scripts/install.sh"' not in text
