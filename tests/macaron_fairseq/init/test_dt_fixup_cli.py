"""End to end through the real ``fairseq-train`` on tiny data: DT-Fixup (Macaron, vanilla with relative
positions), T-Fixup, resume from checkpoint_last.pt, and the mixed pre-trained-encoder setup."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from fairseq import checkpoint_utils
from fairseq.optim.adam import FairseqAdamConfig
from helpers import DT_FIXUP, REPO, TINY, build_model, run_cli
from omegaconf import OmegaConf

from macaron_fairseq.init.config import SCHEMES
from macaron_fairseq.init.fairseq_hook import run_init_scheme
from macaron_fairseq.modules.macaron_layer import MacaronEncoderLayer
from macaron_fairseq.modules.norm_free import is_layer_norm
from macaron_fairseq.modules.vanilla_layer import VanillaEncoderLayer
from macaron_fairseq.optim.adam_lr_groups import AdamWithLrMultipliers

pytestmark = pytest.mark.slow  # real fairseq-train / preprocessing runs: seconds to minutes

NO_WARMUP = ["--lr-scheduler", "polynomial_decay", "--power", "0.5", "--total-num-update", "100"]


def train(
    data: Path, save_dir: Path, arch: str, *extra: str, max_update: int = 4, schedule: list[str] = NO_WARMUP
) -> str:
    argv = [
        "fairseq-train",
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
        arch,
        *TINY,
        "--optimizer",
        "adam",
        "--lr",
        "1e-3",
        *schedule,
        "--max-update",
        str(max_update),
        "--batch-size",
        "16",
        "--criterion",
        "cross_entropy",
        "--save-dir",
        str(save_dir),
        "--cpu",
        "--num-workers",
        "0",
        "--log-format",
        "simple",
        "--log-interval",
        "1",
        "--no-epoch-checkpoints",
        "--disable-validation",
        "--seed",
        "1",
        *extra,
    ]
    proc = run_cli(argv, cwd=REPO)
    return proc.stdout + proc.stderr


def record_of(save_dir: Path) -> dict[str, float]:
    state = torch.load(save_dir / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    return {k.split(".", 1)[1]: float(v) for k, v in state["model"].items() if k.startswith("init_record.")}


def logged(log: str, name: str) -> float:
    return float(re.search(rf"init scheme \S+ applied: .*?{name}=([-+0-9.e]+)", log).group(1))


@pytest.mark.parametrize(
    "arch,extra",
    [("macaron_small", []), ("fixup_transformer_iwslt_de_en", ["--max-relative-positions", "2"])],
    ids=["macaron", "vanilla-relative"],
)
def test_dt_fixup_trains_from_the_cli(
    tiny_data_bin: Path, tmp_path: Path, arch: str, extra: list[str]
) -> None:
    log = train(tiny_data_bin, tmp_path, arch, *DT_FIXUP, *extra)
    assert "DT-Fixup μ pass (encoder)" in log and "DT-Fixup μ pass (decoder)" in log
    # from scratch, no relation-aware layers (where auto would choose T-Fixup): a WARNING to the measurement
    warning = "WARNING | macaron_fairseq.init.config | --init-scheme dt-fixup on a model with no pre-trained"
    warned = warning in log
    assert warned == (not extra)
    assert "num_updates 4" in log
    losses = [float(x) for x in re.findall(r"\| loss ([0-9.]+)", log)]
    assert losses and all(torch.isfinite(torch.tensor(losses)))
    record = record_of(tmp_path)
    assert record["applied"] == 1.0
    for name in ("mu_encoder", "mu_decoder", "mu_decoder_cross", "factor_encoder", "factor_decoder"):
        assert record[name] == pytest.approx(logged(log, name), rel=1e-5), name
    assert record["n_encoder"] == record["n_decoder"] == 2


@pytest.mark.parametrize("scheme", ["t-fixup", "auto"])
def test_t_fixup_trains_and_warns_about_warmup(tiny_data_bin: Path, tmp_path: Path, scheme: str) -> None:
    """``--init-scheme auto`` on this from-scratch model is T-Fixup, says so at WARNING with the reason, and
    the saved record keeps both the requested and the applied scheme."""
    log = train(
        tiny_data_bin,
        tmp_path,
        "macaron_small",
        "--init-scheme",
        scheme,
        schedule=["--lr-scheduler", "inverse_sqrt", "--warmup-updates", "2"],
    )
    assert "T-Fixup applied to encoder" in log and "T-Fixup applied to decoder" in log
    assert "meant to train without learning-rate warm-up" in log
    assert "init scheme t-fixup applied" in log and "μ pass" not in log
    chosen = "WARNING | macaron_fairseq.init.config | --init-scheme auto applies t-fixup: the model has no"
    assert (chosen in log) == (scheme == "auto")
    record = record_of(tmp_path)
    assert record["factor_encoder"] == pytest.approx(0.67 * 2**-0.25)
    assert SCHEMES[int(record["scheme"])] == "t-fixup" and SCHEMES[int(record["requested_scheme"])] == scheme


def test_resume_neither_re_estimates_nor_re_scales(tiny_data_bin: Path, tmp_path: Path) -> None:
    first = train(tiny_data_bin, tmp_path, "macaron_small", *DT_FIXUP, max_update=3)
    assert "DT-Fixup μ pass" in first
    before = record_of(tmp_path)
    second = train(tiny_data_bin, tmp_path, "macaron_small", *DT_FIXUP, max_update=6)
    assert "Loaded checkpoint" in second
    assert "already applied (restored from checkpoint)" in second
    assert "μ pass" not in second and "DT-Fixup applied" not in second
    assert "num_updates 6" in second
    after = record_of(tmp_path)
    assert after == pytest.approx(before, nan_ok=True)


@pytest.fixture(scope="module")
def pretrained_checkpoint(tiny_data_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    save_dir = tmp_path_factory.mktemp("pretrained")
    train(tiny_data_bin, save_dir, "fixup_transformer_iwslt_de_en", max_update=3)
    return save_dir / "checkpoint_last.pt"


def test_mixed_setup_from_the_cli(tiny_data_bin: Path, tmp_path: Path, pretrained_checkpoint: Path) -> None:
    log = train(
        tiny_data_bin,
        tmp_path,
        "macaron_small",
        *DT_FIXUP,
        "--pretrained-encoder",
        str(pretrained_checkpoint),
        "--new-encoder-layers",
        "2",
        "--optimizer",
        "adam_lr_groups",
        "--pretrained-lr-multiplier",
        "0.008",
    )
    assert "pre-trained encoder" in log and "DT-Fixup applied to encoder: N=2" in log
    state = torch.load(tmp_path / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    assert "encoder.layers.3.ffn1_fc1.weight" in state["model"]  # 2 pre-trained + 2 new Macaron layers
    assert "encoder.layers.1.self_attn_layer_norm.weight" in state["model"]  # pre-trained keep their norms
    assert "encoder.layers.2.self_attn_layer_norm.weight" not in state["model"]  # new ones are norm-free


def test_mixed_setup_scales_only_the_new_layers(tiny_data_bin: Path, pretrained_checkpoint: Path) -> None:
    torch.manual_seed(0)
    extra = [
        *TINY,
        *DT_FIXUP,
        "--batch-size",
        "16",
        "--pretrained-encoder",
        str(pretrained_checkpoint),
        "--new-encoder-layers",
        "2",
    ]
    model, task = build_model(tiny_data_bin, "macaron_small", extra)
    enc = model.encoder
    assert len(enc.layers) == 4 and enc.first_new_layer == 2
    assert isinstance(enc.layers[0], VanillaEncoderLayer) and isinstance(enc.layers[2], MacaronEncoderLayer)
    assert any(is_layer_norm(m) for m in enc.layers[1].modules())
    assert not any(is_layer_norm(m) for m in enc.layers[2].modules())
    ckpt = torch.load(pretrained_checkpoint, map_location="cpu", weights_only=False)["model"]
    pre_keys = [k for k in ckpt if k.startswith("encoder.")]
    for key in pre_keys:
        torch.testing.assert_close(model.state_dict()[key], ckpt[key], rtol=0, atol=0)
    new_before = {k: v.clone() for k, v in enc.layers[3].state_dict().items()}
    run_init_scheme(model, task)
    for key in pre_keys:  # the pre-trained encoder is untouched
        torch.testing.assert_close(model.state_dict()[key], ckpt[key], rtol=0, atol=0)
    factor = model.init_record.get("factor_encoder")
    torch.testing.assert_close(enc.layers[3].fc1.weight, new_before["fc1.weight"] * factor)
    torch.testing.assert_close(enc.layers[3].self_attn.q_proj.weight, new_before["self_attn.q_proj.weight"])

    # μ = max norm of the pre-trained encoder's outputs, computed with the checkpoint's own model
    models, _ = checkpoint_utils.load_model_ensemble([str(pretrained_checkpoint)], task=task)
    pre = models[0].eval()
    ds = task.dataset("train")
    with torch.no_grad():
        mu = max(
            float(pre.encoder(ds[i]["source"][None], src_lengths=None)["encoder_out"][0].norm(dim=-1).max())
            for i in range(len(ds))
        )
    assert model.init_record.get("mu_encoder") == pytest.approx(mu, rel=1e-5)

    # the pre-trained part runs at multiplier × lr with --optimizer adam_lr_groups
    assert enc.embed_tokens.weight.lr_multiplier == 8e-3 and not hasattr(
        enc.layers[3].fc1.weight, "lr_multiplier"
    )
    cfg = OmegaConf.structured(FairseqAdamConfig(lr=[1e-3], tpu=False))
    opt = AdamWithLrMultipliers(cfg, list(model.parameters()))
    opt.set_lr(2e-3)
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([2e-3, 2e-3 * 8e-3])
    assert opt.get_lr() == pytest.approx(2e-3)


def rms(tensor: torch.Tensor) -> float:
    return float(tensor.float().pow(2).mean().sqrt())


def test_bf16_on_the_cpu_with_each_scheme(
    tiny_data_bin: Path, tmp_path: Path, pretrained_checkpoint: Path
) -> None:
    """--bf16 trains (fairseq's FP16Optimizer: fp32 master copies) with both schemes; the scheme runs before
    the optimizer exists, so the updates start from the rescaled weights, not the fp32 copies of the Xavier
    ones; the record keeps float64 in a bf16 model; the pre-trained encoder's learning-rate multiplier
    survives the fp32 copies (the saved optimizer state holds its group)."""
    mixed = ["--pretrained-encoder", str(pretrained_checkpoint), "--new-encoder-layers", "2"]
    mixed += ["--optimizer", "adam_lr_groups", "--pretrained-lr-multiplier", "0.008"]
    runs = {"dt-fixup": mixed, "t-fixup": []}
    for scheme, extra in runs.items():
        save_dir = tmp_path / scheme
        log = train(tiny_data_bin, save_dir, "macaron_small", "--bf16", "--init-scheme", scheme, *extra)
        assert "--bf16 without torch_xla: training in bfloat16 on the CPU" in log
        applied, first_epoch = log.index(f"init scheme {scheme} applied"), log.index("begin training epoch 1")
        assert applied < first_epoch and "num_updates 4" in log  # applied when the optimizer was built
        state = torch.load(save_dir / "checkpoint_last.pt", map_location="cpu", weights_only=False)
        model = state["model"]
        layer = "encoder.layers.2" if scheme == "dt-fixup" else "encoder.layers.0"  # a new layer
        weight, factor = model[f"{layer}.fc1.weight"], float(model["init_record.factor_encoder"])
        # fairseq saves bf16 tensors as float32, float64 as is: a bf16 record would come back float32
        assert model["init_record.factor_encoder"].dtype == torch.float64
        # Xavier-uniform fc1 (48 × 32) has RMS 0.158 before the scaling, 0.158·factor after; 4 Adam steps
        # of lr 1e-3 move an entry by at most 0.004
        bound = 0.158 * factor + 0.005
        assert bound < 0.15 and rms(weight) < bound, (rms(weight), factor)  # unscaled: 0.158
        assert record_of(save_dir)["applied"] == 1.0
    groups = state_of_optimizer(tmp_path / "dt-fixup")
    assert [round(g["lr_multiplier"], 6) for g in groups] == [1.0, 0.008]
    assert groups[1]["lr"] == pytest.approx(0.008 * groups[0]["lr"])


def state_of_optimizer(save_dir: Path) -> list[dict]:
    state = torch.load(save_dir / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    return state["last_optimizer_state"]["param_groups"]


def test_the_mu_pass_reads_what_training_reads(tiny_data_bin: Path, tmp_path: Path) -> None:
    """Examples longer than the position limit are skipped by fairseq's training iterator; the μ pass used
    to stop on them ("Size of sample #N is invalid"). With epoch-sharded data it reads the first shard and
    says so."""
    second = tmp_path / "shard2"
    second.symlink_to(tiny_data_bin, target_is_directory=True)
    limits = ["--max-source-positions", "6", "--max-target-positions", "6"]
    data = Path(f"{tiny_data_bin}:{second}")
    log = train(data, tmp_path / "save", "macaron_small", *DT_FIXUP, *limits)
    assert "have invalid sizes and will be skipped" in log and "DT-Fixup μ pass (encoder)" in log
    assert f"DT-Fixup μ is estimated on the first of 2 epoch shards ({tiny_data_bin})" in log
    assert "num_updates 4" in log and record_of(tmp_path / "save")["applied"] == 1.0
