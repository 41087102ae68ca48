"""How long the GLUE grid of ``bash pipelines/glue.sh`` takes per task on this machine's device, from
measured fine-tuning steps/s.

    python -m benchmarks.glue_grid_time [--arch macaron_bert_base] [--preset bert] [--steps 3] [--warmup 1]
    python -m benchmarks.glue_grid_time --arch vanilla_bert_base     # bert-base-uncased's calibration grid

Measured: the time of one fine-tuning step (forward, classification loss, backward, Adam update) of the
model fairseq-train builds for ``--task macaron_sentence_prediction`` (BERT encoder + pooler + a 2-way
head), on full 128-token examples, at each batch size of the grid (``--preset``, a grid of
:data:`macaron_pipelines.glue.grid.PRESETS`, default BERT's); median of ``--steps`` after ``--warmup``.
Computed: per task, the grid's updates (Σ over the task's batch sizes × learning rate × epochs × weight decay
× seeds of ``epochs × ⌈train examples / batch⌉``, the training-set sizes of the GLUE distribution) divided by
the steps/s at that batch size. The step times do not depend on the grid, so a results file renders with the
grid it names (older files, without one: BERT's). Real batches are padded to their longest example, mostly far
below 128 tokens (SST-2, CoLA), so the estimate is an upper bound; predictions on dev and test and process
start-up are not counted. Run it on the GPU you will fine-tune on: on this repository's 2-core CPU machine
it gives the CPU figure (the results file says which device).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

from benchmarks.results_file import RESULTS_DIR, machine_info, write_results
from macaron_pipelines.glue.grid import DEFAULT_PRESET, MAX_SEQ_LENGTH, PRESETS, GridPreset

REPO = Path(__file__).resolve().parents[1]

#: training examples of the GLUE distribution (Wang et al. 2019, Table 1; Hugging Face ``glue`` dataset)
TRAIN_EXAMPLES = {
    "CoLA": 8_551,
    "SST-2": 67_349,
    "MRPC": 3_668,
    "STS-B": 5_749,
    "QQP": 363_846,
    "MNLI": 392_702,
    "QNLI": 104_743,
    "RTE": 2_490,
}
VOCAB = 30_522


def grid_updates(examples: int, batch_size: int, preset: GridPreset = PRESETS[DEFAULT_PRESET]) -> int:
    """Updates of all grid runs at one batch size for a task of ``examples`` training examples."""
    per_epoch = math.ceil(examples / batch_size)
    runs_per_epoch_setting = len(preset.lrs) * len(preset.weight_decays) * len(preset.seeds)
    return sum(epochs * per_epoch for epochs in preset.epochs) * runs_per_epoch_setting


def batch_sizes(preset: GridPreset) -> list[int]:
    """Every batch size the preset uses for some task."""
    return sorted({b for task in TRAIN_EXAMPLES for b in preset.batch_sizes_for(task)})


def measure(arch: str, batch_size: int, steps: int, warmup: int, seed: int = 0) -> list[float]:
    import torch

    from macaron_fairseq.models.bert_build import bert_dictionary_dir, build_bert_model

    torch.manual_seed(seed)
    with bert_dictionary_dir(VOCAB) as data:
        model, _ = build_bert_model(data, arch)
    model.register_classification_head("glue", num_classes=2)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = model.to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5, weight_decay=0.01, eps=1e-6)
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(5, VOCAB - 1, (batch_size, MAX_SEQ_LENGTH), generator=generator).to(device)
    segments = (torch.arange(MAX_SEQ_LENGTH) >= MAX_SEQ_LENGTH // 2).long().expand(batch_size, -1).to(device)
    labels = torch.randint(0, 2, (batch_size,), generator=generator).to(device)

    def step() -> float:
        started = time.perf_counter()
        logits, _ = model(
            tokens, segment_labels=segments, features_only=True, classification_head_name="glue"
        )
        loss = torch.nn.functional.cross_entropy(logits.float(), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - started

    for _ in range(warmup):
        step()
    return [step() for _ in range(steps)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--arch", default="macaron_bert_base")
    parser.add_argument(
        "--preset", choices=sorted(PRESETS), default=DEFAULT_PRESET, help="the grid (default bert)"
    )
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "glue_grid_time.json")
    args = parser.parse_args(argv)
    machine = machine_info()
    import torch

    preset = PRESETS[args.preset]
    seconds = {str(b): measure(args.arch, b, args.steps, args.warmup) for b in batch_sizes(preset)}
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU"
    results = {
        "arch": args.arch,
        "device": device,
        "threads": torch.get_num_threads(),
        "steps": args.steps,
        "preset": preset.name,
        "seconds": seconds,
    }
    write_results(args.out, results, machine)


if __name__ == "__main__":
    main()
