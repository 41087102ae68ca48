"""DT-Fixup and T-Fixup: pure functions (``formulas``, ``targets``, ``scaling``, ``mu``, ``stacks``), the
options (``config``, one dataclass) and thin fairseq glue (``fairseq_hook``, ``record``). The optimizer
that honours ``--pretrained-lr-multiplier`` is :mod:`macaron_fairseq.optim.adam_lr_groups`."""
