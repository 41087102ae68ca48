"""The DT-Fixup options (one dataclass), the init record (per-stack fields) and the stack-generic glue."""

from __future__ import annotations

import argparse

import pytest
import torch
from helpers import DT_FIXUP, TINY, build_model
from torch import nn

from macaron_fairseq.init.config import (
    add_fixup_args,
    fill_fixup_defaults,
    fixup_fields,
    prepare_fixup_args,
    resolved_init_scheme,
)
from macaron_fairseq.init.fairseq_hook import run_init_scheme
from macaron_fairseq.init.record import InitRecord
from macaron_fairseq.init.stacks import NewStack, dt_fixup_stacks, initialise_new_layers, t_fixup_stacks
from macaron_fairseq.modules import MacaronEncoderLayer


def test_flags_and_filled_defaults_come_from_the_dataclass() -> None:
    parser = argparse.ArgumentParser()
    add_fixup_args(parser)
    parsed = vars(parser.parse_args([]))
    filled = argparse.Namespace()
    fill_fixup_defaults(filled)
    assert len(fixup_fields()) == 9
    for fld in fixup_fields():
        assert parsed[fld.name] == getattr(filled, fld.name) == fld.default, fld.name
    args = parser.parse_args(["--init-scheme", "dt-fixup", "--dt-fixup-mu", "2.5", "--norm-free"])
    assert (args.init_scheme, args.dt_fixup_mu, args.norm_free) == ("dt-fixup", 2.5, True)
    with pytest.raises(SystemExit):
        parser.parse_args(["--init-scheme", "fixup"])


def test_contradictory_options_are_refused() -> None:
    def args(**kw: object) -> argparse.Namespace:
        ns = argparse.Namespace(**kw)
        fill_fixup_defaults(ns)
        return ns

    with pytest.raises(ValueError, match="--dt-fixup-mu only applies with --init-scheme dt-fixup"):
        prepare_fixup_args(args(init_scheme="t-fixup", dt_fixup_mu=1.0))
    with pytest.raises(ValueError, match="--new-encoder-layers only applies with --pretrained-encoder"):
        prepare_fixup_args(args(new_encoder_layers=2))
    with pytest.raises(ValueError, match="--dt-fixup-from-scratch dt-fixup only applies with"):
        prepare_fixup_args(args(init_scheme="t-fixup", dt_fixup_from_scratch="dt-fixup"))
    with pytest.raises(ValueError, match=r"no pre-trained part .* add --dt-fixup-from-scratch dt-fixup"):
        prepare_fixup_args(args(init_scheme="dt-fixup", dt_fixup_mu=2.0))
    prepare_fixup_args(args(init_scheme="dt-fixup", dt_fixup_mu=2.0, dt_fixup_from_scratch="dt-fixup"))
    prepare_fixup_args(args(init_scheme="dt-fixup", dt_fixup_mu=2.0, pretrained_encoder="enc.pt"))


def test_dt_fixup_is_t_fixup_on_a_model_with_no_pre_trained_part_unless_asked() -> None:
    def resolved(**kw: object) -> str:
        ns = argparse.Namespace(**kw)
        fill_fixup_defaults(ns)
        return resolved_init_scheme(ns)

    assert resolved(init_scheme="dt-fixup") == "t-fixup"
    assert resolved(init_scheme="dt-fixup", dt_fixup_from_scratch="dt-fixup") == "dt-fixup"
    assert resolved(init_scheme="dt-fixup", pretrained_encoder="enc.pt") == "dt-fixup"  # the paper's case
    assert resolved(init_scheme="t-fixup") == "t-fixup" and resolved(init_scheme="default") == "default"


@pytest.mark.parametrize("arch", ["macaron_small", "fixup_transformer_iwslt_de_en"])
def test_only_adding_dt_fixup_to_a_from_scratch_model_initialises_it_as_t_fixup(dict_dir, arch: str) -> None:
    """What a user gets who only adds ``--init-scheme dt-fixup`` to a from-scratch model: every weight and
    embedding exactly as ``--init-scheme t-fixup`` makes them (same seed), and a record that says T-Fixup."""
    models = {}
    for flags in (["--init-scheme", "dt-fixup"], ["--init-scheme", "t-fixup"],
                  [*DT_FIXUP, "--dt-fixup-mu", "3"]):  # fmt: skip
        torch.manual_seed(0)
        model, task = build_model(dict_dir, arch, [*TINY, *flags])
        run_init_scheme(model, task)
        models[" ".join(flags)] = model
    only, t_fixup, paper = models.values()
    assert only.init_record.scheme_name == "t-fixup" and paper.init_record.scheme_name == "dt-fixup"
    weights = {k: v for k, v in t_fixup.state_dict().items() if not k.startswith("init_record")}
    assert weights.keys() <= only.state_dict().keys()
    for name, value in weights.items():
        assert torch.equal(only.state_dict()[name], value), name
    v = "encoder.layers.0.self_attn.v_proj.weight"
    assert not torch.equal(paper.state_dict()[v], t_fixup.state_dict()[v])  # the flag does change the init


