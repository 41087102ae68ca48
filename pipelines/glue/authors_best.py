"""The Macaron authors' GLUE recipe, ``macaron-scripts/test/test-our-best-setting.sh`` of their ``bert/`` fork
(zhuohan123/macaron-net), as data: the grid preset ``macaron-best`` (``GRID_PRESET=macaron-best bash
pipelines/glue.sh``) runs, per task, their one searched setting — their ``run_exp`` line — instead of a grid.

Their ``train.py`` command for one task (after the data path; ``--arch transformer_classifier_base_macaron
--load-bert checkpoint_pretrained.pt`` is the upgraded model, ``--save-dir`` their layout):

    --task glue_single|glue_pair [--symmetric] --n-classes C --optimizer adam --adam-betas '(0.9, 0.999)'
    --adam-eps 1e-6 --clip-norm 0.0 --weight-decay WD --lr LR --lr-scheduler linear --warmup-init-lr 1e-07
    --warmup-updates (N+5)/10 --min-lr 1e-09 --criterion CRITERION --max-sentences BS
    --max-update N = ceil(train examples / BS) × EPOCHS --seed SEED --no-progress-bar --no-epoch-checkpoints

How the pipeline runs it (``tests/pipelines/glue/test_glue_authors_bert.py`` checks the command line):
:data:`SETTINGS` gives batch size, learning rate, epochs, weight decay and seed per task; :data:`FLAGS` are
appended to the pipeline's fairseq-train command (their clipping: none; their examples' length: their tasks'
``--max-positions`` default, 384); Adam β (0.9, 0.999), ε 1e-6, warm-up 10 % then linear decay to 0, the
update count, dropout 0.1 and attention dropout 0.1 are the pipeline's, equal to theirs. :data:`DEVIATIONS`
lists every remaining difference, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TaskSetting:
    """One ``run_exp`` line of theirs: the searched setting of a task."""

    batch_size: int
    lr: float
    epochs: int
    weight_decay: float
    seed: int
    criterion: str  # theirs, for the table (the pipeline's is fairseq's sentence_prediction)
    symmetric: bool = False


#: GLUE task (the pipeline's name) -> their setting (test-our-best-setting.sh, in their order)
SETTINGS: dict[str, TaskSetting] = {
    "CoLA": TaskSetting(32, 3e-5, 5, 0.0, 400, "cross_entropy_classify_binary"),
    "MRPC": TaskSetting(16, 5e-5, 4, 0.0, 500, "cross_entropy_classify_binary", symmetric=True),
    "STS-B": TaskSetting(16, 5e-5, 5, 0.0, 500, "mean_squared_error", symmetric=True),
    "RTE": TaskSetting(16, 5e-5, 4, 0.0, 200, "cross_entropy_classify"),
    "SST-2": TaskSetting(24, 5e-5, 3, 0.0, 200, "cross_entropy_classify"),
    "MNLI": TaskSetting(24, 5e-5, 3, 0.0, 300, "cross_entropy_classify"),
    "QQP": TaskSetting(16, 5e-5, 5, 0.0, 200, "cross_entropy_classify_binary", symmetric=True),
    "QNLI": TaskSetting(16, 3e-5, 4, 0.01, 400, "cross_entropy_classify"),
}
"""Their MNLI-mm run (batch 16, same otherwise) trains a second MNLI model for the mismatched test set; the
pipeline scores both MNLI test sets with its one MNLI model (their MNLI line). WNLI has no line of theirs."""

#: appended to the pipeline's fairseq-train command (a later flag wins in fairseq's parser)
FLAGS = ("--clip-norm", "0.0", "--tokens-per-sample", "384")

#: setting -> why the pipeline differs from their script (the only differences)
DEVIATIONS: dict[str, str] = {
    "criterion": "CoLA, MRPC and QQP: theirs is one logit with a binary cross-entropy "
    "(cross_entropy_classify_binary), the pipeline's two logits with fairseq's sentence_prediction "
    "cross-entropy (the same model family: softmax of two logits = sigmoid of their difference)",
    "STS-B labels": "theirs are 0.5·(score − 3), the pipeline's score / 5 (an affine change: Pearson and "
    "Spearman are the same; the squared-error loss is scaled)",
    "--symmetric": "MRPC, STS-B, QQP: theirs swaps the two sentences of a training pair with probability ½; "
    "the pipeline's task has no such option",
    "classifier start": "their script loads the checkpoint with --load-type all, which starts a 1-output "
    "classifier (CoLA, MRPC, STS-B, QQP) from the pre-trained next-sentence classifier (same shape); the "
    "pipeline starts every classifier at zero, as their grid search (--load-type no_out) did for every task "
    "(for 2 or 3 outputs their --load-type all meets a shape mismatch, an error in PyTorch >= 0.4.1 even "
    "with strict=False)",
    "truncation": "an example longer than 384 tokens: theirs cuts random amounts from both ends of the "
    "longer sentence, the pipeline BERT's rule (the longer sentence's last tokens)",
    "weight decay": "QNLI (0.01): theirs decays every parameter, the pipeline not the biases "
    "(--no-decay-bias-and-norm); the other tasks use 0",
    "warm-up": "theirs starts at 1e-7 and takes (N+5)//10 updates; the pipeline starts at 0 and takes "
    "round(0.1·N) (one update fewer when N ends in 5)",
}


def render() -> str:
    """The recipe table of ``docs/reports/glue_authors_recipe.md``: their setting per task, the flags, the
    differences."""
    lines = [
        "| task | batch | lr | epochs | weight decay | seed | their criterion | `--symmetric` |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for task, s in SETTINGS.items():
        lines.append(
            f"| {task} | {s.batch_size} | {s.lr:g} | {s.epochs} | {s.weight_decay:g} | {s.seed} | "
            f"`{s.criterion}` | {'✓' if s.symmetric else ''} |"
        )
    lines += [
        "",
        f"Appended to every run's fairseq-train command: `{' '.join(FLAGS)}`.",
        "",
        "| differs from their script | how, and why |",
        "|---|---|",
    ]
    lines += [f"| {name} | {why} |" for name, why in DEVIATIONS.items()]
    return "\n".join(lines)
