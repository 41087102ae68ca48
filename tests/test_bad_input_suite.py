"""The bad-input suite of issue #34: every command that takes a user file × the ways a file goes wrong —
a pickled payload, truncated, zero-byte, a directory, the wrong kind of model, an output overlapping an input,
an output that is an existing directory — through the real entry points, each case asserting:

* nothing executed (the payload's marker file does not exist; ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` is set
  for every case, as users set it for other tools);
* the exit status: 2 for the user's mistake, 1 for ours;
* exactly one error line, ``PROG: error: ...``, naming the file and the fix (the case's pattern), no
  traceback (an upstream tool's — fairseq's, DeepSpeed's — is caught at our entry point);
* the inputs unchanged (every file hashed before and after);
* no output left: no file of the command's outputs, no temporary file.

Cells that cannot happen for a command (an average of checkpoints has no model kind to get wrong ...) are
listed with the reason in :data:`NOT_APPLICABLE`, cells a slower test already covers in
:data:`COVERED_ELSEWHERE`; ``test_every_cell_is_covered`` keeps the table complete. The numbered cases of
the issue are rows too (``item``), as are the failure injections of item 5 and the failed grid of item 4.

Shared fixtures keep it fast: one tiny pre-training run (a DeepSpeed save directory, ~8 s), one tiny BERT
checkpoint, one tiny translation checkpoint, one tiny HuggingFace BERT, one generated GLUE; every command
runs in this process except the ones whose process-level behaviour is the point (fairseq's own console
scripts ending in one line, ``bash pipelines/glue.sh``).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import sentencepiece as spm
import torch
from bert_data_bin import write_data_bin
from full_disk import TRAINING_LOG, other_stderr_lines
from helpers import (
    REPO,
    TINY,
    RunsCode,
    save_bert_checkpoint,
    save_model_checkpoint,
    write_malicious_checkpoint,
)

from macaron_fairseq.pretrain import checkpoints
from macaron_fairseq.repairs.checkpoint_safety import one_line_user_errors
from macaron_preprocess.sources.glue import read_split
from macaron_synthetic.glue import write_synthetic_glue
from macaron_workflow.cli import run_cli

USER_DIR = REPO / "macaron_fairseq"
TINY_CONFIG = REPO / "configs" / "deepspeed" / "tiny_cpu.json"
KINDS = {
    "payload": "a pickled payload",
    "truncated": "truncated",
    "empty": "zero-byte",
    "directory": "a directory",
    "wrong-kind": "the wrong kind of model",
    "overlap": "output overlapping input",
    "out-directory": "output an existing directory",
}
#: the command name → how its error line starts
PROGS = {
    "fairseq-generate": "fairseq-generate",
    "fairseq-train": "fairseq-train",
    "train_preemptible": "train_preemptible",
    "pretrain resume": "python -m macaron_fairseq.pretrain",
    "pretrain --init-from": "python -m macaron_fairseq.pretrain",
    "pretrain.export": "python -m macaron_fairseq.pretrain.export",
    "glue.sh": "glue.sh",
    "macaron_pipelines.glue": "macaron_pipelines.glue",
    "macaron_preprocess.glue": "python -m macaron_preprocess.glue",
    "hf import": "python -m macaron_fairseq.hf",
    "hf export": "python -m macaron_fairseq.hf",
    "average_checkpoints": "average_checkpoints",
    "macaron_preprocess.bert_corpus": "python -m macaron_preprocess.bert_corpus",
    "macaron_preprocess.custom": "python -m macaron_preprocess.custom",
    "macaron_preprocess.iwslt14": "python -m macaron_preprocess.iwslt14",
}
DAMAGED = r"not a PyTorch checkpoint \(.*\); it is truncated .* give the complete file"
EMPTY = r"not a PyTorch checkpoint \(an empty file, 0 bytes\)"
REFUSED = r"refusing to load checkpoint .*: it pickles posix\.system, which is not on the allow-list"
APART = r"an input, which is only read .*; choose .* apart from it"


# ------------------------------------------------------------------------------------------ the world
@dataclass
class World:
    """The shared inputs (built once per module; cases copy what they damage)."""

    root: Path
    glue: Path  # a generated GLUE distribution (RTE, WNLI)
    spm_bin: Path  # a sentencepiece data-bin (dict.txt) the BERT checkpoint was "trained" on
    bert: Path  # a macaron_bert_tiny checkpoint (an export of the pre-trainer's layout)
    translation_bin: Path  # a tiny translation data-bin (src → tgt)
    translation: Path  # a transformer checkpoint on it
    hf_dir: Path  # a tiny HuggingFace BERT directory (save_pretrained)
    bert_bin: Path  # a BERT pre-training data-bin
    save_dir: Path | None = None  # a tiny pre-training run's --save-dir (built on first use)
    initial: dict[str, str] = field(default_factory=dict)  # the inputs' digest, taken as they were written

    def inputs(self) -> list[Path]:
        """What the cases and the shared run only read."""
        return [
            self.glue,
            self.spm_bin,
            self.bert,
            self.translation_bin,
            self.translation,
            self.hf_dir,
            self.bert_bin,
        ]


def write_translation_bin(dest: Path) -> Path:
    """A translation data-bin written with fairseq's own builders (what fairseq-preprocess writes)."""
    from fairseq.data import Dictionary, indexed_dataset

    dest.mkdir(parents=True)
    dictionary = Dictionary()
    for i in range(20):
        dictionary.add_symbol(f"w{i}", n=100 - i)
    for lang in ("src", "tgt"):
        dictionary.save(str(dest / f"dict.{lang}.txt"))
        for split in ("train", "valid"):
            prefix = dest / f"{split}.src-tgt.{lang}"
            builder = indexed_dataset.make_builder(f"{prefix}.bin", impl="mmap", vocab_size=len(dictionary))
            for n in range(8):
                ids = [dictionary.nspecial + (n + k) % 20 for k in range(3 + n % 4)]
                builder.add_item(torch.tensor([*ids, dictionary.eos()], dtype=torch.int64))
            builder.finalize(f"{prefix}.idx")
    return dest


def write_hf_bert(directory: Path) -> Path:
    """A tiny ``BertForPreTraining`` with its WordPiece vocabulary, saved as save_pretrained saves it."""
    from transformers import BertConfig, BertForPreTraining, BertTokenizer

    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "cat", "dog", "sat", "on", ".", "##s"]
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokens),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=24,
    )
    BertForPreTraining(config).save_pretrained(str(directory))
    (directory / "vocab.txt").write_text("".join(f"{t}\n" for t in tokens), encoding="utf-8")
    BertTokenizer(str(directory / "vocab.txt")).save_pretrained(str(directory))
    return directory


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("suite")
    glue = write_synthetic_glue(root / "GLUE", ("RTE", "WNLI"), scale=0.02)
    text = root / "text.txt"
    text.write_text(
        "".join(f"{e.sentence1}\n{e.sentence2}\n" for e in read_split(glue, "RTE", "train").examples)
    )
    spm_bin = root / "spm-bin"
    spm_bin.mkdir()
    spm.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(spm_bin / "sentencepiece.bpe"),
        vocab_size=60,
        model_type="bpe",
        minloglevel=2,
    )
    pieces = [line.split("\t")[0] for line in (spm_bin / "sentencepiece.bpe.vocab").read_text().splitlines()]
    (spm_bin / "dict.txt").write_text("".join(f"{p} 1\n" for p in pieces[3:]))
    translation_bin = write_translation_bin(root / "translation-bin")
    bert_bin = root / "bert-bin"
    write_data_bin(bert_bin, documents=12, sentences=6)
    built = World(
        root=root,
        glue=glue,
        spm_bin=spm_bin,
        bert=save_bert_checkpoint(root / "bert.pt", spm_bin),
        translation_bin=translation_bin,
        translation=save_model_checkpoint(root / "translation.pt", translation_bin, "transformer", TINY),
        hf_dir=write_hf_bert(root / "hf"),
        bert_bin=bert_bin,
    )
    built.initial = digest(built.inputs())  # before any fixture or case runs on them
    return built


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def subprocess_env(**extra: str) -> dict[str, str]:
    return dict(
        os.environ,
        PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        OMP_NUM_THREADS="1",
        PYTHONWARNINGS="ignore",
        TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1",
        **extra,
    )


def pretrain_command(data: Path, save_dir: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "macaron_fairseq.pretrain",
        str(data),
        "--arch",
        "macaron_bert_tiny",
        "--deepspeed-config",
        str(TINY_CONFIG),
        "--save-dir",
        str(save_dir),
        "--seed",
        "1",
        "--no-validation",
        *extra,
    ]


