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
    log_init_scheme,
    prepare_fixup_args,
    resolve_init_scheme,
)
from macaron_fairseq.init.fairseq_hook import run_init_scheme
from macaron_fairseq.init.record import InitRecord
from macaron_fairseq.init.stacks import NewStack, dt_fixup_stacks, initialise_new_layers, t_fixup_stacks
from macaron_fairseq.modules.macaron_layer import MacaronEncoderLayer


def test_flags_and_filled_defaults_come_from_the_dataclass() -> None:
    parser = argparse.ArgumentParser()
    add_fixup_args(parser)
    parsed = vars(parser.parse_args([]))
    filled = argparse.Namespace()
    fill_fixup_defaults(filled)
    assert len(fixup_fields()) == 8
    for fld in fixup_fields():
        assert parsed[fld.name] == getattr(filled, fld.name) == fld.default, fld.name
    args = parser.parse_args(["--init-scheme", "dt-fixup", "--dt-fixup-mu", "2.5", "--norm-free"])
    assert (args.init_scheme, args.dt_fixup_mu, args.norm_free) == ("dt-fixup", 2.5, True)
    with pytest.raises(SystemExit):
        parser.parse_args(["--init-scheme", "fixup"])
    assert parser.parse_args(["--init-scheme", "auto"]).init_scheme == "auto"
    with pytest.raises(SystemExit):  # removed: dt-fixup always means DT-Fixup (issue #29)
        parser.parse_args(["--dt-fixup-from-scratch", "dt-fixup"])


def ns(**kw: object) -> argparse.Namespace:
    args = argparse.Namespace(**kw)
    fill_fixup_defaults(args)
    return args


def test_contradictory_options_are_refused() -> None:
    with pytest.raises(ValueError, match="--dt-fixup-mu only applies when DT-Fixup is applied"):
        prepare_fixup_args(ns(init_scheme="t-fixup", dt_fixup_mu=1.0))
    with pytest.raises(ValueError, match="--init-scheme auto applies t-fixup here"):
        prepare_fixup_args(ns(init_scheme="auto", dt_fixup_mu=1.0))
    with pytest.raises(ValueError, match="--new-encoder-layers only applies with --pretrained-encoder"):
        prepare_fixup_args(ns(new_encoder_layers=2))
    prepare_fixup_args(ns(init_scheme="dt-fixup", dt_fixup_mu=2.0))  # from scratch: the paper's factors
    prepare_fixup_args(ns(init_scheme="dt-fixup", dt_fixup_mu=2.0, pretrained_encoder="enc.pt"))
    prepare_fixup_args(ns(init_scheme="auto", dt_fixup_mu=2.0, max_relative_positions=4))  # auto → DT-Fixup


def test_t_fixup_on_relation_aware_layers_is_refused() -> None:
    """T-Fixup's factors do not cover rᵛ (DT-Fixup paper §3.3): refused with the way out, not silently run
    with an unscaled rᵛ."""
    refusal = r"t-fixup with --max-relative-positions 4: .* rᵛ.*dt-fixup \(or auto\)"
    with pytest.raises(ValueError, match=refusal):
        prepare_fixup_args(ns(init_scheme="t-fixup", max_relative_positions=4))
    prepare_fixup_args(ns(init_scheme="dt-fixup", max_relative_positions=4))
    prepare_fixup_args(ns(init_scheme="t-fixup"))


def test_building_a_relation_aware_t_fixup_model_is_refused(dict_dir) -> None:
    relative = [*TINY, "--max-relative-positions", "2"]
    with pytest.raises(ValueError, match=r"T-Fixup's derivation .* does not cover the relation-value"):
        build_model(dict_dir, "fixup_transformer_iwslt_de_en", [*relative, "--init-scheme", "t-fixup"])
    model, _ = build_model(dict_dir, "fixup_transformer_iwslt_de_en", [*relative, "--init-scheme", "auto"])
    assert model.init_record.scheme_name == "dt-fixup" and model.init_record.requested_scheme_name == "auto"


def test_each_scheme_name_means_its_paper_and_auto_chooses_by_the_model() -> None:
    def applied(**kw: object) -> str:
        return resolve_init_scheme(ns(**kw))[0]

    # dt-fixup and t-fixup are what they name, whatever the model
    assert applied(init_scheme="dt-fixup") == "dt-fixup"
    assert applied(init_scheme="dt-fixup", pretrained_encoder="enc.pt") == "dt-fixup"
    assert applied(init_scheme="t-fixup") == "t-fixup" and applied(init_scheme="default") == "default"
    # auto: DT-Fixup with a pre-trained part or relation-aware layers, T-Fixup otherwise
    assert applied(init_scheme="auto") == "t-fixup"
    assert applied(init_scheme="auto", pretrained_encoder="enc.pt") == "dt-fixup"
    assert applied(init_scheme="auto", max_relative_positions=2) == "dt-fixup"
    assert applied(init_scheme="auto", pretrained_encoder="enc.pt", max_relative_positions=2) == "dt-fixup"


