"""Training the joint intent + slot parser with Accelerate: sources, staged recipe, few-shot, resume, card.

:func:`train_parser` runs the whole recipe behind ``examples/train_parser.py`` and
``crop-hf train-parser`` on the training engine (:mod:`crop_hf.engine.training`):

* **sources** (:mod:`crop_hf.parsing.data`): source specs as NER training reads them (``hinglish_top?data_dir=...``, ``cstop``,
  ``top:v2?domains=weather``, ``hub:NAME[:CONFIG]``, ``disk:PATH``; see
  :func:`crop_hf.data.sources.parse_source_spec`) with mixing weights. Each corpus has
  ``tokens``, ``intent`` and ``slot_tags`` columns; ``#en`` after a spec reads the English side of a
  parallel corpus instead (``en_tokens``, ``en_intent``, ``en_slot_tags``, as Hinglish-TOP has them).
* **staged recipe** (CSTOP): fine-tune on English, then continue from that model on code-switched
  data with ``init_from``; labels the first stage did not see are added to the heads.
* **few-shot** (CSTOP_100): ``few_shot=100`` trains on a sample covering every intent and slot label
  (:func:`crop_hf.data.fewshot.few_shot_indices`), ``few_shot_seed`` picks one of the draws.
* **nested trees**: ``max_intent_depth`` above 1 trains the hierarchical decoder on whole trees
  (intents inside slots); trees it cannot represent are left out, counted by reason with file:line
  (``skipped_trees`` in ``all_results.json``).
* **honest model selection**: ``dev_size`` carves a seeded dev split, stratified by intent, from
  each training source (or ``dev_split`` names one); the learning curve (``eval_steps``) scores it
  and the best point's model is saved. ``eval_split``/``test_split`` are only reported, never
  selected on.
* **regularisers for small corpora**: ``slot_substitution`` (copies of the training trees with
  same-name slot fillers swapped in), ``nested_copies`` (more copies of the rows with nested trees),
  ``input_dropout`` (sub-words replaced by the unknown token) and ``ema_decay`` (a moving average of
  the weights, :func:`weight_average`, is what is scored and saved).
* **checkpoints** every N steps or epoch (``accelerator.save_state``) and exact resume; the model,
  tokenizer, ``all_results.json`` and a model card in ``output_dir``; ``push_to_hub``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crop_hf.data.fewshot import few_shot_indices
from crop_hf.data.readers import SkippedRecords
from crop_hf.data.sources import mix_weights, split_side, weighted_mix_loader
from crop_hf.engine.arguments import hyperparameters
from crop_hf.engine.checkpoints import adamw
from crop_hf.engine.training import TrainedModel, TrainingTask, start, telling_where_saved, train
from crop_hf.errors import check_model
from crop_hf.hub import parser_model_card
from crop_hf.metrics.parsing import format_parse_table
from crop_hf.parsing import predict
from crop_hf.parsing.arguments import ParserDataArguments, ParserModelArguments, ParserTrainingArguments
from crop_hf.parsing.data import dev_split, encode_rows, label_sets, load_parse_rows
from crop_hf.parsing.evaluate import evaluate_parser
from crop_hf.parsing.substitution import with_substituted_slots

logger = logging.getLogger(__name__)

__all__ = ["ParserTrainingResult", "train_parser"]


@dataclass(kw_only=True)
class ParserTrainingResult(TrainedModel):
    """What :func:`train_parser` did: the run (:class:`~crop_hf.engine.training.TrainedModel`) and scores per split."""

    scores: dict[str, dict[str, Any]] = field(default_factory=dict)  # split -> source -> parse_scores


def _extend_labels(model, intents: list[str], tags: list[str], max_intent_depth: int | None = None):
    """Grow the heads (and CRFs) of a trained parser to new labels (or to the hierarchical decoder),
    keeping what it learned for the old ones; new parts start fresh."""
    import torch

    from crop_hf.modeling import JointIntentSlotModel  # heavy (torch): loaded on first use

    old = model.config
    depth = max(old.max_intent_depth, max_intent_depth or 1)
    if list(old.intent_labels) == intents and list(old.slot_labels) == tags and depth == old.max_intent_depth:
        return model
    logger.info("extending the parser's labels: %d -> %d intents, %d -> %d slot tags, intent depth %d -> %d",
                len(old.intent_labels), len(intents), len(old.slot_labels), len(tags), old.max_intent_depth, depth)
    config = old.__class__(**{**old.to_dict(), "intent_labels": intents, "slot_labels": tags,
                              "max_intent_depth": depth})
    grown = JointIntentSlotModel(config)
    state = model.state_dict()
    new_state = grown.state_dict()
    intent_rows = torch.tensor([intents.index(n) for n in old.intent_labels])
    tag_rows = torch.tensor([tags.index(n) for n in old.slot_labels])
    names = [t[2:] for t in tags if t.startswith("B-")]
    name_rows = torch.tensor([names.index(t[2:]) for t in old.slot_labels if t.startswith("B-")])
    # which rows of each per-label parameter the old labels take
    rows_of = {"intent_classifier.": intent_rows, "inner_intent_embeddings.": intent_rows,
               "top_intent_embeddings.": intent_rows, "top_slot_classifier.": tag_rows,
               "nested_intent_classifier.": torch.cat([torch.tensor([0]), intent_rows + 1]),
               "slot_classifier.": tag_rows, "inner_slot_classifier.": tag_rows, "crf.": tag_rows,
               "inner_crf.": tag_rows, "slot_name_embeddings.": name_rows}
    with torch.no_grad():
        for key, value in state.items():
            target = new_state[key]
            prefix = next((p for p in rows_of if key.startswith(p)), None)
            if key.endswith("crf.transitions"):
                target[tag_rows.unsqueeze(1), tag_rows] = value
            elif prefix is not None:
                target[rows_of[prefix]] = value
            else:
                target.copy_(value)
    grown.load_state_dict(new_state)
    return grown


def _load_model(model_args: ParserModelArguments, parts):
    from transformers import AutoTokenizer

    from crop_hf.modeling import JointIntentSlotModel  # heavy (torch): loaded on first use

    if model_args.init_from:
        check_model(model_args.init_from, "parser (--init_from)")
        model = JointIntentSlotModel.from_pretrained(model_args.init_from)
        tokenizer = AutoTokenizer.from_pretrained(model_args.init_from)
        depth = max(model.config.max_intent_depth, model_args.max_intent_depth)
        intents, tags = label_sets(parts, model.config, nested=depth > 1)
        return tokenizer, _extend_labels(model, intents, tags, depth)
    check_model(model_args.model_name_or_path, "encoder (--model_name_or_path)")
    intents, tags = label_sets(parts, nested=model_args.max_intent_depth > 1)
    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path)
    model = JointIntentSlotModel.from_encoder(
        model_args.model_name_or_path, intents, tags, use_crf=model_args.use_crf,
        slot_loss_weight=model_args.slot_loss_weight, intent_pooling=model_args.intent_pooling,
        classifier_dropout=model_args.classifier_dropout, max_intent_depth=model_args.max_intent_depth,
        span_hidden_size=model_args.span_hidden_size, top_tagger=model_args.top_tagger)
    return tokenizer, model


def _optimizer(model, training_args: ParserTrainingArguments):
    import torch

    if training_args.head_learning_rate is None:
        return adamw(model, training_args.learning_rate, training_args.weight_decay)
    head = [p for n, p in model.named_parameters() if not n.startswith("encoder.") and p.requires_grad]
    encoder = [p for n, p in model.named_parameters() if n.startswith("encoder.") and p.requires_grad]
    return torch.optim.AdamW([
        {"params": encoder, "weight_decay": training_args.weight_decay},
        {"params": head, "weight_decay": 0.0, "lr": training_args.head_learning_rate},
    ], lr=training_args.learning_rate)


def input_dropout(tokenizer, rate: float):
    """A batch transform that replaces each sub-word id with the unknown token's at ``rate`` (special tokens kept).

    The identity for ``rate`` 0. Draws from torch's generator, which the engine seeds and checkpoints.
    """
    import torch

    if not 0.0 <= rate < 1.0:
        raise ValueError(f"input_dropout must be at least 0 and below 1, got {rate}")
    if not rate:
        return lambda batch: batch
    unknown = tokenizer.unk_token_id if tokenizer.unk_token_id is not None else tokenizer.mask_token_id
    if unknown is None:
        raise ValueError("input_dropout needs a tokenizer with an unknown (or mask) token")
    special = torch.tensor(sorted(set(tokenizer.all_special_ids)))

    def drop(batch):
        ids = batch["input_ids"]
        hit = (torch.rand(ids.shape, device=ids.device) < rate) & ~torch.isin(ids, special.to(ids.device))
        if "attention_mask" in batch:
            hit &= batch["attention_mask"].bool()
        return {**batch, "input_ids": ids.masked_fill(hit, unknown)}

    return drop


def weight_average(model, decay: float | None, accelerator=None):
    """An exponential moving average of ``model``'s weights (torch's ``AveragedModel``); ``None`` without a decay.

    ``average.update_parameters(model)`` after each optimizer step folds the step's weights in (the
    first call copies them); ``average.module`` is the averaged model. With an ``accelerator`` it
    lives on its device and is registered for checkpointing, so a resumed run continues the same
    average. It holds a second copy of the weights.
    """
    if decay is None:
        return None
    if not 0 < decay < 1:
        raise ValueError(f"ema_decay must be above 0 and below 1, got {decay}")
    from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

    average = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(decay), use_buffers=True)
    if accelerator is not None:
        average.to(accelerator.device)
        accelerator.register_for_checkpointing(average)
    return average


def _eval_rows(specs: list[str], split: str, data_args: ParserDataArguments,
               datasets: Mapping[str, Any]) -> dict[str, Any]:
    """``{spec: rows}`` of ``split`` of each evaluation source, read before training. A source named in
    ``eval_sources`` must have the split and an utterance in it; the training sources, scored by default,
    are left out (with a warning) where they lack the split."""
    out = {}
    for spec in specs:
        try:
            rows = load_parse_rows(spec, split, dataset=datasets.get(split_side(spec)[0]),
                                   option="--eval_sources" if data_args.eval_sources else None)
        except KeyError:
            if data_args.eval_sources:  # asked for by name: a missing split is an error
                raise
            logger.warning("%s has no %s split; not scored", spec, split)
            continue
        if data_args.max_eval_samples is not None:
            rows = rows.select(range(min(data_args.max_eval_samples, len(rows))))
        out[spec] = rows
    return out


def train_parser(model_args: ParserModelArguments, data_args: ParserDataArguments,
                 training_args: ParserTrainingArguments, *, datasets: Mapping[str, Any] | None = None,
                 accelerator=None) -> ParserTrainingResult:
    """Fine-tune a joint intent + slot parser on a weighted mix of corpora, then score it.

    ``datasets`` maps source specs (without ``#side``) to ``Dataset``/``DatasetDict`` objects already
    in memory; other specs are loaded. Writes the model, tokenizer, ``all_results.json``, a model card
    (``README.md``) and ``step_N``/``epoch_N`` checkpoints to ``output_dir``.
    """
    import torch
    from datasets import concatenate_datasets

    output_dir = Path(training_args.output_dir)
    accelerator = start(training_args, accelerator)  # a malformed option or output_dir fails before any loading
    datasets = dict(datasets or {})
    if not data_args.train_sources:
        raise ValueError("no training corpora: pass train_sources (e.g. 'hinglish_top?data_dir=...')")
    weights = mix_weights(data_args.train_sources, data_args.train_weights)

    if data_args.dev_size is not None and data_args.dev_split is not None:
        raise ValueError("give dev_size (carve a dev split from the training rows) or dev_split, not both")
    reported = {data_args.eval_split, data_args.test_split} - {None}
    if data_args.dev_split is not None and data_args.dev_split in reported:
        raise ValueError(f"dev_split {data_args.dev_split!r} is also reported (eval_split/test_split): selecting on "
                         "the split a run reports overstates it; carve one with dev_size instead")
    with accelerator.main_process_first():
        parts = []
        dev_parts: dict[str, Any] = {}
        for spec in data_args.train_sources:
            rows = load_parse_rows(spec, "train", dataset=datasets.get(split_side(spec)[0]), option="--train_sources")
            if data_args.dev_size is not None:
                kept, held_out = dev_split(rows, data_args.dev_size, training_args.seed)
                dev_parts[spec] = rows.select(held_out)
                rows = rows.select(kept)
                logger.info("%s: %d rows held out as the dev split (seed %d, stratified by intent)", spec,
                            len(held_out), training_args.seed)
            elif data_args.dev_split is not None:
                dev_parts[spec] = load_parse_rows(spec, data_args.dev_split, dataset=datasets.get(split_side(spec)[0]))
            if data_args.skip_nested and "nested" in rows.column_names:
                rows = rows.filter(lambda row: not row["nested"], desc="leaving out nested trees")
            if data_args.max_train_samples is not None:
                rows = rows.select(range(min(data_args.max_train_samples, len(rows))))
            if data_args.few_shot:
                picked = few_shot_indices(rows["intent"], rows["slot_tags"], data_args.few_shot,
                                          data_args.few_shot_seed)
                rows = rows.select(picked)
                logger.info("%s: few-shot sample of %d utterances (seed %d)", spec, len(rows), data_args.few_shot_seed)
            if data_args.nested_copies and "nested" in rows.column_names:
                nested = rows.filter(lambda row: row["nested"], desc="copying nested trees")
                rows = concatenate_datasets([rows, *[nested] * data_args.nested_copies])
                logger.info("%s: %d nested rows copied %d more times", spec, len(nested), data_args.nested_copies)
            if data_args.slot_substitution:
                rows = with_substituted_slots(rows, data_args.slot_substitution, training_args.seed)
                logger.info("%s: %d training rows with the substituted copies", spec, len(rows))
            parts.append(rows)
        # every split scored after training is read now: a missing split or an empty corpus fails in
        # seconds, not after hours of training
        eval_sources = data_args.eval_sources or list(data_args.train_sources)
        eval_rows = {split: _eval_rows(eval_sources, split, data_args, datasets)
                     for split in dict.fromkeys((data_args.eval_split, data_args.test_split)) if split}
    tokenizer, model = _load_model(model_args, parts)

    skipped = {spec: SkippedRecords() for spec in data_args.train_sources}
    with accelerator.main_process_first():
        encoded = [encode_rows(rows, tokenizer, model, data_args.max_seq_length, where=f"{spec} (train)",
                               skipped=skipped[spec])
                   for spec, rows in zip(data_args.train_sources, parts, strict=True)]
    train_loader = weighted_mix_loader(encoded, weights, batch_size=training_args.per_device_train_batch_size,
                                       collate_fn=lambda rows: predict.collate(rows, tokenizer.pad_token_id),
                                       seed=training_args.seed, group_by_length=training_args.group_by_length)
    sampler = train_loader.sampler

    def score(current, split: str) -> dict[str, Any]:
        """``{spec: parse_scores}`` of ``split`` of each evaluation source (main process only)."""
        return {spec: evaluate_parser(current, tokenizer, rows, batch_size=training_args.per_device_eval_batch_size,
                                      max_length=data_args.max_seq_length)[0]
                for spec, rows in eval_rows[split].items()}

    ema = weight_average(model, training_args.ema_decay, accelerator)
    best: dict[str, Any] = {}  # the best dev point so far: its exact match, its weights (on the CPU), its number
    curve_points: list[Any] = []

    def dev_scores(current) -> dict[str, Any]:
        return {spec: evaluate_parser(current, tokenizer, rows, batch_size=training_args.per_device_eval_batch_size,
                                      max_length=data_args.max_seq_length)[0]
                for spec, rows in dev_parts.items()}

    def learning_curve_scores(current) -> dict[str, Any] | None:
        split = data_args.eval_split or data_args.test_split
        if not (dev_parts or split) or not accelerator.is_main_process:
            return None
        if ema is not None:  # the averaged weights are the ones scored, selected and saved
            current = ema.module
        was_training = current.training
        current.eval()
        with torch.no_grad():
            scores = dev_scores(current) if dev_parts else score(current, split)
        current.train(was_training)
        if dev_parts and data_args.select_on_dev:
            exact = sum(s["exact_match"] * s["count"] for s in scores.values()) / max(
                sum(s["count"] for s in scores.values()), 1)
            if not best or exact > best["exact_match"]:  # the earliest of equal points
                best.update(exact_match=exact, at=len(curve_points) + 1,
                            state={k: v.detach().to("cpu", copy=True) for k, v in current.state_dict().items()})
        curve_points.append(scores)
        return {"dev": scores} if dev_parts else scores

    logger.info("training the parser: %d utterances per epoch, %d intents, %d slot tags",
                len(sampler), len(model.config.intent_labels), len(model.config.slot_labels))
    drop = input_dropout(tokenizer, training_args.input_dropout)
    run = train(TrainingTask(model, train_loader, loss=lambda model, batch: model(**drop(batch)).loss,
                             optimizer=_optimizer(model, training_args), evaluate=learning_curve_scores,
                             after_step=None if ema is None else ema.update_parameters),
                training_args, accelerator)
    selected = None
    if best and accelerator.is_main_process:
        selected = run.history[best["at"] - 1]["step"] if len(run.history) >= best["at"] else None
        run.unwrapped().load_state_dict(best["state"])
        logger.info("saving the model of step %s, the best dev exact match (%.1f)", selected, 100 * best["exact_match"])
    elif ema is not None:
        run.unwrapped().load_state_dict(ema.module.state_dict())
    model = run.save_model(tokenizer)

    scores: dict[str, dict[str, Any]] = {}
    again = f"score it again with crop-hf evaluate-parser --model {output_dir}"
    with telling_where_saved(output_dir, "its evaluation", again):
        for split in (data_args.eval_split, data_args.test_split):
            if not split or not accelerator.is_main_process:
                continue
            scores[split] = score(model, split)
            for spec, result in scores[split].items():
                print(f"{spec} ({split})\n{format_parse_table(result)}", flush=True)
            if not scores[split]:
                del scores[split]

    results: dict[str, Any] = {"train_steps": run.completed_steps, "train_utterances_per_epoch": len(sampler),
                               "train_loss": run.train_loss, "scores": scores}
    if dev_parts:
        if not training_args.wants_curve():
            logger.warning("a dev split but no eval_steps/eval_minutes: nothing to select among, the last step is saved")
        results["dev"] = {"rows": {spec: len(rows) for spec, rows in dev_parts.items()},
                          "split": data_args.dev_split or f"carved from train (dev_size {data_args.dev_size}, "
                                                          f"seed {training_args.seed}, stratified by intent)",
                          "selected_step": selected}
    if any(s.total for s in skipped.values()):
        results["skipped_trees"] = {spec: dict(s.counts) for spec, s in skipped.items() if s.total}
    if run.history:
        results["history"] = run.history

    def card():
        return parser_model_card(
            model_name=training_args.hub_model_id or output_dir.name, config=model.config,
            train_sources=list(zip(data_args.train_sources, weights, [len(p) for p in parts], strict=True)),
            init_from=model_args.init_from, scores=scores,
            hyperparameters=hyperparameters(model_args, data_args, training_args))

    run.publish(results, card=card, commit_message="Upload semantic parser trained with crop-hf")
    return ParserTrainingResult.of(run, scores=scores)
