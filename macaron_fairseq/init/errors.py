"""Errors of the initialisation schemes: each names the problem (and the batch where it appeared)."""

from __future__ import annotations


class InitSchemeError(ValueError):
    """Base class: a DT-Fixup / T-Fixup initialisation cannot be applied as asked."""


class EmptyTrainingSplitError(InitSchemeError):
    """The split μ is estimated on holds no example."""


class NonFiniteInputError(InitSchemeError):
    """NaN/inf in the vectors entering the new stack (reported with the batch index and example ids)."""


class ZeroMuError(InitSchemeError):
    """μ = 0 (or negative / non-finite): the DT-Fixup factor N^-½ / (2μ) is undefined."""


class NoNewLayersError(InitSchemeError):
    """DT-Fixup/T-Fixup was asked for on a model (or stack) without new, from-scratch layers."""
