"""fairseq-generate's search as transformers' ``GenerationConfig``, so that ``model.generate()`` returns
what ``fairseq-generate --beam B --lenpen L`` does (checked token for token by
``tests/macaron_fairseq/hf/test_translation_generate.py``).

fairseq 0.12's ``SequenceGenerator`` (``sequence_generator.py``) and transformers 5's ``_beam_search``
(``generation/utils.py``), read side by side:

* both keep 2 × beam candidates per step and let only an ``</s>`` among the best *beam* of them finish a
  hypothesis; both score a finished hypothesis by its summed log-probability divided by
  ``(tokens generated, </s> included) ** lenpen`` — transformers' ``cur_len + 1 - decoder_prompt_len``
  with the one-token prompt ``</s>`` is fairseq's ``step + 1``: ``length_penalty = lenpen``;
* fairseq stops a sentence as soon as *beam* hypotheses are finished: ``early_stopping=True`` (transformers'
  default ``False`` keeps searching while a running beam could still win);
* fairseq never emits ``<pad>`` (``lprobs[:, pad] = -inf``): ``suppress_tokens=[pad]``; nor ``</s>`` as the
  first token (``min_len`` 1): ``min_length=2`` (the prompt ``</s>`` counts in transformers' length);
* fairseq's length limit ``max_len = min(max_len_a·|src| + max_len_b, max_target_positions − 1)`` tokens,
  then ``</s>`` is forced at step ``max_len``: ``max_length = max_len + 2`` (prompt, tokens, ``</s>``) with
  ``forced_eos_token_id`` (transformers forces ``</s>`` at ``max_length − 1``). transformers has no
  source-length term: ``max_len_a`` must be 0 (fairseq-generate's default).

When more than *beam* hypotheses finish in one step, fairseq keeps the first ones in candidate order and
transformers the best by normalised score; both contain the best finished hypothesis of that step, so the
returned (best) translation is the same.
"""

from __future__ import annotations

from typing import Any

from macaron_workflow.errors import UserError

#: fairseq-generate's defaults (fairseq/dataclass/configs.py GenerationConfig)
FAIRSEQ_DEFAULTS = {"beam": 5, "lenpen": 1.0, "max_len_a": 0.0, "max_len_b": 200}


def search_settings(results: list[dict[str, Any]], overrides: dict[str, Any]) -> dict[str, Any]:
    """beam / lenpen / max_len_a / max_len_b: fairseq-generate's defaults, then what a results file of the
    checkpoint records (the recipe's test settings), then the command line; ``source`` says which."""
    chosen = dict(FAIRSEQ_DEFAULTS)
    source = "fairseq-generate's defaults"
    for record in results:
        taken = {
            key: record["data"][key] for key in ("beam", "lenpen") if record["data"].get(key) is not None
        }
        if taken:
            chosen.update(taken)
            source = f"the results file {record['path']}"
            break
    given = {key: value for key, value in overrides.items() if value is not None}
    chosen.update(given)
    if given:
        source += f", then the command line ({', '.join(sorted(given))})"
    chosen["beam"], chosen["lenpen"] = int(chosen["beam"]), float(chosen["lenpen"])
    chosen["max_len_a"], chosen["max_len_b"] = float(chosen["max_len_a"]), int(chosen["max_len_b"])
    if chosen["max_len_a"] != 0:
        raise UserError(
            f"--max-len-a {chosen['max_len_a']:g}: transformers' generate has no limit that grows with the "
            "source length; give 0 and --max-len-b"
        )
    if chosen["beam"] < 1 or chosen["max_len_b"] < 1:
        raise UserError(f"--beam {chosen['beam']} / --max-len-b {chosen['max_len_b']}: both must be ≥ 1")
    chosen["source"] = source
    return chosen


def generation_config(config: Any, search: dict[str, Any]) -> Any:
    """The ``GenerationConfig`` of ``search`` for a model of ``config`` (see the module docstring)."""
    from transformers import GenerationConfig

    max_len = min(search["max_len_b"], config.max_target_positions - 1)
    return GenerationConfig(
        num_beams=search["beam"],
        length_penalty=search["lenpen"],
        early_stopping=True,
        do_sample=False,
        max_length=max_len + 2,
        min_length=2,
        forced_eos_token_id=config.eos_token_id,
        suppress_tokens=[config.pad_token_id],
        decoder_start_token_id=config.decoder_start_token_id,
        bos_token_id=config.bos_token_id,
        eos_token_id=config.eos_token_id,
        pad_token_id=config.pad_token_id,
    )
