"""pipelines/gpu_check/, the one-command GPU check (macaron-gpu-check): everything a CPU can exercise (the
plan and its DeepSpeed configs against the trainer's own checks, peak/MFU arithmetic, the resume comparison,
the table, the atomic results file, the missing-packages line, the tests row without a checkout, the no-GPU
refusal through the real command) and a slow smoke test that runs the real trainer (save + resume) and the
Macaron vs Transformer part on the CPU."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

from macaron_pipelines.gpu_check import __main__ as check
from macaron_pipelines.gpu_check import device, report, resume, runs, smoke, suite
from macaron_pipelines.gpu_check import runs as gpu_runs
from macaron_pipelines.gpu_check import wheels as gpu_wheels

CUDA = device.Device("cuda", "NVIDIA A100-SXM4-80GB", 2, True)
CPU = device.Device("cpu", "CPU", 1, True)


def test_peak_table_takes_the_longest_matching_name_and_says_why_there_is_none() -> None:
    assert device.peak_tflops("NVIDIA A100-SXM4-80GB") == (312.0, "A100 data sheet")
    assert device.peak_tflops("NVIDIA A10")[0] == 125.0  # not A100's
    assert (
        device.peak_tflops("NVIDIA H100 PCIe")[0] == 756.0
        and device.peak_tflops("NVIDIA H100 80GB HBM3")[0] == 989.0
    )
    peak, why = device.peak_tflops("NVIDIA GeForce GTX 1080")
    assert peak is None and "unknown peak for 'NVIDIA GeForce GTX 1080'" in why and "--peak-tflops" in why
    assert device.peak_tflops("NVIDIA GeForce GTX 1080", 8.9) == (8.9, "--peak-tflops")
    assert device.peak_tflops("CPU")[0] is None


def records(n: int, seconds: float = 0.5, flops: float = 1e12) -> list[dict]:
    def one(s: int) -> dict:
        time = seconds if s > 1 else 9.0  # the first step is slow (warm-up)
        speed = {"seconds": time, "tokens": 4096, "pairs": 32, "model_flops": flops}
        return {"step": s, **speed, "mlm_loss": 10.0 - s / 10, "nsp_loss": 0.7, "lr": 1e-4 * s}

    return [one(s) for s in range(1, n + 1)]


def test_throughput_and_mfu_skip_the_warmup_steps() -> None:
    out = smoke.throughput(records(11), warmup=1, peak=100.0, devices=2)
    assert out["timed_steps"] == 10
    assert out["tokens_per_second"] == pytest.approx(4096 / 0.5)
    assert out["samples_per_second"] == pytest.approx(32 / 0.5)
    assert out["mfu"] == pytest.approx(1e12 / 0.5 / (100e12 * 2))  # 1 %
    assert smoke.throughput(records(11), warmup=1, peak=None, devices=1)["mfu"] is None


def test_resume_comparison_is_exact_tolerant_to_1e_6_and_names_the_first_mismatch() -> None:
    whole = records(4)
    resumed = [dict(r) for r in whole[2:]]
    assert resume.compare_resume(whole, resumed) == {
        "ok": True,
        "steps": [3, 4],
        "max_rel_diff": 0.0,
        "exact": True,
        "mismatch": None,
    }
    resumed[0]["mlm_loss"] *= 1 + 1e-8
    close = resume.compare_resume(whole, resumed)
    assert close["ok"] and not close["exact"] and 0 < close["max_rel_diff"] < 1e-6
    resumed[1]["nsp_loss"] = 0.8
    bad = resume.compare_resume(whole, resumed)
    assert not bad["ok"] and bad["mismatch"].startswith("step 4 nsp_loss: 0.7 uninterrupted vs 0.8 resumed")
    assert not resume.compare_resume(whole, [{**whole[0], "step": 9}])["ok"]
    assert not resume.compare_resume(whole, [])["ok"]


def test_plan_covers_both_precisions_at_zero_1_and_2_both_archs_lamb_and_two_resumes() -> None:
    runs = gpu_runs.plan(CUDA, "base", 200, 20)
    assert not any(r.skip for r in runs)
    assert {(r.precision, r.zero) for r in runs if r.optimizer == "adamw"} == {
        ("bf16", 1),
        ("bf16", 2),
        ("fp16", 1),
        ("fp16", 2),
    }
    assert {r.arch for r in runs} == {"vanilla_bert_base", "macaron_bert_base"}
    assert [r.optimizer for r in runs].count("lamb") == 1
    resumed = [r for r in runs if r.resume_at]
    assert {r.precision for r in resumed} == {"bf16", "fp16"} and len({r.arch for r in resumed}) == 2
    cpu = {r.name: r.skip for r in gpu_runs.plan(CPU, "tiny", 4, 2)}
    assert cpu["vanilla-bf16-z1"] == "" and cpu["macaron-bf16-z2"] == ""
    assert all("needs CUDA" in cpu[n] for n in ("vanilla-fp16-z2", "macaron-fp16-z1", "macaron-lamb"))
    v100 = gpu_runs.plan(device.Device("cuda", "Tesla V100-SXM2-16GB", 1, False), "base", 200, 20)
    assert all(("no bf16" in r.skip) == (r.precision == "bf16") for r in v100)


def test_every_planned_config_passes_the_trainers_checks_where_it_runs() -> None:
    """What the GPU would refuse is caught here: each config through the trainer's own precision
    completion, batch and support checks (for CUDA; the CPU rows must be the ones the CPU accepts)."""
    from macaron_fairseq.pretrain.ds_config import UserError, check_supported, complete_precision

    path = Path("planned.json")
    for run in gpu_runs.plan(CUDA, "base", 200, 20):
        config = gpu_runs.run_config(run, micro_batch=32, accumulation=2, world_size=2)
        assert config["train_batch_size"] == 128 and config["gradient_accumulation_steps"] == 2
        assert config["scheduler"]["params"]["total_num_steps"] == 200
        assert config["scheduler"]["params"]["warmup_num_steps"] == 20
        done, _ = complete_precision(config, path)
        check_supported(done, path, cuda=True)
        if run.optimizer == "lamb":
            assert config["optimizer"]["type"] == "Lamb" and config["zero_optimization"]["stage"] == 0
            assert config["torch_autocast"]["dtype"] == "float16"
        else:
            assert config["zero_optimization"]["stage"] == run.zero
            assert config[run.precision]["enabled"] and config["data_types"]["grad_accum_dtype"] == "fp32"
            assert {"bf16", "fp16"} - {run.precision} & config.keys() == set()
        if gpu_runs.plan(CPU, "base", 200, 20)[
            [r.name for r in gpu_runs.plan(CUDA, "base", 200, 20)].index(run.name)
        ].skip:
            with pytest.raises(UserError):
                check_supported(done, path, cuda=False)
        else:
            check_supported(done, path, cuda=False)


def test_the_table_and_the_results_file(tmp_path: Path) -> None:
    rows = [
        report.Row("tests", "pytest -m gpu", "ok", "3 passed", seconds=12.0),
        report.Row(
            "pretrain", "vanilla_bert_base bf16 ZeRO-1 AdamW", "ok", "200 steps", 41234.5, 0.382, 70.0
        ),
        report.Row(
            "pretrain", "macaron_bert_base fp16 ZeRO-1 AdamW", "ok", "MFU n/a: unknown", 40000.0, None, 60.0
        ),
        report.Row("resume", "macaron_bert_base fp16 ZeRO-1 AdamW", "FAIL", "step 21 mlm_loss: 1 vs 2"),
        report.Row("pretrain", "macaron_bert_base autocast-fp16 ZeRO-0 LAMB", "skip", "needs CUDA"),
    ]
    text = report.render(rows, "GPU check: header")
    lines = text.splitlines()
    assert lines[0] == "GPU check: header" and lines[1].split()[:6] == [
        "part",
        "case",
        "result",
        "tokens/s",
        "MFU",
        "time",
    ]
    assert "41,234" in lines[4] and "38.2%" in lines[4] and "70s" in lines[4]
    assert " n/a " in lines[5] and "FAIL" in lines[6] and "skip" in lines[7]
    assert lines[-1] == "5 rows: 3 ok, 1 failed, 1 skipped"
    out = tmp_path / "results" / "gpu_check.json"
    context = {"device": {"name": "x"}}
    report.write_json(out, rows, context, report.machine_info(), "python -m macaron_pipelines.gpu_check")
    payload = json.loads(out.read_text())
    assert payload["command"].startswith("python -m macaron_pipelines.gpu_check")
    assert set(payload) == {"command", "commit", "machine", "results"} and payload["commit"]
    assert report.RESULTS_FILE == REPO / "docs" / "results" / "gpu_check.json"  # a checkout's default
    assert [r["status"] for r in payload["results"]["rows"]] == ["ok", "ok", "ok", "FAIL", "skip"]
    assert payload["results"]["rows"][1]["mfu"] == 0.382 and payload["results"]["device"] == {"name": "x"}
    assert sorted(p.name for p in out.parent.iterdir()) == ["gpu_check.json"]  # no temporary left


def test_pytest_summary_counts() -> None:
    out = "....\n3 passed, 1 skipped, 2 errors, 812 deselected in 40.1s\n"
    assert suite.pytest_counts(out) == {"passed": 3, "skipped": 1, "errors": 2, "deselected": 812}
    assert suite.pytest_counts("") == {}


def test_no_test_collected_is_a_failure(monkeypatch) -> None:
    seen = []

    def fake_run(command, **kwargs):
        seen.append(command)
        return subprocess.CompletedProcess(command, 5, "\n812 deselected in 3.0s\n", "")

    monkeypatch.setattr(suite.subprocess, "run", fake_run)
    (row,) = suite.part_tests(CUDA, 1)
    assert row.status == "FAIL" and row.detail.startswith("no test collected (pytest exit 5)")
    assert seen[0][1:6] == ["-m", "pytest", "-m", "gpu", "-q"] and seen[0][-1] == "tests"


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.macaron_workflow.test_collectives"
 name="test_under_nccl_every_path_reduces_on_the_gpu"/>
<testcase classname="tests.macaron_fairseq.modules.test_fused_half_step_gpu"
 name="test_fused_half_step_equals_the_plain_one_on_the_gpu[encoder-bf16]"/>
<testcase classname="tests.macaron_fairseq.modules.test_fused_half_step_gpu"
 name="test_fused_half_step_equals_the_plain_one_on_the_gpu[decoder-fp16]">
<failure message="AssertionError: 0.1"/></testcase>
<testcase classname="tests.macaron_fairseq.test_fairseq_train_gpu"
 name="test_fairseq_train_in_half_precision_with_dt_fixup[--fp16]">
<skipped message="needs a CUDA GPU"/></testcase>
<testcase classname="tests.macaron_fairseq.test_other_gpu" name="test_new"/>
</testsuite></testsuites>"""