def test_auto_and_dt_fixup_from_scratch_warn_with_the_reason(caplog: pytest.LogCaptureFixture) -> None:
    cases = {
        "auto": ns(init_scheme="auto"),
        "auto, pre-trained": ns(init_scheme="auto", pretrained_encoder="enc.pt"),
        "auto, relation-aware": ns(init_scheme="auto", max_relative_positions=2),
        "dt-fixup from scratch": ns(init_scheme="dt-fixup"),
        "dt-fixup, pre-trained": ns(init_scheme="dt-fixup", pretrained_encoder="enc.pt"),
        "dt-fixup, relation-aware": ns(init_scheme="dt-fixup", max_relative_positions=2),
        "t-fixup": ns(init_scheme="t-fixup"),
    }
    warnings = {}
    for name, args in cases.items():
        caplog.clear()
        with caplog.at_level("WARNING", logger="macaron_fairseq.init.config"):
            log_init_scheme(args)
        warnings[name] = " ".join(r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    assert "auto applies t-fixup: the model has no pre-trained part" in warnings["auto"]
    assert "docs/dt_fixup.md §4.2" in warnings["auto"]
    assert "auto applies dt-fixup: the model has a pre-trained part" in warnings["auto, pre-trained"]
    assert "auto applies dt-fixup: the new layers are relation-aware" in warnings["auto, relation-aware"]
    assert "dt-fixup on a model with no pre-trained part" in warnings["dt-fixup from scratch"]
    assert "docs/dt_fixup.md §4.2" in warnings["dt-fixup from scratch"]
    # DT-Fixup's own cases and T-Fixup say nothing
    assert not (
        warnings["dt-fixup, pre-trained"] or warnings["dt-fixup, relation-aware"] or warnings["t-fixup"]
    )


@pytest.mark.parametrize("arch", ["macaron_small", "fixup_transformer_iwslt_de_en"])
def test_auto_on_a_from_scratch_model_is_t_fixup_and_dt_fixup_is_the_papers(dict_dir, arch: str) -> None:
    """``--init-scheme auto`` on a from-scratch model: every weight and embedding exactly as
    ``--init-scheme t-fixup`` makes them (same seed), a record that says T-Fixup applied, auto requested;
    ``--init-scheme dt-fixup`` on the same model applies DT-Fixup's data-dependent factors."""
    models = {}
    for flags in (["--init-scheme", "auto"], ["--init-scheme", "t-fixup"], [*DT_FIXUP, "--dt-fixup-mu", "3"]):
        torch.manual_seed(0)
        model, task = build_model(dict_dir, arch, [*TINY, *flags])
        run_init_scheme(model, task)
        models[" ".join(flags)] = model
    auto, t_fixup, paper = models.values()
    assert (auto.init_record.scheme_name, auto.init_record.requested_scheme_name) == ("t-fixup", "auto")
    assert (t_fixup.init_record.scheme_name, t_fixup.init_record.requested_scheme_name) == ("t-fixup",) * 2
    assert (paper.init_record.scheme_name, paper.init_record.requested_scheme_name) == ("dt-fixup",) * 2
    assert "requested=auto" in auto.init_record.describe()
    weights = {k: v for k, v in t_fixup.state_dict().items() if not k.startswith("init_record")}
    assert weights.keys() <= auto.state_dict().keys()
    for name, value in weights.items():
        assert torch.equal(auto.state_dict()[name], value), name
    assert paper.init_record.get("mu_encoder") == 3.0
    factor = paper.init_record.get("factor_encoder")
    assert factor == pytest.approx(dt_fixup_factor(paper))
    v = "encoder.layers.0.self_attn.v_proj.weight"
    assert not torch.equal(paper.state_dict()[v], t_fixup.state_dict()[v])


def dt_fixup_factor(model: nn.Module) -> float:
    """The DT-Fixup factor of the model's encoder from the formulas (μ = 3, N = 2)."""
    from macaron_fairseq.init.formulas import dt_fixup_scale
    from macaron_fairseq.init.targets import residual_blocks

    return dt_fixup_scale(residual_blocks(model.encoder.layers[0]), 2, 3.0)


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
    # records written before the requested scheme was kept: the applied one stands for it
    auto = InitRecord("t-fixup", ["encoder"], requested="auto")
    assert auto.requested_scheme_name == "auto"
    state = {f"init_record.{k}": v.clone() for k, v in auto.state_dict().items() if k != "requested_scheme"}
    auto.upgrade_state_dict_named(state, "init_record")
    fresh = InitRecord("dt-fixup", ["encoder"])
    fresh.load_state_dict({k.removeprefix("init_record."): v for k, v in state.items()})
    assert fresh.scheme_name == fresh.requested_scheme_name == "t-fixup"
    with pytest.raises(ValueError, match="cannot be applied"):
        InitRecord("auto", ["encoder"])


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
