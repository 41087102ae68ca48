"""The model card (``README.md``) of an exported translation model, written from the checkpoint, the
export's own check, and the results files that name the checkpoint (``results.<arch>.json`` of the
translation pipelines: recipe, beam, lenpen and the BLEU they measured). Nothing in it is typed by hand: a
number comes from a file, or the card says it is not there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from macaron_workflow.errors import UserError

CITATION = """@article{lu2019understanding,
  title   = {Understanding and Improving Transformer From a Multi-Particle Dynamic System Point of View},
  author  = {Lu, Yiping and Li, Zhuohan and He, Di and Sun, Zhiqing and Dong, Bin and Qin, Tao and
             Wang, Liwei and Liu, Tie-Yan},
  journal = {arXiv preprint arXiv:1906.02762},
  year    = {2019}
}"""
#: how far up from the checkpoint results files are looked for (workdir/checkpoints/ARCH/checkpoint.pt)
SEARCH_DEPTH = 3


def _names_checkpoint(recorded: str, results_file: Path, checkpoint: Path) -> bool:
    path = Path(recorded)
    candidates = [path] if path.is_absolute() else [results_file.parent / path, Path.cwd() / path]
    target = checkpoint.resolve()
    return any(c.resolve() == target for c in candidates)


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UserError(f"--results {path}: not a readable JSON results file ({err})") from None
    if not isinstance(data, dict):
        raise UserError(f"--results {path}: not a JSON object")
    return data


def results_for(checkpoint: Path, given: list[Path] | None = None) -> list[dict[str, Any]]:
    """``[{"path", "data"}]``: the results files given (each must name ``checkpoint``), or else every
    ``results*.json`` in the checkpoint's folder and the ``SEARCH_DEPTH - 1`` folders above it that does."""
    found = []
    if given:
        for path in given:
            data = _read(path)
            if not _names_checkpoint(str(data.get("checkpoint", "")), path, checkpoint):
                raise UserError(
                    f"--results {path}: it records the checkpoint {data.get('checkpoint')!r}, "
                    f"not {checkpoint}"
                )
            found.append({"path": str(path), "data": data})
        return found
    folder = checkpoint.resolve().parent
    for _ in range(SEARCH_DEPTH):
        for path in sorted(folder.glob("results*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError):
                continue
            if isinstance(data, dict) and _names_checkpoint(
                str(data.get("checkpoint", "")), path, checkpoint
            ):
                found.append({"path": str(path), "data": data})
        folder = folder.parent
    return found


def _bleu_lines(found: list[dict[str, Any]]) -> list[str]:
    lines = []
    for record in found:
        data = record["data"]
        scores = (data.get("bleu") or {}).get("scores") or {}
        for score in scores.values():
            if isinstance(score, dict) and isinstance(score.get("score"), (int, float)):
                lines.append(
                    f"| {score.get('label', '?')} | {score['score']:.2f} | beam {data.get('beam')}, "
                    f"lenpen {data.get('lenpen')} | `{Path(record['path']).name}` |"
                )
    return lines


def model_card(
    record: dict[str, Any], settings: dict[str, Any], model: Any, found: list[dict[str, Any]]
) -> str:
    """The card's markdown."""
    cfg = record["fairseq_model_cfg"]
    parameters = sum(p.numel() for p in model.parameters())
    kind = "Macaron" if settings["macaron"] else "Transformer"
    norm = {(True, True): "pre-LN", (False, False): "post-LN"}.get(
        (settings["encoder_normalize_before"], settings["decoder_normalize_before"]), "pre-/post-LN mixed"
    )
    if settings["encoder_norm_free"] or settings["decoder_norm_free"]:
        norm += ", norm-free (DT-Fixup/T-Fixup) layers"
    paper = "Macaron Net, Lu et al. 2019" if settings["macaron"] else "Vaswani et al. 2017"
    sharing = (
        "shared by encoder, decoder and output"
        if settings["share_all_embeddings"]
        else "tied decoder input/output"
        if settings["share_decoder_input_output_embed"]
        else "separate"
    )
    step = f"Macaron FFN step γ = {settings['macaron_ffn_step']:g}; " if settings["macaron"] else ""
    src, tgt = record.get("source_lang") or "src", record.get("target_lang") or "tgt"
    upgrade = (record.get("extra_state") or {}).get("macaron_upgrade")
    search = record["search"]
    train_flags = [
        "arch",
        "optimizer",
        "lr",
        "lr_scheduler",
        "warmup_updates",
        "max_tokens",
        "update_freq",
        "dropout",
        "attention_dropout",
        "activation_dropout",
        "weight_decay",
        "criterion",
        "label_smoothing",
        "max_update",
        "seed",
        "init_scheme",
    ]
    task = record.get("fairseq_task_cfg") or {}
    rows = [f"| {name} | `{cfg[name]}` |" for name in train_flags if cfg.get(name) not in (None, "")]
    bleu = _bleu_lines(found)
    parts = [
        "---",
        "library_name: transformers",
        "pipeline_tag: translation",
        f"language: [{src}, {tgt}]",
        "license: mit",
        "tags: [macaron-net, fairseq, translation]",
        "---",
        "",
        f"# {record.get('arch') or kind} ({src}→{tgt}), exported from fairseq",
        "",
        f"A {kind} translation model ({paper}), trained with fairseq and the macaron-fairseq plugin, "
        f"exported by `macaron-hf export` from `{Path(record['checkpoint']).name}`. Load it with "
        "`trust_remote_code=True` (the only code run is `modeling_macaron_mt.py` in this directory):",
        "",
        "```python",
        "from transformers import AutoModelForSeq2SeqLM, AutoTokenizer",
        "tokenizer = AutoTokenizer.from_pretrained(DIR, trust_remote_code=True)",
        "model = AutoModelForSeq2SeqLM.from_pretrained(DIR, trust_remote_code=True)",
        'print(tokenizer.batch_decode(model.generate(**tokenizer([TEXT], return_tensors="pt")), '
        "skip_special_tokens=True))",
        "```",
        "",
        "## Architecture",
        "",
        "| | encoder | decoder |",
        "|---|---|---|",
        f"| layers | {settings['encoder_layers']} | {settings['decoder_layers']} |",
        f"| width / heads | {settings['encoder_embed_dim']} / {settings['encoder_attention_heads']} | "
        f"{settings['decoder_embed_dim']} / {settings['decoder_attention_heads']} |",
        f"| FFN | {'2 × ' if settings['macaron'] else ''}{settings['encoder_ffn_embed_dim']} | "
        f"{'2 × ' if settings['macaron'] else ''}{settings['decoder_ffn_embed_dim']} |",
        f"| positions | {'learned' if settings['encoder_learned_pos'] else 'sinusoidal'} | "
        f"{'learned' if settings['decoder_learned_pos'] else 'sinusoidal'} |",
        "",
        f"{norm}; embeddings {sharing}; {step}activation {settings['activation_fn']}; vocabularies "
        f"{settings['src_vocab_size']} / {settings['tgt_vocab_size']}; **{parameters:,} parameters**.",
        "",
        f"The export was checked against the fairseq model: decoder logits differ by at most "
        f"{record['max_abs_logit_difference']:.1e}.",
        "",
        "## Training",
        "",
    ]
    if upgrade:
        parts += [
            f"Upgraded by `macaron-upgrade` from a checkpoint of the authors' fairseq 0.6 fork "
            f"(`{upgrade.get('authors_arch')}`): {upgrade.get('description', '')}.",
            "",
        ]
    parts += ["| fairseq setting | value |", "|---|---|", *rows]
    if task.get("data"):
        parts.append(f"| data | `{task['data']}` |")
    parts += [
        "",
        "## Generation",
        "",
        f"`generation_config.json`: beam {search['beam']}, lenpen {search['lenpen']:g}, at most "
        f"{search['max_len_b']} tokens (from {search['source']}); set so that `generate()` returns "
        "what `fairseq-generate` does with the same settings.",
        "",
        "## Results",
        "",
    ]
    if bleu:
        parts += ["| BLEU | score | search | results file |", "|---|---|---|---|", *bleu]
    else:
        parts.append("No results file names this checkpoint: no BLEU is reported here.")
    parts += [
        "",
        "## Citation",
        "",
        "```bibtex",
        CITATION,
        "```",
        "",
        "## Licence",
        "",
        "The code in this directory is MIT-licensed (the macaron-fairseq plugin's licence). The weights "
        "inherit the terms of the data they were trained on and, for an upgraded checkpoint of the authors, "
        "the terms of their release.",
        "",
    ]
    return "\n".join(parts)
