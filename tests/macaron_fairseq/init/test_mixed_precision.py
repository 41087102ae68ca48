"""DT-Fixup / T-Fixup under every mixed-precision optimizer wrapper of fairseq's ``Trainer``, at the object
level (no GPU here): the scheme runs before the optimizer exists, so the master weights each wrapper steps
are the rescaled ones; ``--pretrained-lr-multiplier`` reaches the optimizer through every wrapper that keeps
per-parameter information and is refused, with the way out, where one flat fp32 copy cannot hold it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from fairseq import options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.optim import FP16Optimizer
from fairseq.trainer import Trainer
from helpers import DT_FIXUP, TINY, build_model, save_model_checkpoint
from torch import Tensor, nn

from macaron_fairseq.repairs.bf16_without_tpu import bf16_on_own_device

LR = 1e-3
#: fairseq-train flags → the wrapper ``Trainer._build_optimizer`` picks for them
WRAPPERS = {
    "fp16-flat": (["--fp16"], "FP16Optimizer"),
    "fp16-no-flatten": (["--fp16", "--fp16-no-flatten-grads"], "FP16Optimizer"),
    "bf16": (["--bf16"], "FP16Optimizer"),
    "memory-efficient-fp16": (["--memory-efficient-fp16"], "MemoryEfficientFP16Optimizer"),
    "memory-efficient-bf16": (["--memory-efficient-bf16"], "MemoryEfficientFP16Optimizer"),
    "amp": (["--amp"], "AMPOptimizer"),
}


def trainer_for(data: Path, arch: str, flags: list[str]) -> Trainer:
    """fairseq-train's own steps up to the trainer: parse, task, model, criterion, ``Trainer``."""
    argv = [
        str(data),
        "--task",
        "translation",
        "-s",
        "src",
        "-t",
        "tgt",
        "--arch",
        arch,
        *TINY,
        "--criterion",
        "cross_entropy",
        "--lr",
        str(LR),
        "--batch-size",
        "16",
        "--cpu",
        "--num-workers",
        "0",
        "--optimizer",
        "adam",
        "--lr-scheduler",
        "polynomial_decay",
        "--total-num-update",
        "100",
        *flags,
    ]
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_training_parser(), argv))
    bf16_on_own_device(cfg)  # what the plugin's repair does in fairseq-train
    task = tasks.setup_task(cfg.task)
    task.load_dataset("train")
    model = task.build_model(cfg.model)
    return Trainer(cfg, task, model, task.build_criterion(cfg.criterion))


def stepped_copies(trainer: Trainer) -> list[tuple[nn.Parameter, Tensor, float]]:
    """(model parameter, the tensor the optimizer steps for it, its learning rate) for every trained
    parameter: FP16Optimizer's fp32 copies (flat or one per parameter), else the parameter itself."""
    wrapper = trainer.optimizer
    lr_of = {id(p): group["lr"] for group in wrapper.optimizer.param_groups for p in group["params"]}
    if not isinstance(wrapper, FP16Optimizer):
        return [(p, p, lr_of[id(p)]) for p in wrapper.params]
    if not wrapper.has_flat_params:
        return [
            (p, p32, lr_of[id(p32)]) for p, p32 in zip(wrapper.fp16_params, wrapper.fp32_params, strict=True)
        ]
    (flat,) = wrapper.fp32_params.values()
    views = flat.data.split([p.numel() for p in wrapper.fp16_params])
    return [(p, v.view_as(p), lr_of[id(flat)]) for p, v in zip(wrapper.fp16_params, views, strict=True)]


@pytest.fixture
def cpu_flat_fp16(monkeypatch: pytest.MonkeyPatch) -> None:
    """FP16Optimizer's flat copy asks for the current CUDA device (its dict key); CPU tensors need none."""
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)


