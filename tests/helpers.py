"""The one helper module of the test suite (imported as ``helpers``; ``conftest.py`` holds only fixtures):
running commands and modules of the checkout, building models as ``fairseq-train`` does, reading outputs.
Toy corpora come from the project's own generator, :mod:`macaron_synthetic.toy_bitext`; archives in
upstream layouts from ``upstream_layouts``."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from macaron_fairseq.build_without_data import build_translation_model  # noqa: E402  (registers the models)
from macaron_synthetic.toy_bitext import SymbolTask, preprocess_flags  # noqa: E402

#: a tiny model's dimensions (fairseq-train flags)
TINY = [
    "--encoder-embed-dim",
    "32",
    "--decoder-embed-dim",
    "32",
    "--encoder-ffn-embed-dim",
    "48",
    "--decoder-ffn-embed-dim",
    "40",
    "--encoder-attention-heads",
    "4",
    "--decoder-attention-heads",
    "4",
    "--encoder-layers",
    "2",
    "--decoder-layers",
    "2",
]

#: the paper's DT-Fixup (data-dependent factors, μ measured): ``--init-scheme dt-fixup`` on every model
DT_FIXUP = ("--init-scheme", "dt-fixup")
#: the tiny symbol translation task of the suite (a learnable toy translation, see toy_bitext)
TINY_TASK = SymbolTask({"train": 400, "valid": 30, "test": 30}, vocab=30, max_words=8, prefixes=("w", "v"))


def fairseq_preprocess_here(argv: Sequence[str]) -> None:
    """``fairseq-preprocess ARGV`` in this process: the console script's own ``fairseq_cli.preprocess.main``,
    without a fresh interpreter importing fairseq (~9 s here). The root logger (the module's import-time
    ``basicConfig``) and the handlers ``main`` adds to its own logger (a ``preprocess.log`` file handler each
    call) are given back."""
    root = logging.getLogger()
    root_handlers, root_level = list(root.handlers), root.level
    from fairseq_cli import preprocess

    root.handlers[:], root.level = root_handlers, root_level
    own = logging.getLogger("fairseq_cli.preprocess")
    own_handlers = list(own.handlers)
    try:
        preprocess.main(preprocess.options.get_preprocessing_parser().parse_args(list(argv)))
    finally:
        for handler in own.handlers:
            if handler not in own_handlers:
                handler.close()
        own.handlers[:] = own_handlers


def tiny_task_data_bin(root: Path) -> Path:
    """:data:`TINY_TASK` written under ``root`` and binarized into ``root/data-bin`` with fairseq's preprocess
    (in this process), as ``TINY_TASK.data_bin(root)`` does with the console script."""
    root.mkdir(parents=True, exist_ok=True)
    TINY_TASK.write(root)
    data_bin = root / "data-bin"
    fairseq_preprocess_here(preprocess_flags(root, list(TINY_TASK.sizes), data_bin))
    return data_bin


def write_dictionary(path: Path, size: int) -> None:
    path.write_text("".join(f"tok{i} {1000 - i}\n" for i in range(size)))


def build_model(data_dir: Path, arch: str, extra: Sequence[str] = ()) -> tuple[object, object]:
    """Build (model, task) exactly as fairseq-train does from command-line flags."""
    return build_translation_model(data_dir, arch, extra)


def run_cli(argv: Sequence[str], cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run a command (one thread for torch); with ``check``, a failure shows both output tails."""
    env = dict(os.environ, PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"command failed ({proc.returncode}): {' '.join(argv)}\n--- stdout\n{proc.stdout[-4000:]}"
            f"\n--- stderr\n{proc.stderr[-4000:]}"
        )
    return proc


SMALL_PRETRAIN_GROUP = "small-pretrain"
"""The ``WORKER_GROUP`` of the test files that use the ``small_pretrain`` fixture (conftest.py): one worker
runs them, and builds the fixture once."""


def command_here(
    cli: Callable[[], None],
    argv0: str,
    *argv: str,
    capsys: pytest.CaptureFixture[str],
    cwd: Path | None = None,
) -> subprocess.CompletedProcess:
    """A console script's function ``cli`` run in this process as ``argv0 ARGV``, in ``cwd`` if given (its
    one-line errors and exit status, without a new interpreter for each case); the same result type as a
    subprocess run. ``argv0`` names the command in its messages (a console script's name, or ``x.py`` for
    the ``python -m`` form). ``sys.argv`` and the working directory are given back."""
    old, saved = os.getcwd(), sys.argv
    if cwd is not None:
        os.chdir(cwd)
    try:
        with pytest.raises(SystemExit) as stop:
            sys.argv = [argv0, *argv]
            cli()
            raise SystemExit(0)
    finally:
        os.chdir(old)
        sys.argv = saved
    out = capsys.readouterr()
    return subprocess.CompletedProcess(argv, stop.value.code or 0, out.out, out.err)


def upgrade_here(
    *argv: str, capsys: pytest.CaptureFixture[str], cwd: Path | None = None
) -> subprocess.CompletedProcess:
    """``macaron-upgrade ARGV`` in this process (:func:`command_here`)."""
    from macaron_fairseq.upgrade.__main__ import cli

    return command_here(cli, "macaron-upgrade", *argv, capsys=capsys, cwd=cwd)