def test_one_row_per_gpu_test_and_a_failure_for_each_that_did_not_run(monkeypatch) -> None:
    def fake_run(command, **kwargs):
        junit = next(arg for arg in command if arg.startswith("--junitxml=")).split("=", 1)[1]
        Path(junit).write_text(JUNIT)
        return subprocess.CompletedProcess(command, 1, "1 failed, 2 passed, 1 skipped in 9.9s\n", "")

    monkeypatch.setattr(suite.subprocess, "run", fake_run)
    rows = {row.case: row for row in suite.part_tests(CUDA, 1)}
    what = list(suite.GPU_TESTS.values())
    assert rows[what[0]].status == "ok" and rows[what[0]].detail == "1 passed"
    assert rows[what[1]].status == "FAIL"
    failed = "test_fused_half_step_equals_the_plain_one_on_the_gpu[decoder-fp16]: AssertionError: 0.1"
    assert rows[what[1]].detail == f"1/2 failed; {failed}"
    assert rows[what[2]].status == "skip" and rows[what[2]].detail == "skipped: needs a CUDA GPU"
    for missing in what[3:]:
        assert rows[missing].status == "FAIL" and rows[missing].detail.startswith("not collected")
    assert rows["tests/macaron_fairseq/test_other_gpu.py::test_new"].status == "ok"  # unlisted: its own row