def test_record_fields_follow_the_stacks_and_old_checkpoints_are_upgraded() -> None:
    record = InitRecord("dt-fixup", ["encoder", "decoder"], ["decoder"])
    names = set(record.state_dict())
    assert {"mu_encoder", "n_encoder", "factor_encoder", "mu_decoder", "mu_decoder_cross"} <= names
    assert "mu_encoder_cross" not in names
    with pytest.raises(KeyError, match="mu_encoder_cross"):
        record.set(mu_encoder_cross=1.0)
    old = {k: v.clone() for k, v in record.state_dict().items()}
    old["mu_cross"] = old.pop("mu_decoder_cross").fill_(3.5)
    state = {f"init_record.{k}": v for k, v in old.items()}
    record.upgrade_state_dict_named(state, "init_record")
    assert "init_record.mu_cross" not in state and float(state["init_record.mu_decoder_cross"]) == 3.5
    one = InitRecord("t-fixup", ["classifier"])
    assert one.scheme_name == "t-fixup" and "n_classifier" in one.state_dict()


@pytest.mark.parametrize("cast", ["half", "bfloat16", "float"])
def test_the_record_stays_float64_when_the_model_is_cast_and_follows_device_moves(cast: str) -> None:
    """fairseq casts the whole model (``.half()`` under --fp16, ``.to(dtype=torch.bfloat16)`` under --bf16):
    the record must keep counts above 65504 and μ's digits; a device move must still move it."""
    model = nn.ModuleDict({"layer": nn.Linear(2, 2), "init_record": InitRecord("dt-fixup", ["encoder"])})
    model.init_record.set(tokens=1_234_567, mu_encoder=9.123456789, factor_encoder=1e-3 / 3)
    expected = {name: model.init_record.get(name) for name in ("tokens", "mu_encoder", "factor_encoder")}
    model = model.half() if cast == "half" else model.to(dtype=getattr(torch, cast))
    assert model.layer.weight.dtype == getattr(torch, cast)
    assert all(buf.dtype == torch.float64 for buf in model.init_record.buffers())
    assert {name: model.init_record.get(name) for name in expected} == expected
    model.to("meta")  # the one other device every machine has
    assert model.layer.weight.is_meta and all(buf.is_meta for buf in model.init_record.buffers())
    assert all(buf.dtype == torch.float64 for buf in model.init_record.buffers())


def test_a_record_saved_in_half_precision_loads_into_float64() -> None:
    """Checkpoints written before the record kept float64 under --fp16 hold half-precision buffers."""
    old = InitRecord("dt-fixup", ["encoder"])
    old.set(applied=1.0, mu_encoder=9.0)
    state = {name: buf.half() for name, buf in old.state_dict().items()}
    record = InitRecord("dt-fixup", ["encoder"])
    record.load_state_dict(state)
    assert record.is_applied and record.get("mu_encoder") == 9.0 and record.applied.dtype == torch.float64


def test_dt_fixup_glue_works_on_a_single_stack_of_extra_layers(dict_dir) -> None:
    """An encoder-only use (e.g. K classifier layers on a pre-trained encoder's output): one stack whose
    probe returns given vectors; μ is their max norm, the weights are scaled by the stack's factor."""
    model, _ = build_model(dict_dir, "macaron_base", [*TINY, "--norm-free"])
    layers = nn.ModuleList([model.encoder.layers[0], model.encoder.layers[1]])
    assert all(isinstance(layer, MacaronEncoderLayer) for layer in layers)
    x = torch.randn(5, 2, 32).clamp(-1, 1)  # every norm below √32 < 7
    x[0, 0] = x[0, 0] / x[0, 0].norm() * 7.0  # the largest vector: norm 7
    sample = {"net_input": {}, "nsentences": 2, "ntokens": 10, "x": x}
    stack = NewStack("classifier", list(layers), lambda s: (s["x"], None))
    initialise_new_layers([stack], "dt-fixup")
    before = layers[0].fc1.weight.norm().item()
    (result,) = dt_fixup_stacks([stack], lambda name: [sample], layers)
    assert result.scaling.mu == pytest.approx(7.0, rel=1e-5) and result.scaling.n_layers == 2
    assert layers[0].fc1.weight.norm().item() == pytest.approx(before * result.scaling.factor, rel=1e-5)
    record = InitRecord("dt-fixup", ["classifier"])
    record.store_results([result], with_pass=True)
    assert record.get("mu_classifier") == pytest.approx(7.0, rel=1e-5)
    (t_result,) = t_fixup_stacks([NewStack("classifier", list(layers), stack.input_probe)])
    assert t_result.scaling.n_layers == 2 and t_result.estimate is None
