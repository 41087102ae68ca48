"""μ estimation: equals an independent max-norm computation, all-reduce MAX over 2 gloo workers,
--dt-fixup-mu, determinism, and clear errors on bad input."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from fairseq.data import ListDataset
from helpers import DT_FIXUP, TINY, build_model

from macaron_fairseq.init.errors import EmptyTrainingSplitError, NonFiniteInputError
from macaron_fairseq.init.fairseq_hook import run_init_scheme
from macaron_fairseq.init.mu import estimate_max_norms

ARGS = [*TINY, *DT_FIXUP, "--batch-size", "16"]


def independent_max_norms(model, task) -> tuple[float, float, float]:
    """Sentence by sentence (no batching, no padding), straight from the embedding tables."""
    task.load_dataset("train")
    ds = task.dataset("train")
    enc, dec = model.encoder, model.decoder
    mu_src = mu_tgt = mu_cross = 0.0
    model.eval()
    with torch.no_grad():
        for i in range(len(ds)):
            item = ds[i]
            src = item["source"][None]
            prev = torch.cat([item["target"][-1:], item["target"][:-1]])[None]  # eos moved to the front
            x = enc.embed_scale * enc.embed_tokens.weight[src] + enc.embed_positions(src)
            y = dec.embed_scale * dec.embed_tokens.weight[prev] + dec.embed_positions(prev)
            out = enc(src, src_lengths=torch.tensor([src.size(1)]))["encoder_out"][0]
            mu_src = max(mu_src, float(x.norm(dim=-1).max()))
            mu_tgt = max(mu_tgt, float(y.norm(dim=-1).max()))
            mu_cross = max(mu_cross, float(out.norm(dim=-1).max()))
    return mu_src, mu_tgt, mu_cross


@pytest.mark.parametrize("arch", ["macaron_small", "fixup_transformer_iwslt_de_en"])
def test_logged_mu_equals_an_independent_max_norm(tiny_data_bin: Path, arch: str) -> None:
    torch.manual_seed(0)
    model, task = build_model(tiny_data_bin, arch, ARGS)
    run_init_scheme(model, task)
    record = model.init_record
    mu_src, mu_tgt, mu_cross = independent_max_norms(model, task)  # after the hook: encoder is scaled
    assert record.get("mu_encoder") == pytest.approx(mu_src, rel=1e-6)
    assert record.get("mu_decoder") == pytest.approx(mu_tgt, rel=1e-6)
    assert record.get("mu_decoder_cross") == pytest.approx(mu_cross, rel=1e-5)
    assert record.get("sentences") == len(task.dataset("train"))
    c = 3.0 if arch == "macaron_small" else 4.0
    assert record.get("factor_encoder") == pytest.approx((2 * c * mu_src**2) ** -0.5, rel=1e-6)
    assert record.get("factor_decoder") == pytest.approx(
        (2 * (c * mu_tgt**2 + 2 * mu_cross**2)) ** -0.5, rel=1e-5
    )


def test_mu_of_half_precision_inputs_is_computed_in_float32() -> None:
    """Under --fp16/--bf16 the probes yield half-precision vectors; their norms are taken in float32 (a
    bf16 norm of 300 ones is 17.25, not √300 = 17.3205)."""
    ones = torch.ones(2, 3, 300, dtype=torch.bfloat16)
    assert float(ones.norm(dim=-1).max()) != pytest.approx(300**0.5, rel=1e-4)  # what a bf16 norm gives
    batch = {"net_input": {}, "nsentences": 3, "ntokens": 6}
    estimate = estimate_max_norms([batch], {"input": lambda sample: (ones, None)}, torch.nn.Identity())
    assert estimate.max_norms["input"] == pytest.approx(300**0.5, rel=1e-6)


def test_given_mu_skips_estimation(tiny_data_bin: Path) -> None:
    model, task = build_model(tiny_data_bin, "macaron_small", [*ARGS, "--dt-fixup-mu", "2.5"])
    task.datasets.clear()
    run_init_scheme(model, task)
    assert "train" not in task.datasets  # no pass over the data
    assert model.init_record.get("mu_encoder") == model.init_record.get("mu_decoder_cross") == 2.5
    assert model.init_record.get("factor_encoder") == pytest.approx((2 * 3 * 2.5**2) ** -0.5)


def test_results_are_deterministic_for_a_fixed_seed(tiny_data_bin: Path) -> None:
    states = []
    for _ in range(2):
        torch.manual_seed(3)
        model, task = build_model(tiny_data_bin, "fixup_transformer_iwslt_de_en", ARGS)
        run_init_scheme(model, task)
        states.append(model.state_dict())
    for key, value in states[0].items():
        if key == "init_record.seconds":  # wall-clock time of the μ pass
            continue
        torch.testing.assert_close(states[1][key], value, rtol=0, atol=0, equal_nan=True)


def test_non_finite_inputs_are_reported_with_their_batch(tiny_data_bin: Path) -> None:
    model, task = build_model(tiny_data_bin, "macaron_small", ARGS)
    with torch.no_grad():
        model.encoder.embed_tokens.weight[task.source_dictionary.nspecial :] = float("nan")
    with pytest.raises(NonFiniteInputError, match=r"'input' input vectors of batch 0 \(example ids"):
        run_init_scheme(model, task)
    assert not model.init_record.is_applied


def test_empty_training_split_is_an_error(tiny_data_bin: Path) -> None:
    model, task = build_model(tiny_data_bin, "macaron_small", [*ARGS, "--dt-fixup-split", "empty"])
    task.datasets["empty"] = ListDataset([], sizes=[])
    with pytest.raises(EmptyTrainingSplitError, match="'empty' split holds no example"):
        run_init_scheme(model, task)
    with pytest.raises(EmptyTrainingSplitError, match="0 sentences"):
        estimate_max_norms([], {"input": lambda s: (s, None)}, torch.nn.Linear(1, 1))


def test_all_zero_inputs_give_a_zero_mu_error(tiny_data_bin: Path) -> None:
    from macaron_fairseq.init.errors import ZeroMuError

    model, task = build_model(tiny_data_bin, "macaron_small", [*ARGS, "--no-token-positional-embeddings"])
    with torch.no_grad():
        model.encoder.embed_tokens.weight.zero_()
    with pytest.raises(ZeroMuError, match="inputs of encoder"):
        run_init_scheme(model, task)


def _worker(rank: int, init_file: str, out_dir: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=2)
    # rank 0 sees norms up to 3, rank 1 up to 7 (and one more sentence)
    vectors = [
        torch.tensor([[[3.0, 0.0]], [[0.0, 1.0]]]),
        torch.tensor([[[0.0, 7.0]], [[1.0, 1.0]], [[2.0, 0]]]),
    ]
    x = vectors[rank]
    sample = {"net_input": {}, "nsentences": x.size(0), "ntokens": x.size(0) * x.size(1), "x": x}
    est = estimate_max_norms([sample], {"input": lambda s: (s["x"], None)}, torch.nn.Linear(1, 1))
    torch.save(
        {"mu": est.max_norms["input"], "local": est.per_worker_max["input"], "n": est.sentences},
        os.path.join(out_dir, f"{rank}.pt"),
    )
    dist.destroy_process_group()


@pytest.mark.slow  # starts two gloo worker processes
def test_all_reduce_max_over_two_gloo_workers(tmp_path: Path) -> None:
    mp.spawn(_worker, args=(str(tmp_path / "init"), str(tmp_path)), nprocs=2, join=True)
    results = [torch.load(tmp_path / f"{r}.pt") for r in range(2)]
    assert [r["local"] for r in results] == [3.0, 7.0]
    assert [r["mu"] for r in results] == [7.0, 7.0]
    assert [r["n"] for r in results] == [5, 5]
