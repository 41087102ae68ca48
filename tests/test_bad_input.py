"""The bad-input table of issue #25, through the real entry points: input → one-line message → exit code →
nothing half-written (or written at all) left; and the malicious checkpoint refused, without running it, by
every entry point that takes one. The error rule is docs/architecture.md, "Errors"."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import sentencepiece as spm
from helpers import REPO, save_bert_checkpoint, write_malicious_checkpoint

from macaron_pipelines.commands import PipelineError, Preempted, report_errors, run_command
from macaron_pipelines.glue.__main__ import main as glue_main
from macaron_preprocess import glue as preprocess_glue
from macaron_preprocess.sources.glue import GlueDataError, read_split
from macaron_synthetic.glue import write_synthetic_glue
from macaron_workflow.cli import ArgumentParser, run_cli
from macaron_workflow.errors import ReportedError, UserError

GLUE_TASKS = ("RTE", "WNLI")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A GLUE distribution (RTE, WNLI), a pre-training data-bin (sentencepiece + dictionary) and a
    checkpoint whose embeddings fit it."""
    root = tmp_path_factory.mktemp("bad_input")
    glue = write_synthetic_glue(root / "GLUE", GLUE_TASKS, scale=0.02)
    text = root / "text.txt"
    text.write_text(
        "".join(f"{e.sentence1}\n{e.sentence2}\n" for e in read_split(glue, "RTE", "train").examples)
    )
    data_bin = root / "data-bin"
    data_bin.mkdir()
    spm.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(data_bin / "sentencepiece.bpe"),
        vocab_size=60,
        model_type="bpe",
        minloglevel=2,
    )
    pieces = [line.split("\t")[0] for line in (data_bin / "sentencepiece.bpe.vocab").read_text().splitlines()]
    (data_bin / "dict.txt").write_text("".join(f"{p} 1\n" for p in pieces[3:]))
    checkpoint = save_bert_checkpoint(root / "model.pt", data_bin)  # its embeddings fit the dictionary
    return {"root": root, "glue": glue, "data_bin": data_bin, "checkpoint": checkpoint}


def snapshot(directory: Path) -> list[tuple[str, int, int]]:
    """Every file under ``directory`` with its size and modification time (to show nothing was written)."""
    return sorted(
        (str(p.relative_to(directory)), p.stat().st_size, p.stat().st_mtime_ns) for p in directory.rglob("*")
    )


@dataclass
class Ended:
    code: int
    stderr: str

    @property
    def lines(self) -> list[str]:
        """stderr without the progress lines (``[stage] ...``) a CLI prints before failing."""
        return [line for line in self.stderr.splitlines() if not line.startswith("[")]


def ended(capsys: pytest.CaptureFixture[str], run: Callable[[], None]) -> Ended:
    capsys.readouterr()
    with pytest.raises(SystemExit) as caught:
        run()
    return Ended(int(caught.value.code), capsys.readouterr().err)


def glue_pipeline(argv: Sequence[str]) -> Callable[[], None]:
    return lambda: report_errors("macaron_pipelines.glue", lambda: glue_main(list(argv)))


def preprocess_glue_cli(argv: Sequence[str]) -> Callable[[], None]:
    return lambda: run_cli(lambda: preprocess_glue.main([*argv, "--workers", "1"]))


# ------------------------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class Case:
    name: str
    entry: str  # "macaron_pipelines.glue" or "macaron_preprocess.glue"
    argv: Callable[[dict[str, Path], Path], list[str]]  # (inputs, tmp_path) -> argv
    message: Callable[[dict[str, Path], Path], str]  # the start of the one line on stderr
    code: int = 2


def _w(tmp: Path) -> list[str]:
    return ["--workdir", str(tmp / "work")]