@pytest.mark.parametrize("wrapper", list(WRAPPERS))
def test_the_master_weights_each_wrapper_steps_are_the_rescaled_ones(
    tiny_data_bin: Path, wrapper: str, cpu_flat_fp16: None
) -> None:
    """Before the hook moved, the schemes ran after ``trainer.get_lr()`` had built the optimizer: the fp32
    copies of FP16Optimizer held the unscaled Xavier weights, and the first update overwrote the rescaled
    model with them."""
    flags, wrapper_class = WRAPPERS[wrapper]
    scheme = "t-fixup" if wrapper in ("bf16", "memory-efficient-fp16") else "dt-fixup"
    torch.manual_seed(0)
    trainer = trainer_for(tiny_data_bin, "macaron_small", [*flags, "--init-scheme", scheme])
    model = trainer.get_model()
    fc1, q = model.encoder.layers[0].fc1.weight, model.encoder.layers[0].self_attn.q_proj.weight
    fc1_before, q_before = fc1.detach().clone(), q.detach().clone()  # cast, not yet scaled
    assert not model.init_record.is_applied
    trainer.get_lr()  # what fairseq_cli/train.py calls first: builds the optimizer
    assert type(trainer.optimizer).__name__ == wrapper_class
    assert model.init_record.is_applied and model.init_record.scheme_name == scheme
    factor = model.init_record.get("factor_encoder")
    # the product rounded to the half-precision type (fp16 subnormals below 6e-5 keep fewer digits)
    torch.testing.assert_close(fc1.detach().float(), fc1_before.float() * factor, rtol=1e-2, atol=1e-7)
    torch.testing.assert_close(q.detach(), q_before, rtol=0, atol=0)  # q is not a scaled weight
    copies = stepped_copies(trainer)
    assert len(copies) == len([p for p in model.parameters() if p.requires_grad])
    for param, master, _ in copies:
        torch.testing.assert_close(master.detach().float(), param.detach().float(), rtol=0, atol=0)


@pytest.fixture(scope="module")
def pretrained_encoder(tiny_data_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pretrained") / "checkpoint.pt"
    return save_model_checkpoint(path, tiny_data_bin, "fixup_transformer_iwslt_de_en", TINY)


MIXED = ["--pretrained-encoder", "--new-encoder-layers", "1", "--optimizer", "adam_lr_groups"]


@pytest.mark.parametrize("wrapper", ["none", *[w for w in WRAPPERS if w != "fp16-flat"]])
def test_the_pretrained_lr_multiplier_reaches_the_optimizer_through_every_wrapper(
    tiny_data_bin: Path, pretrained_encoder: Path, wrapper: str
) -> None:
    flags = [] if wrapper == "none" else WRAPPERS[wrapper][0]
    mixed = [MIXED[0], str(pretrained_encoder), *MIXED[1:], "--pretrained-lr-multiplier", "0.01"]
    trainer = trainer_for(tiny_data_bin, "macaron_small", [*flags, *mixed, *DT_FIXUP])
    model = trainer.get_model()
    pretrained = {id(p) for layer in model.encoder.layers[:2] for p in layer.parameters()}
    pretrained.add(id(model.encoder.embed_tokens.weight))
    trainer.lr_step_update()  # the scheduler sets the learning rate, as at every update
    copies = stepped_copies(trainer)
    multipliers = {id(p): round(lr / LR, 9) for p, _, lr in copies}
    assert {multipliers[i] for i in pretrained} == {0.01}
    assert {m for i, m in multipliers.items() if i not in pretrained} == {1.0}
    assert trainer.get_lr() == pytest.approx(LR)
    for param, master, _ in copies:
        torch.testing.assert_close(master.detach().float(), param.detach().float(), rtol=0, atol=0)


def test_the_multiplier_under_the_flat_fp16_copy_is_refused_with_the_ways_out(
    tiny_data_bin: Path, pretrained_encoder: Path
) -> None:
    mixed = [*TINY, MIXED[0], str(pretrained_encoder), *MIXED[1:], *DT_FIXUP]
    with pytest.raises(ValueError, match="one flat fp32 copy") as error:
        build_model(tiny_data_bin, "macaron_small", [*mixed, "--fp16"])
    assert "Add --fp16-no-flatten-grads, or use --memory-efficient-fp16, --amp or --bf16" in str(error.value)
    model, _ = build_model(
        tiny_data_bin, "macaron_small", [*mixed, "--fp16", "--pretrained-lr-multiplier", "1"]
    )
    assert model.encoder.embed_tokens.weight.lr_multiplier == 1.0
