"""DT-Fixup and T-Fixup: pure functions (``formulas``, ``targets``, ``scaling``, ``mu``, ``stacks``), the
options (``config``, one dataclass) and thin fairseq glue (``fairseq_hook``, ``record``). The optimizer
that honours ``--pretrained-lr-multiplier`` is :mod:`macaron_fairseq.optim.adam_lr_groups`."""

from macaron_fairseq.init.config import SCHEMES
from macaron_fairseq.init.errors import (
    EmptyTrainingSplitError,
    InitSchemeError,
    NoNewLayersError,
    NonFiniteInputError,
    ZeroMuError,
)
from macaron_fairseq.init.formulas import (
    ResidualBlock,
    dt_fixup_scale,
    relation_aware_scale,
    t_fixup_decoder_scale,
    t_fixup_embedding_scale,
    t_fixup_encoder_scale,
    vanilla_scale,
)
from macaron_fairseq.init.mu import MaxNormEstimate, estimate_max_norms
from macaron_fairseq.init.record import InitRecord
from macaron_fairseq.init.scaling import StackScaling, apply_dt_fixup, apply_t_fixup, xavier_init_
from macaron_fairseq.init.stacks import NewStack, dt_fixup_stack, dt_fixup_stacks

__all__ = [
    "SCHEMES",
    "EmptyTrainingSplitError",
    "InitRecord",
    "InitSchemeError",
    "MaxNormEstimate",
    "NewStack",
    "NoNewLayersError",
    "NonFiniteInputError",
    "ResidualBlock",
    "StackScaling",
    "ZeroMuError",
    "apply_dt_fixup",
    "apply_t_fixup",
    "dt_fixup_scale",
    "dt_fixup_stack",
    "dt_fixup_stacks",
    "estimate_max_norms",
    "relation_aware_scale",
    "t_fixup_decoder_scale",
    "t_fixup_embedding_scale",
    "t_fixup_encoder_scale",
    "vanilla_scale",
    "xavier_init_",
]
