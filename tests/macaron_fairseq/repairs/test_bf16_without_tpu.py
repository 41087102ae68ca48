"""``--bf16`` implies ``--tpu`` in fairseq; without torch_xla the plugin trains bf16 on the run's device
(end to end: ``test_bf16_on_the_cpu_with_each_scheme`` of ``tests/macaron_fairseq/init/test_dt_fixup_cli.py``)
"""

from __future__ import annotations

import pytest
from fairseq import options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.distributed import utils as distributed_utils

from macaron_fairseq.repairs import bf16_without_tpu


def parsed(dict_dir, *flags: str):
    argv = [str(dict_dir), "--task", "translation", "-s", "src", "-t", "tgt", "--arch", "transformer"]
    args = options.parse_args_and_arch(options.get_training_parser(), [*argv, "--optimizer", "adam", *flags])
    return convert_namespace_to_omegaconf(args)


def tpu_flags(cfg) -> list[bool]:
    return [cfg.common.tpu, cfg.distributed_training.tpu, cfg.optimizer.tpu, cfg.model.tpu]


def test_bf16_without_torch_xla_runs_on_the_cpu(dict_dir) -> None:
    cfg = parsed(dict_dir, "--bf16", "--cpu")
    assert tpu_flags(cfg) == [True] * 4  # fairseq's own post-processing
    assert bf16_without_tpu.bf16_on_own_device(cfg)
    assert tpu_flags(cfg) == [False] * 4 and cfg.common.bf16
    assert not bf16_without_tpu.bf16_on_own_device(cfg)  # nothing left to do


def test_nothing_changes_with_torch_xla_or_without_bf16(dict_dir, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = parsed(dict_dir, "--cpu")
    assert not bf16_without_tpu.bf16_on_own_device(plain) and not plain.common.tpu
    monkeypatch.setattr(bf16_without_tpu, "xla_available", lambda: True)
    cfg = parsed(dict_dir, "--bf16")
    assert not bf16_without_tpu.bf16_on_own_device(cfg) and tpu_flags(cfg) == [True] * 4


def test_installed_once_around_fairseqs_call_main() -> None:
    installed = distributed_utils.call_main
    assert installed.__macaron_bf16_without_tpu__  # the plugin's import installed it
    bf16_without_tpu.install()
    assert distributed_utils.call_main is installed