def save_dir_of(world: World) -> Path:
    """A tiny pre-training run saved at step 1 (one process, DeepSpeed ZeRO-1 on the CPU)."""
    if world.save_dir is None:
        save_dir = world.root / "run"
        proc = subprocess.run(
            pretrain_command(world.bert_bin, save_dir, "--max-update", "1"),
            cwd=REPO,
            env=subprocess_env(MASTER_PORT=str(free_port())),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
        world.save_dir = save_dir
    return world.save_dir


# ----------------------------------------------------------------------------------- damaging files
def plant_payload(path: Path, marker: Path) -> Path:
    """``path`` (a real checkpoint file) plus an object whose unpickling creates ``marker``."""
    state = torch.load(path, weights_only=False)
    state["payload"] = RunsCode(marker)
    torch.save(state, path)
    return path


def truncate(path: Path) -> Path:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def empty(path: Path) -> Path:
    path.write_bytes(b"")
    return path


def into_directory(path: Path) -> Path:
    path.unlink()
    path.mkdir()
    return path


def recommit(tag_dir: Path) -> None:
    """Write the checkpoint's manifest again after its files changed: a *committed* damaged checkpoint (the
    sizes match), so that resume chooses it instead of skipping it as incomplete."""
    manifest = json.loads((tag_dir / checkpoints.MANIFEST).read_text())
    manifest.pop("files")
    checkpoints.write_manifest(tag_dir, manifest)


def copy_save_dir(world: World, tmp: Path, damage: Callable[[Path], Any] | None = None) -> Path:
    save_dir = tmp / "run"
    shutil.copytree(save_dir_of(world), save_dir)
    if damage is not None:
        damage(save_dir / "step1")
        recommit(save_dir / "step1")
    return save_dir


# ------------------------------------------------------------------------------------------ running
@dataclass
class Run:
    """How one case runs and what it must leave alone."""

    call: Callable[[], None] | None = None  # in-process: ends by SystemExit (the command's run_cli)
    argv: list[str] | None = None  # or a subprocess
    env: dict[str, str] = field(default_factory=dict)
    inputs: list[Path] = field(default_factory=list)  # hashed before and after
    outputs: list[Path] = field(default_factory=list)  # may not hold any file afterwards
    names: list[Path] = field(default_factory=list)  # the error line names each


@dataclass(frozen=True)
class Case:
    command: str
    kind: str  # a key of KINDS, or "issue" for the other numbered cases
    title: str
    build: Callable[[World, Path], Run]
    message: str  # a regular expression the error line (after "PROG: error: ") must match
    code: int = 2
    item: int | None = None  # the numbered case of issue #34 this row keeps fixed
    prog: str | None = None  # the program the error line names, when not the command's (PROGS)
    slow: bool = False  # reads a real pre-training save directory (save_dir_of: a DeepSpeed run, ~15 s)

    @property
    def id(self) -> str:
        return f"{self.command}: {self.title}"


def digest(paths: list[Path]) -> dict[str, str]:
    """sha256 of every file under ``paths`` (directories walked), and every directory as ``"dir"``: a file or
    an empty directory added inside an input changes it too."""
    found: dict[str, str] = {}
    for path in paths:
        entries = [path] if path.is_file() else [path, *sorted(path.rglob("*"))] if path.exists() else []
        for entry in entries:
            found[str(entry)] = "dir" if entry.is_dir() else hashlib.sha256(entry.read_bytes()).hexdigest()
    return found


def snapshot(root: Path) -> set[str]:
    """Every path under ``root``, directories included."""
    return {str(p) for p in root.rglob("*")}


def in_process(prog: str, main: Callable[[], object]) -> Callable[[], None]:
    return lambda: run_cli(main, prog)


def reraise(kind: type[BaseException], error: BaseException, tb: object) -> None:
    raise error


def upstream(prog: str, cli_main: Callable[[], object], argv: list[str]) -> Callable[[], None]:
    """fairseq's console script ``prog`` run here: its exception goes through the hook the plugin installs in
    those processes (:func:`one_line_user_errors`); the subprocess cases check that it is installed."""

    def call() -> None:
        saved = sys.argv
        sys.argv = [prog, *argv]
        try:
            cli_main()
        except SystemExit:
            raise
        except BaseException as error:
            one_line_user_errors(prog, reraise)(type(error), error, error.__traceback__)
        finally:
            sys.argv = saved

    return call


def error_lines(stderr: str) -> list[str]:
    """The error lines: ``PROG: error: ...`` (progress, logging and warnings around them are not errors)."""
    return [line for line in stderr.splitlines() if re.match(r"^[\w.\- ]+: (error|preempted): ", line)]


def execute(run: Run, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    if run.argv is not None:
        env = subprocess_env(**run.env)
        proc = subprocess.run(run.argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        return proc.returncode, proc.stderr
    assert run.call is not None
    capsys.readouterr()
    with pytest.raises(SystemExit) as ended:
        run.call()
    code = ended.value.code
    return (0 if code is None else int(code)), capsys.readouterr().err


def leftovers(outputs: list[Path], root: Path) -> list[str]:
    """Files an interrupted write left: any file under the outputs (a resumable command's empty state
    directories aside), and temporary files anywhere under ``root``."""
    found = [
        str(p)
        for out in outputs
        if out.exists()
        for p in ([out] if out.is_file() else out.rglob("*"))
        if p.is_file() and ".stages" not in p.parts
    ]
    found += [str(p) for p in root.rglob("*") if re.search(r"\.tmp($|-\d+)|\.pt\.tmp", p.name)]
    return found


# ------------------------------------------------------------------------------------------ the table
def generate(world: World, tmp: Path, path: Path) -> Run:
    from fairseq_cli.generate import cli_main

    argv = [
        str(world.translation_bin),
        "-s",
        "src",
        "-t",
        "tgt",
        "--user-dir",
        str(USER_DIR),
        "--path",
        str(path),
        "--cpu",
        "--gen-subset",
        "valid",
    ]
    return Run(call=upstream("fairseq-generate", cli_main, argv), inputs=[path], names=[path])


def fairseq_train_argv(world: World, tmp: Path, *extra: str) -> list[str]:
    return [
        str(world.translation_bin),
        "--user-dir",
        str(USER_DIR),
        "--task",
        "translation",
        "-s",
        "src",
        "-t",
        "tgt",
        "--arch",
        "transformer",
        *TINY,
        "--optimizer",
        "adam",
        "--lr",
        "1e-3",
        "--max-tokens",
        "500",
        "--cpu",
        "--max-update",
        "1",
        "--save-dir",
        str(tmp / "ckpt"),
        "--no-progress-bar",
        *extra,
    ]


def fairseq_train(world: World, tmp: Path, flag: str, path: Path) -> Run:
    from fairseq_cli.train import cli_main

    argv = fairseq_train_argv(world, tmp, flag, str(path))
    return Run(
        call=upstream("fairseq-train", cli_main, argv), inputs=[path], outputs=[tmp / "ckpt"], names=[path]
    )


def preemptible(world: World, tmp: Path, flag: str, path: Path) -> Run:
    from macaron_tools.train_preemptible import main

    argv = fairseq_train_argv(world, tmp, flag, str(path))

    def call() -> None:
        saved = sys.argv  # main hands fairseq its arguments through sys.argv
        try:
            run_cli(lambda: main(argv), "train_preemptible")
        finally:
            sys.argv = saved

    return Run(call=call, inputs=[path], outputs=[tmp / "ckpt"], names=[path])


def resume(world: World, tmp: Path, damage: Callable[[Path], Any], name: str) -> Run:
    from macaron_fairseq.pretrain.__main__ import main

    save_dir = copy_save_dir(world, tmp, damage)
    argv = pretrain_command(world.bert_bin, save_dir, "--max-update", "2")[3:]
    return Run(
        call=in_process(PROGS["pretrain resume"], lambda: main(argv)),
        inputs=[save_dir, world.bert_bin],
        names=[save_dir / "step1" / name] if name else [save_dir],
    )


def init_from(world: World, tmp: Path, path: Path) -> Run:
    from macaron_fairseq.pretrain.__main__ import main

    argv = pretrain_command(world.bert_bin, tmp / "phase2", "--max-update", "1", "--init-from", str(path))[3:]
    return Run(
        call=in_process(PROGS["pretrain --init-from"], lambda: main(argv)),
        inputs=[path],
        outputs=[tmp / "phase2"],
        names=[path],
    )


def export(world: World, tmp: Path, save_dir: Path, out: Path, names: list[Path]) -> Run:
    from macaron_fairseq.pretrain.export import main

    return Run(
        call=in_process(PROGS["pretrain.export"], lambda: main([str(save_dir), "--out", str(out)])),
        inputs=[save_dir],
        outputs=[] if out.is_dir() else [out],
        names=names,
    )


def glue_argv(world: World, tmp: Path, checkpoint: Path, glue: Path, *extra: str) -> list[str]:
    return [
        "--workdir",
        str(tmp / "work"),
        "--checkpoint",
        str(checkpoint),
        "--glue-dir",
        str(glue),
        "--tasks",
        "RTE",
        "--seeds",
        "100",
        "--batch-sizes",
        "8",
        "--lrs",
        "1e-3",
        "--epochs",
        "1",
        *extra,
    ]


def glue_pipeline(world: World, tmp: Path, checkpoint: Path, *extra: str, glue: Path | None = None) -> Run:
    from macaron_pipelines.commands import report_errors
    from macaron_pipelines.glue.__main__ import main

    glue = glue or world.glue
    argv = glue_argv(world, tmp, checkpoint, glue, *extra)
    work = tmp / "work"
    return Run(
        call=lambda: report_errors("macaron_pipelines.glue", lambda: main(argv)),
        inputs=[checkpoint, glue, world.spm_bin],
        outputs=[] if glue.is_relative_to(work) else [work],
        names=[glue] if glue.is_relative_to(work) else [checkpoint],
    )


def copy_to(path: Path, target: Path) -> Path:
    """A copy of the directory ``path`` at ``target``."""
    shutil.copytree(path, target)
    return target


def preprocess_glue(
    world: World,
    tmp: Path,
    checkpoint: Path,
    dest: Path | None = None,
    glue: Path | None = None,
    names: list[Path] | None = None,
) -> Run:
    from macaron_preprocess.glue import main

    glue = glue or world.glue
    dest = dest or tmp / "dest"
    argv = [
        "--glue-dir",
        str(glue),
        "--dest",
        str(dest),
        "--checkpoint",
        str(checkpoint),
        "--tasks",
        "RTE",
        "--workers",
        "1",
    ]
    outputs = [] if dest.exists() or glue.is_relative_to(dest) else [dest]
    return Run(
        call=in_process(PROGS["macaron_preprocess.glue"], lambda: main(argv)),
        inputs=[checkpoint, glue],
        outputs=outputs,
        names=names or [checkpoint],
    )


def copy(path: Path, tmp: Path, damage: Callable[[Path], Any] | None = None) -> Path:
    target = tmp / path.name
    (shutil.copytree if path.is_dir() else shutil.copyfile)(path, target)
    if damage is not None:
        damage(target)
    return target


def hf_import(
    world: World, tmp: Path, hf_dir: Path, out: Path | None = None, names: list[Path] | None = None
) -> Run:
    from macaron_fairseq.hf.__main__ import main

    out = out or tmp / "imported.pt"
    outputs = [] if out.exists() else [out, out.with_suffix(".data")]
    argv = ["import", str(hf_dir), "--out", str(out)]
    return Run(
        call=in_process(PROGS["hf import"], lambda: main(argv)),
        inputs=[hf_dir] + ([out] if out.exists() else []),
        outputs=outputs,
        names=names or [hf_dir],
    )


def hf_config(world: World, tmp: Path, change: Callable[[Any], Any]) -> Path:
    hf_dir = copy(world.hf_dir, tmp)
    path = hf_dir / "config.json"
    config = json.loads(path.read_text())
    path.write_text(json.dumps(change(config)))
    return hf_dir


def hf_export(
    world: World, tmp: Path, checkpoint: Path, dest: Path | None = None, names: list[Path] | None = None
) -> Run:
    from macaron_fairseq.hf.__main__ import main

    dest = dest or tmp / "hf-out"
    outputs = [] if dest.exists() else [dest]
    argv = ["export", str(checkpoint), "--dest", str(dest)]
    return Run(
        call=in_process(PROGS["hf export"], lambda: main(argv)),
        inputs=[checkpoint, world.spm_bin] + ([dest] if dest.exists() else []),
        outputs=outputs,
        names=names or [checkpoint],
    )


def edited_translation(world: World, tmp: Path, edit: Callable[[dict[str, Any]], Any]) -> Path:
    state = torch.load(world.translation, weights_only=False)
    edit(state)
    path = tmp / "edited.pt"
    torch.save(state, path)
    return path


def edited_bert(world: World, tmp: Path, edit: Callable[[dict[str, Any]], Any]) -> Path:
    state = torch.load(world.bert, weights_only=False)
    edit(state)
    path = tmp / "edited.pt"
    torch.save(state, path)
    return path


def averaged(
    world: World,
    tmp: Path,
    damage: Callable[[Path], Any] | None = None,
    out: Path | None = None,
    names: list[Path] | None = None,
) -> Run:
    from macaron_tools.average_checkpoints import main

    ckpts = tmp / "ckpts"
    ckpts.mkdir(exist_ok=True)
    for epoch in (1, 2):
        torch.save(
            {"model": {"w": torch.full((2,), float(epoch))}, "cfg": {}}, ckpts / f"checkpoint{epoch}.pt"
        )
    if damage is not None:
        damage(ckpts / "checkpoint2.pt")
    out = out or tmp / "avg.pt"
    argv = ["--inputs", str(ckpts / "checkpoint1.pt"), str(ckpts / "checkpoint2.pt"), "--out", str(out)]
    return Run(
        call=in_process("average_checkpoints", lambda: main(argv)),
        inputs=[ckpts],
        outputs=[] if out.exists() else [out],
        names=names or [ckpts / "checkpoint2.pt"],
    )


def write_text_corpus(raw: Path) -> Path:
    raw.mkdir(parents=True, exist_ok=True)
    for split in ("train", "valid", "test"):
        for lang in ("en", "de"):
            (raw / f"{split}.{lang}").write_text("".join(f"{lang} sentence {i} .\n" for i in range(5)))
    return raw


def custom(tmp: Path, raw: Path, dest: Path, names: list[Path] | None = None) -> Run:
    from macaron_preprocess.custom import main

    prefixes = [x for split in ("train", "valid", "test") for x in (f"--{split}pref", str(raw / split))]
    argv = ["--src", "en", "--tgt", "de", *prefixes, "--dest", str(dest), "--workers", "1"]
    return Run(
        call=in_process(PROGS["macaron_preprocess.custom"], lambda: main(argv)),
        inputs=[raw],
        outputs=[] if raw.is_relative_to(dest) else [dest],
        names=names or [dest],
    )


def custom_with_a_directory(tmp: Path) -> Run:
    raw = write_text_corpus(tmp / "raw")
    into_directory(raw / "valid.de")
    return custom(tmp, raw, tmp / "out", names=[raw / "valid.de"])


def iwslt_raw(tmp: Path) -> Path:
    """A --raw-dir holding an (empty) de-en.tgz."""
    raw = tmp / "raw"
    raw.mkdir()
    empty(raw / "de-en.tgz")
    return raw


def iwslt(tmp: Path, raw: Path, dest: Path, names: list[Path]) -> Run:
    from macaron_preprocess.iwslt14 import main

    argv = ["--dest", str(dest), "--raw-dir", str(raw), "--workers", "1"]
    return Run(
        call=in_process(PROGS["macaron_preprocess.iwslt14"], lambda: main(argv)),
        inputs=[raw],
        outputs=[] if raw.is_relative_to(dest) else [dest],
        names=names,
    )


def bert_corpus(tmp: Path, dest: Path, *args: str, inputs: list[Path], names: list[Path]) -> Run:
    from macaron_preprocess.bert_corpus import main

    argv = ["--dest", str(dest), *args, "--workers", "1"]
    inside = any(i.is_relative_to(dest) for i in inputs)
    return Run(
        call=in_process(PROGS["macaron_preprocess.bert_corpus"], lambda: main(argv)),
        inputs=inputs,
        outputs=[] if inside else [dest],
        names=names,
    )


def evil(tmp: Path) -> Path:
    return write_malicious_checkpoint(tmp / "evil.pt", tmp / "MARKER")


def bert_copy(world: World, tmp: Path, damage: Callable[[Path], Any]) -> Path:
    return copy(world.bert, tmp, damage)


def tsv_damage(world: World, tmp: Path, damage: Callable[[Path], None]) -> Run:
    """macaron_preprocess.glue on a copy of the GLUE directory whose RTE/train.tsv is damaged."""
    glue = copy(world.glue, tmp)
    damage(glue / "RTE" / "train.tsv")
    return preprocess_glue(world, tmp, world.bert, glue=glue, names=[glue / "RTE" / "train.tsv"])


def header_only(path: Path) -> None:
    path.write_bytes(path.read_bytes().split(b"\n")[0] + b"\n")


def with_nul(path: Path) -> None:
    lines = path.read_bytes().split(b"\n")
    lines[3] = lines[3].replace(b"\t", b"\x00\t", 1)
    path.write_bytes(b"\n".join(lines))


def failing_replace(target: Path) -> Callable[..., None]:
    """``os.replace`` failing with a full disk when it moves something to ``target`` (the last rename)."""
    real = os.replace

    def replace(src: Any, dst: Any, **kwargs: Any) -> None:
        if Path(dst) == target:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(src), None, str(dst))
        real(src, dst, **kwargs)

    return replace


S = "step1"
STATES = "mp_rank_00_model_states.pt"
OPTIM = "zero_pp_rank_0_mp_rank_00_optim_states.pt"
RNG = "rng_rank0.pt"

CASES: list[Case] = [
    # --- fairseq's own console scripts, the plugin loaded with --user-dir (in-process through the hook;
    # the subprocess tests below show the hook is installed and the payload never runs)
    Case(
        "fairseq-generate",
        "payload",
        "--path pickles code",
        lambda w, t: generate(w, t, evil(t)),
        REFUSED,
        item=2,
    ),
    Case(
        "fairseq-generate",
        "truncated",
        "--path cut in half",
        lambda w, t: generate(w, t, copy(w.translation, t, truncate)),
        DAMAGED,
        item=6,
    ),
    Case(
        "fairseq-generate",
        "empty",
        "--path of 0 bytes",
        lambda w, t: generate(w, t, copy(w.translation, t, empty)),
        EMPTY,
    ),
    Case(
        "fairseq-generate",
        "directory",
        "--path a directory",
        lambda w, t: generate(w, t, w.translation_bin),
        r"is a directory, not a checkpoint file; give the checkpoint file",
    ),
    Case(
        "fairseq-train",
        "payload",
        "--finetune-from-model pickles code",
        lambda w, t: fairseq_train(w, t, "--finetune-from-model", evil(t)),
        REFUSED,
        item=2,
    ),
    Case(
        "fairseq-train",
        "truncated",
        "--restore-file cut in half",
        lambda w, t: fairseq_train(w, t, "--restore-file", copy(w.translation, t, truncate)),
        DAMAGED,
        item=6,
    ),
    Case(
        "fairseq-train",
        "empty",
        "--restore-file of 0 bytes",
        lambda w, t: fairseq_train(w, t, "--restore-file", copy(w.translation, t, empty)),
        EMPTY,
    ),
    Case(
        "fairseq-train",
        "directory",
        "--finetune-from-model a directory (fairseq trained from scratch)",
        lambda w, t: fairseq_train(w, t, "--finetune-from-model", w.translation_bin),
        r"--finetune-from-model .*: is a directory, not a checkpoint file; give the checkpoint file",
    ),
    Case(
        "train_preemptible",
        "payload",
        "--restore-file pickles code",
        lambda w, t: preemptible(w, t, "--restore-file", evil(t)),
        REFUSED,
        item=2,
    ),
    Case(
        "train_preemptible",
        "truncated",
        "--finetune-from-model cut in half",
        lambda w, t: preemptible(w, t, "--finetune-from-model", copy(w.translation, t, truncate)),
        DAMAGED,
    ),
    Case(
        "train_preemptible",
        "empty",
        "--restore-file of 0 bytes",
        lambda w, t: preemptible(w, t, "--restore-file", copy(w.translation, t, empty)),
        EMPTY,
    ),
    Case(
        "train_preemptible",
        "directory",
        "--restore-file a directory",
        lambda w, t: preemptible(w, t, "--restore-file", w.translation_bin),
        r"--restore-file .*: is a directory",
    ),
    # --- pre-training: resume (every file DeepSpeed reads), --init-from, export
    *[
        Case(
            "pretrain resume",
            "payload",
            f"a committed {name} that pickles code",
            lambda w, t, name=name: resume(w, t, lambda d, n=name: plant_payload(d / n, t / "MARKER"), name),
            REFUSED + r".*; move .*step1 out of .* to resume from the checkpoint before it",
            item=1,
            slow=True,
        )
        for name in (STATES, OPTIM, RNG)
    ],
    *[
        Case(
            "pretrain resume",
            "truncated",
            f"a committed but truncated {name}",
            lambda w, t, name=name: resume(w, t, lambda d, n=name: truncate(d / n), name),
            r"not a PyTorch checkpoint \(.*\); move .*step1 out of .* to resume from the checkpoint",
            item=6,
            slow=True,
        )
        for name in (STATES, OPTIM, RNG)
    ],
    *[
        Case(
            "pretrain resume",
            "empty",
            f"a committed but empty {name}",
            lambda w, t, name=name: resume(w, t, lambda d, n=name: empty(d / n), name),
            r"an empty file, 0 bytes\); move .*step1 out of .* to resume",
            item=6,
            slow=True,
        )
        for name in (STATES, OPTIM, RNG)
    ],
    Case(
        "pretrain resume",
        "directory",
        "the rng state a directory",
        lambda w, t: resume(w, t, lambda d: into_directory(d / RNG), RNG),
        r"is a directory, not a checkpoint file",
        slow=True,
    ),
    Case(
        "pretrain resume",
        "wrong-kind",
        "a save directory of another architecture",
        lambda w, t: resume(
            w,
            t,
            lambda d: (d / checkpoints.MANIFEST).write_text(
                (d / checkpoints.MANIFEST).read_text().replace("macaron_bert_tiny", "vanilla_bert_tiny")
            ),
            "",
        ),
        r"holds a vanilla_bert_tiny run; this command trains macaron_bert_tiny \(use another --save-dir",
        slow=True,
    ),
    Case(
        "pretrain resume",
        "overlap",
        "--save-dir inside the data-bin",
        lambda w, t: Run(
            call=in_process(
                PROGS["pretrain resume"],
                lambda: __import__("macaron_fairseq.pretrain.__main__", fromlist=["main"]).main(
                    pretrain_command(w.bert_bin, w.bert_bin / "run")[3:]
                ),
            ),
            inputs=[w.bert_bin],
            names=[w.bert_bin],
        ),
        r"--save-dir .*/run is inside DATA .*, " + APART,
    ),
    Case(
        "pretrain --init-from",
        "payload",
        "a file that pickles code",
        lambda w, t: init_from(w, t, evil(t)),
        REFUSED,
    ),
    Case(
        "pretrain --init-from",
        "truncated",
        "a checkpoint cut in half",
        lambda w, t: init_from(w, t, bert_copy(w, t, truncate)),
        r"--init-from .*: " + DAMAGED,
    ),
    Case(
        "pretrain --init-from",
        "empty",
        "a checkpoint of 0 bytes",
        lambda w, t: init_from(w, t, bert_copy(w, t, empty)),
        r"--init-from .*: " + EMPTY,
    ),
    Case(
        "pretrain --init-from",
        "directory",
        "a directory that is no save directory",
        lambda w, t: init_from(w, t, w.glue),
        r"--init-from .*: no complete checkpoint of python -m",
    ),
    Case(
        "pretrain --init-from",
        "wrong-kind",
        "a translation model",
        lambda w, t: init_from(w, t, w.translation),
        r"--init-from .* holds a transformer model; this command trains macaron_bert_tiny \(give --arch",
    ),
    Case(
        "pretrain.export",
        "payload",
        "model states that pickle code",
        lambda w, t: export(
            w, t, copy_save_dir(w, t, lambda d: plant_payload(d / STATES, t / "MARKER")), t / "model.pt", []
        ),
        REFUSED,
        slow=True,
    ),
    Case(
        "pretrain.export",
        "truncated",
        "optimizer states cut in half (read by DeepSpeed's zero_to_fp32)",
        lambda w, t: export(w, t, copy_save_dir(w, t, lambda d: truncate(d / OPTIM)), t / "model.pt", []),
        OPTIM + ": " + DAMAGED,
        item=6,
        slow=True,
    ),
    Case(
        "pretrain.export",
        "empty",
        "model states of 0 bytes",
        lambda w, t: export(w, t, copy_save_dir(w, t, lambda d: empty(d / STATES)), t / "model.pt", []),
        EMPTY,
        slow=True,
    ),
    Case(
        "pretrain.export",
        "wrong-kind",
        "a checkpoint file given as SAVE_DIR",
        lambda w, t: export(w, t, w.bert, t / "model.pt", [w.bert]),
        r"SAVE_DIR .*: not a directory; give the --save-dir of a python -m macaron_fairseq.pretrain run",
    ),
    Case(
        "pretrain.export",
        "overlap",
        "--out inside the checkpoint it reads",
        lambda w, t: export(w, t, copy_save_dir(w, t), t / "run" / S / "model.pt", []),
        r"--out .* is inside .*, " + APART,
        slow=True,
    ),
    Case(
        "pretrain.export",
        "out-directory",
        "--out an existing directory",
        lambda w, t: export(w, t, copy_save_dir(w, t), w.glue, [w.glue]),
        r"--out .*: is a directory; give the file to write",
        slow=True,
    ),
    # --- GLUE
    Case(
        "macaron_pipelines.glue",
        "payload",
        "CHECKPOINT pickles code",
        lambda w, t: glue_pipeline(w, t, evil(t)),
        REFUSED,
    ),
    Case(
        "macaron_pipelines.glue",
        "truncated",
        "CHECKPOINT cut in half",
        lambda w, t: glue_pipeline(w, t, bert_copy(w, t, truncate)),
        DAMAGED,
    ),
    Case(
        "macaron_pipelines.glue",
        "empty",
        "CHECKPOINT of 0 bytes",
        lambda w, t: glue_pipeline(w, t, bert_copy(w, t, empty)),
        EMPTY,
    ),
    Case(
        "macaron_pipelines.glue",
        "directory",
        "CHECKPOINT a directory",
        lambda w, t: glue_pipeline(w, t, w.spm_bin),
        r"--checkpoint .*: a directory, not a checkpoint file",
    ),
    Case(
        "macaron_pipelines.glue",
        "wrong-kind",
        "a translation checkpoint (failed later on a missing sentencepiece model)",
        lambda w, t: glue_pipeline(w, t, w.translation),
        r"not a BERT checkpoint of this plugin \(a transformer model of task translation\); give an export",
        item=7,
    ),
    Case(
        "macaron_pipelines.glue",
        "issue",
        "a BERT whose weights do not fit its configuration (every run failed)",
        lambda w, t: glue_pipeline(
            w,
            t,
            edited_bert(
                w, t, lambda s: s["model"].update({"encoder.layers.0.fc1.weight": torch.zeros(3, 3)})
            ),
        ),
        r"encoder\.layers\.0\.fc1\.weight has shape \(3, 3\), but its own configuration .* builds",
        item=7,
    ),
    *[
        Case(
            "macaron_pipelines.glue",
            "overlap",
            f"GLUE_DIR {how} WORKDIR/glue/data (deleted the raw TSVs)",
            lambda w, t, at=at: glue_pipeline(w, t, w.bert, glue=copy_to(w.glue, t / at)),
            r"WORKDIR's glue/data .* " + APART,
            item=3,
        )
        for how, at in (("is", "work/glue/data"), ("inside", "work/glue/data/raw"), ("contains", "work"))
    ],
    Case(
        "glue.sh",
        "overlap",
        "GLUE_DIR=WORKDIR/glue/data, refused before anything is installed",
        lambda w, t: Run(
            argv=["bash", str(REPO / "pipelines" / "glue.sh")],
            env={
                "GLUE_DIR": str(copy_to(w.glue, t / "work" / "glue" / "data")),
                "WORKDIR": str(t / "work"),
                "CHECKPOINT": str(w.bert),
                "SKIP_INSTALL": "1",
            },
            inputs=[t / "work" / "glue" / "data"],
            names=[t / "work" / "glue" / "data"],
        ),
        r"GLUE_DIR=.* is or lies inside .*glue/data, where the pipeline writes .*; keep GLUE_DIR apart",
        item=3,
    ),
    Case(
        "glue.sh",
        "directory",
        "CHECKPOINT a directory",
        lambda w, t: Run(
            argv=["bash", str(REPO / "pipelines" / "glue.sh")],
            env={"CHECKPOINT": str(w.spm_bin), "WORKDIR": str(t / "work"), "SKIP_INSTALL": "1"},
            inputs=[w.spm_bin],
            outputs=[t / "work"],
            names=[w.spm_bin],
        ),
        r"CHECKPOINT=.*: a directory, not a checkpoint file; give the model.pt",
    ),
    Case(
        "macaron_preprocess.glue",
        "payload",
        "--checkpoint pickles code",
        lambda w, t: preprocess_glue(w, t, evil(t)),
        REFUSED,
    ),
    Case(
        "macaron_preprocess.glue",
        "truncated",
        "--checkpoint cut in half",
        lambda w, t: preprocess_glue(w, t, bert_copy(w, t, truncate)),
        DAMAGED,
    ),
    Case(
        "macaron_preprocess.glue",
        "empty",
        "--checkpoint of 0 bytes",
        lambda w, t: preprocess_glue(w, t, bert_copy(w, t, empty)),
        EMPTY,
    ),
    Case(
        "macaron_preprocess.glue",
        "directory",
        "--checkpoint a directory",
        lambda w, t: preprocess_glue(w, t, w.spm_bin),
        r"is a directory, not a checkpoint file",
    ),
    Case(
        "macaron_preprocess.glue",
        "wrong-kind",
        "a translation checkpoint",
        lambda w, t: preprocess_glue(w, t, w.translation),
        r"not a BERT checkpoint of this plugin",
        item=7,
    ),
    *[
        Case(
            "macaron_preprocess.glue",
            "overlap",
            f"--dest {how} --glue-dir (deleted RTE/*.tsv)",
            lambda w, t, at=at: preprocess_glue(
                w, t, w.bert, dest=t / at, glue=copy_to(w.glue, t / "GLUE"), names=[t / "GLUE"]
            ),
            r"--dest .* --glue-dir .*, " + APART,
            item=3,
        )
        for how, at in (("the same path as", "GLUE"), ("inside", "GLUE/out"), ("containing", "."))
    ],
    Case(
        "macaron_preprocess.glue",
        "issue",
        "a header-only train.tsv (gave 'train: 0 examples')",
        lambda w, t: tsv_damage(w, t, header_only),
        r"train\.tsv holds no examples \(only its header\); restore it from the GLUE distribution",
        item=7,
    ),
    Case(
        "macaron_preprocess.glue",
        "issue",
        "a NUL byte in a TSV",
        lambda w, t: tsv_damage(w, t, with_nul),
        r"train\.tsv:4: a NUL byte at byte \d+ of the line .*; restore it",
        item=7,
    ),
    # --- HuggingFace import / export
    Case(
        "hf import",
        "payload",
        "pytorch_model.bin pickles code",
        lambda w, t: hf_import(w, t, hf_bin_payload(w, t)),
        REFUSED,
    ),
    Case(
        "hf import",
        "truncated",
        "model.safetensors cut in half",
        lambda w, t: hf_import(w, t, hf_weights(w, t, truncate)),
        r"model\.safetensors: not a readable safetensors",
    ),
    Case(
        "hf import",
        "empty",
        "model.safetensors of 0 bytes",
        lambda w, t: hf_import(w, t, hf_weights(w, t, empty)),
        r"model\.safetensors: not a readable safetensors",
    ),
    Case(
        "hf import",
        "directory",
        "HF_DIR a file",
        lambda w, t: hf_import(w, t, w.bert, names=[w.bert]),
        r"HF_DIR .*: not a directory; give a directory written by save_pretrained",
    ),
    Case(
        "hf import",
        "wrong-kind",
        "a RoBERTa config",
        lambda w, t: hf_import(w, t, hf_config(w, t, lambda c: {**c, "model_type": "roberta"})),
        r"model_type 'roberta'; only BERT",
    ),
    Case(
        "hf import",
        "issue",
        "config.json without num_hidden_layers",
        lambda w, t: hf_import(
            w, t, hf_config(w, t, lambda c: {k: v for k, v in c.items() if k != "num_hidden_layers"})
        ),
        r"config\.json: no num_hidden_layers; give the config\.json that save_pretrained wrote",
        item=6,
    ),
    Case(
        "hf import",
        "issue",
        "config.json a JSON list",
        lambda w, t: hf_import(w, t, hf_config(w, t, lambda c: [c])),
        r"config\.json: a JSON list, not an object of settings",
        item=6,
    ),
    Case(
        "hf import",
        "issue",
        "hidden_size 'sixteen' (printed fairseq's whole usage)",
        lambda w, t: hf_import(w, t, hf_config(w, t, lambda c: {**c, "hidden_size": "sixteen"})),
        r"config\.json: hidden_size is 'sixteen'; expected an integer >= 1",
        item=6,
    ),
    Case(
        "hf import",
        "out-directory",
        "--out an existing directory",
        lambda w, t: hf_import(w, t, w.hf_dir, out=w.spm_bin, names=[w.spm_bin]),
        r"--out .*: is a directory; give the checkpoint file to write",
        item=6,
    ),
    Case(
        "hf import",
        "overlap",
        "--out inside HF_DIR",
        lambda w, t: hf_import(w, t, (h := copy(w.hf_dir, t)), out=h / "model.pt"),
        r"--out .* is inside HF_DIR .*, " + APART,
    ),
    Case(
        "hf export", "payload", "the checkpoint pickles code", lambda w, t: hf_export(w, t, evil(t)), REFUSED
    ),
    Case(
        "hf export",
        "truncated",
        "the checkpoint cut in half",
        lambda w, t: hf_export(w, t, bert_copy(w, t, truncate)),
        DAMAGED,
    ),
    Case(
        "hf export",
        "empty",
        "the checkpoint of 0 bytes",
        lambda w, t: hf_export(w, t, bert_copy(w, t, empty)),
        EMPTY,
    ),
    Case(
        "hf export",
        "directory",
        "the checkpoint a directory",
        lambda w, t: hf_export(w, t, w.spm_bin),
        r"is a directory, not a checkpoint file",
    ),
    Case(
        "hf export",
        "wrong-kind",
        "an LSTM translation model (neither a BERT nor a Transformer)",
        lambda w, t: hf_export(
            w, t, edited_translation(w, t, lambda s: setattr(s["cfg"]["model"], "arch", "lstm"))
        ),
        r"not a BERT checkpoint of this plugin \(a lstm model",
    ),
    Case(
        "hf export",
        "issue",
        "a translation model saved without its task configuration",
        lambda w, t: hf_export(w, t, w.translation),
        r"a transformer checkpoint whose fairseq configuration has no task section \(fairseq cannot load it "
        r"either\); give a checkpoint saved by fairseq-train or macaron-upgrade",
    ),
    Case(
        "hf export",
        "issue",
        "weights of the wrong shapes",
        lambda w, t: hf_export(
            w,
            t,
            edited_bert(
                w, t, lambda s: s["model"].update({"encoder.layers.0.fc1.weight": torch.zeros(3, 3)})
            ),
        ),
        r"encoder\.layers\.0\.fc1\.weight has shape \(3, 3\), but its own configuration",
        item=6,
    ),
    Case(
        "hf export",
        "issue",
        "encoder_layers: 'abc'",
        lambda w, t: hf_export(
            w, t, edited_bert(w, t, lambda s: setattr(s["cfg"]["model"], "encoder_layers", "abc"))
        ),
        r"its model configuration does not build a model \(.*\); the file is damaged or was edited",
        item=6,
    ),
    Case(
        "hf export",
        "out-directory",
        "--dest an existing directory (the message named --out)",
        lambda w, t: hf_export(w, t, w.bert, dest=w.glue, names=[w.glue]),
        r"--dest .*: exists and is not an empty directory; give a new directory",
        item=6,
    ),
    Case(
        "hf export",
        "overlap",
        "--dest inside the checkpoint's data directory",
        lambda w, t: hf_export(w, t, w.bert, dest=w.spm_bin / "hf", names=[w.spm_bin]),
        r"--dest .* is inside the checkpoint's data directory .*, " + APART,
    ),
    # --- average_checkpoints
    Case(
        "average_checkpoints",
        "payload",
        "a checkpoint that pickles code",
        lambda w, t: averaged(w, t, lambda p: write_malicious_checkpoint(p, t / "MARKER")),
        REFUSED,
    ),
    Case(
        "average_checkpoints",
        "truncated",
        "a checkpoint cut in half",
        lambda w, t: averaged(w, t, truncate),
        DAMAGED,
    ),
    Case(
        "average_checkpoints", "empty", "a checkpoint of 0 bytes", lambda w, t: averaged(w, t, empty), EMPTY
    ),
    Case(
        "average_checkpoints",
        "directory",
        "a directory among the inputs",
        lambda w, t: averaged(w, t, into_directory),
        r"--inputs .*: a directory, not a checkpoint file",
    ),
    Case(
        "average_checkpoints",
        "wrong-kind",
        "{'model': 'str'}",
        lambda w, t: averaged(w, t, lambda p: torch.save({"model": "str"}, p)),
        r"not a fairseq checkpoint \(its 'model' is a str, not a dict of tensors\)",
        item=6,
    ),
    Case(
        "average_checkpoints",
        "out-directory",
        "--out a directory",
        lambda w, t: averaged(w, t, out=w.spm_bin, names=[w.spm_bin]),
        r"--out .*: is a directory; give the file to write",
        item=6,
    ),
    Case(
        "average_checkpoints",
        "overlap",
        "--out one of its inputs",
        lambda w, t: averaged(w, t, out=t / "ckpts" / "checkpoint2.pt"),
        r"--out .* is one of the checkpoints it averages",
    ),
    # --- corpus and translation preprocessing
    Case(
        "macaron_preprocess.bert_corpus",
        "directory",
        "--wikipedia a directory",
        lambda w, t: bert_corpus(t, t / "out", "--wikipedia", str(w.glue), inputs=[w.glue], names=[w.glue]),
        r"cannot read .* \(one of the Wikipedia dumps\): it is a directory",
    ),
    Case(
        "macaron_preprocess.bert_corpus",
        "empty",
        "a dump of 0 bytes",
        lambda w, t: bert_corpus(
            t,
            t / "out",
            "--wikipedia",
            str(empty(t / "enwiki.xml.bz2")),
            inputs=[t / "enwiki.xml.bz2"],
            names=[t / "enwiki.xml.bz2"],
        ),
        r"is not a MediaWiki XML export",
    ),
    Case(
        "macaron_preprocess.bert_corpus",
        "overlap",
        "--dest the --bookcorpus directory",
        lambda w, t: bert_corpus(
            t, (b := write_text_corpus(t / "books")), "--bookcorpus", str(b), inputs=[b], names=[b]
        ),
        r"--dest .* the same path as --bookcorpus .*, " + APART,
    ),
    Case(
        "macaron_preprocess.custom",
        "overlap",
        "--dest containing the input files",
        lambda w, t: custom(t, write_text_corpus(t / "raw"), t),
        r"--dest .* contains --trainpref .*, " + APART,
    ),
    Case(
        "macaron_preprocess.custom",
        "directory",
        "an input file that is a directory",
        lambda w, t: custom_with_a_directory(t),
        r"cannot read .*valid\.de \(one of the input files\): it is a directory",
    ),
    Case(
        "macaron_preprocess.iwslt14",
        "overlap",
        "--dest the --raw-dir",
        lambda w, t: iwslt(t, (r := iwslt_raw(t)), r, [r]),
        r"--dest .* the same path as --raw-dir .*, " + APART,
    ),
    Case(
        "macaron_preprocess.iwslt14",
        "overlap",
        "--dest containing the --raw-dir",
        lambda w, t: iwslt(t, (r := iwslt_raw(t)), t, [r]),
        r"--dest .* contains --raw-dir .*, " + APART,
    ),
    Case(
        "macaron_preprocess.iwslt14",
        "empty",
        "de-en.tgz of 0 bytes",
        lambda w, t: iwslt(t, (r := iwslt_raw(t)), t / "out", [r / "de-en.tgz"]),
        r"archive .*de-en\.tgz is truncated or corrupt",
    ),
]


def hf_weights(world: World, tmp: Path, damage: Callable[[Path], Any]) -> Path:
    hf_dir = copy(world.hf_dir, tmp)
    damage(hf_dir / "model.safetensors")
    return hf_dir


def hf_bin_payload(world: World, tmp: Path) -> Path:
    """The HF directory with pickled weights (``pytorch_model.bin``, as older uploads have) that run code."""
    from safetensors.torch import load_file

    hf_dir = copy(world.hf_dir, tmp)
    state = load_file(str(hf_dir / "model.safetensors"))
    (hf_dir / "model.safetensors").unlink()
    torch.save({**state, "payload": RunsCode(tmp / "MARKER")}, hf_dir / "pytorch_model.bin")
    return hf_dir


#: (command, kind) cells that cannot happen, and why
NOT_APPLICABLE = {
    (
        "fairseq-generate",
        "wrong-kind",
    ): "fairseq's own command: a model of another task is fairseq's error to give",
    ("fairseq-generate", "overlap"): "writes to stdout only",
    ("fairseq-generate", "out-directory"): "writes to stdout only",
    (
        "fairseq-train",
        "wrong-kind",
    ): "fairseq's own command: a model of another task is fairseq's error to give",
    ("fairseq-train", "overlap"): "fairseq's own --save-dir handling (and its checkpoint_last.pt resume)",
    ("fairseq-train", "out-directory"): "--save-dir is a directory by design",
    ("train_preemptible", "wrong-kind"): "fairseq-train's (above)",
    ("train_preemptible", "overlap"): "fairseq-train's (above)",
    ("train_preemptible", "out-directory"): "fairseq-train's (above)",
    (
        "pretrain resume",
        "out-directory",
    ): "--save-dir is a directory by design (the run's own output and input)",
    (
        "pretrain --init-from",
        "overlap",
    ): "a --save-dir with a checkpoint of its own resumes it: --init-from is unused",
    ("pretrain --init-from", "out-directory"): "--save-dir is a directory by design",
    ("pretrain.export", "directory"): "SAVE_DIR is a directory by design (a file there: the wrong-kind row)",
    (
        "glue.sh",
        "payload",
    ): "the same Python checks as macaron_pipelines.glue (tests/test_bad_input.py runs glue.sh on it)",
    ("glue.sh", "truncated"): "the same Python checks as macaron_pipelines.glue",
    ("glue.sh", "empty"): "the same Python checks as macaron_pipelines.glue",
    ("glue.sh", "out-directory"): "WORKDIR is a directory by design",
    (
        "glue.sh",
        "wrong-kind",
    ): "glue.sh execs python -m macaron_pipelines.glue, whose check the macaron_pipelines.glue row runs",
    ("macaron_pipelines.glue", "out-directory"): "WORKDIR is a directory by design",
    ("macaron_preprocess.glue", "out-directory"): "--dest is a directory by design (resumable)",
    ("hf import", "directory"): "the directory row is HF_DIR given as a file (a directory is what it takes)",
    ("hf export", "directory"): "covered: the checkpoint given as a directory (the row above)",
    ("macaron_preprocess.bert_corpus", "payload"): "reads text and XML, no pickle",
    ("macaron_preprocess.bert_corpus", "wrong-kind"): "takes no model",
    ("macaron_preprocess.bert_corpus", "out-directory"): "--dest is a directory by design (resumable)",
    ("macaron_preprocess.custom", "payload"): "reads text, no pickle",
    (
        "macaron_preprocess.custom",
        "truncated",
    ): "a text file cut short is still text (line counts are checked: its tests)",
    ("macaron_preprocess.custom", "wrong-kind"): "takes no model",
    ("macaron_preprocess.custom", "out-directory"): "--dest is a directory by design (resumable)",
    ("macaron_preprocess.custom", "empty"): "covered elsewhere (below)",
    ("macaron_preprocess.iwslt14", "payload"): "reads a tar archive and text, no pickle",
    ("macaron_preprocess.iwslt14", "wrong-kind"): "takes no model",
    ("macaron_preprocess.iwslt14", "out-directory"): "--dest is a directory by design (resumable)",
    ("macaron_preprocess.iwslt14", "directory"): "--raw-dir is a directory by design (members: its tests)",
    ("average_checkpoints", "out-directory"): "a row above (item 6)",
}
NOT_APPLICABLE = {k: v for k, v in NOT_APPLICABLE.items() if not any((c.command, c.kind) == k for c in CASES)}
#: cells a slower test covers (it runs the real thing end to end), by test id
COVERED_ELSEWHERE = {
    ("macaron_preprocess.bert_corpus", "truncated"): (
        "tests/preprocess/test_bert_corpus.py::test_truncated_dump_fails_with_its_name_and_marks_nothing_done"
    ),
    ("macaron_preprocess.custom", "empty"): (
        "tests/preprocess/test_preprocess_custom.py::test_no_training_pair_left_names_the_stage_and_why"
    ),
    ("macaron_preprocess.iwslt14", "truncated"): (
        "tests/preprocess/test_preprocess_iwslt14.py::test_truncated_archive_is_reported_and_leaves_nothing"
    ),
}


@pytest.fixture(autouse=True)
def torch_defaults_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every case runs with torch's weights_only default turned off, as users set it for other tools."""
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.id, marks=[pytest.mark.slow] if c.slow else []) for c in CASES]
)
def test_a_bad_input_is_one_line_and_harms_nothing(
    case: Case, world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = case.build(world, tmp_path)
    before = digest(run.inputs)
    existing = snapshot(tmp_path)
    code, stderr = execute(run, capsys)
    lines = error_lines(stderr)
    assert "Traceback" not in stderr and len(lines) == 1, stderr[-3000:]
    prog = case.prog or PROGS[case.command]
    assert lines[0].startswith(f"{prog}: error: "), lines[0]
    assert other_stderr_lines(stderr, prog, TRAINING_LOG) == [], stderr[-3000:]  # a documented line at most
    created = sorted(p for p in snapshot(tmp_path) - existing if ".stages" not in Path(p).parts)
    if case.command == "fairseq-train":  # upstream's script makes --save-dir before it reads a checkpoint
        created = [p for p in created if not (Path(p).is_dir() and not any(Path(p).iterdir()))]
    assert created == [], created  # nothing left, not even an empty directory
    assert re.search(case.message, lines[0]), lines[0]
    for name in run.names:
        assert str(name) in lines[0], (name, lines[0])
    assert code == case.code, stderr[-2000:]
    assert not (tmp_path / "MARKER").exists()  # nothing executed
    assert digest(run.inputs) == before  # the inputs unchanged
    assert leftovers(run.outputs, tmp_path) == []


def test_every_cell_is_covered() -> None:
    """Every command × kind is a case, or listed with its reason (or the test that covers it)."""
    cases = {(c.command, c.kind) for c in CASES}
    for command in PROGS:
        for kind in KINDS:
            cell = (command, kind)
            assert cell in cases or cell in NOT_APPLICABLE or cell in COVERED_ELSEWHERE, cell
    for where in COVERED_ELSEWHERE.values():
        path, name = where.split("::")
        assert f"def {name}" in (REPO / path).read_text(), where  # the reference is live


# ----------------------------------------------------------------- fairseq's own processes, end to end
@pytest.mark.slow  # runs the real command in a fresh interpreter: 4-10 s (out of --quick)
@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("fairseq-generate", ["-s", "src", "-t", "tgt", "--gen-subset", "valid", "--path"]),
    ],
)
def test_fairseqs_own_scripts_refuse_a_payload_in_one_line(
    command: str, args: list[str], world: World, tmp_path: Path
) -> None:
    """#34 items 2 and 6: with ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` fairseq's loader ran the payload; then a
    refusal printed 25-40 lines ending in ``UnsafeCheckpointError``. Now: exit 2, one error line, last. (The
    table runs fairseq-train, fairseq-generate and train_preemptible in this process through the same hook;
    this shows the plugin installs it in fairseq's own process.)"""
    payload = evil(tmp_path)
    argv = [command, str(world.translation_bin), "--user-dir", str(USER_DIR), "--cpu", *args, str(payload)]
    proc = subprocess.run(
        argv, cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and error_lines(proc.stderr) == [
        proc.stderr.strip().splitlines()[-1]
    ]
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .startswith(f"{command}: error: refusing to load checkpoint {payload}: it pickles posix.system")
    )
    assert not (tmp_path / "MARKER").exists()