@pytest.mark.slow  # collects the whole suite
def test_on_a_cpu_every_listed_gpu_test_is_collected_and_skipped_saying_why() -> None:
    """The real ``pytest -m gpu`` here: each entry of suite.GPU_TESTS has tests, all skipped for want of a
    GPU (the reason in the row), and no gpu test is left out of the table."""
    rows = suite.part_tests(CPU, 1)
    assert [row.case for row in rows] == list(suite.GPU_TESTS.values())
    assert all(row.status == "skip" and row.detail == "skipped: needs a CUDA GPU" for row in rows), rows


def test_the_help_lists_what_the_check_runs() -> None:
    proc = subprocess.run(["macaron-gpu-check", "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for what in suite.GPU_TESTS.values():
        assert what in proc.stdout
    for run in runs.plan(CUDA, "base", 200, 20):
        assert f"{run.name}: {run.arch}, {run.precision}, ZeRO-{run.zero}" in proc.stdout
    assert proc.stdout.count("vs a rerun's differences") == 2
    assert "speed: Macaron vs Transformer" in proc.stdout


def test_the_resume_tolerance_is_measured_against_a_rerun(monkeypatch, tmp_path: Path) -> None:
    """On a GPU two identical runs differ (non-deterministic kernels): the resumed run is held to what a rerun
    of the uninterrupted run differs by (×10), never looser than needed (1e-6 when the rerun is exact); a
    bitwise-equal resume passes without the rerun."""
    whole = [
        {"step": s, "mlm_loss": 5.0 - s / 10, "nsp_loss": 0.7, "lr": 1e-4, "tokens": 100.0}
        for s in (1, 2, 3, 4)
    ]

    def shifted(records, rel):
        return [{**r, "mlm_loss": r["mlm_loss"] * (1 + rel)} if r["step"] > 2 else dict(r) for r in records]

    def fake_train(run, corpus, work, tag, max_update, *rest):
        fake_train.tags.append(tag)
        return {"split": shifted(whole, fake_train.resumed), "rerun": shifted(whole, fake_train.rerun)}[tag][
            :max_update
        ], tmp_path

    monkeypatch.setattr(resume, "train", fake_train)
    run = runs.Run("x", "macaron_bert_base", "bf16", 1, "adamw", 4, resume_at=2)
    for rerun, resumed, status in (
        (0.0, 0.0, "ok"),
        (0.0, 1e-5, "FAIL"),
        (1e-4, 5e-4, "ok"),
        (1e-4, 1e-2, "FAIL"),
    ):
        fake_train.rerun, fake_train.resumed, fake_train.tags = rerun, resumed, []
        row = resume.resume_row(run, whole, tmp_path, tmp_path, None, CUDA, None)
        assert row.status == status, (rerun, resumed, row.detail)
        assert ("rerun" in fake_train.tags) is (resumed != 0.0)  # an exact resume needs no rerun
        assert row.data["tolerance"] == pytest.approx(resume.tolerance(rerun))
    assert resume.tolerance(0.0) == 1e-6 and resume.tolerance(1e-4) == pytest.approx(1e-3)


def test_without_a_checkout_the_tests_row_is_skipped_saying_why(monkeypatch, tmp_path: Path) -> None:
    """An installed wheel has no tests: the row says so instead of running pytest."""
    monkeypatch.setattr(suite, "REPO", tmp_path / "site-packages")
    monkeypatch.setattr(suite.subprocess, "run", lambda *a, **k: pytest.fail("pytest ran without tests"))
    (row,) = suite.part_tests(CUDA, 1)
    assert row.status == "skip" and "is not a checkout of the project: installed from a wheel" in row.detail


def test_missing_packages_are_one_line_with_the_install_command(monkeypatch, capsys) -> None:
    monkeypatch.setattr(check, "probe_device", lambda allow_cpu: CPU)
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: None if name in ("fairseq", "deepspeed") else real(name)
    )
    assert check.main(["--allow-cpu", "--json", ""]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ": error: missing packages: fairseq, deepspeed; " in err.splitlines()[0]
    assert (
        "pip install --no-deps --no-index --find-links wheels/gpu ve-fairseq==0.12.3 deepspeed==0.19.8" in err
    )
    assert "bash scripts/gpu_wheels.sh" in err


def test_the_wheel_pins_are_the_locks_versions(tmp_path: Path) -> None:
    """The pins are the lock's (constraints.txt, which the installer and CI install from), never what the
    resolver picked here; the gpu_check's copy is the checkout's lock itself (a link), and a lock without
    one of the packages is one clear error."""
    lock_lines = (REPO / "constraints.txt").read_text().splitlines()
    assert gpu_wheels.LOCK.resolve() == (REPO / "constraints.txt").resolve()
    assert [dist for dist, _, _ in gpu_wheels.WHEELS] == [dist for dist, _ in gpu_wheels.PACKAGES]
    for dist, version, _ in gpu_wheels.WHEELS:
        assert f"{dist.lower().replace('_', '-')}=={version}" in lock_lines, dist
    command = [sys.executable, "-m", "macaron_pipelines.gpu_check", "--wheels"]
    proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert proc.stdout.split() == [f"{d}=={v}" for d, v, _ in gpu_wheels.WHEELS]
    other = tmp_path / "constraints.txt"
    other.write_text("# a lock\nHydra_Core==9.9\npydantic-core==1.0  # a comment\n")
    assert gpu_wheels.pinned((("hydra-core", "hydra"), ("pydantic_core", "pydantic_core")), other) == (
        ("hydra-core", "9.9", "hydra"),
        ("pydantic_core", "1.0", "pydantic_core"),
    )
    message = f"{other}: no version of deepspeed, einops (python scripts/lock.py --write)"
    with pytest.raises(RuntimeError, match=f"^{re.escape(message)}$"):
        gpu_wheels.pinned((("deepspeed", "deepspeed"), ("hydra-core", "hydra"), ("einops", "einops")), other)


@pytest.mark.slow  # runs the real command in a fresh interpreter: 4-10 s (out of --quick)
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_without_a_gpu_the_command_exits_2_with_one_line() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    command = [sys.executable, "-m", "macaron_pipelines.gpu_check"]
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == "" and proc.stderr.count("\n") == 1
    prog = "python -m macaron_pipelines.gpu_check"  # the PROG: error: form of every command (#41)
    assert proc.stderr.startswith(f"{prog}: error: no CUDA GPU here") and "--allow-cpu" in proc.stderr


@pytest.mark.slow
def test_cpu_smoke_runs_the_real_trainer_saves_resumes_and_times_both_models(tmp_path: Path) -> None:
    out = tmp_path / "gpu_check.json"
    command = [
        sys.executable,
        "-m",
        "macaron_pipelines.gpu_check",
        "--allow-cpu",
        "--arch",
        "tiny",
        "--steps",
        "2",
        "--resume-at",
        "1",
        "--corpus-mb",
        "0.2",
        "--vocab",
        "300",
        "--parts",
        "pretrain",
        "speed",
        "--only",
        "vanilla-bf16",
        "--threads",
        "1",
        "--json",
        str(out),
    ]
    env = dict(os.environ, PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1")
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = json.loads(out.read_text())["results"]["rows"]
    by = {(r["part"], r["case"].split(":")[-1].strip()): r for r in rows}
    run = by[("pretrain", "vanilla_bert_tiny bf16 ZeRO-1 AdamW")]
    assert run["status"] == "ok" and run["tokens_per_second"] > 0 and run["mfu"] is None
    assert "2 steps" in run["detail"] and "saved step2" in run["detail"]
    resume = by[("resume", "vanilla_bert_tiny bf16 ZeRO-1 AdamW")]
    assert resume["status"] == "ok" and resume["data"]["steps"] == [2] and resume["data"]["ok"]
    assert resume["detail"].endswith("saved at 1, resumed to 2: exact (bitwise; no rerun needed)")
    speed = [r for r in rows if r["part"] == "speed"]
    assert [r["case"].split(": ")[1] for r in speed] == ["transformer", "macaron:plain", "macaron:fused"] * 2
    assert all(r["status"] == "ok" and r["data"]["median_s"] > 0 for r in speed)
    assert "3 rows" not in proc.stdout and "0 failed" in proc.stdout and "part  " in proc.stdout


FAKE_PYTHON = """#!/usr/bin/env bash
# pip is logged and faked; anything else is the real interpreter
if [ "$1 $2" = "-m pip" ]; then
  echo "$@" >> "$LOG"
  dest=""; prev=""; for a in "$@"; do [ "$prev" = "-d" ] || [ "$prev" = "-w" ] && dest="$a"; prev="$a"; done
  pin="${@: -1}"; name="${pin%%==*}"
  case "$*" in
    *"--only-binary=:all:"*) [ "$name" = "$NO_WHEEL" ] && exit 1; touch "$dest/${name}-1-py3-none-any.whl" ;;
    *"--no-binary=:all:"*) touch "$dest/${name}-1.tar.gz" ;;
    *" wheel "*) mkdir -p "$dest"; touch "$dest/${NO_WHEEL}-1-${BUILT_TAG}.whl" ;;
  esac
  exit 0
fi
[ "$1" = "--version" ] && { echo "Python 3.11.7"; exit 0; }
exec "$REAL_PYTHON" "$@"
"""


def test_gpu_wheels_downloads_cp312_wheels_of_the_pins_and_builds_only_pure_or_cp312_ones(
    tmp_path: Path,
) -> None:
    fake = tmp_path / "python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    log = tmp_path / "pip.log"
    env = dict(os.environ, PYTHON=str(fake), REAL_PYTHON=sys.executable, LOG=str(log), NO_WHEEL="deepspeed")

    def wheels(dest: Path, tag: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", "scripts/gpu_wheels.sh", str(dest)],
            cwd=REPO,
            capture_output=True,
            text=True,
            env=dict(env, BUILT_TAG=tag),
        )

    proc = wheels(tmp_path / "ok", "py3-none-any")
    assert proc.returncode == 0, proc.stderr
    downloads = [line for line in log.read_text().splitlines() if " download " in line]
    binary = [line for line in downloads if "--only-binary=:all:" in line]
    assert [line.split()[-1] for line in binary] == [f"{d}=={v}" for d, v, _ in gpu_wheels.WHEELS]
    assert all(
        "--no-deps" in line and "--python-version 3.12" in line and "--abi cp312" in line for line in binary
    )
    assert "deepspeed==0.19.8: built from its sdist" in proc.stdout
    built = sorted(p.name for p in (tmp_path / "ok").iterdir())
    assert "deepspeed-1-py3-none-any.whl" in built and len(built) == len(gpu_wheels.WHEELS)
    bad = wheels(tmp_path / "bad", "cp311-cp311-linux_x86_64")
    assert (
        bad.returncode == 1
        and "not a wheel Python 3.12 can install: rerun with PYTHON=python3.12" in bad.stderr
    )
