"""``python -m macaron_tools.train_preemptible``: fairseq-train that saves, exits 3 and resumes on a signal
(no Slurm
here; ``tests/slurm/test_translate_sbatch.py`` runs it under a real one)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import REPO, TINY

from macaron_tools.train_preemptible import split_signal_option
from macaron_tools.train_progress import parse_record
from macaron_workflow.preemption import PREEMPTED_EXIT

UPDATES = 60


def test_the_signal_option_is_taken_out_of_the_fairseq_arguments() -> None:
    assert split_signal_option(["data", "--lr", "1"]) == ("HUP", ["data", "--lr", "1"])
    assert split_signal_option(["data", "--preemption-signal", "USR2", "--lr", "1"]) == (
        "USR2",
        ["data", "--lr", "1"],
    )
    assert split_signal_option(["--preemption-signal=TERM", "data"]) == ("TERM", ["data"])


def test_an_unknown_signal_is_refused_before_fairseq_starts() -> None:
    argv = [sys.executable, "-m", "macaron_tools.train_preemptible", "--preemption-signal", "NOPE", "x"]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "'NOPE': not a signal name" in proc.stderr


IMPORTS = """
import argparse, logging, sys
from macaron_tools.train_preemptible import import_plugin_first
import_plugin_first(sys.argv[1:])
first = [name in sys.modules for name in ("macaron_fairseq", "deepspeed", "sklearn")]
import fairseq_cli.train
from fairseq import utils
from fairseq.models import ARCH_MODEL_REGISTRY
utils.import_user_module(argparse.Namespace(user_dir=sys.argv[-1]))  # accepts it as imported
print(*first, "deepspeed" in sys.modules, "macaron_base" in ARCH_MODEL_REGISTRY)
(handler,) = logging.getLogger().handlers  # fairseq_cli.train's logging
print(handler.stream.name, handler.formatter.datefmt, handler.formatter._fmt, logging.getLogger().level)
"""


@pytest.mark.slow  # three interpreters importing fairseq, one with DeepSpeed and scikit-learn (~20 s)
def test_the_plugin_is_imported_before_fairseq_as_fairseq_would_import_it(tmp_path: Path) -> None:
    """Imported first, the plugin keeps fairseq from importing DeepSpeed and scikit-learn, by the path given
    or (a relative name) beside fairseq's package, where scripts/install.sh links it; fairseq then takes it
    as imported. Another plugin is left to fairseq."""

    def imported(user_dir: str) -> list[str]:
        argv = [sys.executable, "-c", IMPORTS, "data", "--user-dir", user_dir]
        proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.splitlines()[-2:]  # after DeepSpeed's accelerator line, when it is imported

    other = tmp_path / "other_plugin"
    other.mkdir()
    (other / "__init__.py").write_text("")
    left_to_fairseq, logging_of_fairseq_train = imported(str(other))
    assert left_to_fairseq == "False False False True False"
    assert (
        logging_of_fairseq_train
        == "<stdout> %Y-%m-%d %H:%M:%S %(asctime)s | %(levelname)s | %(name)s | %(message)s 20"
    )
    for user_dir in (str(REPO / "macaron_fairseq"), "macaron_fairseq"):
        assert imported(user_dir) == ["True False False False True", logging_of_fairseq_train]


def command(data: Path, save_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "macaron_tools.train_preemptible",
        str(data),
        "--user-dir",
        str(REPO / "macaron_fairseq"),
        "--task",
        "translation",
        "-s",
        "src",
        "-t",
        "tgt",
        "--arch",
        "macaron_small",
        *TINY,
        "--optimizer",
        "adam",
        "--lr",
        "1e-3",
        "--max-update",
        str(UPDATES),
        "--batch-size",
        "8",
        "--dropout",
        "0.1",
        "--criterion",
        "label_smoothed_cross_entropy",
        "--label-smoothing",
        "0.1",
        "--save-dir",
        str(save_dir),
        "--cpu",
        "--num-workers",
        "1",
        "--disable-validation",
        "--seed",
        "1",
        "--log-format",
        "json",
        "--log-interval",
        "1",
        "--no-epoch-checkpoints",
    ]


def env() -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    return dict(clean, PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1", PYTHONPATH=str(REPO))


def losses(output: str) -> dict[int, float]:
    records = (parse_record(line) for line in output.splitlines())
    inner = [r for tag, r in filter(None, records) if tag == "train_inner"]
    return {int(r["num_updates"]): float(r["loss"]) for r in inner}


@pytest.mark.slow  # three tiny fairseq-train runs (~30 s)
def test_a_signal_saves_exits_3_and_the_rerun_resumes_to_the_same_losses(
    tiny_data_bin: Path, tmp_path: Path
) -> None:
    whole = subprocess.run(
        command(tiny_data_bin, tmp_path / "whole"),
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert whole.returncode == 0, whole.stderr[-3000:]
    reference = losses(whole.stdout)
    assert sorted(reference) == list(range(1, UPDATES + 1))

    save = tmp_path / "preempted"
    proc = subprocess.Popen(
        command(tiny_data_bin, save),
        cwd=REPO,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    first: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:  # the signal once the run is past update 10
        first.append(line)
        if max(losses(line) or {0: 0}) >= 10:
            proc.send_signal(signal.SIGHUP)
            break
    first.append(proc.stdout.read())
    assert proc.wait(timeout=300) == PREEMPTED_EXIT, "".join(first)[-3000:]
    output = "".join(first)
    saved = int(output.split("SIGHUP received: checkpoint saved at update ")[1].split()[0])
    assert 10 <= saved < UPDATES and (save / "checkpoint_last.pt").is_file()
    assert "rerun the same command to resume" in output

    started = time.monotonic()
    rerun = subprocess.run(
        command(tiny_data_bin, save), cwd=REPO, env=env(), capture_output=True, text=True, timeout=600
    )
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert f"resumed from {save / 'checkpoint_last.pt'} at update {saved}" in rerun.stdout
    resumed = losses(rerun.stdout)
    assert sorted(resumed) == list(range(saved + 1, UPDATES + 1)), time.monotonic() - started
    assert [resumed[u] for u in sorted(resumed)] == pytest.approx(
        [reference[u] for u in sorted(resumed)], rel=1e-6
    )


def test_fairseq_copies_a_checkpoint_to_its_other_names_atomically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fairseq copies checkpoint_E_U.pt to checkpoint_last.pt in place; a job killed in that copy left a
    truncated checkpoint_last.pt. Under train_preemptible the old file stays whole until the new one is."""
    import shutil

    from fairseq.file_io import PathManager

    from macaron_tools.train_preemptible import PreemptibleTraining

    original = PathManager.copy
    src, dst = tmp_path / "checkpoint_1_20.pt", tmp_path / "checkpoint_last.pt"
    src.write_bytes(b"new" * 1000)
    dst.write_bytes(b"old")

    def killed_in_the_copy(a: str, b: str) -> str:
        Path(b).write_bytes(b"ne")
        raise OSError("killed in the middle of the copy")

    training = PreemptibleTraining("HUP")
    with training.installed():
        with monkeypatch.context() as patch:
            patch.setattr(shutil, "copyfile", killed_in_the_copy)
            with pytest.raises(OSError, match="killed in the middle"):
                PathManager.copy(str(src), str(dst), overwrite=True)
        assert dst.read_bytes() == b"old"
        assert PathManager.copy(str(src), str(dst), overwrite=True)
        assert dst.read_bytes() == src.read_bytes()
    assert PathManager.copy is original


@pytest.mark.slow  # runs the real command in subprocesses: 5-15 s here (out of --quick)
def test_a_refused_restore_file_leaves_no_empty_save_dir(tiny_data_bin: Path, tmp_path: Path) -> None:
    """#41: ``--restore-file PAYLOAD`` was refused in one line but left the ``--save-dir`` fairseq had
    created, empty. The payload never runs; nothing is left."""
    from helpers import write_malicious_checkpoint

    marker = tmp_path / "PWNED"
    payload = write_malicious_checkpoint(tmp_path / "payload.pt", marker)
    save_dir = tmp_path / "new" / "run"
    argv = [*command(tiny_data_bin, save_dir), "--restore-file", str(payload)]
    proc = subprocess.run(argv, cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=600)
    errors = [line for line in proc.stderr.splitlines() if ": error: " in line]
    assert proc.returncode == 2 and len(errors) == 1 and "posix.system" in errors[0], proc.stderr[-3000:]
    assert not marker.exists()
    assert not (tmp_path / "new").exists()
