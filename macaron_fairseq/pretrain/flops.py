"""Model FLOPs of a BERT pre-training step, and model FLOPs utilization (MFU) on a GPU.

Counting matrix multiplications only (2 FLOPs per multiply-add) and a backward pass of twice the forward
(the convention of Kaplan et al. 2020 §2.1, "C ≈ 6N per token", and Chowdhery et al. 2022 (PaLM) App. B,
which adds the attention term 6·L·T·d per token for the forward+backward of QKᵀ and AV: 2 matmuls of
T·d each, ×2 FLOPs, ×3 passes ⇒ 12·L·T·d):

* encoder layers, per position of the padded batch: ``6·N_layers + 12·L·T·d`` where ``N_layers`` counts the
  weights of the layers' linear maps (Macaron's two half-width FFNs count as one full one);
* MLM head, per *masked* position only (the head runs there): ``6·(d² + d·V)``;
* pooler + NSP classifier, per pair: ``6·(d² + 2d)``.

Padding positions are counted: the model computes them. Embedding lookups, LayerNorm, softmax and the
optimizer are not (the usual MFU definition); so MFU is a lower bound on hardware utilization.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

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


@dataclass(frozen=True)
class BertFlops:
    """The sizes the FLOPs of a step depend on."""

    layer_matmul_weights: int
    layers: int
    dim: int
    vocab: int

    @classmethod
    def of(cls, model: nn.Module) -> BertFlops:
        encoder = model.encoder
        weights = sum(
            module.weight.numel() for module in encoder.layers.modules() if isinstance(module, nn.Linear)
        )
        embed = encoder.embed_tokens
        return cls(weights, len(encoder.layers), embed.embedding_dim, embed.num_embeddings)

    def step(self, pairs: int, seq_len: int, masked: int) -> float:
        """Training FLOPs of a micro-batch of ``pairs`` × ``seq_len`` positions with ``masked`` MLM
        targets."""
        positions = pairs * seq_len
        d = self.dim
        encoder = positions * (6 * self.layer_matmul_weights + 12 * self.layers * seq_len * d)
        mlm = masked * 6 * (d * d + d * self.vocab)
        nsp = pairs * 6 * (d * d + 2 * d)
        return float(encoder + mlm + nsp)


def device_peak_key(device_name: str) -> str | None:
    """The :data:`PEAK_TFLOPS` entry of a GPU (``torch.cuda.get_device_name()``), None for an unknown one."""
    return max((key for key in PEAK_TFLOPS if key in device_name), key=len, default=None)


def device_peak_tflops(device_name: str) -> float | None:
    """The bf16/fp16 dense peak of a known GPU, else None."""
    key = device_peak_key(device_name)
    return None if key is None else PEAK_TFLOPS[key]
