"""One-command GPU check: does the pre-training code work on this machine's CUDA GPU(s), and how fast?

    bash scripts/gpu_check.sh                  # = python -m benchmarks.gpu_check
    python -m benchmarks.gpu_check --allow-cpu --arch tiny --steps 3 --corpus-mb 0.3 --vocab 300   # CPU smoke

On a machine with one or more CUDA GPUs it runs (default sizes: well under 10 minutes on one A100/H100):

1. ``tests``: ``pytest -m gpu`` (the tests that need a GPU), result counts;
2. ``pretrain``: ``--steps`` (200) steps of ``vanilla_bert_base`` and ``macaron_bert_base`` through the real
   trainer (``torchrun --nproc_per_node <GPUs> -m macaron_fairseq.pretrain``) on a generated corpus, covering
   bf16 and fp16 each with ZeRO-1 and ZeRO-2 (AdamW, ``configs/deepspeed/bert_phase1.json`` with fp32
   gradient accumulation), and DeepSpeed's LAMB (``configs/deepspeed/lamb_64k.json``: ``torch_autocast``
   fp16, ZeRO-0); tokens/s and MFU (model FLOPs of :class:`macaron_fairseq.pretrain.flops.BertFlops`, as the
   trainer logs them) against the GPU's dense bf16/fp16 peak (:data:`PEAK_TFLOPS`, or ``--peak-tflops``;
   an unknown device → MFU "n/a" with the reason);
3. ``resume``: a run saved at step ``--resume-at`` and resumed to ``2 × --resume-at`` must log the losses and
   learning rates of the uninterrupted run (same config; within a relative 1e-6, "exact" when bitwise equal);
4. ``speed``: the Macaron vs Transformer training step and beam-4 search on the GPU for each
   ``--macaron-ffn-impl`` (the functions of ``benchmarks/speed_macaron_vs_transformer.py``, timed with CUDA
   synchronisation).

It prints one table and writes ``docs/results/gpu_check.json`` (``--json``) atomically. Exit status: 0 all
rows ok or skipped, 1 a row failed, 2 no CUDA GPU (one line; ``--allow-cpu`` runs what a CPU can: bf16 on CPU
is DeepSpeed's, fp16 and LAMB rows are skipped) or missing packages (one line naming them and the ``pip``
command that installs them from the wheels ``bash scripts/gpu_wheels.sh`` downloads).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.results_file import RESULTS_DIR, machine_info, write_results

REPO = Path(__file__).resolve().parents[1]

CONFIGS = REPO / "configs" / "deepspeed"
WHEEL_DIR = "wheels/gpu"

#: (distribution, version, module) the check imports that a GPU machine (Python 3.12, torch + CUDA,
#: transformers, sentencepiece, sacrebleu, scipy, scikit-learn, tensorboard; no network) may lack: fairseq,
#: DeepSpeed and their runtime dependencies. The versions are the project environment's (a test checks).
WHEELS: tuple[tuple[str, str, str], ...] = (
    ("ve-fairseq", "0.12.3", "fairseq"),
    ("hydra-core", "1.3.8", "hydra"),
    ("omegaconf", "2.3.1", "omegaconf"),
    ("antlr4-python3-runtime", "4.9.3", "antlr4"),
    ("bitarray", "3.12.3", "bitarray"),
    ("sacremoses", "0.2.0", "sacremoses"),
    ("deepspeed", "0.19.8", "deepspeed"),
    ("hjson", "3.1.0", "hjson"),
    ("ninja", "1.13.2", "ninja"),
    ("py-cpuinfo", "9.0.0", "cpuinfo"),
    ("msgpack", "1.2.4", "msgpack"),
    ("einops", "0.8.2", "einops"),
    ("pydantic", "2.13.4", "pydantic"),
    ("pydantic_core", "2.46.4", "pydantic_core"),
)

#: dense bf16/fp16 tensor-core peak TFLOP/s (fp32 accumulation, no sparsity) by a substring of
#: ``torch.cuda.get_device_name()``; the longest matching key wins ("A100" before "A10"). Vendor data sheets.
PEAK_TFLOPS: dict[str, float] = {
    "H100 PCIe": 756.0,
    "H100": 989.0,
    "H200": 989.0,
    "GH200": 989.0,
    "B200": 2250.0,
    "A100": 312.0,
    "A800": 312.0,
    "A10G": 70.0,
    "A10": 125.0,
    "A30": 165.0,
    "L40S": 362.0,
    "L40": 181.0,
    "L4": 121.0,
    "RTX 6000 Ada": 364.0,
    "RTX A6000": 155.0,
    "RTX 4090": 165.0,
    "RTX 3090": 71.0,
    "V100": 125.0,
    "T4": 65.0,
}


class CheckError(Exception):
    """A usage or environment problem: one line, exit 2."""


# ------------------------------------------------------------------------------------------ environment
def missing_packages(find_spec: Callable[[str], Any] | None = None) -> list[tuple[str, str, str]]:
    """The :data:`WHEELS` entries whose module cannot be imported here."""
    find = find_spec or importlib.util.find_spec
    return [entry for entry in WHEELS if find(entry[2]) is None]


def install_command(missing: Sequence[tuple[str, str, str]]) -> str:
    pins = " ".join(f"{dist}=={version}" for dist, version, _ in missing)
    return f"pip install --no-deps --no-index --find-links {WHEEL_DIR} {pins}"


def missing_message(missing: Sequence[tuple[str, str, str]]) -> str:
    names = ", ".join(module for _, _, module in missing)
    return (
        f"gpu_check: missing packages: {names}; install them from the wheels carried with the tree: "
        f"{install_command(missing)} (make {WHEEL_DIR}/ with `bash scripts/gpu_wheels.sh` on a machine with "
        "network)"
    )


@dataclass(frozen=True)
class Device:
    """What the check runs on."""

    kind: str  # "cuda" or "cpu"
    name: str
    count: int
    bf16: bool


def probe_device(allow_cpu: bool) -> Device:
    """The CUDA devices, or the CPU with ``allow_cpu``; else :class:`CheckError` (no GPU)."""
    import torch

    if torch.cuda.is_available() and torch.cuda.device_count() > 0:
        return Device(
            "cuda", torch.cuda.get_device_name(0), torch.cuda.device_count(), torch.cuda.is_bf16_supported()
        )
    if not allow_cpu:
        raise CheckError(
            "gpu_check: no CUDA GPU here (torch.cuda.is_available() is False, torch "
            f"{torch.__version__}); run it on a GPU machine (--allow-cpu runs the CPU smoke test)"
        )
    return Device("cpu", "CPU", 1, True)


# ----------------------------------------------------------------------------------------------- peak/MFU
def peak_tflops(device_name: str, override: float | None = None) -> tuple[float | None, str]:
    """(peak TFLOP/s per device, where it came from or why there is none)."""
    if override:
        return override, "--peak-tflops"
    matches = [key for key in PEAK_TFLOPS if key in device_name]
    if device_name == "CPU":
        return None, "n/a: CPU (no tensor-core peak)"
    if not matches:
        return None, f"n/a: unknown peak for {device_name!r} (pass --peak-tflops)"
    key = max(matches, key=len)
    return PEAK_TFLOPS[key], f"{key} data sheet"


def throughput(
    records: Sequence[dict[str, Any]], warmup: int, peak: float | None, devices: int
) -> dict[str, Any]:
    """tokens/s and MFU over the training records after ``warmup`` steps (sums: long steps weigh more):
    MFU = Σ model FLOPs / Σ seconds / (peak × devices)."""
    timed = [r for r in records if r["step"] > warmup] or list(records)
    seconds = sum(r["seconds"] for r in timed)
    out: dict[str, Any] = {
        "timed_steps": len(timed),
        "tokens_per_second": sum(r["tokens"] for r in timed) / seconds,
        "samples_per_second": sum(r["pairs"] for r in timed) / seconds,
        "median_step_seconds": statistics.median(r["seconds"] for r in timed),
    }
    flops = sum(r.get("model_flops", 0.0) for r in timed)
    out["mfu"] = flops / seconds / (peak * 1e12 * devices) if peak and flops else None
    return out


def compare_resume(
    whole: Sequence[dict[str, Any]], resumed: Sequence[dict[str, Any]], rel: float = 1e-6
) -> dict[str, Any]:
    """Resumed run's records against the uninterrupted run's, step by step (mlm/nsp loss, lr, tokens)."""
    by_step = {r["step"]: r for r in whole}
    worst, mismatch, missing = 0.0, None, [r["step"] for r in resumed if r["step"] not in by_step]
    for r in resumed:
        a = by_step.get(r["step"])
        if a is None:
            continue
        for key in ("mlm_loss", "nsp_loss", "lr", "tokens"):
            x, y = float(a[key]), float(r[key])
            diff = abs(x - y) / max(abs(x), 1e-12)
            worst = max(worst, diff)
            if diff > rel and mismatch is None:
                mismatch = f"step {r['step']} {key}: {x!r} uninterrupted vs {y!r} resumed"
    steps = [r["step"] for r in resumed]
    ok = bool(steps) and not missing and mismatch is None
    return {
        "ok": ok,
        "steps": steps,
        "max_rel_diff": worst,
        "exact": ok and worst == 0.0,
        "mismatch": mismatch or (f"steps {missing} not in the uninterrupted run" if missing else None),
    }


# ------------------------------------------------------------------------------------------------- plan
@dataclass
class Run:
    """One pre-training run of the plan."""

    name: str
    arch: str
    precision: str  # bf16 | fp16 | autocast-fp16
    zero: int
    optimizer: str  # adamw | lamb
    steps: int
    resume_at: int = 0  # > 0: also a split run saved at this step and resumed to 2× it
    skip: str = ""

    def label(self) -> str:
        return (
            f"{self.arch} {self.precision} ZeRO-{self.zero} {'LAMB' if self.optimizer == 'lamb' else 'AdamW'}"
        )


def plan(device: Device, size: str, steps: int, resume_at: int) -> list[Run]:
    """bf16 and fp16 each with ZeRO-1 and ZeRO-2 over both architectures, DeepSpeed's LAMB, and two resume
    checks (one per precision, one per architecture). Rows a device cannot run carry their reason."""
    vanilla, macaron = f"vanilla_bert_{size}", f"macaron_bert_{size}"
    runs = [
        Run("vanilla-bf16-z1", vanilla, "bf16", 1, "adamw", steps, resume_at),
        Run("macaron-bf16-z2", macaron, "bf16", 2, "adamw", steps),
        Run("vanilla-fp16-z2", vanilla, "fp16", 2, "adamw", steps),
        Run("macaron-fp16-z1", macaron, "fp16", 1, "adamw", steps, resume_at),
        Run("macaron-lamb", macaron, "autocast-fp16", 0, "lamb", steps),
    ]
    for run in runs:
        if device.kind == "cpu" and "fp16" in run.precision:
            run.skip = "needs CUDA (fp16 / DeepSpeed's FusedLamb)"
        elif run.precision == "bf16" and not device.bf16:
            run.skip = f"{device.name} has no bf16"
    return runs


def run_config(run: Run, micro_batch: int, accumulation: int, world_size: int) -> dict[str, Any]:
    """The DeepSpeed config of ``run``: the shipped one with the precision/ZeRO/batch of the run and a
    schedule as long as the run (warm-up 10 %)."""
    from benchmarks.pretrain_bench import batch_config

    base = CONFIGS / ("lamb_64k.json" if run.optimizer == "lamb" else "bert_phase1.json")
    config = batch_config(base, micro_batch, accumulation, world_size)
    if run.precision == "fp16":
        config.pop("bf16", None)
        config["fp16"] = {"enabled": True, "loss_scale": 0, "initial_scale_power": 16}
    if run.optimizer != "lamb":
        config["zero_optimization"] = {"stage": run.zero}
    params = config["scheduler"]["params"]
    params["total_num_steps"] = run.steps
    params["warmup_num_steps"] = max(1, run.steps // 10)
    return config


def trainer_command(
    run: Run,
    corpus: Path,
    config_file: Path,
    save_dir: Path,
    max_update: int,
    args: argparse.Namespace,
    device: Device,
    peak: float | None,
) -> list[str]:
    """``torchrun ... -m macaron_fairseq.pretrain ...`` for ``run`` (one process per GPU)."""
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(device.count),
        "--master_port", str(free_port()), "-m", "macaron_fairseq.pretrain", str(corpus),
        "--arch", run.arch, "--deepspeed-config", str(config_file), "--batch-size", str(args.batch_size),
        "--update-freq", str(args.update_freq), "--tokens-per-sample", str(args.seq_len),
        "--save-dir", str(save_dir), "--seed", "1", "--max-update", str(max_update), "--no-validation",
        "--keep-last-checkpoints", "1", "--log-interval", str(max(1, max_update // 4)),
    ]  # fmt: skip
    if peak:
        command += ["--peak-tflops", str(peak)]
    return command


def free_port() -> int:
    from benchmarks.pretrain_bench import free_port as port

    return port()


# ------------------------------------------------------------------------------------------------ table
@dataclass
class Row:
    part: str
    case: str
    status: str  # ok | FAIL | skip
    detail: str = ""
    tokens_per_second: float | None = None
    mfu: float | None = None
    seconds: float | None = None
    data: dict[str, Any] = field(default_factory=dict)


def render(rows: Sequence[Row], header: str) -> str:
    """The one table the check prints."""
    cells = [("part", "case", "result", "tokens/s", "MFU", "time", "detail")]
    for r in rows:
        tps = f"{r.tokens_per_second:,.0f}" if r.tokens_per_second is not None else "-"
        mfu = (
            f"{100 * r.mfu:.1f}%"
            if r.mfu is not None
            else ("n/a" if r.tokens_per_second is not None else "-")
        )
        took = f"{r.seconds:.0f}s" if r.seconds is not None else "-"
        cells.append((r.part, r.case, r.status, tps, mfu, took, r.detail))
    widths = [max(len(c[i]) for c in cells) for i in range(6)]
    lines = [header]
    for i, c in enumerate(cells):
        lines.append("  ".join(c[j].ljust(widths[j]) for j in range(6)) + "  " + c[6])
        if i == 0:
            lines.append("-" * (sum(widths) + 12 + 6))
    failed = sum(r.status == "FAIL" for r in rows)
    lines.append(f"{len(rows)} rows: {sum(r.status == 'ok' for r in rows)} ok, {failed} failed, "
                 f"{sum(r.status == 'skip' for r in rows)} skipped")  # fmt: skip
    return "\n".join(lines)


def write_json(path: Path, rows: Sequence[Row], context: dict[str, Any], machine: dict[str, Any]) -> None:
    """The results file (:func:`benchmarks.results_file.write_results`; ``results``: the context and the
    rows); ``machine``: :func:`benchmarks.results_file.machine_info` at the start."""
    command = shlex.join(["python", "-m", "benchmarks.gpu_check", *sys.argv[1:]])
    results = {**context, "rows": [asdict(r) for r in rows]}
    write_results(Path(path), results, machine, command)


# ---------------------------------------------------------------------------------------------- parts
def subprocess_env(device: Device, threads: int) -> dict[str, str]:
    from benchmarks.pretrain_bench import subprocess_env as env

    extra = {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    if device.kind == "cpu":
        extra["CUDA_VISIBLE_DEVICES"] = ""
    return env(**extra)


def pytest_counts(output: str) -> dict[str, int]:
    """The counts of pytest's summary line ("3 passed, 1 skipped, 200 deselected in 4.1s")."""
    tail = output.strip().splitlines()[-1] if output.strip() else ""
    return {
        word: int(n)
        for n, word in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected|xfailed|xpassed)", tail)
    }


