"""Layers: Macaron and vanilla encoder/decoder layers, the half-step FFN, relation-aware self-attention,
norm-free stripping."""
