"""Update size at initialisation: ‖Δf‖ after one SGD step, for stacks of N norm-free layers.

DT-Fixup's Theorems 3.1/3.2 (and our Macaron derivation, docs/dt_fixup.md) claim that with the DT-Fixup
scaling one SGD step with learning rate η changes the stack output by Θ(η), independently of N. We build
N ∈ {2, 4, …, 64} norm-free encoder layers (vanilla and Macaron, d = 64), feed embedding-like inputs
(√d-scaled N(0, d^-½) token embeddings + sinusoidal positions, so ‖x‖ ≈ μ ≈ 10), take the loss
L = ⟨f(x), g⟩ / (T·B) for a fixed random direction g, one SGD step θ ← θ − η∇L, and report

    ‖Δf‖ / η   with   ‖Δf‖ = RMS over tokens of ‖f_θ'(x) − f_θ(x)‖₂

once with the SGD step on the weight matrices only (the theorems' setting: their G_l have no biases, and
DT-Fixup leaves biases unscaled) and once on all parameters, for: the same Xavier init *without* scaling
("xavier, no LN"), *DT-Fixup* (Xavier + scaling by the measured μ, with the derived factor of each layer
kind: N^-½/(2μ) vanilla, (3N)^-½/μ Macaron), and, as a reference, fairseq's post-LN layers with their
default init. Float64 throughout.

The Macaron layers are parameter-matched to the vanilla ones: two FFNs of half the inner size (``--ffn`` / 2
each), as the Macaron Net paper and our ``macaron_*`` architectures compare them. The derivation's claim
is that Macaron with its own factor lands at the vanilla update size; that is what the Macaron DT-Fixup
column tests. (Scaling Macaron weights by the vanilla factor instead would multiply every scaled weight by
√(3/4), hence the first-order update by exactly 3/4 — an algebraic identity, not a measurement, so it is
not a column.)

    python -m benchmarks.dt_fixup_update_size
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import torch
from fairseq.models.transformer import TransformerConfig
from fairseq.models.transformer.transformer_config import EncDecBaseConfig
from fairseq.modules import SinusoidalPositionalEmbedding
from torch import Tensor, nn

from benchmarks.results_file import RESULTS_DIR, machine_info, provenance, read_results, write_results
from macaron_fairseq.init import apply_dt_fixup, xavier_init_
from macaron_fairseq.models.layer_plan import LayerSpec, build_encoder_layer

VANILLA_DT_FIXUP = "vanilla: DT-Fixup"
MACARON_DT_FIXUP = "Macaron: DT-Fixup (3μ² derivation)"


def make_cfg(d: int, ffn: int, heads: int) -> TransformerConfig:
    cfg = TransformerConfig()
    # an instance of its own: the default ``encoder`` of fairseq's TransformerConfig is the class
    # EncDecBaseConfig itself, so setting a size on it would change every config (the Macaron FFN size
    # would leak into the vanilla one)
    cfg.encoder = EncDecBaseConfig()
    cfg.encoder.embed_dim, cfg.encoder.ffn_embed_dim, cfg.encoder.attention_heads = d, ffn, heads
    cfg.dropout = cfg.attention_dropout = cfg.activation_dropout = 0.0
    return cfg


def build_stack(kind: str, n: int, init: str, cfg: TransformerConfig, mu: float) -> nn.ModuleList:
    spec = LayerSpec(kind=kind, new=True, norm_free=(init != "post-ln"))
    layers = nn.ModuleList([build_encoder_layer(spec, cfg) for _ in range(n)])
    if kind == "macaron":
        for layer in layers:
            layer.set_ffn_step(0.5)
    if init in ("xavier", "dt-fixup"):
        xavier_init_(layers)
    if init == "dt-fixup-default-biases":  # Xavier weights, fairseq's uniform biases (the reference code's)
        with torch.no_grad():
            for param in layers.parameters():
                if param.dim() > 1:
                    nn.init.xavier_normal_(param)
    if init in ("dt-fixup", "dt-fixup-default-biases"):
        apply_dt_fixup(list(layers), mu, name=f"{kind}-{n}")
    return layers.double()


def run(layers: nn.ModuleList, x: Tensor) -> Tensor:
    for layer in layers:
        x = layer(x, None)
    return x


def inputs(d: int, tokens: int, batch: int, seed: int) -> Tensor:
    g = torch.Generator().manual_seed(seed)
    vocab = 100
    emb = torch.randn(vocab, d, generator=g, dtype=torch.float64) * d**-0.5
    ids = torch.randint(4, vocab, (batch, tokens), generator=g)
    pos = SinusoidalPositionalEmbedding(d, padding_idx=1, init_size=tokens + 4)
    x = math.sqrt(d) * emb[ids] + pos(ids).double()
    return x.transpose(0, 1).contiguous()  # T × B × C


def update_size(layers: nn.ModuleList, x: Tensor, lr: float, seed: int, biases: bool) -> float:
    g = torch.randn(x.shape, generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64)
    g = g / g.norm(dim=-1, keepdim=True)
    tokens = x.shape[0] * x.shape[1]
    before = run(layers, x)
    loss = (before * g).sum() / tokens
    params = [p for p in layers.parameters() if p.requires_grad and (biases or p.dim() > 1)]
    grads = torch.autograd.grad(loss, params)
    with torch.no_grad():
        for p, gr in zip(params, grads, strict=True):
            p.sub_(lr * gr)
        after = run(layers, x)
    delta = (after - before.detach()).norm(dim=-1)
    return float(delta.pow(2).mean().sqrt()) / lr


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--depths", type=int, nargs="+", default=[2, 4, 8, 16, 32, 64])
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--ffn", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--json",
        type=Path,
        default=RESULTS_DIR / "dt_fixup_update_size.json",
        help="results file (default: %(default)s, which docs/dt_fixup.md quotes)",
    )
    a = p.parse_args()
    machine = machine_info()
    torch.manual_seed(a.seed)
    if a.ffn % 2:
        p.error("--ffn must be even: Macaron layers get two FFNs of --ffn / 2 (parameter-matched)")
    cfgs = {"vanilla": make_cfg(a.dim, a.ffn, 4), "macaron": make_cfg(a.dim, a.ffn // 2, 4)}
    x = inputs(a.dim, tokens=12, batch=16, seed=a.seed)
    mu = float(x.norm(dim=-1).max())
    columns = [
        ("vanilla", "xavier", "vanilla: xavier, no LN"),
        ("vanilla", "dt-fixup", VANILLA_DT_FIXUP),
        ("vanilla", "dt-fixup-default-biases", "vanilla: DT-Fixup, fairseq's default biases"),
        ("vanilla", "post-ln", "vanilla: post-LN"),
        ("macaron", "xavier", "Macaron: xavier, no LN"),
        ("macaron", "dt-fixup", MACARON_DT_FIXUP),
        ("macaron", "post-ln", "Macaron: post-LN"),
    ]
    tables: dict[str, dict[str, list[float]]] = {}
    for biases in (False, True):
        rows = tables["all parameters" if biases else "weights only"] = {}
        for n in a.depths:
            values = []
            for kind, init, _ in columns:
                torch.manual_seed(a.seed)
                layers = build_stack(kind, n, init, cfgs[kind], mu)
                values.append(update_size(layers, x, a.lr, a.seed, biases))
            rows[str(n)] = values
            print(f"{'all parameters' if biases else 'weights only'}, N = {n}: "
                  + ", ".join(f"{v:.3g}" for v in values), flush=True)  # fmt: skip
    results = {
        "mu": mu, "lr": a.lr, "dim": a.dim, "ffn": a.ffn, "seed": a.seed,
        "columns": [title for _, _, title in columns], "tables": tables,
    }  # fmt: skip
    write_results(a.json, results, machine)
    print(render(read_results(a.json)))


TABLE_TITLES = {
    "weights only": "SGD step on the weight matrices only (biases frozen)",
    "all parameters": "SGD step on all parameters (weights and biases)",
}


def render(payload: dict) -> str:
    """The §4.1 tables of docs/dt_fixup.md from a results file (entries ‖Δf‖/η, 3 significant digits)."""
    r = payload["results"]
    columns = r["columns"]
    vanilla, macaron = columns.index(VANILLA_DT_FIXUP), columns.index(MACARON_DT_FIXUP)
    lines = [
        f"μ = {r['mu']:.3f}, η = {r['lr']:g}, d = {r['dim']}, FFN: vanilla {r['ffn']}, Macaron 2 × "
        f"{r['ffn'] // 2} (parameter-matched), seed = {r['seed']}; entries: ‖Δf‖ / η; last column: "
        "Macaron DT-Fixup / vanilla DT-Fixup"
    ]
    for key, title in TABLE_TITLES.items():
        header = "| N | " + " | ".join(columns) + " | Macaron / vanilla (DT-Fixup) |"
        lines += ["", f"**{title}**", "", header]
        lines.append("|---" * (2 + len(columns)) + "|")
        for n, values in r["tables"][key].items():
            ratio = values[macaron] / values[vanilla]
            lines.append(f"| {n} | " + " | ".join(f"{v:.3g}" for v in values) + f" | {ratio:.2f} |")
    lines += ["", f"Measured by {provenance(payload)}."]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