def part_tests(device: Device, threads: int) -> Row:
    if importlib.util.find_spec("pytest") is None:
        return Row("tests", "pytest -m gpu", "skip", "pytest is not installed here (pip install pytest)")
    start = time.monotonic()
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", "tests"]
    if importlib.util.find_spec("xdist") is not None:
        command[-1:-1] = ["-n", "0"]  # one process: the GPU tests share the device
    proc = subprocess.run(
        command, cwd=REPO, env=subprocess_env(device, threads), capture_output=True, text=True
    )
    counts = pytest_counts(proc.stdout)
    detail = ", ".join(f"{n} {w}" for w, n in counts.items()) or proc.stdout.strip()[-200:]
    # 5: no test selected (no gpu-marked test in the tree)
    ok = (
        proc.returncode in (0, 5)
        and not counts.get("failed")
        and not counts.get("error")
        and not counts.get("errors")
    )
    if proc.returncode == 5:
        detail = f"no test is marked gpu ({detail})"
    return Row("tests", "pytest -m gpu", "ok" if ok else "FAIL", detail, seconds=time.monotonic() - start,
               data={"returncode": proc.returncode, "counts": counts})  # fmt: skip


def read_records(save_dir: Path) -> list[dict[str, Any]]:
    lines = (save_dir / "train_log.jsonl").read_text(encoding="utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r.get("split", "train") == "train"]


def train(
    run: Run,
    corpus: Path,
    work: Path,
    tag: str,
    max_update: int,
    args: argparse.Namespace,
    device: Device,
    peak: float | None,
) -> tuple[list[dict[str, Any]], Path]:
    """One trainer invocation (into ``work/<run>-<tag>``, resuming what is there); its records."""
    config_file = work / f"{run.name}.json"
    config_file.write_text(
        json.dumps(run_config(run, args.batch_size, args.update_freq, device.count), indent=2)
    )
    save_dir = work / f"{run.name}-{tag}"
    command = trainer_command(run, corpus, config_file, save_dir, max_update, args, device, peak)
    print(f"[gpu_check] {run.label()} ({tag}): {shlex.join(command[2:])}", flush=True)
    proc = subprocess.run(
        command, cwd=REPO, env=subprocess_env(device, args.threads), capture_output=True, text=True
    )
    if proc.returncode != 0:
        tail = [line for line in proc.stderr.strip().splitlines() if line.strip()][-3:]
        raise RuntimeError(f"trainer exit {proc.returncode}: {' | '.join(tail)[-600:]}")
    return read_records(save_dir), save_dir


def part_pretrain(run: Run, corpus: Path, work: Path, args: argparse.Namespace, device: Device,
                  peak: float | None) -> list[Row]:  # fmt: skip
    """The run's row and, with ``resume_at``, its resume row."""
    if run.skip:
        rows = [Row("pretrain", run.label(), "skip", run.skip)]
        return rows + ([Row("resume", run.label(), "skip", run.skip)] if run.resume_at else [])
    start = time.monotonic()
    try:
        records, save_dir = train(run, corpus, work, "whole", run.steps, args, device, peak)
    except RuntimeError as error:
        return [Row("pretrain", run.label(), "FAIL", str(error), seconds=time.monotonic() - start)]
    saved = sorted(p.name for p in save_dir.glob("step*"))
    speed = throughput(records, args.warmup, peak, device.count)
    first, last = (
        records[0]["mlm_loss"],
        statistics.fmean(r["mlm_loss"] for r in records[-max(1, len(records) // 10) :]),
    )
    ok = [r["step"] for r in records] == list(range(1, run.steps + 1)) and f"step{run.steps}" in saved
    detail = f"{len(records)} steps, mlm loss {first:.2f} → {last:.2f}, saved {', '.join(saved) or 'nothing'}"
    if speed["mfu"] is None:
        detail += f"; MFU {peak_reason(device, args)}"
    if "loss_scale" in records[-1]:
        detail += f", loss scale {records[-1]['loss_scale']:g}"
    data = {**speed, "first_mlm_loss": first, "last_mlm_loss": last}
    status = "ok" if ok else "FAIL"
    took = time.monotonic() - start
    rows = [
        Row("pretrain", run.label(), status, detail, speed["tokens_per_second"], speed["mfu"], took, data)
    ]
    if run.resume_at:
        rows.append(resume_row(run, records, corpus, work, args, device, peak))
    return rows


def resume_row(run: Run, whole: list[dict[str, Any]], corpus: Path, work: Path, args: argparse.Namespace,
               device: Device, peak: float | None) -> Row:  # fmt: skip
    start = time.monotonic()
    end = min(2 * run.resume_at, run.steps)
    try:
        train(run, corpus, work, "split", run.resume_at, args, device, peak)
        resumed, _ = train(run, corpus, work, "split", end, args, device, peak)
    except RuntimeError as error:
        return Row("resume", run.label(), "FAIL", str(error), seconds=time.monotonic() - start)
    after = [r for r in resumed if r["step"] > run.resume_at]
    result = compare_resume(whole, after)
    ok = result["ok"] and after_steps(after) == list(range(run.resume_at + 1, end + 1))
    how = "exact" if result["exact"] else f"max rel diff {result['max_rel_diff']:.1e}"
    problem = result["mismatch"] or f"logged steps {after_steps(after)}"
    detail = f"saved at {run.resume_at}, resumed to {end}: {how if ok else problem}"
    return Row(
        "resume", run.label(), "ok" if ok else "FAIL", detail, seconds=time.monotonic() - start, data=result
    )


def after_steps(records: Sequence[dict[str, Any]]) -> list[int]:
    return [r["step"] for r in records]


def peak_reason(device: Device, args: argparse.Namespace) -> str:
    return peak_tflops(device.name, args.peak_tflops)[1]


def part_speed(device: Device, args: argparse.Namespace) -> list[Row]:
    """Macaron vs Transformer: training step and beam-4 search on ``device`` for each FFN implementation
    (median seconds over ``--speed-rounds``; ratio = Macaron / Transformer)."""
    import logging

    import torch
    from fairseq.sequence_generator import SequenceGenerator

    from benchmarks.speed_macaron_vs_transformer import (
        TRANSFORMER,
        alternate,
        generation_seconds,
        random_batch,
        set_impl,
        summarise,
        train_step_seconds,
        variants,
    )  # fmt: skip
    from macaron_fairseq.build_without_data import build_translation_model, joined_dictionary_dir
    from macaron_fairseq.models.architectures import COUNTERPARTS

    for name in ("fairseq", "filelock", "torch"):
        logging.getLogger(name).setLevel(logging.WARNING)
    start = time.monotonic()
    dev = torch.device("cuda" if device.kind == "cuda" else "cpu")
    flags = ["--share-all-embeddings", "--dropout", "0.1", *shlex.split(args.speed_model_flags)]
    with joined_dictionary_dir(args.speed_vocab) as data_dir:
        macaron, task = build_translation_model(data_dir, "macaron_base", flags)
        transformer, _ = build_translation_model(data_dir, COUNTERPARTS["macaron_base"], flags)
    models = {"macaron": macaron.to(dev), TRANSFORMER: transformer.to(dev)}
    tgt = task.target_dictionary
    bsz = max(1, args.speed_tokens // args.speed_seq_len)
    b = random_batch(len(tgt), tgt.nspecial, bsz, args.speed_seq_len, 0)
    b = type(b)(*(t.to(dev) for t in (b.src_tokens, b.src_lengths, b.prev_output_tokens, b.target)))

    def model_of(name: str) -> torch.nn.Module:
        if name == TRANSFORMER:
            return models[TRANSFORMER]
        set_impl(models["macaron"], name.split(":", 1)[1])
        return models["macaron"]

    def synced(fn: Callable[[], float]) -> Callable[[], float]:
        def timed() -> float:
            if dev.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            if dev.type == "cuda":
                torch.cuda.synchronize()
            return time.perf_counter() - t0

        return timed

    names = variants(args.impls)
    length = args.speed_gen_len
    generators = {
        n: SequenceGenerator([models[n]], tgt, beam_size=4, max_len_a=0, max_len_b=length, min_len=length)
        for n in models
    }
    rows = []
    phases = {
        "train step": (
            {n: synced(lambda n=n: train_step_seconds(model_of(n), b)) for n in names},
            bsz * args.speed_seq_len,
        ),
        "beam-4 search": (
            {
                n: synced(lambda n=n: generation_seconds(generators[n.split(":")[0]], model_of(n), b))
                for n in names
            },
            bsz,
        ),
    }
    for phase, (fns, per) in phases.items():
        try:
            summary = summarise(alternate(fns, args.speed_rounds, 1), per)
        except Exception as error:
            rows.append(Row("speed", phase, "FAIL", f"{type(error).__name__}: {str(error)[:300]}"))
            continue
        for name, cell in summary.items():
            low, high = 1e3 * cell["min_s"], 1e3 * cell["max_s"]
            detail = f"median {1e3 * cell['median_s']:.1f} ms [{low:.1f}, {high:.1f}]"
            if name != TRANSFORMER:
                detail += f", {cell['ratio']:.3f}× Transformer (paired {cell['paired_ratio_median']:.3f})"
            rows.append(Row("speed", f"{phase} {bsz}×{args.speed_seq_len}: {name}", "ok", detail, data=cell))
    rows[-1].seconds = time.monotonic() - start
    return rows


def build_corpus(work: Path, args: argparse.Namespace) -> Path:
    from benchmarks.pretrain_bench import build_corpus as build

    return build(work / "corpus", args.corpus_mb, args.vocab)[0]


# ------------------------------------------------------------------------------------------------- main
TINY_TRANSLATION = (
    "--encoder-layers 1 --decoder-layers 1 --encoder-embed-dim 32 --decoder-embed-dim 32 "
    "--encoder-ffn-embed-dim 64 --decoder-ffn-embed-dim 64 "
    "--encoder-attention-heads 2 --decoder-attention-heads 2"
)
#: per --arch: batch per device and sequence length of the pre-training runs; the speed part's translation
#: model flags (base: macaron_base as shipped), tokens per batch, vocabulary, lengths and rounds
SIZES: dict[str, dict[str, Any]] = {
    "base": {"batch_size": 32, "seq_len": 128, "speed_model_flags": "", "speed_tokens": 4096,
             "speed_vocab": 10000, "speed_seq_len": 64, "speed_gen_len": 32, "speed_rounds": 5},
    "tiny": {"batch_size": 4, "seq_len": 32, "speed_model_flags": TINY_TRANSLATION, "speed_tokens": 32,
             "speed_vocab": 100, "speed_seq_len": 8, "speed_gen_len": 4, "speed_rounds": 2},
}  # fmt: skip


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    from macaron_workflow.cli import ArgumentParser

    p = ArgumentParser(prog="python -m benchmarks.gpu_check", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument(
        "--parts", nargs="+", default=["tests", "pretrain", "speed"], choices=["tests", "pretrain", "speed"]
    )
    p.add_argument("--arch", choices=list(SIZES), default="base", help="vanilla/macaron_bert_<arch>")
    p.add_argument("--steps", type=int, default=200, help="optimizer steps per pre-training run")
    p.add_argument("--resume-at", type=int, default=20, help="the resume check saves here, resumes to 2× it")
    p.add_argument("--warmup", type=int, default=10, help="steps left out of tokens/s and MFU")
    p.add_argument("--update-freq", type=int, default=2, help="micro-batches per optimizer step")
    p.add_argument("--only", default="", help="run only the pre-training runs whose name contains this")
    p.add_argument("--peak-tflops", type=float, default=None, help="per-GPU peak, for a GPU not in the table")
    p.add_argument("--corpus-mb", type=float, default=4.0, help="generated Wikipedia XML (MB)")
    p.add_argument("--vocab", type=int, default=8000, help="BPE vocabulary of the generated corpus")
    p.add_argument("--allow-cpu", action="store_true", help="run on the CPU (smoke test of the code paths)")
    p.add_argument(
        "--threads", type=int, default=0, help="OMP threads per process (0: usable cores / processes)"
    )
    p.add_argument("--work-dir", type=Path, default=None, help="kept runs (default: a temporary directory)")
    p.add_argument(
        "--json",
        type=lambda text: Path(text) if text else None,
        default=RESULTS_DIR / "gpu_check.json",
        help="results file (default: %(default)s; '' for none)",
    )
    p.add_argument(
        "--wheels", action="store_true", help="print the pins scripts/gpu_wheels.sh downloads, exit"
    )
    args = p.parse_args(argv)
    for key, value in SIZES[args.arch].items():
        setattr(args, key, value)
    if args.steps < 2 * args.resume_at:
        args.resume_at = max(1, args.steps // 2)
    if args.steps < 2:
        p.error(f"--steps {args.steps}: at least 2 (a resume check saves half way)")
    args.impls = ["plain", "fused", "compile"]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.wheels:
        print("\n".join(f"{dist}=={version}" for dist, version, _ in WHEELS))
        return 0
    try:
        device = probe_device(args.allow_cpu)
        missing = missing_packages()
        if missing:
            raise CheckError(missing_message(missing))
    except CheckError as error:
        print(error, file=sys.stderr)
        return 2
    if device.kind == "cpu":
        args.impls = ["plain", "fused"]  # torch.compile on a CPU needs a C++ compiler and minutes
    from benchmarks.pretrain_bench import usable_cores

    args.threads = args.threads or max(1, usable_cores() // device.count)
    peak, source = peak_tflops(device.name, args.peak_tflops)
    peak_text = f"{peak:g} TFLOP/s ({source})" if peak else source
    header = (
        f"GPU check: {device.count} × {device.name}, peak {peak_text}, {args.arch} models, {args.steps} steps"
    )
    print(header, flush=True)
    began = time.monotonic()
    machine = machine_info()
    rows: list[Row] = []
    runs = [r for r in plan(device, args.arch, args.steps, args.resume_at) if args.only in r.name]
    with tempfile.TemporaryDirectory(prefix="gpu_check.") as tmp:
        work = args.work_dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        if "tests" in args.parts:
            rows.append(part_tests(device, args.threads))
        if "pretrain" in args.parts:
            corpus = build_corpus(work, args)
            for run in runs:
                rows += part_pretrain(run, corpus, work, args, device, peak)
        if "speed" in args.parts:
            try:
                rows += part_speed(device, args)
            except Exception as error:
                rows.append(
                    Row("speed", "Macaron vs Transformer", "FAIL", f"{type(error).__name__}: {error}"[:400])
                )
    print(render(rows, header + f", {time.monotonic() - began:.0f} s in all"))
    context = {
        "device": asdict(device),
        "peak_tflops": peak,
        "peak_source": source,
        "arch": args.arch,
        "steps": args.steps,
        "plan": [asdict(r) for r in runs],
        "seconds": time.monotonic() - began,
    }
    if args.json:
        write_json(args.json, rows, context, machine)
    return 1 if any(r.status == "FAIL" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