def run_pretrain_sh(workdir: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """``SMALL=1 bash pipelines/pretrain.sh ARGS`` with ``WORKDIR=workdir`` (one torch thread per rank); the
    run must succeed. With the default workers it is the run ``SMALL=1 bash pipelines/glue.sh`` makes in
    ``WORKDIR/pretrain``, so a GLUE run there finds every stage done."""
    environment = dict(
        os.environ,
        SMALL="1",
        SKIP_INSTALL="1",
        WORKDIR=str(workdir),
        OMP_NUM_THREADS="1",
        PYTHONWARNINGS="ignore",
        **env,
    )
    command = ["bash", str(REPO / "pipelines" / "pretrain.sh"), *args]
    proc = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"pretrain.sh failed\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


def run_module(
    module: str, *args: str, check: bool = True, timeout: float = 120
) -> subprocess.CompletedProcess:
    """Run ``python -m module args`` from the repository root; returns the completed process."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    completed = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and completed.returncode != 0:
        raise AssertionError(
            f"{module} failed ({completed.returncode}):\n{completed.stdout}\n{completed.stderr}"
        )
    return completed


def env_without(directory: Path, *packages: str) -> dict[str, str]:
    """The environment of a child interpreter in which importing ``packages`` fails as if they were not
    installed (``ImportError: No module named 'NAME'``): a ``sitecustomize.py`` written into ``directory``,
    which goes first on ``PYTHONPATH``."""
    (directory / "sitecustomize.py").write_text(
        "import builtins\nreal = builtins.__import__\n"
        f"BLOCKED = {tuple(packages)!r}\n"
        "def block(name, *a, **k):\n"
        "    top = name.split('.')[0]\n"
        "    if top in BLOCKED:\n"
        "        raise ImportError(f'No module named {top!r}')\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = block\n"
    )
    return {**os.environ, "PYTHONPATH": f"{directory}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def read_lines(path: Path) -> list[str]:
    return Path(path).read_text(encoding="utf-8").split("\n")[:-1]


def remove_bpe(line: str) -> str:
    """fairseq's ``--post-process sentencepiece`` (copied here on purpose, to test against the real rule)."""
    return line.replace(" ", "").replace("\u2581", " ").strip()


def mmap_index_length(path: Path) -> int:
    """Sentences in a fairseq mmap .idx, read through fairseq itself."""
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    return len(MMapIndexedDataset(str(path).removesuffix(".idx")))


def save_model_checkpoint(path: Path, data_dir: Path, arch: str, extra: Sequence[str] = ()) -> Path:
    """Build ``--arch arch`` + ``extra`` as fairseq-train does and save it as a fairseq checkpoint holding
    the weights and the model config (what ``checkpoint_utils.load_checkpoint_to_cpu`` reads, e.g. for
    ``--pretrained-encoder``); no optimizer state."""
    import torch
    from fairseq import options, tasks

    parser = options.get_training_parser()
    argv = [str(data_dir), "--task", "translation", "-s", "src", "-t", "tgt", "--arch", arch, *extra]
    args = options.parse_args_and_arch(parser, input_args=argv)
    model = tasks.setup_task(args).build_model(args)
    state = {
        "cfg": {"model": args},
        "model": model.state_dict(),
        "optimizer_history": [
            {
                "criterion_name": "CrossEntropyCriterion",
                "optimizer_name": "FairseqAdam",
                "lr_scheduler_state": {"best": None},
                "num_updates": 0,
            },
        ],
        "extra_state": {"train_iterator": {"epoch": 1}},
        "last_optimizer_state": None,
    }
    torch.save(state, path)
    return Path(path)


def save_bert_checkpoint(path: Path, data_dir: Path, arch: str = "macaron_bert_tiny", seed: int = 0) -> Path:
    """A pre-training BERT (MLM + NSP heads, random weights) over ``data_dir/dict.txt``, saved as
    ``python -m macaron_fairseq.pretrain.export`` writes it: the weights and the fairseq configuration."""
    import torch
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from omegaconf import OmegaConf

    from macaron_fairseq.models.bert_build import build_bert_task

    task, args = build_bert_task(data_dir, arch)
    torch.manual_seed(seed)
    model = task.build_model(args)
    state = {
        "args": None,
        "cfg": OmegaConf.to_container(convert_namespace_to_omegaconf(args), resolve=True, enum_to_str=True),
        "model": model.state_dict(),
        "optimizer_history": [
            {
                "criterion_name": "BertPretrainingLoss",
                "optimizer_name": "DeepSpeed",
                "lr_scheduler_state": {},
                "num_updates": 1,
            }
        ],
        "extra_state": {"train_iterator": {"epoch": 1}, "val_loss": None},
        "last_optimizer_state": None,
    }
    torch.save(state, path)
    return Path(path)


class RunsCode:
    """What a malicious checkpoint pickles: unpickling it calls ``os.system`` (creating ``marker``)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def write_malicious_checkpoint(path: Path, marker: Path, **state: object) -> Path:
    """A checkpoint whose unpickling would create ``marker``: a fairseq-looking state (``state`` overrides
    its keys) whose model config is an object that calls ``os.system``. Loaders must refuse it."""
    import torch

    content: dict[str, object] = {
        "model": {"encoder.embed_tokens.weight": torch.zeros(4, 2)},
        "cfg": {"model": RunsCode(marker), "task": {"data": str(path.parent)}},
    }
    content.update(state)
    torch.save(content, path)
    return Path(path)
