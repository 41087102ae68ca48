"""One-command GPU check: does the pre-training code work on this machine's CUDA GPU(s), and how fast?

    macaron-gpu-check                          # = python -m macaron_pipelines.gpu_check
    macaron-gpu-check --allow-cpu --arch tiny --steps 3 --corpus-mb 0.3 --vocab 300   # CPU smoke

On a machine with one or more CUDA GPUs it runs (default sizes: well under 10 minutes on one A100/H100):

1. ``tests``: ``pytest -m gpu`` (the tests that need a GPU), one row per entry of
   :data:`.suite.GPU_TESTS` (listed by ``--help``); nothing collected, or an entry none of whose tests ran,
   is a failure (skipped, saying so, when the package is installed without a checkout: the tests are the
   checkout's);
2. ``pretrain``: ``--steps`` (200) steps of ``vanilla_bert_base`` and ``macaron_bert_base`` through the real
   trainer (``torchrun --nproc_per_node <GPUs> -m macaron_fairseq.pretrain``) on a generated corpus, covering
   bf16 and fp16 each with ZeRO-1 and ZeRO-2 (AdamW, ``configs/deepspeed/bert_phase1.json`` with fp32
   gradient accumulation), and DeepSpeed's LAMB (``configs/deepspeed/lamb_64k.json``: ``torch_autocast``
   fp16, ZeRO-0); tokens/s and MFU (model FLOPs of :class:`macaron_fairseq.pretrain.flops.BertFlops`, as the
   trainer logs them) against the GPU's dense bf16/fp16 peak (``macaron_fairseq.pretrain.flops.PEAK_TFLOPS``,
   or ``--peak-tflops``; an unknown device → MFU "n/a" with the reason);
3. ``resume``: a run saved at step ``--resume-at`` and resumed to ``2 × --resume-at`` must log the losses and
   learning rates of the uninterrupted run as closely as a rerun of it does (the run-to-run baseline: at
   most 10 × the rerun's largest relative difference, at least 1e-6; "exact" when bitwise equal);
4. ``speed``: the Macaron vs Transformer training step and beam-4 search on the GPU for each
   ``--macaron-ffn-impl`` (timed with CUDA synchronisation).

It prints one table and writes ``docs/results/gpu_check.json`` (``--json``; from an installed wheel:
``./gpu_check.json``) atomically. Exit status: 0 all rows ok or skipped, 1 a row failed, 2 no CUDA GPU (one
line; ``--allow-cpu`` runs what a CPU can: bf16 on CPU is DeepSpeed's, fp16 and LAMB rows are skipped) or
missing packages (one line naming them and the ``pip`` command that installs them from the wheels
``bash scripts/gpu_wheels.sh`` downloads).

One module per part: :mod:`.suite` (tests), :mod:`.smoke` (pretrain), :mod:`.resume`, :mod:`.speed`; the runs
they share (:mod:`.runs`), the device (:mod:`.device`), the pins of the wheels (:mod:`.wheels`), the table
and results file (:mod:`.report`), the options (:mod:`.__main__`).
"""
