"""``python -m macaron_fairseq.pretrain.export SAVE_DIR --out model.pt [--tag stepN]``: a DeepSpeed
pre-training checkpoint -> a fairseq checkpoint (``checkpoint_utils.load_model_ensemble_and_task``,
``fairseq-train --restore-file``).

The fp32 weights are gathered from the ZeRO partitions with DeepSpeed's own
``get_fp32_state_dict_from_zero_checkpoint`` (ZeRO stages 1-2), or are the module's own at stage 0, which
writes no partitions (:mod:`.weights`). DeepSpeed's function drops parameters that share storage with
another one (DeepSpeed issue #1896) — here the MLM output projection, tied to the token embeddings — so the
model is rebuilt from the run's fairseq configuration (kept in the checkpoint), the gathered weights are
loaded, and only parameters that are tied to a loaded one may be missing: they are filled by the tie itself.
"""

from __future__ import annotations

import argparse
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from macaron_fairseq.bert_checkpoint import tied_names
from macaron_fairseq.checkpoint_reader import fairseq_checkpoint, load_checkpoint
from macaron_fairseq.pretrain import checkpoints
from macaron_fairseq.pretrain.weights import checkpoint_weights
from macaron_workflow.atomic import save_torch
from macaron_workflow.cli import ArgumentParser, program_name, run_cli
from macaron_workflow.errors import UserError
from macaron_workflow.overlap import entries, refuse_overlap

PROG = ("macaron_fairseq.pretrain.export", "macaron-export")


def read_client_state(save_dir: Path, tag: str) -> dict[str, Any]:
    states = save_dir / tag / "mp_rank_00_model_states.pt"
    if not states.exists():
        raise UserError(f"{save_dir}: no DeepSpeed checkpoint {tag!r} (missing {states})")
    return load_checkpoint(states)  # the allow-listed reader: a save directory is untrusted input


def rebuild_model(cfg_dict: dict[str, Any]) -> tuple[Any, Any, Any]:
    """The run's fairseq config, task and (untrained) model."""
    from fairseq import tasks
    from omegaconf import OmegaConf

    import macaron_fairseq  # noqa: F401  (registers the task and models)

    cfg = OmegaConf.create(
        cfg_dict, flags={"allow_objects": True}
    )  # as fairseq loads it (a Namespace inside)
    task = tasks.setup_task(cfg.task)
    return cfg, task, task.build_model(cfg.model)


def check_paths(save_dir: Path, out: Path) -> None:
    """The save directory is a directory; ``--out`` is a file to write, apart from the save directory's
    checkpoints (checked before anything is read or written)."""
    if not save_dir.is_dir():
        what = "no such directory" if not save_dir.exists() else "not a directory"
        raise UserError(
            f"SAVE_DIR {save_dir}: {what}; give the --save-dir of a python -m macaron_fairseq.pretrain run"
        )
    if out.is_dir():
        raise UserError(f"--out {out}: is a directory; give the file to write (e.g. {out / 'model.pt'})")
    # SAVE_DIR is the run's, all of it an input (its log, DeepSpeed's zero_to_fp32.py, the checkpoints): --out
    # may be a new name in it, or an earlier export, never one of its other entries
    refuse_overlap({"--out": out}, entries("SAVE_DIR", save_dir, own=is_export))


def is_export(path: Path) -> bool:
    """Whether ``path`` is a file this command wrote (a torch zip whose pickle records ``deepspeed_tag``)."""
    try:
        with zipfile.ZipFile(path) as archive:
            pickles = [name for name in archive.namelist() if name.endswith("/data.pkl")]
            return len(pickles) == 1 and b"deepspeed_tag" in archive.read(pickles[0])
    except (OSError, zipfile.BadZipFile, KeyError):
        return False


def export(save_dir: Path, out: Path, tag: str | None = None) -> Path:
    """Write ``out``, the fairseq checkpoint of ``save_dir``'s checkpoint ``tag`` (default: the newest
    complete one), atomically: a failure leaves no file behind, not even a temporary one."""
    check_paths(save_dir, out)
    if tag is None:
        tag = checkpoints.choose(save_dir).tag
        if tag is None:
            raise UserError(
                f"{save_dir} holds no complete DeepSpeed checkpoint of python -m macaron_fairseq.pretrain; "
                "give the --save-dir of a run that saved one"
            )
    client = read_client_state(save_dir, tag)
    if "fairseq_cfg" not in client:
        raise UserError(
            f"{save_dir}/{tag}: not written by python -m macaron_fairseq.pretrain (no fairseq config)"
        )
    cfg_dict = client["fairseq_cfg"]
    cfg, _, model = rebuild_model(cfg_dict)
    weights = checkpoint_weights(save_dir, tag, checkpoints.read_manifest(save_dir / tag))
    missing, unexpected = model.load_state_dict(weights, strict=False)
    untied = sorted(set(missing) - tied_names(model))
    if untied or unexpected:
        raise UserError(
            f"{save_dir}/{tag} does not match {cfg.model._name}: missing {untied}, unexpected {unexpected}"
        )
    state = fairseq_checkpoint(
        cfg_dict,
        model.state_dict(),
        "BertPretrainingLoss",
        optimizer="DeepSpeed",
        num_updates=int(client["step"]),
        extra_state={"deepspeed_tag": tag},
    )
    # not fairseq's torch_persistent_save: it renames OUT.tmp, which a failed rename left behind
    save_torch(state, out)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = ArgumentParser(
        prog=program_name(*PROG), description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("save_dir", type=Path, help="--save-dir of the pre-training run")
    parser.add_argument("--out", type=Path, required=True, help="fairseq checkpoint to write")
    parser.add_argument("--tag", help="checkpoint tag (default: the newest complete one)")
    args = parser.parse_args(argv)
    path = export(args.save_dir, args.out, args.tag)
    print(f"wrote {path}")


def cli() -> None:
    """The ``macaron-export`` console script: what ``python -m macaron_fairseq.pretrain.export`` runs."""
    run_cli(main, program_name(*PROG))


if __name__ == "__main__":
    cli()