CASES = [
    Case(
        "GLUE_DIR mistyped: an error, no download, nothing created",
        "macaron_pipelines.glue",
        lambda i, t: [
            *_w(t),
            "--checkpoint",
            str(i["checkpoint"]),
            "--glue-dir",
            str(t / "mistyped"),
            "--tasks",
            "RTE",
        ],
        lambda i, t: (
            f"macaron_pipelines.glue: error: --glue-dir {t / 'mistyped'}: no such directory (a given GLUE "
            f"directory is only read); download it with --download"
        ),
    ),
    Case(
        "a task missing from an explicit GLUE dir: named, not downloaded into it",
        "macaron_pipelines.glue",
        lambda i, t: [
            *_w(t),
            "--checkpoint",
            str(i["checkpoint"]),
            "--glue-dir",
            str(i["glue"]),
            "--tasks",
            "RTE,CoLA",
        ],
        lambda i, t: (
            f"macaron_pipelines.glue: error: --glue-dir {i['glue']}: missing CoLA/ (CoLA) (a given GLUE "
            "directory is only read); download them with --download"
        ),
    ),
    Case(
        "no checkpoint",
        "macaron_pipelines.glue",
        lambda i, t: [*_w(t), "--glue-dir", str(i["glue"])],
        lambda i, t: "macaron_pipelines.glue: error: give --checkpoint (CHECKPOINT=...)",
    ),
    Case(
        "a missing checkpoint",
        "macaron_pipelines.glue",
        lambda i, t: [*_w(t), "--checkpoint", str(t / "nope.pt"), "--glue-dir", str(i["glue"])],
        lambda i, t: f"macaron_pipelines.glue: error: --checkpoint {t / 'nope.pt'}: no such file",
    ),
    Case(
        "a file that is not a checkpoint",
        "macaron_pipelines.glue",
        lambda i, t: [
            *_w(t),
            "--checkpoint",
            str(i["glue"] / "RTE" / "dev.tsv"),
            "--glue-dir",
            str(i["glue"]),
        ],
        lambda i, t: (
            f"macaron_pipelines.glue: error: --checkpoint {i['glue'] / 'RTE' / 'dev.tsv'}: "
            "not a PyTorch checkpoint"
        ),
    ),
    Case(
        "an unknown task",
        "macaron_pipelines.glue",
        lambda i, t: [*_w(t), "--checkpoint", str(i["checkpoint"]), "--tasks", "RTE,XYZ"],
        lambda i, t: "macaron_pipelines.glue: error: --tasks: unknown ['XYZ']",
    ),
    Case(
        "macaron_preprocess.glue: a mistyped GLUE dir",
        "macaron_preprocess.glue",
        lambda i, t: [
            "--glue-dir",
            str(t / "mistyped"),
            "--dest",
            str(t / "work"),
            "--checkpoint",
            str(i["checkpoint"]),
            "--tasks",
            "RTE",
        ],
        lambda i, t: (
            f"error: --glue-dir {t / 'mistyped'}: no such directory (--glue-dir is only read); "
            "download with --download"
        ),
    ),
    Case(
        "macaron_preprocess.glue: a test file whose last line lost its last fields and newline",
        "macaron_preprocess.glue",
        lambda i, t: [
            "--glue-dir",
            str(t / "GLUE"),
            "--dest",
            str(t / "work"),
            "--checkpoint",
            str(i["checkpoint"]),
            "--tasks",
            "RTE",
        ],
        lambda i, t: f"error: {t / 'GLUE' / 'RTE' / 'test.tsv'}:",
    ),
]


