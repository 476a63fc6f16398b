"""NER training: :func:`train_ner`, behind ``crop-hf train-ner``, ``examples/train_ner.py`` and self-training.

One function runs the whole recipe: load and reconcile corpora, fine-tune a token classifier
(optionally with LoRA) on their weighted mix through the training engine
(:mod:`crop_hf.engine.training`: checkpoints, exact resume, time budget, learning curve),
evaluate per language, write ``all_results.json`` and a model card, and push to the Hub. It runs
in one process or under ``accelerate launch`` / ``torchrun``, where each process calls it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crop_hf.data.sources import load_source, mix_weights, weighted_mix_loader
from crop_hf.data.tokenization import pad_batch
from crop_hf.engine.arguments import hyperparameters
from crop_hf.engine.training import TrainedModel, TrainingTask, start, telling_where_saved, train, wrap_lora
from crop_hf.errors import check_model, reaching
from crop_hf.hub import ner_model_card
from crop_hf.labels import LabelSet, parse_label_map
from crop_hf.ner.arguments import DataArguments, ModelArguments, NerTrainingArguments
from crop_hf.ner.data import choose_labels, training_rows
from crop_hf.ner.evaluate import evaluate_ner, format_ner_table, load_eval_sets, ner_results

logger = logging.getLogger(__name__)

__all__ = ["TrainingResult", "train_ner"]


@dataclass(kw_only=True)
class TrainingResult(TrainedModel):
    """What :func:`train_ner` did: the run (:class:`~crop_hf.engine.training.TrainedModel`), labels and evaluations."""

    label_set: LabelSet
    evaluations: list[Any] = field(default_factory=list)  # crop_hf.ner.evaluate.NerEvaluation
    results: dict[str, Any] = field(default_factory=dict)


def _load_model(model_args: ModelArguments, sources):
    """Tokenizer, token classifier with a head over the reconciled labels (LoRA-wrapped if asked), label set."""
    from transformers import AutoConfig, AutoModelForTokenClassification, AutoTokenizer

    with reaching(model_args.tokenizer_name or model_args.model_name_or_path, "tokenizer"):
        tokenizer = AutoTokenizer.from_pretrained(model_args.tokenizer_name or model_args.model_name_or_path,
                                                  cache_dir=model_args.cache_dir)
    with reaching(model_args.model_name_or_path):
        config = AutoConfig.from_pretrained(model_args.model_name_or_path, cache_dir=model_args.cache_dir)
    label_set, new_head = choose_labels([s.label_names for s in sources], [s.spec for s in sources],
                                        getattr(config, "id2label", None), model_args.ignore_mismatched_sizes)
    logger.info("labels: %s%s", list(label_set.names), " (new classification head)" if new_head else "")
    model = AutoModelForTokenClassification.from_pretrained(
        model_args.model_name_or_path, cache_dir=model_args.cache_dir, num_labels=len(label_set),
        id2label=label_set.id2label, label2id=label_set.label2id,
        ignore_mismatched_sizes=new_head or model_args.ignore_mismatched_sizes)
    if model_args.lora_r > 0:
        model = wrap_lora(model, "TOKEN_CLS", model_args)
    return tokenizer, model, label_set


def train_ner(model_args: ModelArguments, data_args: DataArguments, training_args: NerTrainingArguments,
              *, datasets: Mapping[str, Any] | None = None, accelerator=None) -> TrainingResult:
    """Fine-tune a token classifier on a weighted mix of corpora and evaluate it per language.

    ``datasets`` maps source specs used in ``data_args`` to ``Dataset``/``DatasetDict`` objects
    already in memory (self-training passes its corpora this way); other specs are loaded.
    ``accelerator`` (an ``accelerate.Accelerator``) is created from ``training_args`` when not given.

    Writes to ``output_dir``: the model and tokenizer, ``all_results.json``, ``README.md`` (model
    card), and ``step_N``/``epoch_N`` checkpoints when asked. Returns a :class:`TrainingResult`.
    """

    output_dir = Path(training_args.output_dir)
    accelerator = start(training_args, accelerator)  # a malformed option or output_dir fails before any loading
    label_map = parse_label_map(data_args.label_map)
    datasets = dict(datasets or {})
    if not data_args.train_sources:
        raise ValueError("no training corpora: pass train_sources (e.g. conll5:en)")
    weights = mix_weights(data_args.train_sources, data_args.train_weights)

    with accelerator.main_process_first():
        # only the train split: a crop-hf corpus then reads only its train files
        sources = [load_source(spec, label_map, dataset=datasets.get(spec), splits=("train",))
                   for spec in data_args.train_sources]
        for source in sources:  # an empty corpus would train on nothing, or on the others alone, silently
            source.sentences("train", "--train_sources")
        # every split evaluated after training is read now: a wrong data_dir or an empty file fails in
        # seconds, not after hours of training
        eval_sets = {split: load_eval_sets(data_args.eval_sources, split, max_samples=data_args.max_eval_samples,
                                           datasets=datasets, option="--eval_sources")
                     for split in dict.fromkeys((data_args.eval_split, data_args.test_split))
                     if split and data_args.eval_sources}
    if model_args.tokenizer_name:
        check_model(model_args.tokenizer_name, "tokenizer (--tokenizer_name)")
    check_model(model_args.model_name_or_path, "model (--model_name_or_path)")
    tokenizer, model, label_set = _load_model(model_args, sources)

    with accelerator.main_process_first():
        parts = [training_rows(s, label_set, label_map, tokenizer, data_args.max_seq_length,
                               data_args.max_train_samples) for s in sources]
    pad_multiple = 8 if accelerator.mixed_precision != "no" else None
    train_loader = weighted_mix_loader(parts, weights, batch_size=training_args.per_device_train_batch_size,
                                       collate_fn=lambda rows: pad_batch(rows, tokenizer.pad_token_id, pad_multiple),
                                       seed=training_args.seed, group_by_length=training_args.group_by_length)
    sampler = train_loader.sampler

    def evaluate(current) -> dict[str, Any] | None:
        """Learning-curve scores: the first evaluation split, every process taking its share."""
        split = data_args.eval_split or data_args.test_split
        if not split or not data_args.eval_sources:
            return None
        evaluation = run_evaluation(current, split)
        current.train()
        return evaluation.flat()

    def run_evaluation(current, split: str):
        return evaluate_ner(current, tokenizer, eval_sets[split], split=split,
                            batch_size=training_args.per_device_eval_batch_size,
                            max_length=data_args.max_seq_length, accelerator=accelerator, label_map=label_map,
                            average_exclude=data_args.average_exclude or ())

    logger.info("training on %d sentences per epoch", len(sampler))
    run = train(TrainingTask(
        model, train_loader,
        loss=lambda model, batch: model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                                        labels=batch["labels"]).loss,
        evaluate=evaluate,
        tokens=lambda batch: int((batch["labels"] != -100).sum())), training_args, accelerator)
    model = run.save_model(tokenizer, lora=model_args.lora_r > 0)

    evaluations = []
    again = f"score it again with crop-hf evaluate-ner --model {output_dir}"
    with telling_where_saved(output_dir, "its evaluation", again):
        for split in (data_args.eval_split, data_args.test_split):
            if not split or not data_args.eval_sources:
                continue
            evaluation = run_evaluation(model, split)
            evaluations.append(evaluation)
            if accelerator.is_main_process:
                print(format_ner_table(evaluation), flush=True)

    extra: dict[str, Any] = {"train_steps": run.completed_steps, "train_sentences_per_epoch": len(sampler),
                             "train_loss": run.train_loss, "num_processes": accelerator.num_processes}
    if run.history:
        extra["history"] = run.history
    results = ner_results(evaluations, extra) if accelerator.is_main_process else {}

    def card():
        return ner_model_card(
            model_name=training_args.hub_model_id or output_dir.name,
            base_model=model_args.model_name_or_path,
            train_sources=list(zip(data_args.train_sources, weights, [len(p) for p in parts], strict=True)),
            evaluations=evaluations, label_names=list(label_set.names),
            hyperparameters=hyperparameters(model_args, data_args, training_args,
                                            total_train_batch_size=run.total_train_batch_size))

    run.publish(results if accelerator.is_main_process else None, card=card)
    return TrainingResult.of(run, label_set=label_set, evaluations=evaluations, results=results)
