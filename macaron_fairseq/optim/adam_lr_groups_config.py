"""The options of ``--optimizer adam_lr_groups`` (fairseq's Adam options and one more).

No ``from __future__ import annotations`` here: fairseq reads the dataclass's field types at run time to
build its command-line parser.
"""

from dataclasses import dataclass, field

from fairseq.optim.adam import FairseqAdamConfig


@dataclass
class AdamLrGroupsConfig(FairseqAdamConfig):
    no_decay_bias_and_norm: bool = field(
        default=False,
        metadata={
            "help": "no weight decay on biases and LayerNorm weights (parameters of < 2 dimensions), as "
            "BERT; under --fp16 needs --fp16-no-flatten-grads"
        },
    )