@pytest.mark.slow  # reads a real pre-training save directory (save_dir_of: a DeepSpeed run, ~15 s)
def test_a_real_save_directory_passes_the_allow_list(world: World) -> None:
    """What #34 item 1 added does not refuse DeepSpeed's own files: every file of a real checkpoint (model,
    ZeRO optimizer and rng states) reads through the allow-list with DeepSpeed's classes allowed."""
    save_dir = save_dir_of(world)
    choice = checkpoints.choose(save_dir)
    assert choice.tag == S
    checkpoints.check_resumable(save_dir, choice, "macaron_bert_tiny", 1)  # raises on a refused file


@pytest.mark.slow  # a real DeepSpeed resume (~15 s)
def test_a_run_resumes_under_the_allow_list(world: World, tmp_path: Path) -> None:
    """What #34 item 1 changed does not stop a real resume: DeepSpeed's files load through the allow-list
    (DeepSpeed asks for weights_only=False; TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 is set too)."""
    save_dir = copy_save_dir(world, tmp_path)
    proc = subprocess.run(
        pretrain_command(world.bert_bin, save_dir, "--max-update", "2"),
        cwd=REPO,
        env=subprocess_env(MASTER_PORT=str(free_port())),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"resumed from {save_dir / S} at step 1" in proc.stderr
    assert (save_dir / "step2" / checkpoints.MANIFEST).is_file()


# ------------------------------------------------------------------------ half-written outputs (item 5)
def test_hf_import_leaves_no_data_dir_without_its_checkpoint(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """#34 item 5: the import moved ``X.data/`` into place before ``X.pt``; a failure in between left a data
    directory without its checkpoint. Now both or neither (and a re-import keeps the previous pair)."""
    from macaron_fairseq.hf.__main__ import main

    out = tmp_path / "bert.pt"
    monkeypatch.setattr(os, "replace", failing_replace(out))
    run = Run(
        call=in_process(PROGS["hf import"], lambda: main(["import", str(world.hf_dir), "--out", str(out)]))
    )
    code, stderr = execute(run, capsys)
    assert code == 2 and error_lines(stderr)[0].startswith(f"{PROGS['hf import']}: error: cannot write "), (
        stderr
    )
    assert "No space left on device (ENOSPC)" in stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no bert.data/, no bert.pt, no temporary


@pytest.mark.slow  # reads a real pre-training save directory (save_dir_of: a DeepSpeed run, ~15 s)
def test_export_leaves_no_temporary_when_the_last_rename_fails(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """#34 item 5: fairseq's ``torch_persistent_save`` left ``X.pt.tmp`` when its rename failed."""
    save_dir = copy_save_dir(world, tmp_path)
    out = tmp_path / "out" / "model.pt"
    out.parent.mkdir()
    real_rename = os.rename
    monkeypatch.setattr(os, "replace", failing_replace(out))
    monkeypatch.setattr(
        os,
        "rename",
        lambda s, d, **k: failing_replace(out)(s, d) if Path(d) == out else real_rename(s, d, **k),
    )
    code, stderr = execute(export(world, tmp_path, save_dir, out, []), capsys)
    assert code == 2 and "No space left on device (ENOSPC)" in error_lines(stderr)[0], stderr
    assert list(out.parent.iterdir()) == []


# --------------------------------------------------------------------------- a failed grid (item 4)
def in_process_preprocessing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pipeline's ``python -m macaron_preprocess.glue`` step, in this process (its import is slow)."""
    from macaron_pipelines.glue import __main__ as pipeline
    from macaron_preprocess.glue import main as preprocess_main

    def run_command(command: list[object], console: Any) -> None:
        argv = [str(part) for part in command]
        assert argv[1:3] == ["-m", "macaron_preprocess.glue"], argv
        preprocess_main([*argv[3:], "--workers", "1"])

    monkeypatch.setattr(pipeline, "run_command", run_command)


def test_a_grid_whose_runs_all_failed_exits_non_zero_without_a_submission(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """#34 item 4: every run failing twice still exited 0 and wrote a partial ``submission.zip``. Now the
    results name the failed runs, no submission is written, and the pipeline exits 1 naming them. The runs
    are real child processes of the scheduler that fail (a training that crashes)."""
    from macaron_pipelines.glue import scheduler
    from macaron_workflow import processes

    in_process_preprocessing(monkeypatch)
    real_run = processes.run
    crash = [sys.executable, "-c", "import sys; print('training crashed', file=sys.stderr); sys.exit(1)"]
    monkeypatch.setattr(
        scheduler, "processes", SimpleNamespace(run=lambda command, **kw: real_run(crash, **kw))
    )
    run = glue_pipeline(world, tmp_path, world.bert, "--cpu-processes", "1")
    code, stderr = execute(run, capsys)
    lines = error_lines(stderr)
    assert code == 1 and len(lines) == 1, stderr[-3000:]
    assert lines[0].startswith(
        "macaron_pipelines.glue: error: 1 of 1 runs failed twice: RTE/bs8-lr0.001-ep1-wd0.01-seed100"
    )
    assert "rerun the same command" in lines[0] and "no submission written" in lines[0]
    glue = tmp_path / "work" / "glue"
    assert json.loads((glue / "results.json").read_text())["failed_runs"] == [
        "RTE/bs8-lr0.001-ep1-wd0.01-seed100"
    ]
    assert not (glue / "submission.zip").exists() and not (glue / "submission-partial.zip").exists()


def test_a_partial_grid_writes_only_a_partial_submission(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """#34 item 4: a run on some tasks wrote ``submission.zip``; now it is ``submission-partial.zip`` and a
    stale complete one goes. The one run here is a real child that writes what ``run_one`` writes."""
    from macaron_pipelines.glue import scheduler
    from macaron_workflow import processes

    in_process_preprocessing(monkeypatch)
    real_run = processes.run

    def finished(command: list[str], **kw: Any) -> Any:
        spec = json.loads(Path(command[command.index("macaron_pipelines.glue.run_one") + 1]).read_text())
        child = f"""
import json, pathlib
run = pathlib.Path({spec["run_dir"]!r})
(run / "predictions").mkdir(parents=True, exist_ok=True)
meta = json.loads((pathlib.Path({spec["data_dir"]!r}) / "meta.json").read_text())
for split, record in meta["splits"].items():
    if split != "train":
        (run / "predictions" / f"{{split}}.txt").write_text("entailment\\n" * record["examples"])
(run / "run.json").write_text(json.dumps({{"status": "ok", "task": "RTE", "config": {spec["config"]!r},
    "seed": {spec["seed"]}, "metrics": {{"accuracy": 50.0}}, "score": 50.0, "directory": str(run)}}))
"""
        return real_run([sys.executable, "-c", child], **kw)

    monkeypatch.setattr(scheduler, "processes", SimpleNamespace(run=finished))
    glue = tmp_path / "work" / "glue"
    glue.mkdir(parents=True)
    (glue / "submission.zip").write_bytes(b"a stale complete submission")
    capsys.readouterr()
    from macaron_pipelines.glue.__main__ import main

    main(glue_argv(world, tmp_path, world.bert, world.glue))
    assert "submission: " in capsys.readouterr().out
    assert not (glue / "submission.zip").exists()
    with zipfile.ZipFile(glue / "submission-partial.zip") as archive:
        assert sorted(archive.namelist()) == ["RTE.tsv", "WNLI.tsv"]


# ------------------------------------------------------------------------- the program name (item 6)
@pytest.mark.parametrize(
    ("module", "argv", "prog"),
    [
        (
            "macaron_fairseq.pretrain.export",
            ["nowhere", "--out", "x.pt"],
            "python -m macaron_fairseq.pretrain.export",
        ),
        (
            "macaron_preprocess.glue",
            ["--glue-dir", "nowhere", "--dest", "d", "--data-bin", "nowhere"],
            "python -m macaron_preprocess.glue",
        ),
        (
            "macaron_preprocess.iwslt14",
            ["--dest", "d", "--raw-dir", "d"],
            "python -m macaron_preprocess.iwslt14",
        ),
    ],
)
def test_every_error_names_its_program(
    module: str,
    argv: list[str],
    prog: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """#34 item 6: the errors of these three lacked the program name (their console-script entry points, as
    ``python -m`` runs them, here in this process)."""
    import importlib

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [f"{module.replace('.', '/')}.py", *argv])
    code, stderr = execute(Run(call=importlib.import_module(module).cli), capsys)
    assert code == 2 and "Traceback" not in stderr, stderr
    assert error_lines(stderr) == [stderr.strip().splitlines()[-1]], stderr
    assert stderr.strip().splitlines()[-1].startswith(f"{prog}: error: "), stderr


@pytest.mark.slow  # reads a real pre-training save directory (save_dir_of: a DeepSpeed run, ~15 s)
def test_the_shared_inputs_were_never_written(world: World) -> None:
    """#41: the data-bin was hashed after the shared pre-training run had written its pair cache into it.
    The inputs are hashed as they are written (:func:`world`); the shared run, and every case before this
    test (the file's last), left them as they were — no file, no directory added."""
    save_dir_of(world)
    assert digest(world.inputs()) == world.initial