def truncate_last_line(glue: Path, task: str, split_file: str) -> Path:
    path = glue / task / split_file
    data = path.read_bytes()
    path.write_bytes(data[: data.rstrip(b"\n").rfind(b"\t") + 3])  # the last field cut, no newline
    return path


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_table(
    case: Case, inputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if "last line" in case.name:
        shutil.copytree(inputs["glue"], tmp_path / "GLUE")
        truncate_last_line(tmp_path / "GLUE", "RTE", "test.tsv")
    before = snapshot(inputs["glue"])
    argv = case.argv(inputs, tmp_path)
    run = glue_pipeline(argv) if case.entry == "macaron_pipelines.glue" else preprocess_glue_cli(argv)
    result = ended(capsys, run)
    assert result.code == case.code, result.stderr
    assert len(result.lines) == 1 and result.lines[0].startswith(case.message(inputs, tmp_path)), (
        result.stderr
    )
    assert "Traceback" not in result.stderr
    assert snapshot(inputs["glue"]) == before  # the given GLUE directory is read, never written
    assert not (tmp_path / "mistyped").exists()
    work = tmp_path / "work"
    assert not work.exists() or not [p for p in work.rglob("*") if p.is_file() and ".stages" not in p.parts]


def test_a_truncated_last_line_names_file_and_line(inputs: dict[str, Path], tmp_path: Path) -> None:
    glue = tmp_path / "GLUE"
    shutil.copytree(inputs["glue"], glue)
    path = truncate_last_line(glue, "RTE", "test.tsv")
    lines = path.read_bytes().split(b"\n")
    assert len(lines[-1].split(b"\t")) == 3  # still 3 columns: only the missing line end tells
    with pytest.raises(GlueDataError) as error:
        read_split(glue, "RTE", "test")
    expected = f"{path}:{len(lines)}: the last line has no line end, so the file looks truncated"
    assert str(error.value).startswith(expected)
    path.write_bytes(path.read_bytes() + b"\n")  # the same line with its newline is accepted
    assert len(read_split(glue, "RTE", "test").examples) == len(lines) - 1


def test_glue_sh_checks_its_inputs_before_installing(tmp_path: Path) -> None:
    """``bash pipelines/glue.sh`` with a typo: one line, exit 2, in well under a second of work — the
    installer is not run and nothing is created."""
    script = REPO / "pipelines" / "glue.sh"
    base = {
        k: v for k, v in os.environ.items() if k not in ("CHECKPOINT", "GLUE_DIR", "SMALL", "SKIP_INSTALL")
    }
    cases = [
        (
            {"CHECKPOINT": str(tmp_path / "nope.pt")},
            f"glue.sh: error: CHECKPOINT={tmp_path / 'nope.pt'}: no such file",
        ),
        (
            {"SMALL": "1", "GLUE_DIR": str(tmp_path / "mistyped")},
            f"glue.sh: error: GLUE_DIR={tmp_path / 'mistyped'}: no such directory (a given GLUE directory is "
            "only read); download GLUE into it with DOWNLOAD=1, or unset GLUE_DIR",
        ),
        ({}, "glue.sh: error: give CHECKPOINT=model.pt"),
    ]
    for env, message in cases:
        env = {**base, **env, "WORKDIR": str(tmp_path / "work")}
        proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and proc.stderr.splitlines() == [proc.stderr.strip()], proc.stderr
        assert proc.stderr.startswith(message), proc.stderr
        assert proc.stdout == ""  # scripts/install.sh did not run
        assert not (tmp_path / "work").exists() and not (tmp_path / "mistyped").exists()


# ------------------------------------------------------------------------- the malicious checkpoint
def test_the_glue_pipeline_refuses_a_malicious_checkpoint(
    inputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "MARKER"
    evil = write_malicious_checkpoint(tmp_path / "evil.pt", marker)
    argv = [*_w(tmp_path), "--checkpoint", str(evil), "--glue-dir", str(inputs["glue"]), "--tasks", "RTE"]
    result = ended(capsys, glue_pipeline(argv))
    assert result.code == 2 and len(result.lines) == 1, result.stderr
    assert result.lines[0].startswith(
        f"macaron_pipelines.glue: error: refusing to load checkpoint --checkpoint {evil}: "
        "it pickles posix.system"
    )
    assert not marker.exists() and not (tmp_path / "work").exists()


def test_preprocess_glue_refuses_a_malicious_checkpoint(
    inputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "MARKER"
    evil = write_malicious_checkpoint(tmp_path / "evil.pt", marker)
    argv = [
        "--glue-dir",
        str(inputs["glue"]),
        "--dest",
        str(tmp_path / "dest"),
        "--checkpoint",
        str(evil),
        "--tasks",
        "RTE",
    ]
    result = ended(capsys, preprocess_glue_cli(argv))
    assert result.code == 2 and len(result.lines) == 1, result.stderr
    assert result.lines[0].startswith(
        f"error: refusing to load checkpoint --checkpoint {evil}: it pickles posix"
    )
    assert not marker.exists() and not (tmp_path / "dest").exists()


@pytest.mark.slow
def test_glue_sh_refuses_a_malicious_checkpoint(inputs: dict[str, Path], tmp_path: Path) -> None:
    """The issue's reproduction: ``CHECKPOINT=model.pt bash pipelines/glue.sh`` ran the file's code."""
    marker = tmp_path / "MARKER"
    evil = write_malicious_checkpoint(tmp_path / "evil.pt", marker)
    env = dict(
        os.environ,
        CHECKPOINT=str(evil),
        GLUE_DIR=str(inputs["glue"]),
        TASKS="RTE",
        SKIP_INSTALL="1",
        WORKDIR=str(tmp_path / "work"),
        PYTHONWARNINGS="ignore",
    )
    proc = subprocess.run(
        ["bash", str(REPO / "pipelines" / "glue.sh")], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]  # one line
    assert "refusing to load checkpoint --checkpoint" in proc.stderr and "posix.system" in proc.stderr
    assert not marker.exists() and not (tmp_path / "work").exists()


def test_export_refuses_a_malicious_save_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from macaron_fairseq.pretrain.export import export

    marker = tmp_path / "MARKER"
    save = tmp_path / "run"
    (save / "step1").mkdir(parents=True)
    (save / "latest").write_text("step1")
    evil = write_malicious_checkpoint(save / "step1" / "mp_rank_00_model_states.pt", marker)
    out = tmp_path / "model.pt"
    result = ended(
        capsys, lambda: run_cli(lambda: export(save, out, "step1"), "macaron_fairseq.pretrain.export")
    )
    assert result.code == 2 and len(result.lines) == 1, result.stderr
    assert result.lines[0].startswith(
        f"macaron_fairseq.pretrain.export: error: refusing to load checkpoint {evil}"
    )
    assert not marker.exists() and not out.exists()


def test_deepspeeds_own_loads_are_restricted_during_export(tmp_path: Path) -> None:
    """DeepSpeed's ``zero_to_fp32`` asks ``torch.load`` for ``weights_only=False``; the export runs it inside
    ``restricted_loads``, so a malicious ZeRO optimizer-state file is refused too."""
    from deepspeed.utils.zero_to_fp32 import get_fp32_state_dict_from_zero_checkpoint

    from macaron_fairseq.checkpoint_reader import UnsafeCheckpointError, restricted_loads
    from macaron_fairseq.repairs.checkpoint_safety import deepspeed_globals

    marker = tmp_path / "MARKER"
    (tmp_path / "step1").mkdir()
    evil = write_malicious_checkpoint(
        tmp_path / "step1" / "zero_pp_rank_0_mp_rank_00_optim_states.pt", marker
    )
    write_malicious_checkpoint(tmp_path / "step1" / "mp_rank_00_model_states.pt", marker)
    refused = f"refusing to load checkpoint {evil.parent}/.*_states.pt: it pickles posix.system"
    with restricted_loads(deepspeed_globals()), pytest.raises(UnsafeCheckpointError, match=refused):
        get_fp32_state_dict_from_zero_checkpoint(str(tmp_path), tag="step1")
    assert not marker.exists()


# ------------------------------------------------------------------------------- the one error rule
def _raise(error: BaseException) -> None:
    raise error


@pytest.mark.parametrize(
    ("error", "code", "line"),
    [
        (
            GlueDataError("GLUE/RTE/dev.tsv:3: expected 4 columns"),
            2,
            "p: error: GLUE/RTE/dev.tsv:3: expected 4",
        ),
        (UserError("two\nlines"), 2, "p: error: two; lines"),
        (UserError("missing input files:\n  a\n  b"), 2, "p: error: missing input files: a; b"),
        (
            PipelineError("fairseq-train failed with exit status 1 (log: x)"),
            1,
            "p: error: fairseq-train failed",
        ),
        (ReportedError("an internal failure"), 1, "p: error: an internal failure"),
        (Preempted("cell 3 stopped on SIGHUP"), 3, "p: preempted: cell 3 stopped on SIGHUP"),
    ],
)
def test_every_error_is_one_line_with_its_exit_status(
    error: BaseException, code: int, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """What let ``GlueDataError`` escape ``report_errors`` as a traceback: pipelines caught only their own
    exception type. Now one wrapper (``macaron_workflow.cli.run_cli``) ends every command."""
    result = ended(capsys, lambda: report_errors("p", lambda: _raise(error)))
    assert result.code == code and len(result.lines) == 1 and result.lines[0].startswith(line), result.stderr


def test_a_step_that_failed_on_bad_input_makes_the_pipeline_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from macaron_pipelines.commands import Console

    console = Console("t", echo_commands=False)
    for status, expected in ((2, 2), (1, 1), (3, 1)):
        with pytest.raises(PipelineError) as error:
            run_command(["bash", "-c", f"exit {status}"], console)
        assert error.value.exit_status == expected


def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    parser = ArgumentParser(prog="tool")
    parser.add_argument("--n", type=int)
    result = ended(capsys, lambda: parser.parse_args(["--n", "x"]))
    assert result.code == 2 and result.lines == [
        "tool: error: argument --n: invalid int value: 'x' (see --help)"
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["macaron_tools.average_checkpoints", "--inputs", "nope.pt", "--out", "avg.pt"],
            "python -m macaron_tools.average_checkpoints: error: checkpoint files not found: ['nope.pt']",
        ),
        (
            ["macaron_tools.plot_curves", "--log", "nope.log", "--out", "x.png"],
            "python -m macaron_tools.plot_curves: error: cannot read nope.log: No such file or directory",
        ),
        (
            ["macaron_tools.score_bleu", "--gen", "gen.txt", "--metrics", "chrf"],
            "python -m macaron_tools.score_bleu: error: --metrics: unknown ['chrf']; choose from sacrebleu",
        ),
        (
            ["macaron_preprocess.glue", "--glue-dir", "GLUE"],
            "python -m macaron_preprocess.glue: error: the following arguments",
        ),
    ],
)
def test_the_tools_follow_the_rule(argv: list[str], message: str, tmp_path: Path) -> None:
    """Before: the tools exited 1 for a user error (average_checkpoints, plot_curves, score_bleu)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONWARNINGS="ignore")
    command = [sys.executable, "-m", *argv]
    proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(message), proc.stderr
    assert not any(tmp_path.iterdir())  # nothing written
